package sim_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// A communicator's initialisation and a host's sleep are reported when they end, like every op,
// so the session's clock (the latest end seen) never runs ahead of the simulation; while under
// way they are in flight, from their start to now.
func TestHostCommandsReportedWhenTheyEnd(t *testing.T) {
	tp, err := sim.TopologyByName("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	store := timeline.NewStore(nil)
	m := sim.ModelOf(tp)
	late := &lateCheck{t: t, store: store, notifyNs: m.NotifyNs}
	s, err := sim.New(sim.Config{Topology: tp, Seed: 1, Model: m}, late, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	late.sim = s
	c := engine.NewClient(s, store, engine.DefaultOptions())
	devs := []engine.DeviceID{0, 1}
	if _, err := c.Communicator(devs); err != nil {
		t.Fatal(err)
	}
	c.HostSleep(2, 5_000_000, "loader")
	const at = 3_000_000
	if err := sim.RunUntil(s, at); err != nil {
		t.Fatal(err)
	}
	for _, e := range store.Events() {
		if e.End > at {
			t.Fatalf("3 ms into a 0.92 s init and a 5 ms sleep, reported already: %+v", e)
		}
	}
	running := map[timeline.Kind]int{}
	for _, e := range s.InFlight(nil) {
		if e.Start != 0 || e.End != s.Now() {
			t.Errorf("in flight %+v; want from 0 to now (%d)", e, s.Now())
		}
		running[e.Kind]++
	}
	if running[timeline.KindCommInit] != 2 || running[timeline.KindMark] != 1 {
		t.Errorf("in flight: %v; want two communicator inits and a sleep", running)
	}
	if _, err := c.Collective(timeline.CollAllReduce, devs, 1<<20, "ar"); err != nil {
		t.Fatal(err)
	}
	run(t, c)
	inits := 0
	for _, e := range store.Events() {
		if e.Kind == timeline.KindCommInit {
			inits++
			if e.Start != 0 || e.End < 900_000_000 {
				t.Errorf("init %+v; want from 0 to its ~0.92 s end", e)
			}
		}
	}
	if inits != 2 {
		t.Errorf("%d communicator inits reported; want 2", inits)
	}
}

// While a paced simulation sleeps until the wall clock reaches its next item, what InFlight
// returns runs up to the simulated time the pace has reached, never past that item.
func TestInFlightFollowsThePace(t *testing.T) {
	tp, err := sim.TopologyByName("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	m := sim.ModelOf(tp)
	store := timeline.NewStore(nil)
	s, err := sim.New(sim.Config{Topology: tp, Seed: 1, Model: m, Speed: 20}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(s, store, engine.DefaultOptions())
	if _, err := c.Communicator([]engine.DeviceID{0, 1}); err != nil {
		t.Fatal(err)
	}
	wall := time.Now()
	sim.SetReaderClock(s, func() time.Time { return wall })
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background()) }()
	var init timeline.Event
	for init.Kind != timeline.KindCommInit { // published before the sleep of ~46 ms wall
		select {
		case err := <-done:
			t.Fatalf("the run ended (%v) before its init was seen in flight", err)
		default:
		}
		for _, e := range s.InFlight(nil) {
			init = e
		}
		time.Sleep(time.Millisecond)
	}
	anchor := sim.PaceAnchor(s)
	for _, tt := range []struct {
		name string
		at   time.Time
		want int64
	}{
		{"before the anchor: as published", anchor.Add(-time.Second), 0},
		{"10 ms of wall at 20×: 200 ms simulated", anchor.Add(10 * time.Millisecond), 200_000_000},
		{"long after: the item waited for", anchor.Add(time.Hour), m.CommInitFirstNs},
	} {
		wall = tt.at
		for _, e := range s.InFlight(nil) {
			if e.Kind != timeline.KindCommInit || e.End != tt.want {
				t.Errorf("%s: in flight %v ending at %d; want an init ending at %d", tt.name, e.Kind, e.End, tt.want)
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// lateCheck passes events on to a store and fails the test for any reported before it ends.
type lateCheck struct {
	t        *testing.T
	sim      *sim.Sim
	store    *timeline.Store
	notifyNs int64
}

func (l *lateCheck) Emit(e *timeline.Event) {
	// A fulfilment is an instant stamped with the notification latency (NotifyNs, under a
	// microsecond) after the op's end, at which it is reported.
	ahead := int64(0)
	if e.Kind == timeline.KindPromiseFulfilled {
		ahead = l.notifyNs
	}
	if now := l.sim.Now(); e.End > now+ahead {
		l.t.Errorf("%v reported at %d, before its end at %d", e.Kind, now, e.End)
	}
	l.store.Emit(e)
}

// submitOnly is the sim without its Launch: every launch reaches it as a Command (Submit).
type submitOnly struct{ engine.Backend }

// A launch the client hands the sim without a Command (engine.Launcher) runs as the same launch
// submitted as a Command does: the same events, in the same order, for kernels, copies, events,
// sends and receives, collectives (a ragged all-to-all's sizes included), groups, barriers and a
// captured graph.
func TestLaunchIsSubmit(t *testing.T) {
	events := func(wrap bool) []timeline.Event {
		s, store := h100x8(t)
		var b engine.Backend = s
		if wrap {
			b = submitOnly{s}
		}
		c := engine.NewClient(b, store, engine.DefaultOptions())
		if _, ok := b.(engine.Launcher); ok == wrap {
			t.Fatalf("wrapped %v: the backend is a Launcher: %v", wrap, ok)
		}
		workload(t, c)
		run(t, c)
		return store.Events()
	}
	fast, submitted := events(false), events(true)
	if len(fast) < 50 || !slices.Equal(fast, submitted) {
		t.Fatalf("%d events launched, %d submitted; want the same, and more than 50", len(fast), len(submitted))
	}
}

// workload queues some of every kind of op on c.
func workload(t *testing.T, c *engine.Client) {
	t.Helper()
	all := []engine.DeviceID{0, 1, 2, 3}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range all {
		must(c.Kernel(c.ComputeStream(d), 40_000, "fwd"))
	}
	ev, err := c.Record(c.ComputeStream(0))
	must(err)
	must(c.WaitEvent(c.TransferStream(1), ev))
	_, err = c.Copy(c.TransferStream(1), timeline.CopyH2D, 1<<20, -1, false)
	must(err)
	_, err = c.Collective(timeline.CollAllReduce, all, 8<<20, "ar")
	must(err)
	_, err = c.RaggedAllToAll(all[:3], [][]int64{{0, 1 << 10, 2 << 10}, {3 << 10, 0, 4 << 10}, {5 << 10, 6 << 10, 0}}, "moe")
	must(err)
	c.GroupStart()
	_, err = c.Send(c.TransferStream(2), 3, 1<<20, 77)
	must(err)
	_, err = c.Recv(c.TransferStream(3), 2, 1<<20, 77)
	must(err)
	c.GroupEnd()
	_, err = c.Barrier(all, "sync")
	must(err)
	must(c.BeginCapture("g"))
	for _, d := range all {
		must(c.Kernel(c.ComputeStream(d), 10_000, "captured"))
	}
	g, err := c.EndCapture()
	must(err)
	must(c.LaunchGraph(g))
	c.HostWait(0, ev)
	must(c.Kernel(c.ComputeStream(0), 10_000, "after"))
}
