package sim_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// collRun is what collectives ran: the futures (one slice per collective), the run's error, its
// events and the client's counters.
type collRun struct {
	futs   [][]*engine.Future
	err    error
	events []timeline.Event
	stats  engine.Stats
}

// collectives issues an all-reduce and an all-gather over devs, with a future per rank (all false)
// or one per collective (all true), and runs them.
func collectives(t *testing.T, all bool, specs ...string) collRun {
	t.Helper()
	c, store, _ := faultSim(t, "h100x8", specs...)
	devs := []engine.DeviceID{0, 1, 2, 3, 4, 5, 6, 7}
	var futs [][]*engine.Future
	for _, op := range []timeline.CollOp{timeline.CollAllReduce, timeline.CollAllGather} {
		if all {
			f, err := c.CollectiveAll(op, devs, 1<<20, op.String())
			if err != nil {
				t.Fatal(err)
			}
			futs = append(futs, []*engine.Future{f})
			continue
		}
		f, err := c.Collective(op, devs, 1<<20, op.String())
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, f)
	}
	err := c.Run(context.Background())
	return collRun{futs, err, slices.Clone(store.Events()), c.Stats()}
}

// CollectiveAll runs the same collectives as Collective, event for event (each rank's promise
// included), and its one future resolves with the last rank's, at its time; the scratch buffers
// are in flight until every rank is done, either way. A hung rank leaves it unresolved, holding the
// failure the watchdog gave the ranks that waited.
func TestCollectiveAllAsCollective(t *testing.T) {
	perRank, whole := collectives(t, false), collectives(t, true)
	if perRank.err != nil || whole.err != nil {
		t.Fatalf("runs ended with %v and %v", perRank.err, whole.err)
	}
	if !slices.Equal(perRank.events, whole.events) {
		t.Errorf("CollectiveAll's run gave %d events, Collective's %d, not the same", len(whole.events), len(perRank.events))
	}
	if perRank.stats.CollMem != whole.stats.CollMem || whole.stats.CollMem.InFlight != 0 {
		t.Errorf("collective memory %+v with CollectiveAll, %+v with Collective; want the same, none in flight", whole.stats.CollMem, perRank.stats.CollMem)
	}
	for i, fs := range perRank.futs {
		var last int64
		for _, f := range fs {
			if !f.Done() || f.Err() != nil {
				t.Fatalf("collective %d: a rank's future done %v, err %v", i, f.Done(), f.Err())
			}
			last = max(last, f.At())
		}
		w := whole.futs[i][0]
		if !w.Done() || w.Err() != nil || w.At() != last || w.Op() != fs[0].Op() {
			t.Errorf("collective %d: the whole's future done %v, err %v, at %d, op %d; want done, no error, at %d (the last rank), op %d",
				i, w.Done(), w.Err(), w.At(), w.Op(), last, fs[0].Op())
		}
	}

	hang := "kind=hang,host=0,gpu=3,coll=all_reduce"
	perRank, whole = collectives(t, false, hang), collectives(t, true, hang)
	var wd *engine.WatchdogError
	if !errors.As(perRank.err, &wd) || !errors.As(whole.err, &wd) {
		t.Fatalf("runs with a hang ended with %v and %v; want the watchdog", perRank.err, whole.err)
	}
	if !slices.Equal(perRank.events, whole.events) || perRank.stats.CollMem != whole.stats.CollMem {
		t.Errorf("with a hang: %d and %d events, collective memory %+v and %+v; want the same",
			len(whole.events), len(perRank.events), whole.stats.CollMem, perRank.stats.CollMem)
	}
	failed := 0
	for _, f := range perRank.futs[0] {
		if f.Done() && f.Err() != nil {
			failed++
		}
	}
	w := whole.futs[0][0]
	if failed != 7 || w.Done() || !errors.As(w.Err(), &wd) {
		t.Errorf("with a hang: %d ranks' futures failed (want 7), the whole's done %v with %v; want not done, the watchdog's error", failed, w.Done(), w.Err())
	}
}
