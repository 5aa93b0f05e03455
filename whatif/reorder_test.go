package whatif

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// packOp and unpackOp give back the event, every field, at the extremes of each field's range.
func TestPackOp(t *testing.T) {
	evs := []timeline.Event{
		{},
		{Start: 1_000_000_123, End: 1_000_900_000, Queued: 999_000_000, Bytes: 64 << 20, Op: 77, Device: 1023, Peer: timeline.NoDevice,
			Stream: 7, Group: 3, Comm: 2, Barrier: 1, Label: 42, Aux: 0x1234, Host: 127, Ranks: 1024, Kind: timeline.KindCollective, Sub: 3, Status: 1, Priority: -3},
		{Start: math.MinInt64, End: math.MaxInt64, Queued: 0, Bytes: math.MinInt64, Op: math.MaxUint64, Device: math.MinInt32, Peer: math.MaxInt32,
			Stream: math.MaxUint32, Group: math.MaxUint32, Comm: math.MaxUint32, Barrier: math.MaxUint32, Label: math.MaxUint32, Aux: math.MaxUint32,
			Host: math.MaxUint16, Ranks: math.MaxUint16, Kind: 255, Sub: 255, Status: 255, Priority: math.MinInt8},
	}
	var b []byte
	var offs []int64
	for i := range evs {
		offs = append(offs, int64(len(b)))
		b = packOp(b, &evs[i])
	}
	for i, want := range evs {
		var got timeline.Event
		end, err := unpackOp(b, offs[i], want.Start, &got)
		if err != nil || got != want {
			t.Errorf("unpackOp(packOp(%+v)) = %+v, %v", want, got, err)
		}
		if i+1 < len(offs) && end != offs[i+1] {
			t.Errorf("op %d ends at %d; the next begins at %d", i, end, offs[i+1])
		}
	}
	// Cut short anywhere, it is an error naming the offset, not a panic or a wrong event.
	last := offs[len(offs)-1]
	for n := last; n < int64(len(b)); n++ {
		var got timeline.Event
		if _, err := unpackOp(b[:n], last, 0, &got); err == nil {
			t.Errorf("unpackOp of %d of %d bytes: no error", n-last, int64(len(b))-last)
		}
	}
}

// FuzzPackOp: any event packed unpacks to itself; any bytes unpack to an event or an error.
func FuzzPackOp(f *testing.F) {
	f.Add(int64(5), int64(9), int64(1), int64(100), uint64(3), int32(2), int32(-1), uint32(1), uint32(9), uint16(2), uint8(4), int8(-1), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, start, end, queued, bytes int64, op uint64, dev, peer int32, stream, label uint32, host uint16, kind uint8, prio int8, junk []byte) {
		e := timeline.Event{Start: start, End: end, Queued: queued, Bytes: bytes, Op: op, Device: dev, Peer: peer, Stream: stream,
			Group: label ^ stream, Comm: stream / 3, Barrier: label / 5, Label: label, Aux: stream + label, Host: host, Ranks: host / 2,
			Kind: timeline.Kind(kind), Sub: kind / 2, Status: kind / 3, Priority: prio}
		b := packOp(nil, &e)
		var got timeline.Event
		if end, err := unpackOp(b, 0, start, &got); err != nil || got != e || end != int64(len(b)) {
			t.Fatalf("unpackOp(packOp(%+v)) = %+v, %d, %v", e, got, end, err)
		}
		_, _ = unpackOp(junk, 0, start, &got)
	})
}

// The reorder buffer passes on, at each flush, the ops that start before the bound, in start
// order (ties by index), whatever order they came in and however often it compacts.
func TestReorderBuf(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var r reorderBuf
	var all []reorderKey
	var got []int32
	var gotEv []timeline.Event
	sink := (*events)(&gotEv)
	idx := int32(0)
	for round := range 50 {
		lb := int64(round) * 100
		for range rng.IntN(200) {
			// Ops of this round start after the last bound, as a later window's do.
			e := timeline.Event{Start: lb + rng.Int64N(300), Label: uint32(idx), Device: int32(rng.IntN(8)), Kind: timeline.KindKernel}
			e.End = e.Start + rng.Int64N(50)
			r.add(e, idx)
			all = append(all, reorderKey{start: e.Start, idx: idx})
			idx++
		}
		if err := r.flush(lb+100, sink, &got); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.flush(math.MaxInt64, sink, &got); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, byStart)
	if len(got) != len(all) {
		t.Fatalf("%d ops passed on; %d added", len(got), len(all))
	}
	for i, k := range all {
		if got[i] != k.idx || gotEv[i].Start != k.start || gotEv[i].Label != uint32(k.idx) {
			t.Fatalf("op %d passed on: index %d at %d; want %d at %d", i, got[i], gotEv[i].Start, k.idx, k.start)
		}
	}
	if len(r.ops) != 0 || len(r.data) > 0 && r.dead != len(r.data) {
		t.Errorf("after the last flush: %d ops, %d bytes of which %d dead", len(r.ops), len(r.data), r.dead)
	}
}
