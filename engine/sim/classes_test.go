package sim_test

import (
	"context"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// classRun is what runClasses saw: the events, in order, the collectives started as classes and
// split back, and the solver's work.
type classRun struct {
	events         []timeline.Event
	blocks, splits int
	early          int // splits before the block's first solve
	blockAt        int64
	visits         uint64
}

// classHosts is the hosts of the runs below: 8 rings of 64 GPUs, a few hundred flows each.
const classHosts = 8

// runClasses runs all-reduces (ring, or NVLS-tree: each GPU's NVLink and NIC flows) over every GPU of 8 hosts × 8 H100 with the classes on or off,
// with the given faults and what more adds once the communicators are made (it is given the time
// the collectives start at): in a first round one all-reduce alone, then, at once, two over
// disjoint halves of the hosts (two blocks solved together, ending at the same nanosecond), then
// a third over all of them, during which more happens.
func runClasses(t *testing.T, algo timeline.NCCLAlgo, classes bool, faults []fault.Fault, more func(c *engine.Client, at int64)) classRun {
	t.Helper()
	topo, err := sim.TopologyByName("h100x8x2")
	if err != nil {
		t.Fatal(err)
	}
	topo.Hosts = classHosts
	m := sim.ModelOf(topo)
	m.KernelJitter = 0
	log := &eventLog{}
	s, err := sim.New(sim.Config{Topology: topo, Seed: 1, Model: m, Faults: faults}, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	sim.SetClasses(s, classes)
	opts := engine.DefaultOptions()
	opts.NCCLAlgo = algo
	c := engine.NewClient(s, log, opts)
	all := topo.AllDevices()
	half := len(all) / 2
	lo, hi := all[:half], all[half:]
	warm(t, c, all, lo, hi, all[48:56])
	if _, err := c.Collective(timeline.CollAllReduce, all, 64<<20, "alone"); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	loS, hiS := streamsOn(t, c, lo), streamsOn(t, c, hi)
	if _, err := c.CollectiveOn(timeline.CollAllReduce, lo, loS, 32<<20, "lo"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CollectiveOn(timeline.CollAllReduce, hi, hiS, 32<<20, "hi"); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	at := s.Now()
	if _, err := c.Collective(timeline.CollAllReduce, all, 256<<20, "ring"); err != nil {
		t.Fatal(err)
	}
	if more != nil {
		more(c, at)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	blocks, splits, early := sim.ClassCounts(s)
	return classRun{events: log.events, blocks: blocks, splits: splits, early: early, blockAt: sim.LastBlockAt(s), visits: sim.SolverVisits(s)}
}

func streamsOn(t *testing.T, c *engine.Client, devs []engine.DeviceID) []engine.StreamID {
	t.Helper()
	out := make([]engine.StreamID, len(devs))
	for i, d := range devs {
		var err error
		if out[i], err = c.NewStream(d, engine.Priority(0)); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// ringStart is when runClasses' last all-reduce starts its flows: after the rounds before it, which
// no fault below touches (they are set to act later), so it is the same in every run.
func ringStart(t *testing.T, algo timeline.NCCLAlgo) int64 {
	t.Helper()
	var at int64
	runClasses(t, algo, true, nil, func(_ *engine.Client, t0 int64) { at = t0 })
	return at
}

// A collective alone on its links starts its flows as classes of identical flows (its NVLink edges,
// its NIC edges), solved as one flow each; anything that touches one of its links while it runs
// (a slow or flapping NIC, a slow NVLink port, a copy or another collective on its links) splits it
// back into its flows. Either way the events must be those of the flows solved one by one, field
// for field and in the same order.
func TestClassesChangeNothing(t *testing.T) {
	for _, algo := range []timeline.NCCLAlgo{timeline.AlgoRing, timeline.AlgoNVLSTree} {
		t.Run(algo.String(), func(t *testing.T) { classesChangeNothing(t, algo) })
	}
}

func classesChangeNothing(t *testing.T, algo timeline.NCCLAlgo) {
	t0 := ringStart(t, algo)
	mid := t0 + 300_000 // the 256 MiB ring runs for some 1.8 ms from t0
	copyOn := func(src, dst engine.DeviceID, delay int64) func(*engine.Client, int64) {
		return func(c *engine.Client, _ int64) {
			st, err := c.NewStream(src, engine.Priority(0))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Kernel(st, delay, "wait"); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Copy(st, timeline.CopyP2P, 8<<20, dst, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A copy whose bytes start to move at the very nanosecond the ring's flows start, after them:
	// the block is split before it was ever solved. Found from a run with the copy later.
	cal := runClasses(t, algo, true, nil, copyOn(2, 3, 400_000))
	topo, err := sim.TopologyByName("h100x8x2")
	if err != nil {
		t.Fatal(err)
	}
	var copyAt int64
	for _, e := range cal.events {
		if e.Kind == timeline.KindMemcpy {
			copyAt = e.Start + sim.CopyLatency(sim.ModelOf(topo))
		}
	}
	together := 400_000 + cal.blockAt - copyAt
	cases := []struct {
		name   string
		faults []fault.Fault
		more   func(*engine.Client, int64)
		split  bool
		early  bool
	}{
		{name: "alone"},
		{name: "slow NIC mid-run", split: true,
			faults: []fault.Fault{{Kind: fault.NICSlow, Host: 2, NIC: 3, Factor: 0.3, At: mid, For: 500_000}}},
		{name: "NIC flapping", split: true,
			faults: []fault.Fault{{Kind: fault.NICFlap, Host: 5, NIC: 6, Factor: 0, Period: 200_000, At: mid, For: 600_000}}},
		{name: "slow NVLink port", split: true,
			faults: []fault.Fault{{Kind: fault.NVLinkSlow, Host: 1, GPU: 4, Factor: 0.5, At: mid}}},
		{name: "copy on a ring edge", split: true, more: copyOn(2, 3, 400_000)},
		{name: "copy on a NIC's GPU", split: true, more: copyOn(8*3+1, 8*3+5, 500_000)},
		{name: "copy starting with it", split: true, early: true, more: copyOn(2, 3, together)},
		{name: "a collective beside it", split: true, more: func(c *engine.Client, _ int64) {
			host := []engine.DeviceID{48, 49, 50, 51, 52, 53, 54, 55} // warmed by runClasses
			warmed := streamsOn(t, c, host)
			for i, st := range warmed {
				if err := c.Kernel(st, 200_000+int64(i)*1000, "wait"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.CollectiveOn(timeline.CollAllReduce, host, warmed, 16<<20, "host6"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			on := runClasses(t, algo, true, tc.faults, tc.more)
			off := runClasses(t, algo, false, tc.faults, tc.more)
			if len(on.events) != len(off.events) {
				t.Fatalf("%d events with classes, %d without", len(on.events), len(off.events))
			}
			for i := range on.events {
				if on.events[i] != off.events[i] {
					t.Fatalf("event %d: with classes %+v; without %+v", i, on.events[i], off.events[i])
				}
			}
			if off.blocks != 0 {
				t.Errorf("%d blocks with the classes off", off.blocks)
			}
			if on.blocks < 4 {
				t.Errorf("%d collectives started as classes; want the 4 all-reduces at least", on.blocks)
			}
			if tc.split != (on.splits > 0) || tc.early != (on.early > 0) {
				t.Errorf("%d blocks split, %d before their first solve; want a split: %v, before: %v", on.splits, on.early, tc.split, tc.early)
			}
			t.Logf("%d events; %d blocks, %d split", len(on.events), on.blocks, on.splits)
		})
	}
}

// With the classes, a ring collective alone costs the solver its classes, not its flows: 8 hosts'
// all-reduces (some 900 flows each once merged, 8 rings of 64 edges) are solved as a few classes,
// so the solver's levels look at a few entries where they looked at thousands. The test fails if
// the classes are not used.
func TestClassesSolveClassesNotFlows(t *testing.T) {
	on := runClasses(t, timeline.AlgoRing, true, nil, nil)
	off := runClasses(t, timeline.AlgoRing, false, nil, nil)
	if on.blocks != 4 || on.splits != 0 || on.early != 0 {
		t.Fatalf("%d blocks, %d split; want the 4 all-reduces as blocks, none split", on.blocks, on.splits)
	}
	if on.visits*20 > off.visits {
		t.Errorf("the solver looked at %d flows and links with classes, %d without; want a twentieth at most", on.visits, off.visits)
	}
	t.Logf("solver visits: %d with classes, %d without", on.visits, off.visits)
}
