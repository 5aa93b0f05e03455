package diagnosis

import (
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// comm7 is a stepper whose communicator 7 (ranks 0–3) ran two all-reduces of 50 ms, and whose
// communicators 8 and 9 hold ranks 3 and 5.
func comm7() *stepper {
	s := newStepper(8)
	for r := int32(0); r < 4; r++ {
		s.add(timeline.Event{Kind: timeline.KindCommInit, Start: 0, End: 900 * ms, Device: r, Peer: -1, Comm: 7, Ranks: 4})
	}
	for _, c := range []uint32{8, 9} {
		for _, r := range []int32{3, 5} {
			s.add(timeline.Event{Kind: timeline.KindCommInit, Start: 0, End: 900 * ms, Device: r, Peer: -1, Comm: c, Ranks: 2})
		}
	}
	for op := uint64(1); op <= 2; op++ {
		for r := int32(0); r < 4; r++ {
			s.add(timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: 900 * ms, End: 950 * ms, Device: r, Peer: -1, Comm: 7, Op: op, Ranks: 4})
		}
	}
	return s
}

// running is ranks' parts of all-reduce op 3 on communicator 7, running since at.
func running(at int64, ranks ...int32) []timeline.Event {
	var out []timeline.Event
	for _, r := range ranks {
		out = append(out, timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: at, End: at + ms, Device: r, Peer: -1, Comm: 7, Op: 3, Ranks: 4})
	}
	return out
}

func p2pWait(at int64, rank, peer int32, aux uint32, op uint64) timeline.Event {
	return timeline.Event{Kind: timeline.KindPeerWait, Start: at, Device: rank, Peer: peer, Op: op, Comm: 4, Aux: aux}
}

func collWait(at int64, rank int32, coll timeline.CollOp, comm uint32, op uint64) timeline.Event {
	return timeline.Event{Kind: timeline.KindPeerWait, Sub: uint8(coll), Start: at, Device: rank, Peer: -1, Op: op, Comm: comm}
}

// What is in flight tells a rank that never entered a collective from ranks stuck inside one
// (every rank entered it and none finished), and names a cycle of ranks waiting on each other.
func TestPendingStuckAndDeadlock(t *testing.T) {
	for _, c := range []struct {
		name     string
		inflight []timeline.Event
		ended    []timeline.Event // waits the watchdog ended
		now      int64
		kind     Kind
		stuck    int
		cycle    []int32
		evidence string
	}{
		{name: "running, not yet stuck", now: 1900 * ms, inflight: running(1000*ms, 0, 1, 2, 3)},
		{name: "all stuck inside", now: 2100 * ms, inflight: running(1000*ms, 0, 1, 2, 3), kind: Hang, stuck: 4,
			evidence: "all_reduce #3 on communicator 7: ranks 0, 1, 2, 3 entered it and are stuck inside: none finished in 1.00 s; no rank is missing from it"},
		{name: "waits behind ranks stuck inside are not the root", now: 2100 * ms,
			inflight: append(running(1000*ms, 0, 1, 2, 3), collWait(1000*ms, 5, timeline.CollAllGather, 8, 40)), kind: Hang, stuck: 4,
			evidence: "are stuck inside"},
		{name: "recv cycle", now: 2100 * ms,
			inflight: []timeline.Event{p2pWait(1000*ms, 3, 5, timeline.PeerWaitRecv, 10), p2pWait(1000*ms, 5, 3, timeline.PeerWaitRecv, 11)},
			kind:     Deadlock, cycle: []int32{3, 5},
			evidence: "each waits on the next: rank 3 in recv from 5 (op 10, communicator 4); rank 5 in recv from 3 (op 11, communicator 4)"},
		{name: "recv cycle, young", now: 1500 * ms,
			inflight: []timeline.Event{p2pWait(1000*ms, 3, 5, timeline.PeerWaitRecv, 10), p2pWait(1000*ms, 5, 3, timeline.PeerWaitRecv, 11)}},
		{name: "stages waiting on each other's sends while more is under way: no cycle of its own", now: 2100 * ms,
			inflight: []timeline.Event{p2pWait(1000*ms, 3, 5, timeline.PeerWaitRecv, 10), p2pWait(1000*ms, 5, 3, timeline.PeerWaitRecv, 11),
				{Kind: timeline.KindEventWait, Start: 1000 * ms, Device: 5, Peer: -1}}},
		{name: "collectives in opposite orders", now: 2100 * ms,
			inflight: []timeline.Event{collWait(1000*ms, 5, timeline.CollAllReduce, 8, 20), collWait(1000*ms, 3, timeline.CollAllGather, 9, 21)},
			kind:     Deadlock, cycle: []int32{3, 5},
			evidence: "each waits on the next: rank 3 in all_gather #1 on communicator 9, waiting for 5; rank 5 in all_reduce #1 on communicator 8, waiting for 3"},
		{name: "cycle with a wait the watchdog ended", now: 2100 * ms,
			inflight: []timeline.Event{p2pWait(1000*ms, 5, 3, timeline.PeerWaitSend, 11)},
			ended:    []timeline.Event{p2pWait(1000*ms, 3, 5, timeline.PeerWaitRecv, 10)},
			kind:     Deadlock, cycle: []int32{3, 5}, evidence: "rank 3 in recv from 5 (op 10, communicator 4); rank 5 in send to 3 (op 11, communicator 4)"},
		{name: "a chain is no cycle", now: 2100 * ms,
			inflight: []timeline.Event{p2pWait(1000*ms, 3, 5, timeline.PeerWaitRecv, 10), p2pWait(1000*ms, 5, 6, timeline.PeerWaitRecv, 11)},
			kind:     Hang, evidence: "transfer from rank 6 to rank 5 (stream 0) (send/recv op 11 on communicator 4): 1 rank waited ≥ 1.00 s in it when found; rank 6 never entered it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := comm7()
			for _, e := range c.ended {
				e.End, e.Status = 1500*ms, timeline.StatusTimeout
				s.add(e)
			}
			got := s.d.Pending(c.now, c.inflight)
			if c.kind == 0 {
				if len(got) != 0 {
					t.Fatalf("%+v; want no finding", got)
				}
				return
			}
			if len(got) != 1 || got[0].Kind != c.kind || got[0].StuckN != c.stuck || !strings.Contains(got[0].Evidence, c.evidence) {
				t.Fatalf("%+v; want one %s with %d ranks stuck inside saying %q", got, c.kind, c.stuck, c.evidence)
			}
			f := got[0]
			if c.cycle != nil && (len(f.Cycle) != len(c.cycle) || f.Cycle[0] != c.cycle[0] || f.Cycle[1] != c.cycle[1] || f.Culprit() != "ranks 3 → 5 → 3") {
				t.Errorf("cycle %v (%s); want %v", f.Cycle, f.Culprit(), c.cycle)
			}
			if s := f.String(); c.cycle != nil && strings.Count(s, "3 → 5 → 3") != 1 {
				t.Errorf("%q names the cycle %d times; want once (the culprit)", s, strings.Count(s, "3 → 5 → 3"))
			}
			if c.stuck > 0 && (f.Rank != -1 || f.Host != 0 || f.MissingN != 0 || f.At != 2000*ms) {
				t.Errorf("%+v; want no rank named, host 0, no missing rank, found at 2 s", f)
			}
			if again := s.d.Pending(c.now+ms, c.inflight); len(again) != 0 {
				t.Errorf("reported twice: %+v", again)
			}
		})
	}
}

// TestRootOf: a wait on a rank that itself waits in a hung op leads to the root of the hang: rank
// 5's receive waits for rank 0, which waits in an all-gather rank 3 never entered. The receive's
// op is no finding of its own (rank 0 is busy), and RootOf names rank 3, the all-gather's
// finding, as a watchdog's alert about the receive quotes it. An op nothing hung waits on has no
// root.
func TestRootOf(t *testing.T) {
	s := comm7()
	inflight := []timeline.Event{p2pWait(1000*ms, 5, 0, timeline.PeerWaitRecv, 10)}
	for _, r := range []int32{0, 1, 2} {
		inflight = append(inflight, collWait(1000*ms, r, timeline.CollAllGather, 7, 30))
	}
	got := s.d.Pending(2100*ms, inflight)
	if len(got) != 1 || got[0].Rank != 3 {
		t.Fatalf("%+v; want one hang naming rank 3", got)
	}
	for _, c := range []struct {
		op   uint64
		rank int32
		ok   bool
	}{{10, 3, true}, {30, 3, true}, {99, 0, false}} {
		f, ok := s.d.RootOf(c.op, nil)
		if ok != c.ok || (ok && (f.Rank != c.rank || f.Evidence != got[0].Evidence)) {
			t.Errorf("RootOf(%d) = rank %d, %v (%q); want rank %d, %v", c.op, f.Rank, ok, f.Evidence, c.rank, c.ok)
		}
	}
}

// A console looks at what is in flight many times while a hang builds up; the report once, after
// the run stopped. Ranks 0–2 joined communicator 12 and wait from 920 ms in its all-gather op 3;
// rank 3 never finished joining it. Rank 5 waits from 960 ms on rank 6, which waits from 1 s on
// rank 3. At the look at 1.96 s rank 6's wait is not yet a hang, yet rank 6 is not the root of
// rank 5's; rank 3's initialisation is not yet late, yet it is the member missing from op 3; and
// only a look after 5 s tells that rank 3 is a missing rank. The looks find what the one look at
// the end finds: one missing rank, which the other hung ops wait on.
func TestPendingManyLooksAgreeWithOne(t *testing.T) {
	inflight := []timeline.Event{
		collWait(920*ms, 0, timeline.CollAllGather, 12, 3), collWait(920*ms, 1, timeline.CollAllGather, 12, 3), collWait(920*ms, 2, timeline.CollAllGather, 12, 3),
		p2pWait(960*ms, 5, 6, timeline.PeerWaitRecv, 50), p2pWait(1000*ms, 6, 3, timeline.PeerWaitRecv, 51),
		{Kind: timeline.KindCommInit, Start: 0, End: 900 * ms, Device: 3, Peer: -1, Comm: 12, Ranks: 4},
	}
	culprits := func(looks ...int64) []string {
		s := comm7()
		for r := int32(0); r < 3; r++ {
			s.add(timeline.Event{Kind: timeline.KindCommInit, Start: 0, End: 900 * ms, Device: r, Peer: -1, Comm: 12, Ranks: 4})
		}
		for _, now := range looks {
			s.d.Pending(now, inflight)
		}
		var out []string
		for _, f := range s.d.Result(nil) {
			out = append(out, f.Kind.String()+": "+f.Culprit()+" — "+f.Evidence)
		}
		return out
	}
	once := culprits(6000 * ms)
	live := culprits(1960*ms, 1970*ms, 2000*ms, 2500*ms, 6000*ms)
	if len(once) != 1 || !strings.HasPrefix(once[0], "missing rank: rank 3 (host 0 GPU 3) — all_gather #1 on communicator 12: ") {
		t.Fatalf("one look found %q; want one missing rank 3", once)
	}
	if len(live) != 1 || live[0] != once[0] {
		t.Fatalf("many looks found\n%s\none look\n%s", strings.Join(live, "\n"), strings.Join(once, "\n"))
	}
}

// A rank hung before two ops of different communicators (all-reduce op 3 on communicator 7, a
// receive on communicator 4) is one finding, which names the second op it holds up, not two
// findings that differ only by communicator.
func TestHangOneFindingPerRank(t *testing.T) {
	s := comm7()
	inflight := []timeline.Event{
		collWait(1000*ms, 0, timeline.CollAllReduce, 7, 3), collWait(1000*ms, 1, timeline.CollAllReduce, 7, 3), collWait(1000*ms, 2, timeline.CollAllReduce, 7, 3),
		p2pWait(1100*ms, 5, 3, timeline.PeerWaitRecv, 51),
	}
	s.d.Pending(2500*ms, inflight)
	fs := s.d.Result(nil)
	if len(fs) != 1 || fs[0].Kind != Hang || fs[0].Rank != 3 ||
		!strings.HasPrefix(fs[0].Evidence, "all_reduce #3 on communicator 7: 3 ranks waited ≥ 1.00 s in it when found; rank 3 never entered it; also waited on by transfer from rank 3 to rank 5 (stream 0) (send/recv op 51 on communicator 4)") {
		for _, f := range fs {
			t.Logf("%s", f.String())
		}
		t.Fatalf("%d findings; want one hang of rank 3 that also names the receive waiting on it", len(fs))
	}
}

// A hung job of thousands of ranks has more waits ended by the watchdog than the diagnosis keeps
// (maxEnded). Ranks 3 and 5, pipeline neighbours, each wait in a receive from the other and in a
// send to it: no cycle, since each send can go once the other's receive is posted. When the
// sends come past the cap, the ranks must not look as if each had only its receive under way
// (a false deadlock): a rank with a wait not kept is left out of the wait graph. A cycle of ranks
// whose waits were all kept is still one.
func TestDeadlockPastEndedCap(t *testing.T) {
	recvs := []timeline.Event{p2pWait(1000*ms, 3, 5, timeline.PeerWaitRecv, 10), p2pWait(1000*ms, 5, 3, timeline.PeerWaitRecv, 11)}
	sends := []timeline.Event{p2pWait(1000*ms, 3, 5, timeline.PeerWaitSend, 12), p2pWait(1000*ms, 5, 3, timeline.PeerWaitSend, 13)}
	for _, c := range []struct {
		name     string
		ended    [][]timeline.Event // in order: before the filler, after it (past the cap)
		deadlock bool
	}{
		{name: "sends kept", ended: [][]timeline.Event{append(slices.Clone(recvs), sends...), nil}},
		{name: "sends past the cap", ended: [][]timeline.Event{recvs, sends}},
		{name: "a true cycle, kept; another rank's wait past the cap", ended: [][]timeline.Event{recvs, {p2pWait(1000*ms, 8, 7, timeline.PeerWaitRecv, 14)}}, deadlock: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := comm7()
			s.add(timeline.Event{Kind: timeline.KindAlert, Status: timeline.StatusTimeout, Start: 1500 * ms, Device: 0, Peer: -1, Op: 99})
			end := func(e timeline.Event) {
				e.End, e.Status = 1500*ms, timeline.StatusTimeout
				s.add(e)
			}
			for _, e := range c.ended[0] {
				end(e)
			}
			// The rest of the job waits on the hung rank 7, each rank in its own receive.
			for i := len(c.ended[0]); i < maxEnded; i++ {
				end(p2pWait(1000*ms, int32(100+i), 7, timeline.PeerWaitRecv, uint64(1000+i)))
			}
			for _, e := range c.ended[1] {
				end(e)
			}
			var dl []Finding
			for _, f := range s.d.Result(nil) {
				if f.Kind == Deadlock {
					dl = append(dl, f)
				}
			}
			if got := len(dl) > 0; got != c.deadlock {
				t.Fatalf("deadlock findings %+v; want a deadlock: %v", dl, c.deadlock)
			}
			if c.deadlock && (len(dl) != 1 || dl[0].Culprit() != "ranks 3 → 5 → 3") {
				t.Fatalf("%+v; want the one cycle 3 → 5 → 3", dl)
			}
		})
	}
}

// xfer is a send from src to dst and its receive, op on communicator 4, both running since at.
func xfer(at int64, src, dst int32, op uint64) []timeline.Event {
	return []timeline.Event{{Kind: timeline.KindSend, Start: at, End: at + ms, Device: src, Peer: dst, Op: op, Comm: 4},
		{Kind: timeline.KindRecv, Start: at, End: at + ms, Device: dst, Peer: src, Op: op, Comm: 4}}
}

// A pipeline stage hung in its part of transfers (a hang of mode in) stalls its receive from the
// stage before and its send to the stage after, both halves of each running: the rank both share
// holds them, one finding names it. A lone stuck transfer's holder stays unknown.
func TestPendingP2PHolder(t *testing.T) {
	for _, c := range []struct {
		name     string
		inflight []timeline.Event
		rank     int32
	}{
		{"stage 1 of 0–1–2", append(xfer(1000*ms, 0, 1, 26), xfer(1000*ms, 1, 2, 24)...), 1},
		{"the first stage's send", xfer(1000*ms, 0, 1, 26), -1},
		{"two stages' transfers, no rank shared", append(xfer(1000*ms, 0, 1, 26), xfer(1000*ms, 2, 3, 24)...), -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := comm7()
			got := s.d.Pending(2100*ms, c.inflight)
			var ranks []int32
			for _, f := range got {
				if f.Kind == Hang {
					ranks = append(ranks, f.Rank)
				}
			}
			if c.rank >= 0 && (len(ranks) != 1 || ranks[0] != c.rank || got[0].Confidence != 1 || !strings.Contains(got[0].Evidence, "it holds them")) {
				t.Fatalf("%+v; want one hang naming rank %d", got, c.rank)
			}
			if c.rank < 0 && (len(ranks) == 0 || slices.ContainsFunc(ranks, func(r int32) bool { return r >= 0 })) {
				t.Fatalf("%+v; want hangs naming no rank", got)
			}
		})
	}
}
