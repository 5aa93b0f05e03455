package flightrecorder

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/timeline"
)

// op is one entry of a scenario: on process group pg, sequence number seq.
type op struct {
	pg    string
	seq   int
	name  string
	size  []int
	dtype string
	state string
}

func ar(seq int, state string) op {
	return op{"0", seq, "all_reduce", []int{4, 4}, "Float", state}
}

// writeDumps writes one JSON dump per rank, as torch's JSON writer would, in a new directory:
// pgs maps each process group's name to its description and ranks.
func writeDumps(t *testing.T, pgs map[string][2]string, ranks map[int][]op) string {
	t.Helper()
	dir := t.TempDir()
	for r, ops := range ranks {
		cfg := map[string]any{}
		for name, p := range pgs {
			cfg[name] = map[string]any{"name": name, "desc": p[0], "ranks": p[1]}
		}
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
				"record_id": i, "pg_id": 0, "process_group": []string{o.pg, pgs[o.pg][0]},
				"collective_seq_id": o.seq, "p2p_seq_id": 0, "op_id": o.seq, "profiling_name": "nccl:" + o.name,
				"time_created_ns": created, "time_discovered_started_ns": created + 100_000, "time_discovered_completed_ns": done,
				"input_sizes": [][]int{o.size}, "output_sizes": [][]int{o.size}, "input_dtypes": []string{o.dtype}, "output_dtypes": []string{o.dtype},
				"state": o.state, "retired": o.state == "completed", "timeout_ms": 600000, "is_p2p": false, "frames": []any{},
			})
		}
		b, err := json.Marshal(map[string]any{"version": "2.10", "pg_config": cfg, "pg_status": map[string]any{}, "entries": entries})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("nccl_trace_rank_%d.json", r)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// verdicts imports dumps (files, or a directory of them) and returns the diagnosis's findings.
func verdicts(t *testing.T, paths ...string) []diagnosis.Finding {
	t.Helper()
	im, err := ReadFiles(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := diagnosis.New(nil)
	for i := range im.Events {
		d.Add(&im.Events[i])
	}
	return d.Result(im.Strings)
}

// TestVerdicts re-creates the scenarios of PyTorch's fr_trace analyzer tests
// (test/distributed/flight_recorder/test_fr_analysis.py), written anew with the sequence numbers
// torch gives (one per collective, shared by a coalesced group's ops), and checks the diagnosis
// gives the verdict fr_trace does: matched, not all ranks joining (who never entered), or an op
// whose type, size, dtype or state differs across ranks.
func TestVerdicts(t *testing.T) {
	two := map[string][2]string{"0": {"default_pg", "[0, 1]"}}
	type want struct {
		kind     diagnosis.Kind
		rank     int32
		seq      int
		missing  string
		evidence string
	}
	cases := []struct {
		name  string
		pgs   map[string][2]string
		ranks map[int][]op
		want  []want
	}{
		{"all_reduce matched on two groups", map[string][2]string{"0": {"default_pg", "[0, 1]"}, "1": {"sub_pg", "[0, 1]"}},
			map[int][]op{0: {ar(1, ""), {"1", 1, "all_reduce", []int{5, 5}, "Float", ""}}, 1: {ar(1, ""), {"1", 1, "all_reduce", []int{5, 5}, "Float", ""}}}, nil},
		{"allreduce_coalesced matched", two,
			map[int][]op{0: {{"0", 1, "allreduce_coalesced", []int{4, 4}, "Float", ""}}, 1: {{"0", 1, "allreduce_coalesced", []int{4, 4}, "Float", ""}}}, nil},
		{"coalesced broadcasts matched", two, map[int][]op{
			0: {{"0", 1, "broadcast", []int{4, 4}, "Float", ""}, {"0", 1, "broadcast", []int{4, 4}, "Float", ""}, {"0", 1, "coalesced", []int{}, "Float", ""}},
			1: {{"0", 1, "broadcast", []int{4, 4}, "Float", ""}, {"0", 1, "broadcast", []int{4, 4}, "Float", ""}, {"0", 1, "coalesced", []int{}, "Float", ""}}}, nil},
		{"coalesced broadcasts, the second of another size", two, map[int][]op{
			0: {{"0", 1, "_broadcast_oop", []int{4, 4}, "Float", ""}, {"0", 1, "_broadcast_oop", []int{5, 5}, "Float", ""}, {"0", 1, "ALLGATHER_coalesced", []int{}, "Float", ""}},
			1: {{"0", 1, "_broadcast_oop", []int{4, 4}, "Float", ""}, {"0", 1, "_broadcast_oop", []int{4, 4}, "Float", ""}, {"0", 1, "ALLGATHER_coalesced", []int{}, "Float", ""}}},
			[]want{{diagnosis.Mismatch, 1, 1, "", "broadcast #1 on process group 0 (default_pg): rank 0 posted broadcast of 100 B; rank 1 posted broadcast of 64 B"}}},
		{"coalesced reduces matched", two, map[int][]op{
			0: {{"0", 1, "_reduce_oop", []int{4, 4}, "Float", ""}, {"0", 1, "_reduce_oop", []int{4, 4}, "Float", ""}, {"0", 1, "REDUCE_SCATTER_coalesced", []int{}, "Float", ""}},
			1: {{"0", 1, "_reduce_oop", []int{4, 4}, "Float", ""}, {"0", 1, "_reduce_oop", []int{4, 4}, "Float", ""}, {"0", 1, "REDUCE_SCATTER_coalesced", []int{}, "Float", ""}}}, nil},
		{"rank 0 never enters the coalesced group rank 1 ran", two, map[int][]op{
			0: {ar(1, "")},
			1: {ar(1, ""), {"0", 2, "_reduce_oop", []int{4, 4}, "Float", ""}, {"0", 2, "_reduce_oop", []int{4, 4}, "Float", ""}, {"0", 2, "REDUCE_SCATTER_coalesced", []int{}, "Float", ""}}},
			[]want{{diagnosis.Hang, 0, 2, "[0]", "reduce #2 on process group 0 (default_pg): rank 1 entered it and completed it; rank 0 never entered it; rank 0 completed #1 and waits in no recorded op"}}},
		{"type mismatch", two, map[int][]op{0: {ar(1, "started")}, 1: {{"0", 1, "all_gather", []int{4, 4}, "Float", "started"}}},
			[]want{{diagnosis.Mismatch, 1, 1, "", "all_reduce #1 on process group 0 (default_pg): rank 0 posted all_reduce of 64 B; rank 1 posted all_gather of 64 B"}}},
		{"dtype mismatch", two, map[int][]op{0: {ar(1, "started")}, 1: {{"0", 1, "all_reduce", []int{4, 4}, "Half", "started"}}},
			[]want{{diagnosis.Mismatch, 1, 1, "", "rank 1 posted all_reduce of 32 B"}}},
		{"state mismatch: one rank completed, the other still in it", two, map[int][]op{0: {ar(1, "")}, 1: {ar(1, "started")}},
			[]want{{diagnosis.Hang, -1, 1, "[]", "all_reduce #1 on process group 0 (default_pg): ranks 0, 1 entered it (1 waiting in it, not completed); every member entered it"}}},
		{"all_to_all of different sizes is no mismatch", two, map[int][]op{
			0: {{"0", 1, "all_to_all", []int{4, 4}, "Float", ""}}, 1: {{"0", 1, "all_to_all", []int{8, 4}, "Float", ""}}}, nil},
		{"the rank behind waits in another group's collective", map[string][2]string{"0": {"default_pg", "[0, 1, 2]"}, "1": {"pp", "[1, 2]"}},
			map[int][]op{
				0: {ar(1, ""), ar(2, "started")},
				1: {ar(1, ""), ar(2, "started")},
				2: {ar(1, ""), {"1", 1, "broadcast", []int{8}, "Float", "started"}},
			},
			[]want{
				{diagnosis.Hang, 2, 2, "[2]", "all_reduce #2 on process group 0 (default_pg): ranks 0, 1 entered it (0, 1 waiting in it, not completed); rank 2 never entered it; rank 2 waits in broadcast #1 on communicator 2"},
				{diagnosis.Hang, 1, 1, "[1]", "broadcast #1 on process group 1 (pp): rank 2 entered it (2 waiting in it, not completed); rank 1 never entered it; rank 1 waits in all_reduce #2 on communicator 1"},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := verdicts(t, writeDumps(t, c.pgs, c.ranks))
			if len(fs) != len(c.want) {
				for _, f := range fs {
					t.Log(f.String())
				}
				t.Fatalf("%d findings; want %d", len(fs), len(c.want))
			}
			for i, w := range c.want {
				f := fs[i]
				if f.Kind != w.kind || f.Rank != w.rank || f.Seq != w.seq || (w.missing != "" && fmt.Sprint(f.Missing) != w.missing) || !strings.Contains(f.Evidence, w.evidence) {
					t.Errorf("finding %d = %v rank %d #%d missing %v: %s\nwant %v rank %d #%d missing %s containing %q", i, f.Kind, f.Rank, f.Seq, f.Missing, f.Evidence, w.kind, w.rank, w.seq, w.missing, w.evidence)
				}
			}
		})
	}
}

// TestHangVerdict: the pickled 4-rank hang names rank 3, which never entered all_reduce #5, as the
// culprit, with the confidence of a root (it waits in nothing the dumps recorded).
func TestHangVerdict(t *testing.T) {
	fs := verdicts(t, "testdata/hang")
	if len(fs) != 1 {
		t.Fatalf("%d findings; want 1", len(fs))
	}
	f := fs[0]
	if f.Kind != diagnosis.Hang || f.Rank != 3 || f.Seq != 5 || f.Comm != 1 || f.Confidence != 1 || f.MissingN != 1 ||
		!strings.Contains(f.Evidence, "ranks 0, 1, 2 entered it (0, 1, 2 waiting in it, not completed); rank 3 never entered it") {
		t.Errorf("finding %s (rank %d #%d comm %d confidence %.2f); want rank 3 at all_reduce #5 on comm 1", f.String(), f.Rank, f.Seq, f.Comm, f.Confidence)
	}
}

// TestProcessGroupsListed: the analysis lists each process group of the dumps as a communicator,
// with its name, its size and the ranks whose dump names it; a rank without a dump is unheard.
func TestProcessGroupsListed(t *testing.T) {
	dir := writeDumps(t, map[string][2]string{"0": {"default_pg", "[0, 1, 2]"}, "1": {"tp", "[0, 1]"}},
		map[int][]op{0: {ar(1, "")}, 1: {ar(1, "")}})
	im, err := ReadFiles([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := analysis.New(timeline.Meta{Backend: Format, Devices: im.Devices})
	for i := range im.Events {
		a.Emit(&im.Events[i])
	}
	var got []string
	for _, c := range a.Result(im.Strings).Communicators {
		got = append(got, fmt.Sprintf("%s: %d ranks, members %v, unheard %d", c.Name, c.Ranks, c.Members, c.Unheard))
	}
	want := []string{"process group 0 (default_pg): 3 ranks, members [0 1], unheard 1", "process group 1 (tp): 2 ranks, members [0 1], unheard 0"}
	if !slices.Equal(got, want) {
		t.Errorf("communicators %q; want %q", got, want)
	}
}
