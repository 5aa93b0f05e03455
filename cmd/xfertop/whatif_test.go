package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/whatif"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata")

// The what-if report of the small HTA trace with every kernel halved, as people read it: the
// measured ops (A) against the prediction (B), the method and graph said above, critical-path
// rows, the noise floor and the verdict.
func TestWhatIfGolden(t *testing.T) {
	code, out, errs := runCLI(t, "whatif", "--headless", filepath.Join("testdata", "hta_small.json"), "--scale-kernel", "*=0.5")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	golden := filepath.Join("testdata", "whatif_hta_small.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if out != string(want) {
		t.Errorf("whatif report differs from %s (go test -update rewrites it):\n%s", golden, out)
	}
}

// A recording of the engine replayed unchanged reproduces its mean step time within 5% with its
// collectives re-timed by the NCCL model on its own topology; forcing the ring algorithm re-times
// them again and says so; the JSON carries the verdict and the noise floor.
func TestWhatIfRecording(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "moe.xfr")
	if code, _, errs := runCLI(t, "run", "--headless", "--scenario", "moe-alltoall", "--steps", "4", "--record", rec); code != exitOK {
		t.Fatal(errs)
	}
	code, out, errs := runCLI(t, "whatif", "--json", rec, "--comm", "algo=ring")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var c report.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(c.Notes, "\n")
	if !strings.Contains(notes, "re-timed by the NCCL model") || strings.Contains(notes, "collectives: 0 re-timed") {
		t.Errorf("notes do not say the collectives were re-timed:\n%s", notes)
	}
	if c.NoiseFloorPct == nil || *c.NoiseFloorPct > 5 || c.Verdict == "" {
		t.Errorf("noise floor %v (the unchanged replay's error is in it: want ≤ 5%%), verdict %q", c.NoiseFloorPct, c.Verdict)
	}
	if !strings.Contains(c.B, "algo=Ring") {
		t.Errorf("B = %q; want the change named", c.B)
	}
}

// Bad what-if flags are usage errors that name the flag.
func TestWhatIfUsage(t *testing.T) {
	trace := filepath.Join("testdata", "hta_small.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"whatif"}, "give the trace"},
		{[]string{"whatif", trace, "--hosts", "2"}, "--hosts 2 needs --topology"},
		{[]string{"whatif", trace, "--comm", "algo=foo"}, `--comm "algo=foo"`},
		{[]string{"whatif", trace, "--scale-kernel", "gemm=-1"}, "scale-kernel"},
		{[]string{"whatif", trace, "--set", "gpus=2"}, "--set gpus: not a what-if knob"},
		{[]string{"whatif", trace, "--scale-kernel", "volta_*=0.5"}, `no kernel's name contains "volta_*"`},
		{[]string{"whatif", trace, "--topology", "nosuch"}, "--topology nosuch"},
	} {
		code, _, errs := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d naming %q", tc.args, code, errs, exitUsage, tc.want)
		}
	}
}

// The compare view marks ops by their index among the events it was given: A's in node order, B's
// in the replay's start order.
func TestCriticalOps(t *testing.T) {
	paths := []depgraph.Path{{Nodes: []int32{2, 0}}}
	if got := criticalOps(paths, nil); len(got) != 2 || !got[2] || !got[0] {
		t.Errorf("A: %v; want {0, 2}", got)
	}
	if got := criticalOps(paths, []int32{3, 2, 1, 0}); len(got) != 2 || !got[1] || !got[3] {
		t.Errorf("B: %v; want {1, 3}", got)
	}
}

// --kernels-from takes each kernel's duration from another trace of the workload: the small HTA
// trace against a copy whose last step's kernel (late) ran five times as long predicts a longer
// critical path (the first step, where a slower kernel would only push the next step's start, is
// not in the mean), and
// says how many kernels it scaled; against itself it changes nothing.
func TestWhatIfKernelsFrom(t *testing.T) {
	src := filepath.Join("testdata", "hta_small.json")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	slow := strings.Replace(string(b), `"name": "late", "pid": 0, "tid": 7, "ts": 250, "dur": 10`, `"name": "late", "pid": 0, "tid": 7, "ts": 250, "dur": 50`, 1)
	if slow == string(b) {
		t.Fatal("the test trace changed: late not found")
	}
	other := filepath.Join(t.TempDir(), "slow.json")
	if err := os.WriteFile(other, []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from   string
		longer bool
		note   string
	}{{other, true, "kernels scaled: 7 compute, 1 NCCL"}, {src, false, "kernels scaled: 7 compute, 1 NCCL"}} {
		code, out, errs := runCLI(t, "whatif", "--json", src, "--kernels-from", tc.from)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var c report.Comparison
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(c.Notes, "\n"), tc.note) {
			t.Errorf("--kernels-from %s: notes %q; want %q", tc.from, c.Notes, tc.note)
		}
		for _, r := range c.Rows {
			if r.Name == "length per step" && (*r.B > *r.A) != tc.longer {
				t.Errorf("--kernels-from %s: critical path %v → %v; want longer: %v", tc.from, *r.A, *r.B, tc.longer)
			}
		}
	}
}

// analyze --critical-path adds each step's mean critical path to the report, its categories
// summing to its length; without the flag the report has none.
func TestAnalyzeCriticalPath(t *testing.T) {
	trace := filepath.Join("testdata", "hta_small.json")
	code, out, errs := runCLI(t, "analyze", "--json", "--critical-path", trace)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	p := r.CriticalPath
	if p == nil || p.Steps != 2 || !p.FirstLeft {
		t.Fatalf("critical path %+v; want the mean of the 2 steps after the first", p)
	}
	sum := 0.0
	for _, v := range p.ByCategory {
		sum += v
	}
	if sum != p.StepNs || p.ByCategory["compute"] != 10000 {
		t.Errorf("categories %v sum to %v; want %v, 10 µs of compute", p.ByCategory, sum, p.StepNs)
	}
	_, out, _ = runCLI(t, "analyze", "--json", trace)
	if strings.Contains(out, "critical_path") {
		t.Error("a report without --critical-path has one")
	}
	_, out, _ = runCLI(t, "analyze", "--critical-path", trace)
	if !strings.Contains(out, "Critical path: 100 µs per step (mean of 2, the first step left out): compute 10.0 µs") {
		t.Errorf("text report:\n%s", out)
	}
}

// A trace without steps gives the compare view one step in each run's events, the trace's span
// as measured and as replayed, so that its timelines show.
func TestWhatIfWholeTraceStep(t *testing.T) {
	s := timeline.NewStrings()
	evs := []timeline.Event{
		{Kind: timeline.KindKernel, Device: 0, Peer: timeline.NoDevice, Stream: 1, Start: 0, End: 10_000, Label: s.ID("gemm")},
		{Kind: timeline.KindKernel, Device: 0, Peer: timeline.NoDevice, Stream: 1, Start: 10_000, End: 30_000, Label: s.ID("relu")},
	}
	h := &importers.Header{Strings: s, Meta: timeline.Meta{Devices: 1}}
	r := newReplayer(h.Meta, whatif.StreamParams{}, whatif.Options{Scale: map[string]float64{"gemm": 2}}, "b", true)
	if err := r.Begin(h); err != nil {
		t.Fatal(err)
	}
	if err := r.Events(evs); err != nil {
		t.Fatal(err)
	}
	run, err := r.finish()
	if err != nil {
		t.Fatal(err)
	}
	whatifComparison(run, h, "t", "b", "")
	wins := run.wins
	for i, want := range [2][2]int64{{0, 30_000}, {0, 40_000}} {
		var steps [][2]int64
		snap := wins[i].Snapshot()
		for _, c := range snap.Chunks {
			for _, e := range c {
				if e.Kind == timeline.KindStep {
					steps = append(steps, [2]int64{e.Start, e.End})
				}
			}
		}
		if len(steps) != 1 || steps[0] != want {
			t.Errorf("run %d: steps %v; want one, %v", i, steps, want)
		}
	}
}

// --critical-path alone asks for the binding chain, =hta for HTA's definition; anything else is
// refused with the values it takes.
func TestCriticalFlag(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"true", "binding", ""}, {"binding", "binding", ""}, {"hta", "hta", ""}, {"false", "", ""},
		{"HTA2", "", "want hta, binding"},
	} {
		var c criticalFlag
		err := c.Set(tc.in)
		if string(c) != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Set(%q) = %q, %v; want %q, %q", tc.in, c, err, tc.want, tc.err)
		}
	}
}

// A value --critical-path does not take is a usage error that lists the values, not the flag
// package's "invalid boolean value" (the flag may stand alone, as a boolean does, but is not one).
func TestCriticalFlagUsage(t *testing.T) {
	code, _, errs := runCLI(t, "analyze", "--critical-path=foo", filepath.Join("testdata", "hta_small.json"))
	if code != exitUsage {
		t.Errorf("exit %d; want %d (usage)", code, exitUsage)
	}
	if !strings.Contains(errs, `invalid value "foo" for --critical-path: give binding`) || !strings.Contains(errs, "or hta") || strings.Contains(errs, "boolean") {
		t.Errorf("stderr %q; want the values --critical-path takes, and no mention of a boolean", errs)
	}
}
