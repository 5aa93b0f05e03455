package whatif

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/whatif/synth"
)

// events is a sink that keeps what it is given.
type events []timeline.Event

func (e *events) Emit(ev *timeline.Event) { *e = append(*e, *ev) }

// streamed replays evs window by window, given in batches of batch events, as a command does
// after its first pass (Plan).
func streamed(t *testing.T, evs []timeline.Event, names depgraph.Names, o Options, batch int) (*Streamed, [3]events) {
	t.Helper()
	var plan Plan
	plan.Events(evs)
	p := plan.Params()
	p.KeepPathNodes = true
	var out [3]events
	s := NewStream(names, o, p, Outputs{Measured: &out[0], Baseline: &out[1], Changed: &out[2]})
	for b := evs; len(b) > 0; {
		n := min(batch, len(b))
		if err := s.Events(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
	res, err := s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Cuts) > 0 {
		t.Logf("%d windows", len(p.Cuts)+1)
	}
	return res, out
}

// sameAsRun checks that the streamed what-if of evs says exactly what Run's whole graph says:
// the same ops in the same order, measured and replayed, the same critical paths per step, the
// same counts.
func sameAsRun(t *testing.T, evs []timeline.Event, names depgraph.Names, o Options) {
	t.Helper()
	w, err := Run(evs, names, o)
	if err != nil {
		t.Fatal(err)
	}
	s, out := streamed(t, evs, names, o, 4096)
	measured := make(events, len(w.Graph.Nodes))
	for n := range w.Graph.Nodes {
		measured[n] = *w.Graph.Event(int32(n))
	}
	for i, want := range []events{measured, w.Baseline.Events, w.Changed.Events} {
		name := [3]string{"measured", "baseline", "changed"}[i]
		if len(out[i]) != len(want) {
			t.Fatalf("%s: %d ops streamed; the whole graph has %d", name, len(out[i]), len(want))
		}
		for j := range want {
			if out[i][j] != want[j] {
				t.Fatalf("%s op %d:\nstreamed %+v\nwhole    %+v", name, j, out[i][j], want[j])
			}
		}
	}
	unchanged := w.Graph.CriticalPathsBound(w.Baseline.Times, w.Baseline.Weight, w.Baseline.Bound)
	for i, c := range []struct {
		name      string
		got, want []depgraph.Path
	}{{"measured", s.Before, w.Before}, {"baseline", s.Unchanged, unchanged}, {"changed", s.After, w.After}} {
		if len(c.got) != len(c.want) {
			t.Fatalf("%s: %d critical paths streamed; the whole graph has %d", c.name, len(c.got), len(c.want))
		}
		for j := range c.want {
			if !reflect.DeepEqual(c.got[j], c.want[j]) {
				t.Fatalf("%s critical path %d (%d):\nstreamed %+v\nwhole    %+v", c.name, j, i, c.got[j], c.want[j])
			}
		}
	}
	if s.Stats != w.Graph.Stats {
		t.Errorf("stats:\nstreamed %+v\nwhole    %+v", s.Stats, w.Graph.Stats)
	}
	for i, r := range [][2]*Result{{s.Baseline, w.Baseline}, {s.Changed, w.Changed}} {
		got, want := r[0], r[1]
		if got.Retimed != want.Retimed || got.Scaled != want.Scaled || got.ScaledComm != want.ScaledComm ||
			!reflect.DeepEqual(got.Kept, want.Kept) || !reflect.DeepEqual(got.NotForced, want.NotForced) {
			t.Errorf("replay %d tallies: streamed %d %d %d %v %v; whole %d %d %d %v %v", i, got.Retimed, got.Scaled, got.ScaledComm, got.Kept, got.NotForced,
				want.Retimed, want.Scaled, want.ScaledComm, want.Kept, want.NotForced)
		}
	}
}

// readTrace imports paths whole.
func readTrace(t *testing.T, paths ...string) *collect {
	t.Helper()
	c := &collect{}
	if _, err := importers.Stream(paths, importers.Options{}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// On every real trace, and on both ranks of the sampled job, the what-if replayed step by step
// says exactly what the whole trace's graph says, unchanged and with every kernel halved.
func TestStreamMatchesRunRealTraces(t *testing.T) {
	for _, names := range [][]string{
		{"kineto/resnet50_v100_worker0.pt.trace.json.gz"},
		{"kineto/sampled_rank-0.json.gz"},
		{"kineto/sampled_rank-0.json.gz", "kineto/sampled_rank-1.json.gz"},
		{"nsys/mfu_2gpu_after.sqlite"},
		{"nsys/mock.sqlite"},
	} {
		var paths []string
		for _, n := range names {
			paths = append(paths, filepath.Join(sharedData, n))
		}
		t.Run(filepath.Base(names[len(names)-1])+"-"+string(rune('0'+len(names))), func(t *testing.T) {
			for _, p := range paths {
				if _, err := os.Stat(p); err != nil {
					t.Skipf("%s: %v (the project's real traces are not here)", p, err)
				}
			}
			c := readTrace(t, paths...)
			sameAsRun(t, c.evs, c.h.Strings, Options{})
			sameAsRun(t, c.evs, c.h.Strings, Options{Scale: map[string]float64{"*": 0.5}})
			// Kernels ×3: the GPU falls behind the host, and each replayed step waits for its
			// rank's previous one to end (serializeSteps), from window to window.
			sameAsRun(t, c.evs, c.h.Strings, Options{Scale: map[string]float64{"*": 3}})
		})
	}
}

// On synthetic jobs of several ranks and steps whose GPUs run behind their hosts (a step's
// kernels run into the next step), with all-reduces matched across ranks and re-timed by the
// NCCL model, the step-by-step replay says exactly what the whole graph's does.
func TestStreamMatchesRunSynthetic(t *testing.T) {
	topo, err := topology.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range []synth.Shape{{Ranks: 1, Steps: 6, Ops: 40, Seed: 1}, {Ranks: 2, Steps: 8, Ops: 64, Seed: 2}, {Ranks: 4, Steps: 5, Ops: 33, Seed: 3}, {Ranks: 2, Steps: 30, Ops: 200, Seed: 1},
		{Ranks: 1, Steps: 12, Ops: 64, Seed: 4, Unmarked: true}, {Ranks: 2, Steps: 10, Ops: 48, Seed: 5, Unmarked: true}} {
		t.Run("", func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			var ws []io.Writer
			var bufs []*bytes.Buffer
			for r := range sh.Ranks {
				b := &bytes.Buffer{}
				bufs, ws = append(bufs, b), append(ws, b)
				paths = append(paths, filepath.Join(dir, "rank"+string(rune('0'+r))+".json"))
			}
			if err := synth.Write(ws, sh); err != nil {
				t.Fatal(err)
			}
			for r, p := range paths {
				if err := os.WriteFile(p, bufs[r].Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c := readTrace(t, paths...)
			if len(c.evs) == 0 {
				t.Fatal("no events")
			}
			if steps := countSteps(c.evs); steps < sh.Steps-2 {
				t.Fatalf("%d steps in the trace of %d (inferred: %v)", steps, sh.Steps, sh.Unmarked)
			}
			sameAsRun(t, c.evs, c.h.Strings, Options{})
			sameAsRun(t, c.evs, c.h.Strings, Options{Scale: map[string]float64{"gemm_1": 0.3, "gemm_3": 2}})
			sameAsRun(t, c.evs, c.h.Strings, Options{Topology: topo, TraceDevices: sh.Ranks, Scale: map[string]float64{"*": 0.5}})
			// The unchanged replay on the recorded topology, the change on it with kernels ×3
			// (steps pushed after their rank's previous one) and NCCL forced to Ring.
			sameAsRun(t, c.evs, c.h.Strings, Options{Topology: topo, Recorded: topo, TraceDevices: sh.Ranks, Scale: map[string]float64{"*": 3}, Algo: timeline.AlgoRing})
		})
	}
}

// countSteps counts the steps among evs.
func countSteps(evs []timeline.Event) int {
	n := 0
	for i := range evs {
		if evs[i].Kind == timeline.KindStep {
			n++
		}
	}
	return n
}

// A window holds a step and what the next steps reach back to, not the trace: on a job of 20 steps
// and on one of 200 of the same shape the largest window is about the same (within a step's
// worth): one rank with every kernel halved, two ranks replayed unchanged. (Two ranks with every
// kernel halved are not bounded so: the replay moves one rank's host further and further ahead of
// the other's, and a step's critical path reaches back as far as they drifted: docs/whatif.md.)
func TestStreamWindowBoundedByStep(t *testing.T) {
	for _, ranks := range []int{1, 2} {
		o := Options{Scale: map[string]float64{"*": 0.5}}
		if ranks > 1 {
			o = Options{}
		}
		var most [2]int
		for i, steps := range []int{20, 200} {
			var ws []io.Writer
			var bufs []*bytes.Buffer
			for range ranks {
				b := &bytes.Buffer{}
				bufs, ws = append(bufs, b), append(ws, b)
			}
			if err := synth.Write(ws, synth.Shape{Ranks: ranks, Steps: steps, Ops: 100, Seed: 7}); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var paths []string
			for r, b := range bufs {
				p := filepath.Join(dir, fmt.Sprintf("rank-%d.json", r))
				if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			c := readTrace(t, paths...)
			s, _ := streamed(t, c.evs, c.h.Strings, o, 4096)
			if s.Windows < steps {
				t.Fatalf("%d windows for %d steps", s.Windows, steps)
			}
			most[i] = s.MaxWindow
		}
		// A step is about 2×100 ops a rank.
		if step := 200 * ranks; most[1] > most[0]+step {
			t.Errorf("%d ranks: the largest window holds %d events at 200 steps, %d at 20: more than a step (%d) apart", ranks, most[1], most[0], step)
		}
		t.Logf("%d ranks: largest window %d events at 20 steps, %d at 200", ranks, most[0], most[1])
	}
}

// On the engine's sample recordings, whose events come as they end (not in start order), with
// their collectives re-timed by the NCCL model on their own topology, the step-by-step replay says
// exactly what the whole graph's does, unchanged and with every kernel halved.
func TestStreamMatchesRunRecordings(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "recordings", "samples", "*.xfr"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no sample recordings: %v", err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			if testing.Short() && filepath.Base(p) == "llm-train.xfr" {
				t.Skip("-short: 1,536 collectives over 16 GPUs take seconds")
			}
			c := readTrace(t, p)
			if len(c.evs) == 0 {
				t.Skip("no events")
			}
			o := Options{TraceDevices: c.h.Meta.Devices}
			if topo, err := topology.Builtin(c.h.Meta.Topology); err == nil {
				o.Topology, o.Recorded = topo, topo // the recording's own: its NCCL choices kept
			}
			var plan Plan
			plan.Events(c.evs)
			t.Logf("%d steps, out of start order by up to %d ns", len(plan.Params().Steps), plan.Params().Late)
			sameAsRun(t, c.evs, c.h.Strings, o)
			o.Scale = map[string]float64{"*": 0.5}
			if _, err := Run(c.evs, c.h.Strings, o); errors.Is(err, ErrOption) {
				return // no kernel to halve
			}
			sameAsRun(t, c.evs, c.h.Strings, o)
		})
	}
}
