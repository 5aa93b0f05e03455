package whatif

import (
	"context"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/timeline"
)

// simRecording runs the llm-train scenario on h100x8x4 (32 GPUs) for steps steps, and returns its
// events as a recording holds them (as the engine emits them: as they end).
func simRecording(t testing.TB, steps int) (*events, *timeline.Strings, engine.Topology) {
	t.Helper()
	f, err := scenario.Builtin("llm-train")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Builtin("h100x8x4")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Resolve(f, nil, topo)
	if err != nil {
		t.Fatal(err)
	}
	evs, names := &events{}, timeline.NewStrings()
	b, err := sim.New(sim.Config{Topology: topo, Seed: 1}, evs, names)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(b, evs, sc.Options)
	res, err := sc.Run(context.Background(), c, evs, scenario.RunConfig{Steps: steps, Seed: 1})
	if err != nil || res.Err != nil || res.Steps != steps {
		t.Fatalf("run: %+v, %v", res, err)
	}
	return evs, names, topo
}

// A simulator's recording gives each event record an event of its own: a what-if of it holds
// about as much at 40 steps as at 5 (32 GPUs, collectives forced to Ring), not eight times as
// much, as it did while it kept the last record of every event, and the chains behind them, for
// ever (and the reorder buffer, whose bound they held at the first step, every replayed op).
func TestStreamSimRecordingBoundedByStep(t *testing.T) {
	long := 40
	if testing.Short() {
		long = 20
	}
	var held, window, perStep [2]int
	for i, steps := range []int{5, long} {
		evs, names, topo := simRecording(t, steps)
		var plan Plan
		plan.Events(*evs)
		p := plan.Params()
		s := NewStream(names, Options{Topology: topo, Recorded: topo, TraceDevices: topo.Devices(), Algo: timeline.AlgoRing}, p, Outputs{})
		if err := s.Events(*evs); err != nil {
			t.Fatal(err)
		}
		res, err := s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.Windows < steps {
			t.Fatalf("%d windows for %d steps", res.Windows, steps)
		}
		held[i], window[i], perStep[i] = res.MaxHeld, res.MaxWindow, len(*evs)/steps
		t.Logf("%d steps: %d events, at most %d held between windows, %d in a window", steps, len(*evs), res.MaxHeld, res.MaxWindow)
	}
	// Within a tenth: the steps are alike, but not quite (the first holds the communicators' setup).
	for _, c := range []struct {
		what string
		n    [2]int
	}{{"items held between windows", held}, {"events in the largest window", window}} {
		if c.n[1] > c.n[0]+c.n[0]/10 {
			t.Errorf("%s: %d at %d steps, %d at 5: it grows with the trace", c.what, c.n[1], long, c.n[0])
		}
	}
	// What is held is about two steps' ops in each of the three runs (the kept ops and their
	// points; the reorder buffers' replayed ops): under five steps' events. It was eight, while
	// each run's chains went a step further back than the run before's.
	if held[1] > 5*perStep[1] {
		t.Errorf("%d items held between windows: more than five steps' events (%d each)", held[1], perStep[1])
	}
}
