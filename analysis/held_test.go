package analysis

import (
	"reflect"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// TestHeldEventsFoldedBeforeReading: on a cluster Emit holds events and folds them in batches
// (heldEvents); every reading folds what is held first. Over a 4,096-GPU sequence, with a look
// at the ops in flight now and then (Pending: a receive that waited past the hang floor) and a
// new hang floor, every result equals that of an analyzer that folded each event as it came,
// the diagnosis's findings included.
func TestHeldEventsFoldedBeforeReading(t *testing.T) {
	strs := timeline.NewStrings()
	m := timeline.Meta{Source: "cluster", Devices: 4096, GPUsPerHost: 64}
	evs, ends := clusterFolds(7, 40)
	a, ref := New(m), New(m) // ref folds each event at once
	held, findings := false, 0
	lo := 0
	for f, hi := range ends {
		for i := lo; i < hi; i++ {
			a.Emit(&evs[i])
			ref.events++
			ref.fold(&evs[i])
		}
		held = held || len(a.held) > 0
		if hi > lo {
			now := evs[hi-1].End
			switch f % 3 {
			case 1:
				d := int32(f * 97 % 4096)
				inflight := []timeline.Event{{Kind: timeline.KindPeerWait, Start: now - 3_000_000_000, Device: d, Peer: d ^ 1,
					Op: 1<<40 + uint64(f), Comm: 4, Aux: timeline.PeerWaitRecv}}
				a.Pending(now, inflight)
				ref.Pending(now, inflight)
			case 2:
				a.SetHangFloor(int64(f) * 100_000_000)
				ref.SetHangFloor(int64(f) * 100_000_000)
			}
		}
		lo = hi
		got, want := a.Result(strs), ref.Result(strs)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fold %d (%d events): the result of the events held differs from folding each at once in %v", f, hi, diffFields(got, want))
		}
		findings = max(findings, len(got.Findings))
	}
	if !held {
		t.Fatal("Emit held no event on 4,096 devices; want events held and folded in batches")
	}
	if findings == 0 {
		t.Fatal("no finding in any result; want the receives in flight named, so that the findings are compared")
	}
}

// TestStartAtDropsHeld: events held when the analysis starts over (a replay sought back) are
// forgotten with everything folded before: the result after StartAt has only what came after.
func TestStartAtDropsHeld(t *testing.T) {
	strs := timeline.NewStrings()
	m := timeline.Meta{Source: "cluster", Devices: 4096, GPUsPerHost: 64}
	evs, ends := clusterFolds(9, 12)
	a := New(m)
	for i := range ends[5] {
		a.Emit(&evs[i])
	}
	if len(a.held) == 0 {
		t.Fatal("no event held before StartAt; want some, so that the test shows them dropped")
	}
	a.Reset()
	for i := ends[5]; i < ends[11]; i++ {
		a.Emit(&evs[i])
	}
	if got, want := a.Result(strs), fold(m, evs[ends[5]:ends[11]]).Result(strs); !reflect.DeepEqual(got, want) {
		t.Fatalf("after Reset the result differs from a fresh analyzer's over the later events in %v", diffFields(got, want))
	}
}

// TestPendingAfterHeldEvents: Pending judges the ops in flight after the events emitted before
// it, held or not. On 256 GPUs a wait of 2.5 s that ended makes a wait in flight a hang only past
// four times as long (diagnosis.HangAfter), so a receive in flight for 3 s is none; judged
// before that wait was folded, it would be one (past the 1 s floor).
func TestPendingAfterHeldEvents(t *testing.T) {
	const s = 1_000_000_000
	var evs []timeline.Event
	for d := range int32(256) {
		evs = append(evs, kern(d, 1, 0, 10*us))
	}
	long := waitEv(timeline.KindPeerWait, 7, 2, 100*us, 100*us+2*s+s/2)
	long.Peer, long.Op, long.Comm, long.Aux = 8, 1, 4, timeline.PeerWaitRecv
	evs = append(evs, long)
	now := long.End + 10*us
	inflight := []timeline.Event{{Kind: timeline.KindPeerWait, Start: now - 3*s, Device: 20, Peer: 21, Op: 2, Comm: 4, Aux: timeline.PeerWaitRecv}}
	a := New(timeline.Meta{Source: "cluster", Devices: 256, GPUsPerHost: 8})
	for i := range evs {
		a.Emit(&evs[i])
	}
	if len(a.held) == 0 {
		t.Fatal("no event held on 256 GPUs; want the wait held, so that the test shows Pending folding it first")
	}
	a.Pending(now, inflight)
	if f := a.Result(timeline.NewStrings()).Findings; len(f) != 0 {
		t.Fatalf("findings %+v; want none: the receive waited 3 s, under four times the 2.5 s wait that ended before", f)
	}
}

// TestStreamLines: the lines of a stream's state asked for ahead are those add reads: three for
// a busy op, one for a wait it may keep, none for the events it leaves alone, though they carry
// a stream (a promise fulfilled, an event recorded).
func TestStreamLines(t *testing.T) {
	for _, c := range []struct {
		kind timeline.Kind
		want int
	}{
		{timeline.KindKernel, 3}, {timeline.KindCollective, 3}, {timeline.KindSend, 3}, {timeline.KindMemcpy, 3},
		{timeline.KindEventWait, 1}, {timeline.KindPeerWait, 1}, {timeline.KindBarrier, 1},
		{timeline.KindPromiseFulfilled, 0}, {timeline.KindEventRecord, 0}, {timeline.KindCommHit, 0},
	} {
		if got := streamLines(c.kind); got != c.want {
			t.Errorf("streamLines(%v) = %d; want %d", c.kind, got, c.want)
		}
	}
}
