package analysis

import (
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// sendRecvRing is two iterations of sendrecv_perf over 2 hosts × 4 GPUs, worked by hand: each rank
// i's group holds its send to i+1 and its receive from i−1; a send inside a host takes 10 µs, the
// two that cross hosts (3→4, 7→0) 40 µs, and a pair starts when both its ranks are done with the
// previous iteration. Iteration 0 starts everywhere at 0 and ends at 40. Ranks 1, 2, 5 and 6 touch
// no NIC and are free at 10, so iteration 1's 1→2 and 5→6 run at 10–20; every other pair waits
// for a rank free at 40: 40–50 inside a host, 40–80 across. Iteration 1 spans 10–80, overlapping
// iteration 0: the two took 80 µs together, 40 per iteration (the NIC pairs' time), where the sum
// of their spans is 110 and the mean send 17.5 µs.
func sendRecvRing(bytes int64) []timeline.Event {
	start := [2][8]int64{{0, 0, 0, 0, 0, 0, 0, 0}, {40, 10, 40, 40, 40, 10, 40, 40}}
	var evs []timeline.Event
	for it := range 2 {
		for i := range int32(8) {
			next := (i + 1) % 8
			dur := 10 * us
			if i == 3 || i == 7 {
				dur = 40 * us
			}
			s, op := start[it][i]*us, uint64(1+8*it)+uint64(i)
			send, recv := sendEv(i, next, s, s+dur, bytes, op), recvEv(next, i, s, s+dur, bytes, op)
			send.Group, recv.Group = uint32(1+8*it)+uint32(i), uint32(1+8*it)+uint32(next)
			evs = append(evs, send, recv)
		}
	}
	return evs
}

// TestSendRecvIterations: grouped sends and receives fold into iterations joined by groups and op
// ids; the iterations of a size take the union of their spans, so a row's time per iteration is
// nccl-tests' (the slowest pair's), not the mean send's; sends outside a group are not iterations;
// sizes are rows of their own.
func TestSendRecvIterations(t *testing.T) {
	evs := sendRecvRing(4 << 20)
	for _, e := range sendRecvRing(1 << 20) { // a smaller size later on: a row of its own
		e.Start, e.End = e.Start+1000*us, e.End+1000*us
		e.Op += 100
		e.Group += 100
		evs = append(evs, e)
	}
	evs = append(evs, sendEv(0, 1, 2000*us, 2001*us, 64, 0)) // not in a group
	res := analyze(timeline.Meta{}, evs...)
	if len(res.SendRecv) != 2 {
		t.Fatalf("SendRecv = %+v; want 2 rows", res.SendRecv)
	}
	for i, want := range []struct {
		bytes int64
		alg   float64
	}{{1 << 20, 26.21}, {4 << 20, 104.86}} {
		r := res.SendRecv[i]
		if r.Bytes != want.bytes || r.Sends != 8 || r.Count != 2 || r.TimeNs != 80*us || r.AlgBW == nil || *r.AlgBW != want.alg {
			t.Errorf("row %d: %+v (algbw %v); want %d B, 8 sends, 2 iterations in 80 µs, algbw %.2f", i, r, deref(r.AlgBW), want.bytes, want.alg)
		}
	}
	// Part of the stream: iteration 0 and the first pair of iteration 1, still in flight, which the
	// row leaves out until its other pairs report.
	part := analyze(timeline.Meta{}, evs[:18]...)
	if len(part.SendRecv) != 1 || part.SendRecv[0].Count != 1 || part.SendRecv[0].TimeNs != 40*us || part.SendRecv[0].Sends != 8 {
		t.Errorf("after 18 events: %+v; want iteration 0 alone (0–40 µs, 8 sends)", part.SendRecv)
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// TestSendRecvIterationsBounded: memory stays bounded on long streams. 3,000 exchanges between two
// ranks, 5 µs each with 5 µs between, keep every iteration and its time (15 ms in all) through the
// rows' interval commits (past 1,024 disjoint spans) and the union-find's flushes (every 64 nodes
// here, 4 per iteration: a flush in the middle of an iteration keeps it, so none counts twice).
func TestSendRecvIterationsBounded(t *testing.T) {
	p := newP2PIterations()
	p.limit = 64
	for i := range int64(3000) {
		s := 10 * us * i
		op := uint64(2*i + 1)
		a, b := sendEv(0, 1, s, s+5*us, 1<<20, op), recvEv(1, 0, s, s+5*us, 1<<20, op)
		c, d := sendEv(1, 0, s, s+5*us, 1<<20, op+1), recvEv(0, 1, s, s+5*us, 1<<20, op+1)
		a.Group, d.Group = uint32(2*i+1), uint32(2*i+1)
		b.Group, c.Group = uint32(2*i+2), uint32(2*i+2)
		for _, e := range []timeline.Event{a, b, c, d} {
			p.add(&e)
		}
		if len(p.parent) > p.limit {
			t.Fatalf("%d union-find nodes; the limit is %d", len(p.parent), p.limit)
		}
	}
	rows := p.result()
	if len(rows) != 1 || rows[0].Count != 3000 || rows[0].TimeNs != 3000*5*us || rows[0].Sends != 2 {
		t.Errorf("rows %+v; want 3000 iterations of 2 sends in 15 ms", rows)
	}
	if n := p.rows[1<<20].spans.size(); n > maxIntervals+1 {
		t.Errorf("the row keeps %d intervals; want at most %d", n, maxIntervals+1)
	}
}
