package diagnosis

import (
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// p2pPart is rank's half of send/recv op on communicator 4 (a receive from peer, or a send to
// it), from at to end.
func p2pPart(kind timeline.Kind, at, end int64, rank, peer int32, op uint64) timeline.Event {
	return timeline.Event{Kind: kind, Start: at, End: end, Device: rank, Peer: peer, Op: op, Comm: 4, Bytes: 1 << 20}
}

// deadlocks counts the deadlock findings of fs.
func deadlocks(fs []Finding) (n int) {
	for _, f := range fs {
		if f.Kind == Deadlock {
			n++
		}
	}
	return n
}

// A rank stuck inside a hung collective (its part stalled: a hang of mode in) has more under way
// than a receive it also waits in, as a rank waiting in another op has: the look at the waits the
// watchdog ended, which sees no collective running, must not make a cycle of it and the peer
// waiting on it. Rank 3, stuck inside all-reduce op 3 of ranks 0–3, never reaches its send to 5,
// on which 5's receive waits; 3's receive from 5 waits on 5's send behind that. Before, the
// Result after the watchdog named "deadlock: ranks 3 → 5 → 3" beside the hang of rank 3.
func TestStuckInsideIsNoCycle(t *testing.T) {
	s := comm7()
	inflight := running(1000*ms, 0, 1, 2, 3)
	inflight[3].Status = timeline.StatusStalled
	inflight = append(inflight, p2pWait(1100*ms, 5, 3, timeline.PeerWaitRecv, 20), p2pWait(1100*ms, 3, 5, timeline.PeerWaitRecv, 21))
	// The op every rank entered is a hang once it ran 4× the longest that finished (50 ms) and
	// the waits once 1 s old: a look at 9 s sees both.
	s.d.Pending(9000*ms, inflight)
	if got := s.d.Result(nil); deadlocks(got) != 0 {
		t.Fatalf("the look with the collective in flight: %+v; want no deadlock", got)
	}
	// The watchdog ends the two waits; the stalled collective is no wait, and stays in flight.
	s.add(timeline.Event{Kind: timeline.KindAlert, Start: 11100 * ms, End: 11100 * ms, Device: 5, Peer: 3, Op: 20, Status: timeline.StatusTimeout})
	for _, w := range []timeline.Event{p2pWait(1100*ms, 5, 3, timeline.PeerWaitRecv, 20), p2pWait(1100*ms, 3, 5, timeline.PeerWaitRecv, 21)} {
		w.End, w.Status = 11100*ms, timeline.StatusTimeout
		s.add(w)
	}
	got := s.d.Result(nil)
	if deadlocks(got) != 0 {
		t.Errorf("the findings after the watchdog: %+v; want no deadlock: rank 3 is stuck inside op 3", got)
	}
	if len(got) == 0 || got[0].Kind != Hang || got[0].Rank != 3 {
		t.Errorf("the findings after the watchdog: %+v; want the hang of rank 3 first", got)
	}
}

// A hung op a look saw that completes after all no longer keeps its ranks out of a wait cycle:
// rank 3 waited long in all-reduce op 3 (behind rank 2, itself waiting on rank 6 in a transfer,
// the hang then named), both completed, and later ranks 3 and 5 wait on each other: a deadlock.
func TestCompletedHangFreesItsRanks(t *testing.T) {
	s := comm7()
	s.d.Pending(2100*ms, []timeline.Event{collWait(1000*ms, 0, timeline.CollAllReduce, 7, 3), collWait(1000*ms, 1, timeline.CollAllReduce, 7, 3),
		collWait(1000*ms, 3, timeline.CollAllReduce, 7, 3), p2pWait(1000*ms, 2, 6, timeline.PeerWaitRecv, 30)})
	if got := s.d.Result(nil); len(got) != 1 || got[0].Rank != 6 {
		t.Fatalf("the first look: %+v; want a hang of rank 6", got)
	}
	s.add(p2pPart(timeline.KindSend, 2200*ms, 2300*ms, 6, 2, 30))
	s.add(p2pPart(timeline.KindRecv, 2200*ms, 2300*ms, 2, 6, 30))
	for r := int32(0); r < 4; r++ {
		s.add(done(2300*ms, 2400*ms, r))
	}
	if got := s.d.Result(nil); len(got) != 0 {
		t.Fatalf("after ops 30 and 3 completed: %+v; want none", got)
	}
	s.d.Pending(6000*ms, []timeline.Event{p2pWait(4000*ms, 3, 5, timeline.PeerWaitRecv, 40), p2pWait(4000*ms, 5, 3, timeline.PeerWaitRecv, 41)})
	if got := s.d.Result(nil); deadlocks(got) != 1 {
		t.Errorf("ranks 3 and 5 waiting on each other: %+v; want one deadlock", got)
	}
}
