package scenario

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// lastStep returns the last step event and the events on device dev within it.
func lastStep(store *timeline.Store, dev int32) (timeline.Event, []timeline.Event) {
	evs := store.Events()
	var step timeline.Event
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == timeline.KindStep {
			step = evs[i]
			break
		}
	}
	var in []timeline.Event
	for _, e := range evs {
		if e.Device == dev && e.Start >= step.Start && e.End <= step.End {
			in = append(in, e)
		}
	}
	return step, in
}

// The hand calculation of docs/scenarios.md ("graphs: one launch per step"): tp-overlap with bulk
// collectives, tiny shards and 500 ns GEMMs is launch bound. Each rank's host thread launches, per
// layer, an all-gather and a reduce-scatter (nccl_launch each), two records and two waits
// (wait_launch each) and 8 GEMM kernels (launch each): 2×4 + 4×1 + 8×3 = 36 µs, 144 µs for 4
// layers, and the step ends when the last reduce-scatter, launched at 144 µs, ends. Replayed as a
// graph the host pays graph_launch once and the step is the device's own chain: per layer the
// all-gather, the event latency, 8 GEMMs, the event latency, the reduce-scatter.
func TestGraphsSavingByHand(t *testing.T) {
	sets := map[string]string{"overlap": "off", "gemm": "500ns", "shard_bytes": "4KiB"}
	m := sim.DefaultModel()
	m.KernelJitter = 0
	const layers, tp, gemm = 4, 8, 500

	sets["graphs"] = "off"
	res, store, _ := runTPOverlap(t, sets, m, 4)
	step, evs := lastStep(store, 0)
	perLayer := 2*m.NCCLLaunchNs + 4*m.WaitLaunchNs + tp*m.HostLaunchNs
	if perLayer != 36_000 {
		t.Fatalf("launches per layer = %d ns; the doc's hand calculation says 36 µs", perLayer)
	}
	var lastRS timeline.Event
	for _, e := range evs {
		if e.Kind == timeline.KindCollective && timeline.CollOp(e.Sub) == timeline.CollReduceScatter {
			lastRS = e
		}
	}
	if got, want := step.Dur(), layers*perLayer+lastRS.Dur(); got != want {
		t.Errorf("graphs=off: step %d ns, want %d launches + the last reduce-scatter's %d = %d", got, layers*perLayer, lastRS.Dur(), want)
	}
	if lastRS.Queued-step.Start != layers*perLayer {
		t.Errorf("graphs=off: the last reduce-scatter was launched %d ns into the step, want %d", lastRS.Queued-step.Start, layers*perLayer)
	}
	offHost := res.StreamIdle.ByCause["host_wait"]

	sets["graphs"] = "on"
	res, store, _ = runTPOverlap(t, sets, m, 4)
	step, evs = lastStep(store, 0)
	want := m.GraphLaunchNs
	var launches int
	for _, e := range evs {
		switch {
		case e.Kind == timeline.KindGraphLaunch:
			launches++
		case e.Kind == timeline.KindCollective:
			want += e.Dur()
			if !e.Captured() {
				t.Errorf("graphs=on: collective %+v not marked captured", e)
			}
		}
	}
	want += layers * (tp*gemm + 2*m.EventLatencyNs)
	if launches != 1 {
		t.Errorf("graphs=on: %d graph launches on device 0 in the last step, want 1", launches)
	}
	if got := step.Dur(); got != want {
		t.Errorf("graphs=on: step %d ns, want graph launch + collectives + 4 × (8 GEMMs + 2 event latencies) = %d", got, want)
	}
	if on := res.StreamIdle.ByCause["host_wait"]; on >= offHost {
		t.Errorf("host-wait gaps %d ns with graphs, %d without: graphs should cut them", on, offHost)
	}
}

// graphs=on over a step that holds a host wait (pipeline without early enqueue) stops the run at
// the captured step with CUDA's refusal, naming the scenario, the step and the device.
func TestGraphsRefuseHostWait(t *testing.T) {
	f, err := Builtin("pipeline")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := sim.TopologyByName(f.Topology)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Resolve(f, map[string]string{"graphs": "on", "early_enqueue": "off", "microbatches": "2", "compute": "1ms"}, topo)
	if err != nil {
		t.Fatal(err)
	}
	store := timeline.NewStore(nil)
	b, err := sim.New(sim.Config{Topology: topo, Seed: 1}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sc.Run(context.Background(), engine.NewClient(b, store, sc.Options), store, RunConfig{Steps: 3})
	if !errors.Is(err, engine.ErrCaptureUnsupported) || res.Steps != 1 {
		t.Fatalf("Run = %+v, %v; want one step, then a capture refusal", res, err)
	}
	for _, want := range []string{"builtin:pipeline: step 1: graphs=on", "a host wait on device 0", "cudaErrorStreamCaptureUnsupported"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
