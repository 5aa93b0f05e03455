package ui

import (
	"testing"

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
	press(m, "space")
	want := int64(2 * (10 + rounds*per))
	if got := m.Result().Events; got != want {
		t.Errorf("after a pause the analysis counts %d events; want %d (every event the run produced)", got, want)
	}
}
