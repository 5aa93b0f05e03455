package ui

import (
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// A source that is done and whose events and status have not changed is not folded again: its
// last frame stands, nothing is recomputed or redrawn on a tick (an ended 1,024-GPU replay cost 7%
// of a core re-folding the same events ten times a second). A change (a status that differs, or a
// new generation, as a seek starts) is folded as before.
func TestDoneSourceNotRefolded(t *testing.T) {
	w := timeline.NewWindow(0, nil)
	next := kernels(w, 2, 10, 0)
	src := &fakeSource{win: w, info: SourceInfo{Name: "load", Meta: timeline.Meta{Devices: 2, GPUsPerHost: 2}}, status: Status{Speed: 1, Done: true}}
	m := sized(src, 120, 30)
	text(m)
	seq, frames, res := m.seq, m.Frames(), m.Result()
	for range 3 {
		tickAndFold(m)
		text(m)
	}
	if m.seq != seq || m.Result() != res || m.Frames() != frames {
		t.Errorf("a done, unchanged source: %d new frames installed, %d drawn, analysis recomputed %v; want none",
			m.seq-seq, m.Frames()-frames, m.Result() != res)
	}
	src.status.Dropped = 3 // the status changed: folded and drawn
	tickAndFold(m)
	if m.seq == seq {
		t.Error("a changed status was not folded")
	}
	seq = m.seq
	w.SetGeneration(7) // a seek's new start
	kernels(w, 2, 5, next)
	tickAndFold(m)
	if m.seq == seq {
		t.Error("a new generation was not folded")
	}
	// Paused while the last folds went on, a resume shows the last frame even though nothing changed since.
	press(m, "space")
	seq = m.seq
	src.status.Dropped = 4
	tickAndFold(m)
	resume(m)
	if m.seq == seq || !m.status.Done || m.status.Dropped != 4 {
		t.Errorf("resumed: frame %d (was %d), dropped %d; want the last fold's, dropped 4", m.seq, seq, m.status.Dropped)
	}
}
