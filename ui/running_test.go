package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/theme"
)

// runningSource is a live run caught at time at: the events that had ended by then, and the ops
// running then as a backend reports them (End = at). It is cut from a whole run, so it is
// deterministic; a backend's InFlight at that time gives the same.
type runningSource struct {
	*fakeSource
	running []timeline.Event
	calls   int
}

func (r *runningSource) InFlight(dst []timeline.Event) []timeline.Event {
	r.calls++
	return append(dst, r.running...)
}

// liveAt cuts the scenario's run at frac of its length.
func liveAt(t testing.TB, name string, steps int, frac float64) *runningSource {
	t.Helper()
	whole := scenarioSource(t, name, steps, "")
	snap := whole.win.Snapshot()
	at := int64(float64(snap.Now) * frac)
	win := timeline.NewWindow(1<<22, whole.win.(*session.Prepared).Strings())
	src := &runningSource{fakeSource: &fakeSource{win: win, info: whole.info, status: Status{Speed: 1}}}
	for i := snap.Base; i < snap.Total; i++ {
		e := *snap.At(i)
		switch {
		case e.End <= at:
			win.Emit(&e)
		case e.Start <= at && e.Stream != 0 && e.End > e.Start:
			e.End = at
			src.running = append(src.running, e)
		}
	}
	return src
}

// Live, an op still running is drawn in its kind from its start to now, its head marked at the
// right edge, and the cursor there describes it as running; without a source that reports running
// ops, the same time is Pending.
func TestTimelineDrawsRunningOps(t *testing.T) {
	src := liveAt(t, "pipeline", 2, 0.8)
	if len(src.running) == 0 {
		t.Fatal("nothing running half-way through the run: the test shows nothing")
	}
	m := sized(src, 120, 40)
	press(m, "2", "+", "+", "+", "+", "+", "+")
	if src.calls == 0 {
		t.Fatal("the console never asked the source what runs")
	}
	out := text(m)
	heads := 0
	for _, l := range strings.Split(out, "\n") {
		if !streamLine.MatchString(l) {
			continue
		}
		r := []rune(l)
		if len(r) != 120 || r[119] == ' ' {
			t.Errorf("a stream stops short of now: %q", l)
		}
		if string(r[119]) == theme.RunningMark {
			heads++
		}
	}
	if heads == 0 {
		t.Errorf("no stream ends in the running mark %s:\n%s", theme.RunningMark, out)
	}
	if !strings.Contains(out, "» running (in totals once it ends)") || !strings.Contains(out, theme.PendingKnownName) {
		t.Errorf("the legend does not name the running mark and the pending glyph:\n%s", out)
	}
	// The cursor sits at now: on a stream whose op is running, the detail line says so.
	found := false
	for range 40 {
		if strings.Contains(text(m), "so far") {
			found = true
			break
		}
		press(m, "j")
	}
	if !found {
		t.Errorf("no stream's detail at now describes its running op:\n%s", text(m))
	}
}

// Goldens of the timeline of a live run with ops running, at two sizes: the streams whose ops run
// at the right edge end in their kind and the running mark, not in the pending glyph.
func TestGoldenTimelineRunning(t *testing.T) {
	src := liveAt(t, "pipeline", 3, 0.8)
	for _, sz := range [][2]int{{80, 24}, {160, 40}} {
		name := fmt.Sprintf("2-timeline-running-%dx%d", sz[0], sz[1])
		t.Run(name, func(t *testing.T) {
			m := sized(src, sz[0], sz[1])
			press(m, "2", "j") // device 0's first stream: the cursor at now describes its running op
			checkGolden(t, name, m.View().Content, sz[0], sz[1])
		})
	}
}

// The events view lists the ops still running as its newest lines, marked running; a finished
// run lists none.
func TestEventsListRunning(t *testing.T) {
	for _, live := range []bool{true, false} {
		src := liveAt(t, "pipeline", 2, 0.8)
		src.status.Done = !live
		m := sized(src, 160, 40)
		press(m, "7")
		lines := strings.Split(strings.TrimRight(text(m), "\n "), "\n")
		n := 0
		for _, l := range lines {
			if strings.Contains(l, " running ") && strings.Contains(l, "so far)") {
				n++
			}
		}
		if live && n == 0 {
			t.Errorf("live: no running op listed:\n%s", text(m))
		}
		if !live && n > 0 {
			t.Errorf("finished: %d ops listed as running:\n%s", n, text(m))
		}
	}
}

// A host's communicator init under way (on no stream) gets no timeline row, as it gets none when it
// has ended, but it moves the live edge: the console's clock runs while it is the only thing running.
func TestRunningHostWorkHasNoRow(t *testing.T) {
	win := timeline.NewWindow(0, nil)
	win.Emit(&timeline.Event{Kind: timeline.KindKernel, Device: 0, Stream: 3, Peer: -1, Start: 0, End: 10e6})
	src := &runningSource{fakeSource: &fakeSource{win: win, info: SourceInfo{Name: "live", Meta: timeline.Meta{Backend: "sim", Devices: 2}}, status: Status{Speed: 1}}}
	src.running = []timeline.Event{{Kind: timeline.KindCommInit, Device: 1, Peer: -1, Comm: 1, Start: 0, End: 500e6}}
	m := sized(src, 120, 30)
	press(m, "2")
	out := text(m)
	if strings.Contains(out, "device 1") || strings.Contains(out, "  s0") {
		t.Errorf("a running communicator init was given a row:\n%s", out)
	}
	if !strings.Contains(out, "500 ms (following)") {
		t.Errorf("the timeline does not reach the init's 500 ms:\n%s", out)
	}
}
