package analysis

import (
	"fmt"
	"math"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// Builders for hand-made events. Fields a test does not name keep the values producers use for
// "none": no peer, no stream, status OK.

const us = int64(1000) // one microsecond in ns

func busy(kind timeline.Kind, dev int32, stream uint32, start, end int64) timeline.Event {
	return timeline.Event{Kind: kind, Device: dev, Peer: timeline.NoDevice, Stream: stream, Start: start, End: end}
}

func kern(dev int32, stream uint32, start, end int64) timeline.Event {
	return busy(timeline.KindKernel, dev, stream, start, end)
}

func copyEv(dir timeline.CopyDir, dev, peer int32, start, end, bytes int64) timeline.Event {
	e := busy(timeline.KindMemcpy, dev, 0, start, end)
	e.Sub, e.Peer, e.Bytes = uint8(dir), peer, bytes
	return e
}

func sendEv(dev, peer int32, start, end, bytes int64, op uint64) timeline.Event {
	e := busy(timeline.KindSend, dev, 0, start, end)
	e.Peer, e.Bytes, e.Op = peer, bytes, op
	return e
}

func recvEv(dev, peer int32, start, end, bytes int64, op uint64) timeline.Event {
	e := busy(timeline.KindRecv, dev, 0, start, end)
	e.Peer, e.Bytes, e.Op = peer, bytes, op
	return e
}

func collEv(c timeline.CollOp, ranks int, dev int32, op uint64, start, end, bytes int64) timeline.Event {
	e := busy(timeline.KindCollective, dev, 0, start, end)
	e.Sub, e.Ranks, e.Op, e.Bytes = uint8(c), uint16(ranks), op, bytes
	return e
}

func waitEv(kind timeline.Kind, dev int32, stream uint32, start, end int64) timeline.Event {
	return timeline.Event{Kind: kind, Device: dev, Peer: timeline.NoDevice, Stream: stream, Start: start, End: end}
}

func barrierEv(rank int32, op uint64, ranks int, arrive, release int64) timeline.Event {
	return timeline.Event{Kind: timeline.KindBarrier, Device: rank, Peer: timeline.NoDevice, Op: op, Ranks: uint16(ranks),
		Start: arrive, End: release}
}

func stepEv(start, end int64) timeline.Event {
	return timeline.Event{Kind: timeline.KindStep, Device: timeline.NoDevice, Peer: timeline.NoDevice, Start: start, End: end}
}

func commInitEv(comm uint32, dev int32, start, end int64) timeline.Event {
	return timeline.Event{Kind: timeline.KindCommInit, Comm: comm, Device: dev, Peer: timeline.NoDevice, Start: start, End: end}
}

func instant(kind timeline.Kind, at int64) timeline.Event {
	return timeline.Event{Kind: kind, Device: timeline.NoDevice, Peer: timeline.NoDevice, Start: at, End: at}
}

func withStatus(e timeline.Event, st uint8) timeline.Event { e.Status = st; return e }

func withQueued(e timeline.Event, q int64) timeline.Event { e.Queued = q; return e }

// captured marks e as an op a CUDA graph replayed.
func captured(e timeline.Event) timeline.Event { e.Aux |= timeline.AuxCaptured; return e }

// fold runs a fresh analyzer over evs in the order given.
func fold(m timeline.Meta, evs []timeline.Event) *Analyzer {
	a := New(m)
	for i := range evs {
		a.Emit(&evs[i])
	}
	return a
}

// analyze folds evs and returns the result.
func analyze(m timeline.Meta, evs ...timeline.Event) *Result {
	return fold(m, evs).Result(timeline.NewStrings())
}

func i64(v int64) *int64 { return &v }

func f64(v float64) *float64 { return &v }

// nearestRank is the textbook nearest-rank percentile of sorted values: the value at rank ⌈p/100·n⌉
// (1-based), the smallest for p = 0.
func nearestRank(sorted []float64, p float64) float64 {
	r := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(r, 1)-1]
}

func eqPtrI(t *testing.T, what string, got, want *int64) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("%s = %s; want %s", what, fmtPtrI(got), fmtPtrI(want))
	case *got != *want:
		t.Errorf("%s = %d; want %d", what, *got, *want)
	}
}

func eqPtrF(t *testing.T, what string, got, want *float64) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("%s = %s; want %s", what, fmtPtrF(got), fmtPtrF(want))
	case math.Abs(*got-*want) > 0.005+1e-9:
		t.Errorf("%s = %v; want %v (±0.005)", what, *got, *want)
	}
}

func fmtPtrI(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func fmtPtrF(p *float64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
