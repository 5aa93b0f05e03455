package flightrecorder

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis/diagnosis"
)

// p2pOp is one send or receive of a scenario, on process group "0": name is torch's ("send 0->1",
// "recv 1<-0", in group ranks), seq its p2p_seq_id.
type p2pOp struct {
	name  string
	seq   int
	size  []int
	dtype string
	state string
}

// writeP2P writes one JSON dump per rank of a group of n ranks; first holds the first record id
// of the ranks whose ring overwrote its oldest entries (0 for the others).
func writeP2P(t *testing.T, n int, first map[int]int, ranks map[int][]p2pOp) string {
	t.Helper()
	dir := t.TempDir()
	list := make([]string, n)
	for i := range list {
		list[i] = fmt.Sprint(i)
	}
	cfg := map[string]any{"0": map[string]any{"name": "0", "desc": "pp", "ranks": "[" + strings.Join(list, ", ") + "]"}}
	for r, ops := range ranks {
		var entries []any
		for i, o := range ops {
			if o.state == "" {
				o.state = "completed"
			}
			created := int64(1_764_230_400_000_000_000) + int64(i+1)*1_000_000
			done := int64(0)
			if o.state == "completed" {
				done = created + 500_000
			}
			entries = append(entries, map[string]any{
				"record_id": first[r] + i, "pg_id": 0, "process_group": []string{"0", "pp"},
				"collective_seq_id": 0, "p2p_seq_id": o.seq, "op_id": i + 1, "profiling_name": "nccl:" + o.name,
				"time_created_ns": created, "time_discovered_started_ns": created + 100_000, "time_discovered_completed_ns": done,
				"input_sizes": [][]int{o.size}, "output_sizes": [][]int{o.size}, "input_dtypes": []string{o.dtype}, "output_dtypes": []string{o.dtype},
				"state": o.state, "retired": o.state == "completed", "timeout_ms": 600000, "is_p2p": true, "frames": []any{},
			})
		}
		b, err := json.Marshal(map[string]any{"version": "2.10", "rank": r, "pg_config": cfg, "pg_status": map[string]any{}, "entries": entries})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("nccl_trace_rank_%d.json", r)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestP2PVerdicts re-creates fr_trace's send/receive matching (a send from A to B is matched by
// B's receive from A, of the same sizes) in new scenarios: sends and receives matched in order per
// pair although a rank's p2p_seq_id counts all its peers together; a receive never posted; a
// send and its receive of different sizes, or dtypes; both halves posted and stuck; and a ring
// that lost its oldest entries, whose pairs cannot be counted and are not matched.
func TestP2PVerdicts(t *testing.T) {
	f := []int{16, 16}
	type want struct {
		kind     diagnosis.Kind
		rank     int32
		seq      int
		evidence string
	}
	cases := []struct {
		name  string
		n     int
		first map[int]int
		ranks map[int][]p2pOp
		want  []want
	}{
		{"a pipeline's sends and receives matched, counted per pair", 3, nil, map[int][]p2pOp{
			0: {{"send 0->1", 1, f, "Float", ""}, {"send 0->1", 2, f, "Float", ""}},
			1: {{"recv 1<-0", 1, f, "Float", ""}, {"send 1->2", 2, f, "Float", ""}, {"recv 1<-0", 3, f, "Float", ""}, {"send 1->2", 4, f, "Float", ""}},
			2: {{"recv 2<-1", 1, f, "Float", ""}, {"recv 2<-1", 2, f, "Float", ""}}}, nil},
		{"the receive never posted", 2, nil, map[int][]p2pOp{
			0: {{"send 0->1", 1, f, "Float", ""}, {"send 0->1", 2, f, "Float", "started"}},
			1: {{"recv 1<-0", 1, f, "Float", ""}}},
			[]want{{diagnosis.Hang, 1, 2, "send #2 from rank 0 to rank 1 on process group 0 (pp): rank 0 posted its half (p2p seq 2 on rank 0, 1 KiB) and waits in it; rank 1 never posted the matching receive; rank 1 waits in no recorded op"}}},
		// Rank 0's own wait is a symptom of rank 2's: one finding, of rank 2, that names it.
		{"the send never posted, its sender waits in another receive: one finding, the root's", 3, nil, map[int][]p2pOp{
			0: {{"recv 0<-2", 1, f, "Float", "started"}},
			1: {{"recv 1<-0", 1, f, "Float", "scheduled"}},
			2: {}},
			[]want{
				{diagnosis.Hang, 2, 1, "send #1 from rank 2 to rank 0 on process group 0 (pp): rank 0 posted its half (p2p seq 1 on rank 0, 1 KiB) and waits in it; rank 2 never posted the matching send; rank 2 waits in no recorded op" +
					" (busy elsewhere: compute, data, a host hang); also waited on by send #1 from rank 0 to rank 1 on process group 0 (pp) (rank 0 waits in a receive from rank 2 on communicator 1)"},
			}},
		{"a send and its receive of different sizes", 2, nil, map[int][]p2pOp{
			0: {{"send 0->1", 1, f, "Float", "started"}},
			1: {{"recv 1<-0", 1, []int{16, 8}, "Float", "started"}}},
			[]want{{diagnosis.Mismatch, 1, 1, "rank 0 sends 1 KiB, rank 1 receives 512 B"}}},
		{"a send and its receive of different dtypes", 2, nil, map[int][]p2pOp{
			0: {{"send 0->1", 1, f, "Float", "started"}},
			1: {{"recv 1<-0", 1, f, "BFloat16", "started"}}},
			[]want{{diagnosis.Mismatch, 1, 1, "rank 0 sends 1 KiB, rank 1 receives 512 B"}}},
		{"both posted, neither completed", 2, nil, map[int][]p2pOp{
			0: {{"send 0->1", 1, f, "Float", "started"}},
			1: {{"recv 1<-0", 1, f, "Float", "started"}}},
			[]want{{diagnosis.Hang, -1, 1, "send #1 from rank 0 to rank 1 on process group 0 (pp) (p2p seq 1 on rank 0, 1 on rank 1): both ranks posted it and neither completed it"}}},
		{"rings that lost their oldest entries are not paired", 2, map[int]int{0: 40, 1: 40}, map[int][]p2pOp{
			0: {{"send 0->1", 41, f, "Float", "started"}},
			1: {{"recv 1<-0", 40, []int{16, 8}, "Float", ""}}}, nil},
		{"a send is not called unreceived when the receiver's ring lost entries", 2, map[int]int{1: 40}, map[int][]p2pOp{
			0: {{"send 0->1", 1, f, "Float", ""}, {"send 0->1", 2, f, "Float", "started"}},
			1: {{"recv 1<-0", 40, f, "Float", ""}}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := verdicts(t, writeP2P(t, c.n, c.first, c.ranks))
			if len(fs) != len(c.want) {
				for _, f := range fs {
					t.Log(f.String())
				}
				t.Fatalf("%d findings; want %d", len(fs), len(c.want))
			}
			for i, w := range c.want {
				f := fs[i]
				stuck := w.rank >= 0 || (f.StuckN == 2 && fmt.Sprint(f.Stuck) == "[0 1]") // no culprit: both stuck inside
				if f.Kind != w.kind || f.Rank != w.rank || f.Seq != w.seq || !stuck || !strings.Contains(f.Evidence, w.evidence) {
					t.Errorf("finding %d = %v rank %d #%d stuck %v: %s\nwant %v rank %d #%d containing %q", i, f.Kind, f.Rank, f.Seq, f.Stuck, f.Evidence, w.kind, w.rank, w.seq, w.evidence)
				}
			}
		})
	}
}

// TestPPHangVerdict: in the pickled 4-stage pipeline, stage 2 never posted its receive of
// microbatch 4; one finding names rank 2, with a root's confidence, for its oldest wait, and folds
// in its other pair and rank 1's wait (rank 1 waits in its send to rank 2: a symptom), as a
// hang's culprit is one finding however many ops wait on it (TestHangOneFindingPerRank).
func TestPPHangVerdict(t *testing.T) {
	fs := verdicts(t, "testdata/pp_hang")
	want := []struct {
		rank       int32
		seq        int
		confidence float64
		evidence   string
	}{
		{2, 4, 1, "send #4 from rank 2 to rank 3 on process group 0 (pp): rank 3 posted its half (p2p seq 4 on rank 3, 64 MiB) and waits in it; rank 2 never posted the matching send; " +
			"rank 2 waits in no recorded op (busy elsewhere: compute, data, a host hang); also waited on by send #4 from rank 1 to rank 2 on process group 0 (pp); " +
			"also waited on by send #5 from rank 0 to rank 1 on process group 0 (pp) (rank 1 waits in a send to rank 2 on communicator 1)"},
	}
	if len(fs) != len(want) {
		for _, f := range fs {
			t.Log(f.String())
		}
		t.Fatalf("%d findings; want %d", len(fs), len(want))
	}
	for i, w := range want {
		f := fs[i]
		if f.Kind != diagnosis.Hang || f.Rank != w.rank || f.Seq != w.seq || f.Confidence != w.confidence || !strings.Contains(f.Evidence, w.evidence) {
			t.Errorf("finding %d = %v rank %d #%d confidence %.2f: %s\nwant hang rank %d #%d confidence %.2f containing %q", i, f.Kind, f.Rank, f.Seq, f.Confidence, f.Evidence, w.rank, w.seq, w.confidence, w.evidence)
		}
	}
}
