package ui

import (
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/ui/views/timeline"
	"github.com/xfertop/xfertop/units"
)

// Zoomed out past the whole run, or panned left of its start, the timeline starts at time 0: the
// ruler's times are those of its columns.
func TestTimelineNeverStartsBeforeZero(t *testing.T) {
	m := sized(scenarioSource(t, "pipeline", 2, ""), 120, 40)
	press(m, "2")
	tl := paneAt[*timeline.Model](m, TabTimeline)
	// end is where the view would end if it could start before 0: it ends at the later of that
	// and its width.
	check := func(when string, end int64) {
		t.Helper()
		ruler := strings.Join(strings.Fields(strings.Split(text(m), "\n")[2]), " ")
		width := int64(tl.PlotW()) * tl.NsPerCol()
		want := units.Dur(tl.NsPerCol()) + "/col " + units.DurAt(0, tl.NsPerCol()) + " " + units.DurAt(max(width, end), tl.NsPerCol())
		if !strings.HasPrefix(ruler, want) {
			t.Errorf("%s: ruler %q; want it to begin %q (%d columns of %s from 0)", when, ruler, want, tl.PlotW(), units.Dur(tl.NsPerCol()))
		}
	}
	for range 12 {
		press(m, "-")
	}
	check("zoomed out", m.fr.Now)
	for range 4 {
		press(m, "+")
	}
	for range 100 { // a quarter of the width each: 26 ms at 1 ms per column, 2.6 s in all
		press(m, "h")
	}
	check("panned left of the start", 0)
}

// Zooming out stops at the first scale at which the whole run fits.
func TestTimelineZoomOutStopsAtTheWholeRun(t *testing.T) {
	m := sized(scenarioSource(t, "pipeline", 2, ""), 120, 40)
	press(m, "2")
	tl := paneAt[*timeline.Model](m, TabTimeline)
	plotW := int64(120 - timeline.LabelW)
	for range 12 {
		press(m, "-")
	}
	now := m.fr.Now
	if ns := tl.NsPerCol(); plotW*ns < now || plotW*ns/2 >= now {
		t.Errorf("zoomed out to %s per column for a run of %s on %d columns; want the first doubling that fits it",
			units.Dur(ns), units.Dur(now), plotW)
	}
}

// Zoomed in, the ruler's start and end carry the digits that tell them apart, and panning moves
// them: at 31.2 µs a column 1.5 s into a run, not "1.50 s … 1.50 s" whatever the position.
func TestTimelineRulerDigitsFollowTheZoom(t *testing.T) {
	m := sized(scenarioSource(t, "pipeline", 2, ""), 120, 40)
	press(m, "2")
	tl := paneAt[*timeline.Model](m, TabTimeline)
	for tl.NsPerCol() > 40_000 {
		before := tl.NsPerCol()
		press(m, "+")
		if tl.NsPerCol() == before {
			t.Fatalf("zoom in stopped at %s per column", units.Dur(before))
		}
	}
	ends := func() (string, string) {
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(strings.Split(text(m), "\n")[2]), " (following)"))
		i := slices.IndexFunc(f, func(s string) bool { return strings.HasSuffix(s, "/col") })
		if i < 0 || len(f) < i+5 {
			t.Fatalf("ruler %q", f)
		}
		return f[i+1] + " " + f[i+2], f[len(f)-2] + " " + f[len(f)-1]
	}
	start, end := ends()
	if start == end {
		t.Errorf("at %s per column the ruler reads %q … %q: one time at both ends", units.Dur(tl.NsPerCol()), start, end)
	}
	for range 3 {
		press(m, "h")
	}
	if s2, _ := ends(); s2 == start {
		t.Errorf("panned left, the ruler still starts at %q", s2)
	}
}
