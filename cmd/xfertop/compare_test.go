package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui"
)

// run --compare runs both variants with one seed; each figure equals that variant's own report, and
// the difference carries its sign: high-priority D2D streams make the pipeline's step shorter.
func TestRunCompare(t *testing.T) {
	code, out, errs := runCLI(t, "run", "--scenario", "pipeline", "--steps", "4", "--compare", "d2d_priority=high,normal", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var c report.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	var high, normal report.Report
	for v, r := range map[string]*report.Report{"high": &high, "normal": &normal} {
		_, js, errs := runCLI(t, "run", "--headless", "--json", "--scenario", "pipeline", "--steps", "4", "--set", "d2d_priority="+v)
		if err := json.Unmarshal([]byte(js), r); err != nil {
			t.Fatal(err, errs)
		}
	}
	r := c.Rows[0]
	if r.Name != "step time p50" || *r.A != float64(*high.Steps.P50Ns) || *r.B != float64(*normal.Steps.P50Ns) {
		t.Fatalf("first row %+v; want step p50 high %d, normal %d", r, *high.Steps.P50Ns, *normal.Steps.P50Ns)
	}
	if *r.Diff <= 0 || *r.Better {
		t.Errorf("normal priority should be slower (a worse, positive difference): %+v", r)
	}
	if got := float64(*normal.Steps.P50Ns-*high.Steps.P50Ns) / float64(*high.Steps.P50Ns) * 100; *r.DiffPct < got-0.01 || *r.DiffPct > got+0.01 {
		t.Errorf("relative change %.2f%%; want %.2f%%", *r.DiffPct, got)
	}
	code, text, _ := runCLI(t, "run", "--scenario", "pipeline", "--steps", "4", "--compare", "d2d_priority=high,normal")
	if code != exitOK || !strings.Contains(text, "step time p50") || !strings.Contains(text, "worse") {
		t.Errorf("text comparison:\n%s", text)
	}
	if code, _, errs := runCLI(t, "run", "--compare", "d2d_priority"); code != exitUsage || !strings.Contains(errs, "give knob=a,b") {
		t.Errorf("a malformed --compare: exit %d, %s", code, errs)
	}
	// An unknown knob is echoed as the flag was given, both values (it said "--compare nosuch=1").
	if code, _, errs := runCLI(t, "run", "--compare", "nosuch=1,2"); code != exitUsage || !strings.Contains(errs, "--compare nosuch=1,2: unknown knob") {
		t.Errorf("an unknown knob in --compare: exit %d, %s", code, errs)
	}
}

// compare A B reads two recordings, and a recording against itself differs by nothing.
func TestCompareFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.xfr"), filepath.Join(dir, "b.xfr")
	for p, v := range map[string]string{a: "high", b: "normal"} {
		if code, _, errs := runCLI(t, "run", "--headless", "--steps", "3", "--set", "d2d_priority="+v, "--record", p); code != exitOK {
			t.Fatal(errs)
		}
	}
	code, out, errs := runCLI(t, "compare", a, b, "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var c report.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil || len(c.Rows) == 0 || *c.Rows[0].Diff <= 0 {
		t.Fatalf("compare: %v %+v", err, c)
	}
	// A copy is compared (two runs of one seed write the same bytes); the same file twice is an
	// input given twice, and bad data is bad data (status 4), as for every other reader.
	data, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	aCopy, garbage, empty := filepath.Join(dir, "a-copy.xfr"), filepath.Join(dir, "garbage.json"), filepath.Join(dir, "empty.json")
	for p, d := range map[string][]byte{aCopy: data, garbage: []byte("\x00\x9f garbage, not a trace"), empty: nil} {
		if err := os.WriteFile(p, d, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		has  string
	}{
		{[]string{a, a}, "are the same file"},
		{[]string{garbage, a}, garbage},
		{[]string{a, empty}, empty},
	} {
		if code, _, errs := runCLI(t, append([]string{"compare", "--json"}, c.args...)...); code != exitData || !strings.Contains(errs, c.has) {
			t.Errorf("compare %v: exit %d, %q; want 4 naming %s", c.args, code, errs, c.has)
		}
	}
	code, out, errs = runCLI(t, "compare", a, aCopy, "--json")
	if code != exitOK {
		t.Fatalf("a copy: exit %d: %s", code, errs)
	}
	var same report.Comparison
	_ = json.Unmarshal([]byte(out), &same)
	for _, r := range same.Rows {
		if r.Diff != nil && *r.Diff != 0 {
			t.Errorf("a recording against itself: %s differs by %v", r.Name, *r.Diff)
		}
	}
	if code, _, errs := runCLI(t, "compare", a); code != exitUsage || !strings.Contains(errs, "give two") {
		t.Errorf("one file: exit %d, %s", code, errs)
	}
}

// One truth: the compare console shows the comparison --json prints, figure for figure; each row's
// line in the console holds its A, B, B − A, change and verdict as the JSON row formats them.
func TestCompareConsoleEqualsJSON(t *testing.T) {
	args := []string{"--scenario", "pipeline", "--steps", "4"}
	code, js, errs := runCLI(t, append([]string{"run", "--compare", "d2d_priority=high,normal", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	fs, o := runFlags(io.Discard)
	if err := parseFlags(fs, args); err != nil {
		t.Fatal(err)
	}
	c, wins, err := runComparison(context.Background(), o, "d2d_priority=high,normal")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.MarshalIndent(c, "", "  ")
	if string(got)+"\n" != js {
		t.Fatalf("the console's comparison differs from --json's:\n%s\nwant\n%s", got, js)
	}
	var want report.Comparison
	if err := json.Unmarshal([]byte(js), &want); err != nil {
		t.Fatal(err)
	}
	m := ui.NewCompare(compareData(c, wins), ui.Options{IsDark: true})
	m.Init()
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	screen := ansi.Strip(m.View().Content)
	for _, r := range want.Rows {
		a, b, diff, pct, verdict := r.Cells()
		re := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(r.Name) + ` +` + regexp.QuoteMeta(a) + ` +` + regexp.QuoteMeta(b) +
			` +` + regexp.QuoteMeta(diff) + ` +` + regexp.QuoteMeta(pct) + ` *` + regexp.QuoteMeta(verdict) + ` *$`)
		if !re.MatchString(screen) {
			t.Errorf("no console line for %s: %s %s %s %s %s in\n%s", r.Name, a, b, diff, pct, verdict, screen)
		}
	}
	if !strings.Contains(screen, "step 2 of 4") {
		t.Errorf("the timelines are not aligned on a step:\n%s", screen)
	}
}

// A collective only one variant ran has its busbw row, unknown on the other side: tp-overlap with
// overlap=off runs all-gathers and reduce-scatters, with overlap=ring sends and receives.
func TestCompareCollectiveOneSide(t *testing.T) {
	code, out, errs := runCLI(t, "run", "--scenario", "tp-overlap", "--compare", "overlap=off,ring", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var c report.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"all_gather", "reduce_scatter"} {
		found := false
		for _, r := range c.Rows {
			if r.Section == "collectives" && strings.HasPrefix(r.Name, op+" ×8 ") {
				found = true
				if r.A == nil || *r.A <= 0 || r.B != nil || r.Diff != nil || r.Better != nil {
					t.Errorf("%s: %+v; want A's busbw, B unknown, no difference", r.Name, r)
				}
			}
		}
		if !found {
			t.Errorf("no busbw row for %s:\n%s", op, out)
		}
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings %q for runs of as many steps", c.Warnings)
	}
}

// run --compare's noise floor is the larger of 1% and the steps' spread, each device's first step
// (its set-up) left out: steps of 100, 100, 110 and 90 ms after a first of 300 spread 5% (the
// median absolute deviation, 5 ms, over the median, 100 ms).
func TestRunNoiseFloor(t *testing.T) {
	step := func(dev int32, start, ms int64) timeline.Event {
		return timeline.Event{Kind: timeline.KindStep, Device: dev, Start: start, End: start + ms*1e6}
	}
	evs := []timeline.Event{step(0, 0, 300), step(0, 300e6, 100), step(0, 400e6, 100), step(0, 500e6, 110), step(0, 610e6, 90)}
	if sp, _, ok := stepSpread(evs); !ok || sp != 5 {
		t.Errorf("spread %.2f%%, %v; want 5%%", sp, ok)
	}
	if _, n, ok := stepSpread(evs[:2]); ok || n != 1 {
		t.Errorf("one step after the first: %d steps, spread %v; want 1, none", n, ok)
	}
	// Two steps, one after the first: the line says so, not "no steps".
	two := timeline.NewWindow(1<<10, nil)
	for i := range evs[:2] {
		two.Emit(&evs[i])
	}
	if _, why := runNoiseFloor([2]*timeline.Window{two, timeline.NewWindow(1<<10, nil)}); !strings.Contains(why,
		"A unknown (1 step after the first; the spread needs two), B unknown (no steps)") {
		t.Errorf("two steps and none: %q", why)
	}
	w := timeline.NewWindow(1<<10, nil)
	for i := range evs {
		w.Emit(&evs[i])
	}
	if floor, why := runNoiseFloor([2]*timeline.Window{w, nil}); floor != 5 || !strings.Contains(why, "A 5.0%, B unknown") {
		t.Errorf("floor %.2f (%s); want 5, A's spread and B's unknown", floor, why)
	}
}
