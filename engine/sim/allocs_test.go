package sim_test

import (
	"context"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/timeline"
)

// collectiveAllocs is what issuing and running one all-reduce over every GPU of hosts × 8 H100
// allocates, in steady state (the communicator made and the simulator's queues grown).
func collectiveAllocs(t *testing.T, hosts int) float64 { return collectiveAllocsOf(t, hosts, false) }

// collectiveAllocsOf is collectiveAllocs, the all-reduce issued with one future for the whole
// (Client.CollectiveAll) where all is true.
func collectiveAllocsOf(t *testing.T, hosts int, all bool) float64 {
	tp, _ := sim.TopologyByName("h100x8x2")
	tp, err := topology.WithHosts(tp, hosts)
	if err != nil {
		t.Fatal(err)
	}
	sink := &countSink{}
	s, err := sim.New(sim.Config{Topology: tp, Seed: 1}, sink, timeline.NewStrings())
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(s, sink, engine.DefaultOptions())
	devs := make([]engine.DeviceID, tp.Devices())
	for i := range devs {
		devs[i] = engine.DeviceID(i)
	}
	step := func() {
		var err error
		if all {
			_, err = c.CollectiveAll(timeline.CollAllReduce, devs, 64<<20, "ar")
		} else {
			_, err = c.Collective(timeline.CollAllReduce, devs, 64<<20, "ar")
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		step()
	}
	return testing.AllocsPerRun(20, step)
}

// A collective's allocations do not grow with its ranks: its futures are one slab with one
// callback, and the simulator builds its rings in scratch it keeps (a map and slices per
// collective were most of what a run allocated, and one future and callback per rank).
func TestCollectiveAllocsDoNotGrowWithRanks(t *testing.T) {
	small, large := collectiveAllocs(t, 2), collectiveAllocs(t, 16)
	t.Logf("allocations per all-reduce: %.0f on 16 GPUs, %.0f on 128", small, large)
	if large > small+4 {
		t.Errorf("an all-reduce on 128 GPUs allocates %.0f times, on 16 GPUs %.0f: allocations grow with the ranks", large, small)
	}
}

// A collective issued with one future for the whole (Client.CollectiveAll, as the scenarios issue
// theirs) allocates neither the ranks' futures nor the slice of them: at 1,024 GPUs llm-train's step
// made 135,000 futures that no one read.
func TestCollectiveAllAllocatesNoFuturePerRank(t *testing.T) {
	perRank, whole := collectiveAllocsOf(t, 2, false), collectiveAllocsOf(t, 2, true)
	t.Logf("allocations per all-reduce on 16 GPUs: %.0f with a future per rank, %.0f with one", perRank, whole)
	if whole > perRank-2 {
		t.Errorf("an all-reduce with one future allocates %.0f times, with a future per rank %.0f; want 2 fewer (the futures and their slice)", whole, perRank)
	}
}
