package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/whatif/synth"
)

// record runs scenario with args for steps steps and records it in a temporary folder.
func record(t *testing.T, scenario string, steps int, args ...string) string {
	t.Helper()
	rec := filepath.Join(t.TempDir(), scenario+".xfr")
	a := append([]string{"run", "--headless", "--scenario", scenario, "--steps", strconv.Itoa(steps), "--record", rec}, args...)
	if code, _, errs := runCLI(t, a...); code != exitOK {
		t.Fatalf("%v: exit %d: %s", a, code, errs)
	}
	return rec
}

// whatifJSON runs whatif --json with args and decodes the comparison.
func whatifJSON(t *testing.T, args ...string) report.Comparison {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"whatif", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("whatif %v: exit %d: %s", args, code, errs)
	}
	var c report.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// rowOf is the comparison's row named name ("" and false when it has none).
func rowOf(c report.Comparison, name string) (report.Row, bool) {
	for _, r := range c.Rows {
		if r.Name == name {
			return r, true
		}
	}
	return report.Row{}, false
}

// The unchanged replay, whose error is the noise floor, runs on the recording's own topology: with
// --topology l40sx8 (PCIe only) the overlap scenario's NVLS all-reduces slow down, and the noise
// floor stays the replay's own error on h100x8 (near 0), not that very slow-down.
func TestWhatIfTopologyNoiseFloorOnOwnTopology(t *testing.T) {
	rec := record(t, "overlap", 4)
	c := whatifJSON(t, rec, "--topology", "l40sx8")
	step, ok := rowOf(c, "step time mean")
	if !ok || step.DiffPct == nil || c.NoiseFloorPct == nil {
		t.Fatalf("no step time change or noise floor: %+v", c)
	}
	if *c.NoiseFloorPct > 1.5 || math.Abs(*c.NoiseFloorPct-math.Abs(*step.DiffPct)) < 0.05 {
		t.Errorf("noise floor ±%.2f%% (%s) with a step change of %+.2f%%: want the unchanged replay's error on h100x8, not the change", *c.NoiseFloorPct, c.NoiseFloorWhy, *step.DiffPct)
	}
}

// A recording made with NCCL forced to the ring replays, unchanged, with the ring: B's
// collectives are labelled as A's, and the unchanged replay's error stays near 0.
func TestWhatIfKeepsRecordedAlgorithm(t *testing.T) {
	rec := record(t, "allreduce-sweep", 2, "--set", "nccl_algo=ring")
	c := whatifJSON(t, rec)
	for _, r := range c.Rows {
		if strings.Contains(r.Name, "→") || strings.Contains(r.Name, "NVLS") {
			t.Errorf("row %q: the replay changed the recorded algorithm", r.Name)
		}
	}
	if c.NoiseFloorPct == nil || *c.NoiseFloorPct > 1.5 {
		t.Errorf("noise floor %s; want the unchanged replay's error near 0", c.NoiseFloorWhy)
	}
}

// A's figures are the analysis layer's, as analyze prints them: on llm-train, whose first step
// creates its communicators (setup, not step time), A's step time mean, p50 and p99 equal
// analyze's to the nanosecond, and the unchanged replay (B) matches them.
func TestWhatIfMeasuredIsAnalyze(t *testing.T) {
	rec := record(t, "llm-train", 3)
	code, out, errs := runCLI(t, "analyze", "--json", rec)
	if code != exitOK {
		t.Fatalf("analyze: exit %d: %s", code, errs)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Steps.SetupNs == nil || *r.Steps.SetupNs == 0 {
		t.Fatal("llm-train's first step has no communicator setup: the test no longer tests it")
	}
	c := whatifJSON(t, rec)
	for _, w := range []struct {
		row  string
		want *int64
	}{{"step time mean", r.Steps.MeanNs}, {"step time p50", r.Steps.P50Ns}, {"step time p99", r.Steps.P99Ns}} {
		row, ok := rowOf(c, w.row)
		if !ok || row.A == nil || w.want == nil || int64(*row.A) != *w.want {
			t.Errorf("%s: whatif's A %s; analyze %s", w.row, ptrStr(row.A), ptrStr(w.want))
			continue
		}
		if d := math.Abs(*row.B-*row.A) / *row.A; d > 0.001 {
			t.Errorf("%s: unchanged B %v, A %v", w.row, *row.B, *row.A)
		}
	}
}

// ptrStr is *p, or "nil".
func ptrStr[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// A recording made with --hosts names its topology as scaled ("h100x8x2-4hosts"): whatif takes
// that topology for its collectives, and --hosts scales it again from the built-in one.
func TestWhatIfScaledRecordingTopology(t *testing.T) {
	for _, c := range []struct {
		meta      timeline.Meta
		wantName  string
		wantHosts int
	}{
		{timeline.Meta{Topology: "h100x8x2-4hosts", Devices: 32}, "h100x8x2-4hosts", 4},
		{timeline.Meta{Topology: "h100x8x2", Devices: 16}, "h100x8x2", 2},
		{timeline.Meta{Topology: "h100x8x2-4hosts", Devices: 16}, "", 0}, // not the recording's devices
		{timeline.Meta{Topology: "nosuch-4hosts"}, "", 0},
		{timeline.Meta{Topology: "h100x8x2-hosts"}, "", 0},
	} {
		if got := recordedTopology(c.meta); got.Name != c.wantName || got.Hosts != c.wantHosts {
			t.Errorf("recordedTopology(%q, %d devices) = %q, %d hosts; want %q, %d", c.meta.Topology, c.meta.Devices, got.Name, got.Hosts, c.wantName, c.wantHosts)
		}
	}
	rec := record(t, "llm-train", 2, "--hosts", "4", "--topology", "h100x8x2")
	for _, args := range [][]string{{rec}, {rec, "--hosts", "8"}} {
		c := whatifJSON(t, args...)
		notes := strings.Join(c.Notes, "\n")
		if strings.Contains(notes, "no topology") || !strings.Contains(notes, "re-timed by the NCCL model") || strings.Contains(notes, "collectives: 0 re-timed") {
			t.Errorf("%v: the recording's topology was not used:\n%s", args, notes)
		}
	}
}

// With nothing changed, no row is called better or worse, though the NCCL model times the overlap
// scenario's grouped NVLS all-reduces apart from their measurement (each such row gets the
// unchanged replay's change as its own floor), and B says nothing changed.
func TestWhatIfUnchangedNoVerdicts(t *testing.T) {
	c := whatifJSON(t, record(t, "overlap", 4))
	if c.B != "predicted: nothing changed" {
		t.Errorf("B = %q; want nothing changed (the recording's own topology is not a change)", c.B)
	}
	for _, r := range c.Rows {
		if r.Better != nil {
			t.Errorf("row %q: %v → %v called better: %v with nothing changed", r.Name, ptrStr(r.A), ptrStr(r.B), *r.Better)
		}
	}
}

// With --hosts, a collective over every rank of the trace is labelled with the scaled job's rank
// count in B: an all-gather over the 16 GPUs of h100x8x2 is ×16 → ×32 on 4 hosts.
func TestWhatIfHostsRowLabels(t *testing.T) {
	rec := record(t, "allreduce-sweep", 2, "--topology", "h100x8x2", "--set", "op=all_gather", "--set", "min_bytes=512MiB")
	c := whatifJSON(t, rec, "--hosts", "4")
	found := false
	for _, r := range c.Rows {
		if r.Section != "collectives" {
			continue
		}
		if !strings.Contains(r.Name, "all_gather ×16 → ×32 ") {
			t.Errorf("row %q: want the scaled job's ranks, ×16 → ×32", r.Name)
		}
		found = true
	}
	if !found {
		t.Error("no collective row")
	}
}

// A change that re-times no op says so in the verdict, not "no difference": more hosts for a
// pipeline whose only cross-host traffic is sends and receives (their GPUs' path is the same on
// the larger machine). A change that reaches ops gets a verdict on them: a faster NIC re-times
// those sends (it said "reaches no op" while sends kept their measured time whatever the change).
func TestWhatIfChangeReachesNoOp(t *testing.T) {
	rec := record(t, "pipeline", 3, "--topology", "h100x8x2")
	fast := filepath.Join(t.TempDir(), "fastnic.yaml")
	if err := os.WriteFile(fast, []byte("base: h100x8x2\nnics:\n  bandwidth: 800Gb/s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const none = "no prediction: the change reaches no op of this trace"
	for _, c := range []struct {
		args    []string
		nothing bool
	}{
		{[]string{"--topology", fast}, false},
		{[]string{"--hosts", "4"}, true},
		{[]string{"--scale-kernel", "*=0.5"}, false},
	} {
		cmpd := whatifJSON(t, append([]string{rec}, c.args...)...)
		if got := strings.HasPrefix(cmpd.Verdict, none); got != c.nothing {
			t.Errorf("%v: verdict %q; want it to say the change reaches no op: %v", c.args, cmpd.Verdict, c.nothing)
		}
		if c.nothing && !strings.Contains(cmpd.Verdict, "kept at their measured time (sends and receives: the change does not touch their path)") {
			t.Errorf("%v: verdict %q does not say what kept its time", c.args, cmpd.Verdict)
		}
	}
}

// The steps line counts the job's steps, not its ranks' marks: two ranks marking 12 steps each
// are 12 steps (24 marks on 2 ranks); one rank's 12 steps are 12 steps.
func TestWhatIfStepsCountsJobSteps(t *testing.T) {
	for _, c := range []struct {
		sh   synth.Shape
		want string
	}{
		{synth.Shape{Ranks: 2, Steps: 12, Ops: 32, Seed: 1}, "steps: 12 (24 marks on 2 ranks) from the trace's step markers"},
		{synth.Shape{Ranks: 1, Steps: 12, Ops: 32, Seed: 1}, "steps: 12 from the trace's step markers"},
	} {
		cmpd := whatifJSON(t, append(writeSynthFiles(t, t.TempDir(), c.sh), "--scale-kernel", "*=0.5")...)
		found := false
		for _, n := range cmpd.Notes {
			found = found || strings.HasPrefix(n, c.want)
		}
		if !found {
			t.Errorf("%d ranks: no note begins %q: %q", c.sh.Ranks, c.want, cmpd.Notes)
		}
	}
}
