package findings

import (
	"fmt"
	"github.com/xfertop/xfertop/analysis/hostmap"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/diagnosis"
	xtimeline "github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/ui/widget"
)

// Enter on a finding shows its culprit: the rank's device from onset to finding, a link placed
// only by its host on that host's first GPU, nothing for a finding that names no place.
func TestJump(t *testing.T) {
	for _, c := range []struct {
		f      diagnosis.Finding
		dev    int32
		ok     bool
		t, dur int64
	}{
		{f: diagnosis.Finding{Kind: diagnosis.SlowGPU, Rank: 19, Host: 2, Onset: 1e9, At: 1.3e9}, dev: 19, ok: true, t: 1e9, dur: 0.3e9},
		{f: diagnosis.Finding{Kind: diagnosis.SlowLink, Rank: -1, Host: 3, Onset: 5e8, At: 5e8}, dev: 24, ok: true, t: 5e8, dur: 1e6},
		{f: diagnosis.Finding{Kind: diagnosis.SlowLink, Rank: -1, Host: -1}, ok: false},
	} {
		j, ok := Jump(&c.f, hostmap.ByID(8))
		if ok != c.ok || (ok && (j.Device != c.dev || j.Time != c.t || j.Dur != c.dur || j.Stream != 0)) {
			t.Errorf("%+v: jump %+v %v; want device %d at %d for %d (%v)", c.f, j, ok, c.dev, c.t, c.dur, c.ok)
		}
	}
}

// A culprit longer than its column is cut to it with "…", so that first seen, found and conf stay
// under their headings, whatever the culprit's length.
func TestRowColumns(t *testing.T) {
	head := fmt.Sprintf("%-13s %-*s %10s %10s %6s  %s", "kind", colCulprit, "culprit", "first seen", "found", "conf", "evidence")
	conf := strings.Index(head, "conf") + len("conf")
	for _, f := range []diagnosis.Finding{
		{Kind: diagnosis.SlowGPU, Rank: 19, Host: 2, Onset: 1e9, At: 1.3e9, Confidence: 0.9},
		{Kind: diagnosis.Hang, Rank: -1, Host: 12, Onset: 1.2e9, At: 2.2e9, Confidence: 0.125,
			Stuck: []int32{96, 97, 98, 99, 100, 101, 102, 103}, StuckN: 8},
	} {
		r := row(&f)
		if got := []rune(r); len(got) < conf || got[conf-1] != '%' {
			t.Errorf("%s: conf not under its heading:\n%s\n%s", f.Culprit(), head, r)
		}
		if c := f.Culprit(); len([]rune(c)) > colCulprit && !strings.Contains(r, "…") {
			t.Errorf("a culprit of %d characters is not cut: %s", len([]rune(c)), r)
		}
	}
}

// A finding whose onset is older than the oldest event the window holds says so before enter
// (the timeline would show its culprit's rows empty); one whose events are held says nothing.
func TestTrimmedNote(t *testing.T) {
	win := xtimeline.NewWindow(1, nil) // the smallest window: the older events are trimmed
	for i := range int64(100_000) {    // beyond the window's least (a few chunks)
		win.Emit(&xtimeline.Event{Kind: xtimeline.KindKernel, Device: 1, Start: i * 1e6, End: i*1e6 + 5e5})
	}
	snap := win.Snapshot()
	if snap.Trimmed == 0 {
		t.Fatal("the window trimmed nothing")
	}
	held := snap.At(snap.Base).Start
	// What it advises depends on the console: a replay (already of a recording) seeks back.
	for _, c := range []struct {
		name      string
		fr        widget.Frame
		want, not string
	}{
		{name: "live", fr: widget.Frame{Snap: &snap}, want: "a larger --window, or record and replay, keeps it"},
		{name: "live, recording", fr: widget.Frame{Snap: &snap, Recording: "run.xfr"}, want: "a larger --window keeps it, and so does replaying run.xfr", not: "record and replay"},
		{name: "replay", fr: widget.Frame{Snap: &snap, Replay: true}, want: "seek back to it (←) to see it, or replay with a larger --window", not: "record and replay"},
	} {
		w := trimmedNote(&diagnosis.Finding{Onset: held - 1e6}, &c.fr)
		if !strings.Contains(w, "trimmed from memory") || !strings.Contains(w, c.want) || (c.not != "" && strings.Contains(w, c.not)) {
			t.Errorf("%s: onset before the events held: %q; want it to say %q (not %q)", c.name, w, c.want, c.not)
		}
		if w := trimmedNote(&diagnosis.Finding{Onset: held}, &c.fr); w != "" {
			t.Errorf("%s: onset held: %q", c.name, w)
		}
	}
}

// A replay sought past a finding's onset holds nothing before where it went, though it trimmed
// nothing: the finding says so before enter, and to seek back; one whose onset is held says nothing.
func TestSoughtPastNote(t *testing.T) {
	win := xtimeline.NewWindow(0, nil)
	win.SetFrom(47e9)
	win.Emit(&xtimeline.Event{Kind: xtimeline.KindKernel, Device: 1, Start: 47e9, End: 47e9 + 5e5})
	snap := win.Snapshot()
	fr := widget.Frame{Snap: &snap, Replay: true}
	if w := trimmedNote(&diagnosis.Finding{Onset: 1.1e9}, &fr); !strings.Contains(w, "before the events held") || !strings.Contains(w, "seek back to it (←)") {
		t.Errorf("onset 1.1 s, replay gone to 47 s: %q; want it to say the onset is before the events held, and to seek back", w)
	}
	if w := trimmedNote(&diagnosis.Finding{Onset: 48e9}, &fr); w != "" {
		t.Errorf("onset held: %q", w)
	}
}

// The selected finding's next step is the diagnosis's (diagnosis.Finding.NextStep), as the
// report's "next:" line and its JSON's next_step: the console only formats it.
func TestSelectedNextStep(t *testing.T) {
	f := diagnosis.Finding{Kind: diagnosis.SlowLink, Rank: 299, Host: 37, Link: xtimeline.PeakNIC, Severity: 31_100_000, CostKnown: true}
	fr := &widget.Frame{Res: &analysis.Result{Findings: []diagnosis.Finding{f}}, Meta: xtimeline.Meta{GPUsPerHost: 8}, Styles: theme.DefaultStyles(true)}
	v := New(fr)
	v.SetSize(100, 30)
	got := strings.Join(strings.Fields(ansi.Strip(v.View())), " ")
	if want := NextPrefix + f.NextStep(); !strings.Contains(got, want) {
		t.Errorf("view\n%s\nwants %q", got, want)
	}
}
