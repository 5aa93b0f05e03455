package events

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// A search over more events than one frame's budget goes on over the next frames, newest first,
// and then takes the events that arrive as they come; a new query starts over.
func TestSearchSpansFrames(t *testing.T) {
	win := timeline.NewWindow(1<<20, timeline.NewStrings())
	emit := func(from, to int) {
		for i := from; i < to; i++ {
			win.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: int32(i % 1000), Start: int64(i), End: int64(i + 1)})
		}
	}
	n := 2*searchBudget + searchBudget/2
	emit(0, n)
	format := func(snap *timeline.Snapshot) func(int64) string {
		return func(i int64) string { return fmt.Sprintf("dev %d ", snap.At(i).Device) }
	}
	var s search
	want := n / 1000
	for frame := 1; frame <= 3; frame++ {
		snap := win.Snapshot()
		s.update("dev 7 ", &snap, format(&snap))
		if done := s.done(&snap); done != (frame == 3) {
			t.Fatalf("frame %d: done %v after %d of %d events", frame, done, s.searched(), n)
		}
	}
	if s.matches() != want || s.nth(0) != int64(n-1000+7) || s.nth(want-1) != 7 {
		t.Fatalf("%d matches, newest %d, oldest %d; want %d, %d, 7", s.matches(), s.nth(0), s.nth(want-1), want, n-1000+7)
	}
	emit(n, n+1000)
	snap := win.Snapshot()
	s.update("dev 7 ", &snap, format(&snap))
	if s.matches() != want+1 || s.nth(0) != int64(n+7) || !s.done(&snap) {
		t.Fatalf("after 1,000 more events: %d matches, newest %d; want %d, %d", s.matches(), s.nth(0), want+1, n+7)
	}
	s.update("dev 8 ", &snap, format(&snap))
	if s.matches() == 0 || s.nth(0) != int64(n+8) {
		t.Fatalf("a new query: %d matches, newest %d; want newest %d", s.matches(), s.nth(0), n+8)
	}
}

// When more lines match than the search keeps, the header says that only the newest are shown and
// the count is a floor, not "N matches in all"; with fewer it gives the count.
func TestSearchHeaderCapped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events int
		want   string
	}{
		{"under the cap", maxMatches / 2, fmt.Sprintf("%d matches in all", maxMatches/2)},
		{"over the cap", maxMatches + 5_000, fmt.Sprintf("more than %d matches", maxMatches)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			win := timeline.NewWindow(1<<20, timeline.NewStrings())
			for i := range tc.events {
				win.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: 1, Start: int64(i), End: int64(i + 1)})
			}
			snap := win.Snapshot()
			var s search
			for range 10 {
				s.update("dev", &snap, func(int64) string { return "dev 1" })
			}
			if !s.done(&snap) {
				t.Fatalf("not done after 10 frames: %d of %d searched", s.searched(), tc.events)
			}
			got := s.header(&snap, "x", "newest last")
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("header %q; want it to begin %q", got, tc.want)
			}
		})
	}
}

// A send's, receive's, collective's and peer wait's line carries the op id the watchdog and the
// findings name ("send op 7 from rank 3 waited …"), so that `/op 7` finds them; a kernel's has none.
func TestLineNamesOp(t *testing.T) {
	win := timeline.NewWindow(1<<10, timeline.NewStrings())
	for _, e := range []timeline.Event{
		{Kind: timeline.KindSend, Device: 3, Peer: 11, Op: 7, Start: 1, End: 2},
		{Kind: timeline.KindRecv, Device: 11, Peer: 3, Op: 7, Start: 1, End: 2},
		{Kind: timeline.KindPeerWait, Device: 3, Peer: 11, Op: 7, Start: 1, End: 2},
		{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Device: 0, Peer: -1, Op: 421, Start: 1, End: 2},
		{Kind: timeline.KindKernel, Device: 0, Peer: -1, Start: 1, End: 2},
	} {
		win.Emit(&e)
	}
	snap := win.Snapshot()
	for i, want := range []string{" · op 7", " · op 7", " · op 7", " · op 421", ""} {
		got := line(&snap, snap.At(snap.Base+int64(i)))
		if want == "" && strings.Contains(got, " op ") || want != "" && !strings.HasSuffix(got, want) {
			t.Errorf("event %d: line %q; want it to end %q", i, got, want)
		}
	}
}
