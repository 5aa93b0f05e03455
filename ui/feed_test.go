package ui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// kernels emits n kernels on each of devs devices (two streams each) from t on, and returns the
// next free time.
func kernels(w *timeline.Window, devs, n int, t int64) int64 {
	for range n {
		for d := range int32(devs) {
			w.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: d, Peer: -1, Stream: uint32(1 + t/10%2), Start: t, End: t + 8})
		}
		t += 10
	}
	return t
}

// A tick folds off the console's goroutine: it returns a command that folds while the console
// goes on drawing every view from the frame it has and a producer goes on emitting (go test -race
// finds any state the two share), and the frame the command returns is what the console shows.
func TestTickFoldsOffTheConsoleGoroutine(t *testing.T) {
	w := timeline.NewWindow(0, nil)
	next := kernels(w, 8, 1000, 0)
	src := &fakeSource{win: w, info: SourceInfo{Name: "load", Meta: timeline.Meta{Devices: 8, GPUsPerHost: 8}}, status: Status{Speed: 1}}
	m := sized(src, 160, 40)
	if got := m.Result().Events; got != 8000 {
		t.Fatalf("the first frame folded %d events; want 8000", got)
	}
	produced := make(chan struct{})
	go func() { // the source's producer goes on
		defer close(produced)
		kernels(w, 8, 20_000, next)
	}()
	for round := 0; ; round++ {
		_, cmd := m.Update(tickMsg{id: m.tickID})
		folded := make(chan tea.Msg, 1)
		for _, c := range cmd().(tea.BatchMsg) {
			go func() {
				if msg, ok := c().(foldedMsg); ok {
					folded <- msg
				}
			}()
		}
		var msg tea.Msg
		for tab := 0; msg == nil; tab = (tab + 1) % tabCount {
			press(m, string(rune('1'+tab))) // every view draws while the fold runs
			_ = m.View()
			select {
			case msg = <-folded:
			default:
			}
		}
		seq := m.seq
		m.Update(msg)
		if m.seq <= seq {
			t.Fatalf("round %d: the folded frame %d was not shown (showing %d)", round, msg.(foldedMsg).fr.seq, seq)
		}
		select {
		case <-produced:
			m.Update(tickMsg{id: m.tickID}) // the chain was rearmed: this tick is current
			m.refresh()
			if got := m.Result().Events; got != 8000+160_000 {
				t.Fatalf("after the producer ended the console folded %d events; want %d", got, 8000+160_000)
			}
			return
		default:
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// A frame folded before a newer one was shown (a tick's fold overtaken by a seek's, which folds at
// once) is dropped; so is one that arrives after the user paused.
func TestOlderFrameDropped(t *testing.T) {
	w := timeline.NewWindow(0, nil)
	next := kernels(w, 2, 10, 0)
	src := &fakeSource{win: w, info: SourceInfo{Name: "load", Meta: timeline.Meta{Devices: 2, GPUsPerHost: 2}}, status: Status{Speed: 1}}
	m := sized(src, 120, 30)
	old := m.feed.fold()
	kernels(w, 2, 10, next)
	m.refresh()
	m.Update(foldedMsg{fr: old})
	if got := m.Result().Events; got != 40 {
		t.Errorf("an older frame replaced a newer one: %d events shown; want 40", got)
	}
	kernels(w, 2, 10, next+100)
	newer := m.feed.fold()
	press(m, "space")
	m.Update(foldedMsg{fr: newer})
	if got := m.Result().Events; got != 40 {
		t.Errorf("a frame was shown while paused: %d events; want 40", got)
	}
}

// A replay sought to a time starts a window there (Window.SetFrom); the console's analysis starts
// there too, as the headless replay's does: a step under way at that time, whose communicator
// setup came before it, is not counted, and the duration runs from that time.
func TestFeedAnalysesFromTheSeek(t *testing.T) {
	tests := []struct {
		name      string
		from      int64
		steps     int64
		mean, dur int64
	}{
		{"from the start", 0, 3, (235 + 275 + 280) / 3, 1730},
		{"sought into the first step", 941, 2, (275 + 280) / 2, 1730 - 941},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := timeline.NewWindow(0, nil)
			w.SetGeneration(1)
			w.SetFrom(tc.from)
			nd := timeline.NoDevice
			evs := []timeline.Event{
				{Kind: timeline.KindCommInit, Comm: 1, Device: 0, Peer: nd, Start: 0, End: 940},
				{Kind: timeline.KindStep, Device: nd, Peer: nd, Start: 0, End: 1175},
				{Kind: timeline.KindStep, Device: nd, Peer: nd, Start: 1175, End: 1450},
				{Kind: timeline.KindStep, Device: nd, Peer: nd, Start: 1450, End: 1730},
			}
			for i := range evs {
				if evs[i].End >= tc.from { // what a replay from tc.from emits
					w.Emit(&evs[i])
				}
			}
			src := &fakeSource{win: w, info: SourceInfo{Name: "replay", Replay: true, Meta: timeline.Meta{Backend: "sim", Devices: 1}}, status: Status{Done: true}}
			m := sized(src, 120, 30)
			r := m.Result()
			if s := r.Steps; s.Count != tc.steps || s.MeanNs == nil || *s.MeanNs != tc.mean || r.DurationNs != tc.dur {
				t.Errorf("steps %d, mean %v, duration %d; want %d, %d, %d", s.Count, s.MeanNs, r.DurationNs, tc.steps, tc.mean, tc.dur)
			}
			// The overview says from when its figures count.
			since := "since " + units.Dur(tc.from)
			if got := strings.Contains(text(m), since); got != (tc.from > 0) {
				t.Errorf("the overview mentions %q: %v; want %v:\n%s", since, got, tc.from > 0, text(m))
			}
		})
	}
}

// genSource is a replay that seeks between the console's reading of its running ops and its
// second snapshot: that snapshot is of a new generation, and it reports as running what runs in
// the generation it is at.
type genSource struct {
	*fakeSource
	gens    []*timeline.Window
	running [][]timeline.Event // by generation
	at      int
}

func (g *genSource) Snapshot() timeline.Snapshot {
	g.snaps++
	if g.snaps == 2 {
		g.at = 1 // the seek lands now
	}
	return g.gens[g.at].Snapshot()
}

func (g *genSource) InFlight(dst []timeline.Event) []timeline.Event {
	return append(dst, g.running[g.at]...)
}

// The ops running are read before the snapshot; when the snapshot is of a new generation (a replay
// that sought in between) they may be of the old one, so the console reads them again: a frame
// never draws the old position's running ops over the new one's events.
func TestNewGenerationReadsRunningAgain(t *testing.T) {
	old, cur := timeline.NewWindow(0, nil), timeline.NewWindow(0, nil)
	cur.SetGeneration(1)
	kernels(old, 1, 10, 0)
	kernels(cur, 1, 10, 1000)
	src := &genSource{fakeSource: &fakeSource{info: SourceInfo{Replay: true, Meta: timeline.Meta{Devices: 1, GPUsPerHost: 1}}},
		gens: []*timeline.Window{old, cur},
		running: [][]timeline.Event{
			{{Kind: timeline.KindCollective, Device: 0, Stream: 5, Start: 50, End: 100, Peer: -1}},
			{{Kind: timeline.KindMemcpy, Device: 0, Stream: 6, Start: 1050, End: 1100, Peer: -1}},
		}}
	f := newFeed(src, src.info)
	if fr := f.fold(); fr.snap.Generation != 0 || len(fr.running) != 1 || fr.running[0].Stream != 5 {
		t.Fatalf("generation %d, running %+v; want generation 0's all-reduce", fr.snap.Generation, fr.running)
	}
	if fr := f.fold(); fr.snap.Generation != 1 || len(fr.running) != 1 || fr.running[0].Stream != 6 {
		t.Fatalf("generation %d, running %+v; want generation 1's copy alone", fr.snap.Generation, fr.running)
	}
}
