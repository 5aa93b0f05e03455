package agg

import (
	"reflect"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// Each event is folded once, however often Update runs; tracks hold a stream's ops in start order.
func TestUpdateFoldsEachEventOnce(t *testing.T) {
	w := timeline.NewWindow(0, nil)
	s := New()
	var folded []int64
	fold := func(e *timeline.Event) { folded = append(folded, e.Start) }
	emit := func(start int64) {
		w.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: 0, Stream: 1, Start: start, End: start + 5, Peer: -1})
	}
	emit(10)
	emit(30)
	snap := w.Snapshot()
	s.Update(&snap, fold)
	s.Update(&snap, fold)
	emit(20) // out of order on its stream
	snap = w.Snapshot()
	s.Update(&snap, fold)
	if len(folded) != 3 || folded[2] != 20 {
		t.Fatalf("folded %v; want each of 10, 30, 20 once", folded)
	}
	if len(s.Tracks) != 1 {
		t.Fatalf("tracks %+v", s.Tracks)
	}
	var starts []int64
	for _, o := range s.Tracks[0].Ops {
		starts = append(starts, o.Start)
	}
	if len(starts) != 3 || starts[0] != 10 || starts[1] != 20 || starts[2] != 30 {
		t.Errorf("track ops start at %v; want 10 20 30", starts)
	}
	if got := s.RecentLog(2); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("recent log %v; want indices 1 2", got)
	}
}

// Events trimmed from the window before the console read them are counted, not folded.
func TestMissedEvents(t *testing.T) {
	w := timeline.NewWindow(1, nil) // the smallest window: one chunk
	s := New()
	n := 0
	for i := range 3 * 16384 {
		w.Emit(&timeline.Event{Kind: timeline.KindMark, Start: int64(i), End: int64(i), Device: -1, Peer: -1})
	}
	snap := w.Snapshot()
	s.Update(&snap, func(*timeline.Event) { n++ })
	if s.Missed == 0 || int64(n)+s.Missed != 3*16384 {
		t.Errorf("folded %d, missed %d; want all %d accounted for", n, s.Missed, 3*16384)
	}
}

// opsOf lists a state's tracks' op starts.
func opsOf(s *State) [][]int64 {
	var out [][]int64
	for _, t := range s.Tracks {
		var starts []int64
		for _, o := range t.Ops {
			starts = append(starts, o.Start)
		}
		out = append(out, starts)
	}
	return out
}

// A published state does not change while Update goes on, whatever the later events do to the
// tracks (ops in order, the window trimming, ops out of order among published ones, a new stream);
// and another goroutine can read it meanwhile (go test -race).
func TestPublishedStateDoesNotChange(t *testing.T) {
	w := timeline.NewWindow(1, nil) // chunks of 16384 events: a third one trims the first
	s := New()
	next := int64(1000)
	emit := func(dev int32, stream uint32, start int64) {
		w.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: dev, Stream: stream, Start: start, End: start + 5, Peer: -1})
	}
	inOrder := func(n int) {
		for range n {
			emit(1, 1, next)
			next += 10
		}
	}
	inOrder(32_700)
	snap := w.Snapshot()
	s.Update(&snap, nil)
	if tr := s.Tracks[0]; cap(tr.Ops)-len(tr.Ops) < 1000 { // so that the trim below happens in place
		tr.Ops = append(make([]Op, 0, len(tr.Ops)+1000), tr.Ops...)
	}
	steps := []struct {
		name string
		emit func()
	}{
		{"in order", func() { inOrder(1) }},
		{"the window trims", func() { inOrder(500) }}, // past 2 chunks, within the track's capacity
		{"out of order among published ops", func() { emit(1, 1, next-15) }},
		{"a new stream before the first", func() { emit(0, 1, 7) }},
	}
	for _, st := range steps {
		snap := w.Snapshot()
		s.Update(&snap, nil)
		pub := s.Publish()
		want, wantLog := opsOf(pub), pub.RecentLog(MaxLog)
		done := make(chan struct{})
		go func() { // a console drawing the published state
			defer close(done)
			_ = opsOf(pub)
			_ = pub.RecentLog(10)
		}()
		st.emit()
		snap = w.Snapshot()
		s.Update(&snap, nil)
		<-done
		if got := opsOf(pub); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the published tracks changed", st.name)
		}
		if got := pub.RecentLog(MaxLog); !reflect.DeepEqual(got, wantLog) {
			t.Fatalf("%s: the published log changed", st.name)
		}
		// What is published now is the state as it is.
		if got, now := opsOf(s.Publish()), opsOf(s); !reflect.DeepEqual(got, now) {
			t.Fatalf("%s: Publish gives %v; the state holds %v", st.name, got, now)
		}
	}
	a, b := s.Publish(), s.Publish()
	if s.Missed != 0 || a.Tracks[0] != b.Tracks[0] {
		t.Errorf("missed %d; an unchanged track copied again: %v", s.Missed, a.Tracks[0] != b.Tracks[0])
	}
}

// A batch large enough that Update grows each track once first gives the same tracks, op for op,
// as the same events read a few at a time; and a state published before it does not change.
func TestLargeBatchEqualsSmallBatches(t *testing.T) {
	w := timeline.NewWindow(0, nil)
	small, big := New(), New()
	n := int64(0)
	emitSome := func(k int) {
		for range k {
			// Three streams on two devices, some events out of start order, some not drawn.
			dev, stream := int32(n%2), uint32(1+n%3)
			kind := timeline.KindKernel
			if n%7 == 0 {
				kind = timeline.KindMark
			}
			start := 10 * n
			if n%5 == 0 {
				start -= 25
			}
			w.Emit(&timeline.Event{Kind: kind, Device: dev, Stream: stream, Start: start, End: start + 8, Peer: -1})
			n++
		}
	}
	emitSome(100)
	snap := w.Snapshot()
	big.Update(&snap, nil)
	before := big.Publish()
	was := opsOf(before)
	for range reserveBatch/1000 + 2 {
		emitSome(1000)
		snap = w.Snapshot()
		small.Update(&snap, nil)
	}
	if snap.Total-big.Next < reserveBatch {
		t.Fatalf("the batch is %d events; the test needs at least %d", snap.Total-big.Next, reserveBatch)
	}
	big.Update(&snap, nil)
	for i, tr := range big.Tracks {
		if cap(tr.Ops) != len(tr.Ops) {
			t.Errorf("track %d holds %d ops in room for %d: not grown once to size", i, len(tr.Ops), cap(tr.Ops))
		}
	}
	if !reflect.DeepEqual(opsOf(big), opsOf(small)) {
		t.Error("the tracks of one large batch differ from those of small batches")
	}
	for i := range small.Tracks {
		if !reflect.DeepEqual(small.Tracks[i].Ops, big.Tracks[i].Ops) {
			t.Errorf("track %d: ops differ", i)
		}
	}
	if !reflect.DeepEqual(opsOf(before), was) {
		t.Error("a state published before the large batch changed")
	}
}

// Streams that appear out of order, in one update and across updates, are listed by device then
// stream once Update returns, each once, however its events interleave.
func TestTracksSortedAcrossUpdates(t *testing.T) {
	w := timeline.NewWindow(0, nil)
	s := New()
	emit := func(dev int32, stream uint32) {
		w.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: dev, Stream: stream, Start: 1, End: 2, Peer: -1})
	}
	for _, ds := range [][2]int{{3, 9}, {0, 5}, {3, 2}, {1, 1}, {0, 5}} {
		emit(int32(ds[0]), uint32(ds[1]))
	}
	snap := w.Snapshot()
	s.Update(&snap, nil)
	emit(2, 7)
	emit(0, 1)
	emit(3, 2)
	snap = w.Snapshot()
	s.Update(&snap, nil)
	var got [][2]int
	for _, tr := range s.Tracks {
		got = append(got, [2]int{int(tr.Device), int(tr.Stream)})
	}
	want := [][2]int{{0, 1}, {0, 5}, {1, 1}, {2, 7}, {3, 2}, {3, 9}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tracks %v; want %v", got, want)
	}
	if n := len(s.Tracks[4].Ops); n != 2 {
		t.Errorf("device 3 stream 2 has %d ops; want 2", n)
	}
}

// BenchmarkNewStreams folds a window whose events open 32,768 streams (4,096 devices, 8 each, a
// stream's first event in stream-major order, as a job's phases open them), as the first frame
// of a 4,096-GPU console does.
//
//	go test ./ui/agg -run '^$' -bench NewStreams -count 5
func BenchmarkNewStreams(b *testing.B) {
	w := timeline.NewWindow(1<<20, nil)
	for st := range uint32(8) {
		for d := range int32(4096) {
			for k := range int64(4) {
				w.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: d, Stream: st + 1, Start: k, End: k + 1, Peer: -1})
			}
		}
	}
	snap := w.Snapshot()
	for b.Loop() {
		s := New()
		s.Update(&snap, nil)
		if len(s.Tracks) != 32768 {
			b.Fatalf("%d tracks", len(s.Tracks))
		}
	}
}

// A sliding window, folded and published at each update as the console does, moves a stream's live
// ops into a new array only now and then (once the dropped ops held in front of them reach
// half the live ones), not at every update: that copied the whole window's ops each fold. The
// ops are the window's, in order, after every update, and the dropped ones held stay under
// half the live ones.
func TestTrimMovesOpsOnlyNowAndThen(t *testing.T) {
	const chunk = 16384 // the window's chunk: it trims a chunk at a time
	w := timeline.NewWindow(16*chunk, nil)
	s := New()
	next := int64(0)
	var updates, trims, moves int
	for range 60 {
		for range chunk {
			w.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: 1, Stream: 1, Start: next, End: next + 5, Peer: -1})
			next += 10
		}
		var last *Op
		var lastIdx, base int64 = -1, 0
		if len(s.Tracks) == 1 && len(s.Tracks[0].Ops) > 0 {
			tr := s.Tracks[0]
			last, lastIdx, base = &tr.Ops[len(tr.Ops)-1], tr.Ops[len(tr.Ops)-1].Index, tr.Ops[0].Index
		}
		snap := w.Snapshot()
		s.Update(&snap, nil)
		_ = s.Publish()
		updates++
		tr := s.Tracks[0]
		if int64(len(tr.Ops)) != snap.Total-snap.Base {
			t.Fatalf("update %d: %d ops; the window holds %d events", updates, len(tr.Ops), snap.Total-snap.Base)
		}
		for i, op := range tr.Ops {
			if op.Index != snap.Base+int64(i) || (i > 0 && op.Start < tr.Ops[i-1].Start) {
				t.Fatalf("update %d: op %d has index %d; want %d, in start order", updates, i, op.Index, snap.Base+int64(i))
			}
		}
		if 2*tr.dropped > len(tr.Ops) {
			t.Fatalf("update %d: %d dropped ops held in front of %d live ones", updates, tr.dropped, len(tr.Ops))
		}
		if last == nil || snap.Base == base {
			continue
		}
		trims++
		if &tr.Ops[lastIdx-snap.Base] != last {
			moves++
		}
	}
	if trims < 40 || moves > trims/2 {
		t.Errorf("the live ops moved at %d of %d trims; want at most half", moves, trims)
	}
}

// Each (device, stream) has one track, found again whatever the device's id: small ids by their
// place, ids past maxIndexedDevice through the map; Tracks end sorted by device, then stream.
func TestTrackPerStream(t *testing.T) {
	w := timeline.NewWindow(0, nil)
	keys := [][2]int64{{5, 2}, {0, 1}, {5, 1}, {maxIndexedDevice + 3, 1}, {0, 1}, {5, 2}, {maxIndexedDevice + 3, 1}, {maxIndexedDevice + 3, 4}, {70_000, 9}}
	for i, k := range keys {
		w.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: int32(k[0]), Stream: uint32(k[1]), Start: int64(i), End: int64(i) + 1, Peer: -1})
	}
	s := New()
	snap := w.Snapshot()
	s.Update(&snap, nil)
	var got [][3]int64
	for _, tr := range s.Tracks {
		got = append(got, [3]int64{int64(tr.Device), int64(tr.Stream), int64(len(tr.Ops))})
	}
	want := [][3]int64{{0, 1, 2}, {5, 1, 1}, {5, 2, 2}, {70_000, 9, 1}, {maxIndexedDevice + 3, 1, 2}, {maxIndexedDevice + 3, 4, 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tracks (device, stream, ops) %v; want %v", got, want)
	}
}
