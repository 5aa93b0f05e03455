package sim_test

import (
	"context"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// An op slot is reused once its op finished. A watchdog entry left by the slot's earlier op (which
// waited for its peer, then was matched) must not fire on the slot's next op: here every transfer
// waits 0.7 of the timeout for its peer, so the entry of round r falls due while round r+1's op
// waits in the same slot. Before op slots kept their generation across reuse, it fired at once.
func TestWatchdogAfterSlotReuse(t *testing.T) {
	const timeout = 10_000_000
	opts := engine.DefaultOptions()
	opts.WatchdogNs = timeout
	c, store := newClient(t, "h100x8", opts)
	warm(t, c, []engine.DeviceID{0, 1})
	for round := range 8 {
		early, late := engine.DeviceID(0), engine.DeviceID(1)
		if round%2 == 1 {
			early, late = late, early
		}
		c.HostSleep(late, timeout*7/10, "late peer")
		id := c.NewOpID()
		if round%4 < 2 {
			_, _ = c.Send(c.TransferStream(early), late, 1<<20, id)
			_, _ = c.Recv(c.TransferStream(late), early, 1<<20, id)
		} else {
			_, _ = c.Recv(c.TransferStream(early), late, 1<<20, id)
			_, _ = c.Send(c.TransferStream(late), early, 1<<20, id)
		}
		if err := c.Run(context.Background()); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if n := count(store.Events(), timeline.KindAlert); n != 0 {
		t.Errorf("%d alerts; want none (every peer came within the timeout)", n)
	}
	waits := 0
	for _, e := range store.Events() {
		if e.Kind == timeline.KindPeerWait {
			waits++
			if e.Dur() < timeout/2 || e.Dur() >= timeout {
				t.Errorf("peer wait of %d ns on device %d; want about %d", e.Dur(), e.Device, timeout*7/10)
			}
		}
	}
	if waits != 8 {
		t.Errorf("%d peer waits; want one per round (8)", waits)
	}
}

// The watchdog's queue of deadlines stays bounded in an endless run in which some op is always
// waiting for its peer (so the queue never empties): the consumed part of it is dropped.
func TestWatchdogQueueBounded(t *testing.T) {
	opts := engine.DefaultOptions()
	opts.WatchdogNs = 1_000_000
	tp, err := sim.TopologyByName("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	sink := &countSink{}
	s, err := sim.New(sim.Config{Topology: tp, Seed: 1, Model: sim.DefaultModel()}, sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(s, sink, opts)
	warm(t, c, []engine.DeviceID{0, 1})
	// Each send waits about 0.6 ms for its receive, queued behind a kernel on the receiver: there
	// is always a send waiting, and each is matched before its deadline.
	const pairs = 20_000
	for range pairs {
		id := c.NewOpID()
		_ = c.Kernel(c.TransferStream(1), 600_000, "late")
		_, _ = c.Send(c.TransferStream(0), 1, 1<<10, id)
		_, _ = c.Recv(c.TransferStream(1), 0, 1<<10, id)
	}
	run(t, c)
	if n, capacity := sim.WatchdogQueue(s); capacity > 4096 {
		t.Errorf("after %d waits the watchdog queue holds %d entries in an array of %d; want it bounded (≤ 4096)", pairs, n, capacity)
	}
}
