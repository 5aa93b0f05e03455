package whatif

import (
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

func step(start, end int64) timeline.Event {
	return timeline.Event{Kind: timeline.KindStep, Device: timeline.NoDevice, Peer: timeline.NoDevice, Start: start * us, End: end * us}
}

// A host that runs ahead of a slowed GPU begins the next step before the GPU finished this one:
// with gemm ×10 the first step's kernel runs 3–103 µs while the host begins step 2 at 30. The
// replayed steps do not overlap (step 2 holds the machine from where step 1 ended), and
// each step's critical path is no longer than the step.
func TestReplayStepsDoNotOverlap(t *testing.T) {
	s := timeline.NewStrings()
	evs := []timeline.Event{
		step(0, 30), step(30, 60),
		launch(s, 0, 2, 1), kern(s, "gemm", 0, 7, 3, 13, 1),
		launch(s, 30, 32, 2), kern(s, "gemm", 0, 7, 33, 43, 2),
	}
	w, err := Run(evs, s, Options{Scale: map[string]float64{"gemm": 10}})
	if err != nil {
		t.Fatal(err)
	}
	var steps [][2]int64
	for _, e := range w.Changed.Events {
		if e.Kind == timeline.KindStep {
			steps = append(steps, [2]int64{e.Start, e.End})
		}
	}
	if len(steps) != 2 {
		t.Fatalf("replayed steps %v; want 2", steps)
	}
	if steps[1][0] < steps[0][1] {
		t.Errorf("replayed steps %v overlap", steps)
	}
	// Each step's end keeps the 17 µs it lagged its last kernel by, as measured.
	if steps[0][1] != 120*us || steps[1] != [2]int64{120 * us, 220 * us} {
		t.Errorf("replayed steps %v; want [0 120 µs] [120 µs 220 µs]", steps)
	}
	for i, p := range w.After {
		var sum int64
		for _, v := range p.ByCategory {
			sum += v
		}
		if sum > p.EndNs-p.StartNs || p.StartNs != steps[i][0] {
			t.Errorf("step %d: critical path %d ns from %d; the step is %v", i, sum, p.StartNs, steps[i])
		}
	}
	for i := 1; i < len(w.Changed.Events); i++ {
		if w.Changed.Events[i].Start < w.Changed.Events[i-1].Start {
			t.Fatalf("replayed events out of start order at %d", i)
		}
	}
	sameAsRun(t, evs, s, Options{Scale: map[string]float64{"gemm": 10}}) // a step at a time too
}

// Two ranks' marks of one step (merged per-rank traces: the same step number, nothing saying
// whose each is) run side by side: neither is pushed after the other, and the next step's marks
// start after both ended.
func TestReplayRanksStepsSideBySide(t *testing.T) {
	s := timeline.NewStrings()
	numbered := func(n uint32, start, end int64) timeline.Event {
		e := step(start, end)
		e.Aux = n
		return e
	}
	evs := []timeline.Event{
		numbered(1, 0, 30), numbered(1, 1, 31), numbered(2, 30, 60), numbered(2, 31, 61),
		launch(s, 0, 2, 1), kern(s, "gemm", 0, 7, 3, 13, 1),
	}
	w, err := Run(evs, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got [][2]int64
	for _, e := range w.Changed.Events {
		if e.Kind == timeline.KindStep {
			got = append(got, [2]int64{e.Start / us, e.End / us})
		}
	}
	want := [][2]int64{{0, 30}, {1, 31}, {31, 60}, {31, 61}}
	if len(got) != len(want) {
		t.Fatalf("steps %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("steps %v (µs); want %v", got, want)
			break
		}
	}
	sameAsRun(t, evs, s, Options{}) // a step at a time too
}

// The engine begins a step only once the one before has drained, and issues its ops as it begins
// (no host call is recorded): a step's tail that grows or shrinks moves the next step's ops. Step
// 1 ends with a 40 µs all-reduce-like kernel on stream 8 while stream 7 idles; step 2's kernel on
// stream 7 starts 2 µs (a launch) after step 2 begins. With "tail" ×2 step 1 ends 40 µs later and
// so does everything after it; with ×0.5, 20 µs earlier. Before the step's start bound its
// streams' first ops, step 2's kernel kept its measured wait after the kernel before it on its
// stream and did not move.
func TestReplayEngineStepBoundary(t *testing.T) {
	s := timeline.NewStrings()
	evs := []timeline.Event{
		step(0, 60), step(60, 100),
		kern(s, "gemm", 0, 7, 0, 20, 1), kern(s, "tail", 0, 8, 20, 60, 2),
		kern(s, "gemm", 0, 7, 62, 100, 3),
	}
	for _, tc := range []struct {
		tail      float64
		step2, k3 [2]int64 // step 2 and its kernel, µs
	}{
		{1, [2]int64{60, 100}, [2]int64{62, 100}},
		{2, [2]int64{100, 140}, [2]int64{102, 140}},
		{0.5, [2]int64{40, 80}, [2]int64{42, 80}},
	} {
		o := Options{Scale: map[string]float64{"tail": tc.tail}}
		w, err := Run(evs, s, o)
		if err != nil {
			t.Fatal(err)
		}
		var step2, k3 [2]int64
		for _, e := range w.Changed.Events {
			switch {
			case e.Kind == timeline.KindStep && e.Start > 0:
				step2 = [2]int64{e.Start / us, e.End / us}
			case e.Kind == timeline.KindKernel && e.Op == 3:
				k3 = [2]int64{e.Start / us, e.End / us}
			}
		}
		if step2 != tc.step2 || k3 != tc.k3 {
			t.Errorf("tail ×%g: step 2 %v, its kernel %v (µs); want %v, %v", tc.tail, step2, k3, tc.step2, tc.k3)
		}
		sameAsRun(t, evs, s, o) // a step at a time too
	}
}
