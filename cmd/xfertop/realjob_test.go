package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// realJob holds what a real job wrote on a GPU (an H200, torch 2.11, NCCL 2.28.9; its README says
// how): per step (torch: one rank; torch2: two ranks as two NCCL hosts on the one GPU), what
// `xfertop attach --headless --json` reported live, the plugin's per-rank .xfr recordings, and
// the Kineto traces of the same 3 iterations.
var realJob = filepath.Join("..", "..", "importers", "testdata", "realjob", "h200-torch2.11-nccl2.28.9")

// realReport is what these tests compare of a report: its collectives' rows, its transfers by
// kind and size, and what says the job ran whole.
type realReport struct {
	Devices     int   `json:"devices"`
	Events      int64 `json:"events"`
	Dropped     int64 `json:"dropped_events"`
	Incomplete  int64 `json:"collectives_incomplete"`
	AlertCount  int64 `json:"alert_count"`
	Collectives []struct {
		Op        string `json:"op"`
		Ranks     *int   `json:"ranks"`
		SizeClass *int64 `json:"size_class"`
		Bytes     *int64 `json:"bytes"`
		Count     int64  `json:"count"`
	} `json:"collectives"`
	Transfers *struct {
		BySize []struct {
			Kind      string `json:"kind"`
			SizeClass int64  `json:"size_class"`
			Count     int64  `json:"count"`
			Bytes     int64  `json:"bytes"`
		} `json:"by_size"`
	} `json:"transfers"`
	Findings []json.RawMessage `json:"findings"`
	Steps    struct {
		Count int64 `json:"count"`
	} `json:"steps"`
	Links struct {
		Devices json.RawMessage `json:"devices"`
	} `json:"links"`
}

// rows is a report's collectives, "op ranks size_class: count × bytes" (— for what is unknown),
// and its transfers by size, "kind size_class: count, bytes"; each counted.
func (r *realReport) rows() (colls, transfers map[string]int) {
	colls, transfers = map[string]int{}, map[string]int{}
	opt := func(p any) string {
		switch v := p.(type) {
		case *int:
			if v != nil {
				return fmt.Sprint(*v)
			}
		case *int64:
			if v != nil {
				return fmt.Sprint(*v)
			}
		}
		return "—"
	}
	for _, c := range r.Collectives {
		colls[fmt.Sprintf("%s %s %s: %d × %s", c.Op, opt(c.Ranks), opt(c.SizeClass), c.Count, opt(c.Bytes))]++
	}
	if r.Transfers != nil {
		for _, s := range r.Transfers.BySize {
			transfers[fmt.Sprintf("%s %d: %d, %d", s.Kind, s.SizeClass, s.Count, s.Bytes)]++
		}
	}
	return colls, transfers
}

func realAnalyze(t *testing.T, files ...string) *realReport {
	t.Helper()
	args := []string{"analyze", "--json"}
	for _, f := range files {
		args = append(args, filepath.Join(realJob, f))
	}
	code, out, errs := runCLI(t, args...)
	if code != exitOK {
		t.Fatalf("analyze %v: exit %d: %s", files, code, errs)
	}
	var r realReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func realAttach(t *testing.T, step string) *realReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realJob, step, "attach.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r realReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestRealJobRecordingsAgainstAttach: the plugin's per-rank recordings of a real job, merged by
// analyze, give the report attach gave live for it: the same events, devices, collectives (op,
// ranks, size class, count, bytes) and transfers by size; nothing dropped, incomplete or alerted.
func TestRealJobRecordingsAgainstAttach(t *testing.T) {
	for _, c := range []struct {
		step string
		xfr  []string
	}{
		{"torch", []string{"xfr/rank0-vm-1150.xfr"}},
		{"torch2", []string{"xfr/rank0-vm-1299.xfr", "xfr/rank1-vm-1298.xfr"}},
	} {
		t.Run(c.step, func(t *testing.T) {
			live := realAttach(t, c.step)
			var files []string
			for _, f := range c.xfr {
				files = append(files, filepath.Join(c.step, f))
			}
			rec := realAnalyze(t, files...)
			if rec.Devices != live.Devices || rec.Events != live.Events {
				t.Errorf("recordings: %d devices, %d events; attach: %d, %d", rec.Devices, rec.Events, live.Devices, live.Events)
			}
			recColls, recXfers := rec.rows()
			liveColls, liveXfers := live.rows()
			if !maps.Equal(recColls, liveColls) {
				t.Errorf("collectives: recordings %v; attach %v", recColls, liveColls)
			}
			if !maps.Equal(recXfers, liveXfers) {
				t.Errorf("transfers: recordings %v; attach %v", recXfers, liveXfers)
			}
			// The merge places each rank on the host it named, as attach did live (one host map):
			// each device's bytes on the same links. Before, the merged recordings' sends between
			// the two ranks had no known host (unattributed, NIC unknown) where attach had them on
			// NVLink.
			var recLinks, liveLinks bytes.Buffer
			if err := errors.Join(json.Compact(&recLinks, rec.Links.Devices), json.Compact(&liveLinks, live.Links.Devices)); err != nil {
				t.Fatal(err)
			}
			if recLinks.String() != liveLinks.String() {
				t.Errorf("links: recordings %s; attach %s", &recLinks, &liveLinks)
			}
			for _, r := range []*realReport{rec, live} {
				if r.Dropped != 0 || r.Incomplete != 0 || r.AlertCount != 0 || len(r.Findings) != 0 {
					t.Errorf("dropped %d, incomplete %d, alerts %d, findings %d; want none in a job that ran whole",
						r.Dropped, r.Incomplete, r.AlertCount, len(r.Findings))
				}
			}
		})
	}
}

// TestRealJobKinetoAgainstAttach: the Kineto traces of the two-rank job, analysed, hold the
// collectives attach reported (all-reduces, all-gathers, broadcasts: op, ranks, size class, count,
// bytes), and their sends and receives as Kineto sees them, told apart from attach's in the rows
// below. Kineto records NCCL's kernels, one per launch, named by NCCL (and sized from the args
// torch puts on them); the plugin records NCCL's tasks, one per peer. So:
//   - all_to_all_single (NCCL: an ncclAlltoAll of 2 ranks, expanded into a send and a receive per
//     peer) is one ncclDevKernel_SendRecv per rank and call, which torch names all_to_allv: an
//     all_to_all of 2 ranks, 32 KiB (the whole buffer, torch's "In msg nelems"), 3 instances;
//     attach: 12 sends and 12 receives of 16 KiB.
//   - batch_isend_irecv is one ncclDevKernel_SendRecv per rank and call, to which torch attaches
//     no args: a send_recv of unknown size and ranks, not matched across ranks (6); attach: 6
//     sends and 6 receives of 32 KiB.
//   - Kineto's only transfers are NCCL's own: 8 host-to-device copies of 152 bytes per rank,
//     inside the first iteration's NCCL calls (its setup on first use), which the plugin does not
//     see.
//
// And the steps: ProfilerStep#0-2, 3 (each also on the GPU's timeline, counted once).
func TestRealJobKinetoAgainstAttach(t *testing.T) {
	live := realAttach(t, "torch2")
	kin := realAnalyze(t, "torch2/kineto-rank0.json.gz", "torch2/kineto-rank1.json.gz")
	if kin.Devices != live.Devices {
		t.Errorf("Kineto: %d devices; attach %d", kin.Devices, live.Devices)
	}
	kinColls, kinXfers := kin.rows()
	liveColls, liveXfers := live.rows()
	kineto := map[string]int{"all_to_all 2 32768: 3 × 32768": 1, "send_recv — —: 6 × —": 1}
	for k, n := range liveColls {
		kineto[k] += n
	}
	if !maps.Equal(kinColls, kineto) {
		t.Errorf("collectives: Kineto %v\nwant attach's %v, Kineto's all_to_all and its send_recv", kinColls, liveColls)
	}
	wantLive := map[string]int{"send 16384: 12, 196608": 1, "recv 16384: 12, 196608": 1, "send 32768: 6, 196608": 1, "recv 32768: 6, 196608": 1}
	if !maps.Equal(liveXfers, wantLive) {
		t.Errorf("attach's transfers %v; want %v", liveXfers, wantLive)
	}
	if want := map[string]int{"h2d 256: 16, 2432": 1}; !maps.Equal(kinXfers, want) {
		t.Errorf("Kineto's transfers %v; want %v", slices.Collect(maps.Keys(kinXfers)), want)
	}
	if kin.Steps.Count != 3 || kin.Incomplete != 0 || len(kin.Findings) != 0 {
		t.Errorf("Kineto: %d steps, %d incomplete, %d findings; want 3, 0, 0", kin.Steps.Count, kin.Incomplete, len(kin.Findings))
	}
}

// TestRealJobOneRankKineto: on one rank NCCL ran every collective as a local copy
// (ncclLaunchOneRank) and the plugin saw only the batch_isend_irecv to itself; the rank's Kineto
// trace shows why: no NCCL kernel but the batch's SendRecv (3, no args: unknown size), and a
// device-to-device copy for each call that was not in place: the all-gathers' (8 and 128 KiB)
// and all_to_all_single's (16 KiB, its whole buffer), 3 each; the in-place all-reduces and
// broadcasts copy nothing.
func TestRealJobOneRankKineto(t *testing.T) {
	live := realAttach(t, "torch")
	kin := realAnalyze(t, "torch/kineto-rank0.json.gz")
	colls, xfers := kin.rows()
	if want := map[string]int{"send_recv — —: 3 × —": 1}; !maps.Equal(colls, want) {
		t.Errorf("Kineto's collectives %v; want %v", colls, want)
	}
	if want := map[string]int{"d2d 8192: 3, 24576": 1, "d2d 131072: 3, 393216": 1, "d2d 16384: 3, 49152": 1}; !maps.Equal(xfers, want) {
		t.Errorf("Kineto's transfers %v; want %v", xfers, want)
	}
	liveColls, liveXfers := live.rows()
	if want := map[string]int{"send 32768: 3, 98304": 1, "recv 32768: 3, 98304": 1}; len(liveColls) != 0 || !maps.Equal(liveXfers, want) {
		t.Errorf("attach: collectives %v, transfers %v; want none and %v", liveColls, liveXfers, want)
	}
	if kin.Steps.Count != 3 {
		t.Errorf("Kineto: %d steps; want 3", kin.Steps.Count)
	}
}
