package agg

import (
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
