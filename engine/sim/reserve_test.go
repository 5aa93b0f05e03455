package sim_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

type discard struct{}

func (discard) Emit(*timeline.Event) {}

// A step's launches are all queued before the first runs, and the host threads launch them far
// faster than the devices run them (1 ms kernels here), so what a queued launch takes is what a
// large step's memory is: its op waits in the slot it runs in, and its command beside it holds no
// copy of the op (a command was 152 bytes, alive beside its op's 176-byte slot until the step's
// end: some 400 bytes an op with the event queue's share; now 32 and 176).
func TestQueuedLaunchBytes(t *testing.T) {
	tp, err := sim.TopologyByName("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Config{Topology: tp, Seed: 1}, discard{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const perDev = 8192
	streams := make([]engine.StreamID, tp.Devices())
	for d := range streams {
		streams[d] = s.NewStream(engine.DeviceID(d), engine.PriorityNormal)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range perDev {
		for d, st := range streams {
			s.Launch(engine.DeviceID(d), &engine.StreamOp{Kind: engine.OpKernel, Stream: st, Device: engine.DeviceID(d), Peer: -1, Duration: int64(1_000_000 + i%7)})
		}
	}
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	ops := float64(perDev * len(streams))
	per := float64(after.TotalAlloc-before.TotalAlloc) / ops
	t.Logf("%.0f bytes allocated an op", per)
	if per > 300 {
		t.Errorf("a step of %.0f queued kernels allocated %.0f bytes an op; want at most 300 (a 176-byte op slot, a 32-byte command, the event queue's share)", ops, per)
	}
}

// When the watchdog ends a run, the ops still waiting for their peers are reported in the order
// they were queued, whichever op slots they took: here the second step's sends took the slots
// the first step's kernels freed, last freed first.
func TestWatchdogReportsWaitsInQueueOrder(t *testing.T) {
	opts := engine.DefaultOptions()
	opts.WatchdogNs = 3_000_000
	c, store := newClient(t, "h100x8", opts)
	for d := range 4 {
		if err := c.Kernel(c.ComputeStream(engine.DeviceID(d)), int64(10_000*(d+1)), "k"); err != nil {
			t.Fatal(err)
		}
	}
	run(t, c)
	for d := range 4 {
		if _, err := c.Send(c.ComputeStream(engine.DeviceID(d)), engine.DeviceID(d+4), 1<<20, uint64(100+d)); err != nil {
			t.Fatal(err)
		}
	}
	var wd *engine.WatchdogError
	if err := c.Run(context.Background()); !errors.As(err, &wd) {
		t.Fatalf("err = %v; want a watchdog error", err)
	}
	var devs []int32
	for _, e := range store.Events() {
		if e.Kind == timeline.KindPeerWait {
			devs = append(devs, e.Device)
		}
	}
	if len(devs) != 4 || devs[0] != 0 || devs[1] != 1 || devs[2] != 2 || devs[3] != 3 {
		t.Errorf("peer waits reported on devices %v; want 0 1 2 3, the order their sends were queued", devs)
	}
}
