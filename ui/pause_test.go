package ui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/timeline"
)

// tickAndFold delivers a tick and runs what it asks for, as Bubble Tea would: the fold's frame goes
// back to the console.
func tickAndFold(m *Model) {
	_, cmd := m.Update(tickMsg{id: m.tickID})
	if cmd == nil {
		return
	}
	batch, ok := cmd().(tea.BatchMsg)
	if !ok {
		return
	}
	for _, c := range batch {
		if c == nil {
			continue
		}
		if msg, ok := c().(foldedMsg); ok {
			m.Update(msg)
		}
	}
}

// resume presses space on a paused console and runs the fold it asks for, as Bubble Tea would.
func resume(m *Model) {
	if cmd := press(m, "space"); cmd != nil {
		m.Update(cmd())
	}
}

// A pause freezes what is drawn, never what is counted: a live source's window trims events the
// console has not read, so the analysis goes on folding while the view is paused, and after the
// resume every figure counts every event, the ones trimmed during the pause included.
func TestPauseLosesNoEvents(t *testing.T) {
	w := timeline.NewWindow(1, nil) // the smallest window: one chunk of events
	next := kernels(w, 2, 10, 0)
	src := &fakeSource{win: w, info: SourceInfo{Name: "load", Meta: timeline.Meta{Devices: 2, GPUsPerHost: 2}}, status: Status{Speed: 1}}
	m := sized(src, 120, 30)
	press(m, "space")
	frozen := text(m)
	const rounds, per = 12, 4096 // 2 devices: 8192 events a round, the window trims several times
	for range rounds {
		next = kernels(w, 2, per, next)
		tickAndFold(m)
		if got := text(m); got != frozen {
			t.Fatalf("the paused view changed as the run went on:\n%s", got)
		}
	}
	if tr := w.Snapshot().Trimmed; tr == 0 {
		t.Fatal("the window trimmed nothing: the test shows nothing")
	}
	resume(m)
	want := int64(2 * (10 + rounds*per))
	if got := m.Result().Events; got != want {
		t.Errorf("after a pause the analysis counts %d events; want %d (every event the run produced)", got, want)
	}
}

// A fold that runs past slowFold is said in the header (busy), so a console slow to answer keys
// at 4,096 GPUs does not look hung; the fold's frame clears it. The console's clock is the test's.
func TestHeaderSaysBusyFolding(t *testing.T) {
	src := scenarioSource(t, "pipeline", 1, "")
	m := sized(src, 200, 30)
	now := time.Unix(1000, 0)
	m.clock = func() time.Time { return now }
	_, cmd := m.Update(tickMsg{id: m.tickID}) // starts a fold; its command not run yet
	if cmd == nil || !m.folding {
		t.Fatal("the tick started no fold")
	}
	m.Update(tickMsg{id: m.tickID}) // within slowFold: not busy yet
	if strings.Contains(text(m), "busy") {
		t.Fatalf("busy before the fold ran %s:\n%s", slowFold, text(m))
	}
	now = now.Add(slowFold)
	m.Update(tickMsg{id: m.tickID})
	if got := text(m); !strings.Contains(got, "busy: folding the events that came in") {
		t.Errorf("a fold running %s: the header does not say busy:\n%s", slowFold, got)
	}
	m.Update(m.feed.foldCmd()())
	if got := text(m); strings.Contains(got, "busy") {
		t.Errorf("the fold's frame came; the header still says busy:\n%s", got)
	}
}

// A pause longer than the window's span holds one window, not two: the frame drawn lets go of the
// chunks the window trims (its snapshot holds none the window does not), and the display state
// waits for the resume rather than keeping a second copy of the ops; the analysis still counts
// every event, and after the resume the display reads what the window holds.
func TestPauseHoldsOneWindow(t *testing.T) {
	w := timeline.NewWindow(1, nil) // one chunk of events
	next := kernels(w, 2, 10, 0)
	src := &fakeSource{win: w, info: SourceInfo{Name: "load", Meta: timeline.Meta{Devices: 2, GPUsPerHost: 2}}, status: Status{Speed: 1}}
	m := sized(src, 120, 30)
	press(m, "space")
	frozen, read := text(m), m.feed.state.Next
	const rounds, per = 12, 4096
	for range rounds {
		next = kernels(w, 2, per, next)
		tickAndFold(m)
		live := w.Snapshot()
		if m.snap.Len() > 0 && m.snap.Base < live.Base {
			t.Fatalf("paused, the frame drawn holds events from %d; the window only from %d: two windows' worth",
				m.snap.Base, live.Base)
		}
		if m.feed.state.Next != read {
			t.Fatalf("paused, the display state read on to event %d (from %d): a second copy of the ops", m.feed.state.Next, read)
		}
		if got := text(m); got != frozen {
			t.Fatalf("the paused view changed as the run went on:\n%s", got)
		}
	}
	if m.snap.Len() != 0 {
		t.Fatalf("the window moved past the pause, yet the frame drawn holds %d events", m.snap.Len())
	}
	press(m, "down", "j") // redrawn paused: the ops that left the window are drawn, their details say so
	resume(m)
	live := w.Snapshot()
	if want := int64(2 * (10 + rounds*per)); m.Result().Events != want {
		t.Errorf("after the pause the analysis counts %d events; want %d", m.Result().Events, want)
	}
	if m.state.Next != live.Total || m.state.Missed != live.Base-read {
		t.Errorf("after the resume the display read to %d, missed %d; want to %d, missed %d (what the window trimmed)",
			m.state.Next, m.state.Missed, live.Total, live.Base-read)
	}
}

// A resume with many events to read folds off the console's goroutine: the display state reads up
// to a window of events then (8 s at 1,024 GPUs, deaf to keys when it ran in Update), so space
// returns a fold to run, as a tick does, and the frame it makes is what is shown.
func TestResumeFoldsOffTheConsoleGoroutine(t *testing.T) {
	w := timeline.NewWindow(0, nil)
	next := kernels(w, 2, 10, 0)
	src := &fakeSource{win: w, info: SourceInfo{Name: "load", Meta: timeline.Meta{Devices: 2, GPUsPerHost: 2}}, status: Status{Speed: 1}}
	m := sized(src, 120, 30)
	press(m, "space")
	kernels(w, 2, syncResume, next) // more than a resume reads in Update
	seq, read := m.seq, m.feed.state.Next
	cmd := press(m, "space")
	if m.Paused() || cmd == nil || m.seq != seq || m.feed.state.Next != read {
		t.Fatalf("space resumed (paused %v) by folding in Update (frame %d of %d, display read to %d of %d) or asked for no fold (%v)",
			m.Paused(), m.seq, seq, m.feed.state.Next, read, cmd != nil)
	}
	m.Update(cmd())
	if want := int64(2 * (10 + syncResume)); m.Result().Events != want || m.state.Next != want {
		t.Errorf("after the resume's fold: %d events counted, display read to %d; want %d", m.Result().Events, m.state.Next, want)
	}
}
