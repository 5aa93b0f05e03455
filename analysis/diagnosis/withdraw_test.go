package diagnosis

import (
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// done is rank's part of all-reduce op 3 on communicator 7 (running), ended at end.
func done(at, end int64, rank int32) timeline.Event {
	e := running(at, rank)[0]
	e.End = end
	return e
}

// A hang a look at what is in flight named is withdrawn when its op completes after all (it was a
// long wait: rank 1 of a real two-rank job waited 1.6 s in its first all-reduce for rank 0): the
// findings are then those of the stream without the look, as a headless report has them. One that
// never completes stays; a completion folded after the ops in flight were read (a console reads
// them first) names no hang; and a rank whose long wait was withdrawn is named afresh when it
// really hangs later.
func TestLookedHangWithdrawnWhenItCompletes(t *testing.T) {
	type look struct {
		now      int64
		inflight []timeline.Event
	}
	for _, c := range []struct {
		name  string
		steps []any // a look, or an event folded
		// live: findings after the first look; end: after every step
		live, end int
	}{
		{name: "a long wait that completes", live: 1, end: 0,
			steps: []any{look{2100 * ms, running(1000*ms, 0, 1, 2, 3)}, done(1000*ms, 2500*ms, 0), done(1000*ms, 2500*ms, 1),
				look{2600 * ms, running(1000*ms, 2, 3)}, done(1000*ms, 2600*ms, 2), done(1000*ms, 2600*ms, 3)}},
		{name: "a hang never completes", live: 1, end: 1,
			steps: []any{look{2100 * ms, running(1000*ms, 0, 1, 2, 3)}, look{9000 * ms, running(1000*ms, 0, 1, 2, 3)}}},
		// (Past 4.2 s: an op every rank runs is a hang once it ran four times the longest that
		// finished, this one's 1.05 s.)
		{name: "completed before the look that read it in flight", live: 0, end: 0,
			steps: []any{look{1900 * ms, running(1000*ms, 0, 1, 2, 3)}, done(1000*ms, 2050*ms, 0), done(1000*ms, 2050*ms, 1),
				done(1000*ms, 2050*ms, 2), done(1000*ms, 2050*ms, 3), look{6000 * ms, running(1000*ms, 0, 1, 2, 3)}}},
		{name: "one rank's part ends, another's is seen later: still no hang", live: 1, end: 0,
			steps: []any{look{2100 * ms, running(1000*ms, 0, 1, 2, 3)}, done(1000*ms, 2500*ms, 0),
				look{9000 * ms, running(1000*ms, 1, 2, 3)}, done(1000*ms, 9100*ms, 1)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := comm7()
			live := -1
			for _, st := range c.steps {
				switch st := st.(type) {
				case look:
					s.d.Pending(st.now, st.inflight)
					if live < 0 {
						live = len(s.d.Result(nil))
					}
				case timeline.Event:
					s.add(st)
				}
			}
			if live != c.live {
				t.Errorf("after the first look: %d findings; want %d", live, c.live)
			}
			if got := s.d.Result(nil); len(got) != c.end {
				t.Errorf("at the end: %+v; want %d findings", got, c.end)
			}
		})
	}

	// Rank 3's long wait in op 3 is withdrawn; its later wait in op 4, which rank 2 never entered,
	// is a hang of rank 2 of its own, not folded into the one withdrawn nor held back by it.
	s := comm7()
	s.d.Pending(2100*ms, []timeline.Event{collWait(1000*ms, 0, timeline.CollAllReduce, 7, 3), collWait(1000*ms, 1, timeline.CollAllReduce, 7, 3),
		collWait(1000*ms, 3, timeline.CollAllReduce, 7, 3)})
	if got := s.d.Result(nil); len(got) != 1 || got[0].Rank != 2 {
		t.Fatalf("the first look: %+v; want a hang of rank 2", got)
	}
	for r := int32(0); r < 4; r++ {
		s.add(done(2200*ms, 2300*ms, r))
	}
	if got := s.d.Result(nil); len(got) != 0 {
		t.Fatalf("after op 3 completed: %+v; want none", got)
	}
	s.d.Pending(4100*ms, []timeline.Event{collWait(3000*ms, 0, timeline.CollAllReduce, 7, 4), collWait(3000*ms, 1, timeline.CollAllReduce, 7, 4),
		collWait(3000*ms, 3, timeline.CollAllReduce, 7, 4)})
	got := s.d.Result(nil)
	if len(got) != 1 || got[0].Rank != 2 || got[0].Onset != 3000*ms {
		t.Fatalf("the later hang: %+v; want one hang of rank 2 from 3 s", got)
	}
	if root, ok := s.d.RootOf(4, nil); !ok || root.Onset != 3000*ms {
		t.Errorf("RootOf(op 4) = %+v, %v; want the later hang", root, ok)
	}
	if _, ok := s.d.RootOf(3, nil); ok {
		t.Error("RootOf(op 3), which completed, names a root")
	}
}
