package ui

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/views/compare"
)

// pipelineCompare runs the pipeline with high and normal priority D2D streams, as
// run --compare d2d_priority=high,normal does, keeping each run's events.
func pipelineCompare(t testing.TB) compare.Data {
	t.Helper()
	var reps [2]*report.Report
	var d compare.Data
	for i, v := range []string{"high", "normal"} {
		win := timeline.NewWindow(1<<20, nil)
		p, err := session.Prepare(session.Config{Scenario: "pipeline", Steps: 3, Seed: 1, Sets: map[string]string{"d2d_priority": v}}, win)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		reps[i] = p.Report(out)
		d.Runs[i] = compare.Run{Label: "d2d_priority=" + v, Snap: win.Snapshot()}
	}
	d.Cmp = report.Compare(reps[0], reps[1], d.Runs[0].Label, d.Runs[1].Label)
	return d
}

func sizedCompare(d compare.Data, w, h int) *Model {
	m := NewCompare(d, Options{IsDark: true})
	if cmd := m.Init(); cmd != nil {
		panic("a comparison has nothing to tick for")
	}
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

// The compare view at four sizes, colours pinned, against testdata (go test ./ui -update rewrites).
func TestGoldenCompare(t *testing.T) {
	d := pipelineCompare(t)
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {160, 40}, {200, 50}} {
		name := fmt.Sprintf("compare-%dx%d", sz[0], sz[1])
		t.Run(name, func(t *testing.T) {
			checkGolden(t, name, sizedCompare(d, sz[0], sz[1]).View().Content, sz[0], sz[1])
		})
	}
}

// stripEnd is the last column drawn on any strip of run r ("A" or "B").
func stripEnd(screen, r string) int {
	end := 0
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, r+" gpu ") {
			end = max(end, len([]rune(strings.TrimRight(l, " "))))
		}
	}
	return end
}

// Both timelines start at the chosen step on one scale: high-priority D2D streams (A) make a
// shorter step, so A's strips end before B's; n and p choose the step, within the steps both hold.
func TestCompareStrips(t *testing.T) {
	m := sizedCompare(pipelineCompare(t), 160, 40)
	scr := text(m)
	if !strings.Contains(scr, "step 2 of 3 (n/p)") {
		t.Fatalf("the strips are not on the second step:\n%s", scr)
	}
	if a, b := stripEnd(scr, "A"), stripEnd(scr, "B"); a == 0 || a >= b {
		t.Errorf("A's strips end at column %d, B's at %d: want A's shorter (a shorter step)\n%s", a, b, scr)
	}
	for _, k := range []struct {
		keys []string
		want string
	}{{[]string{"n"}, "step 3 of 3"}, {[]string{"n"}, "step 3 of 3"}, {[]string{"p", "p", "p"}, "step 1 of 3"}} {
		press(m, k.keys...)
		if !strings.Contains(text(m), k.want) {
			t.Errorf("after %v: no %q", k.keys, k.want)
		}
	}
	press(m, "+")
	if !strings.Contains(text(m), "µs/col") && !strings.Contains(text(m), "ms/col") {
		t.Errorf("zoom line:\n%s", text(m))
	}
	// Help lists the compare view's keys and none of a run's (pause, views, replay).
	press(m, "?")
	h := text(m)
	if !strings.Contains(h, "next step") || strings.Contains(h, "pause") || strings.Contains(h, "overview") || strings.Contains(h, "seek") {
		t.Errorf("compare help:\n%s", h)
	}
	press(m, "?")
	if cmd := press(m, "q"); cmd == nil || cmd() != tea.Quit() {
		t.Error("q does not quit the compare view")
	}
}

// Runs with no steps (traces without step marks) compare without timelines, and every size the
// console takes is filled exactly, keys or not.
func TestCompareNoStepsAndSizes(t *testing.T) {
	empty := compare.Data{Cmp: &report.Comparison{A: "a.json", B: "b.json"}}
	m := sizedCompare(empty, 80, 24)
	press(m, "n", "p", "+", "h", "j")
	if got := text(m); !strings.Contains(got, "no step held by both runs") {
		t.Errorf("no steps:\n%s", got)
	}
	full := sizedCompare(pipelineCompare(t), 80, 24)
	for w := MinWidth; w < 260; w += 37 {
		for h := MinHeight; h < 90; h += 13 {
			for _, m := range []*Model{m, full} {
				m.Update(tea.WindowSizeMsg{Width: w, Height: h})
				checkFrame(t, m.View().Content, w, h)
			}
		}
	}
}

// A what-if's comparison shows its verdict above the table, and the view still fills its size.
func TestCompareVerdict(t *testing.T) {
	d := pipelineCompare(t)
	d.Cmp.SetNoiseFloor(1, "test")
	m := sizedCompare(d, 120, 30)
	got := text(m)
	if !strings.Contains(got, "verdict B is") {
		t.Errorf("no verdict line:\n%s", got)
	}
	if n := strings.Count(got, "\n") + 1; n != 30 {
		t.Errorf("%d lines; want 30", n)
	}
}

// The ops a what-if marks on the critical path are underlined in their run's strips, and the
// legend says what the underline means; without marks there is neither.
func TestCompareCriticalMarks(t *testing.T) {
	d := pipelineCompare(t)
	plain := sizedCompare(d, 160, 40).View().Content
	if strings.Contains(plain, "on the critical path") {
		t.Fatal("a comparison without critical paths explains an underline")
	}
	d.Runs[0].Critical = map[int64]bool{}
	for i := int64(0); i < d.Runs[0].Snap.Total; i++ {
		d.Runs[0].Critical[i] = true
	}
	got := sizedCompare(d, 160, 40).View().Content
	var a, b int
	for _, l := range strings.Split(got, "\n") {
		switch {
		case strings.Contains(l, "A gpu") && strings.Contains(l, "\x1b[4m"):
			a++
		case strings.Contains(l, "B gpu") && strings.Contains(l, "\x1b[4m"):
			b++
		}
	}
	if a == 0 || b != 0 || !strings.Contains(got, "on the critical path") {
		t.Errorf("underlined strips: A %d, B %d; want A's only, and the legend naming them", a, b)
	}
}

// At 80 columns the names that do not fit are cut in the middle, so that rows whose names differ
// only at their ends (the stream gaps by cause, the critical path's categories) still read apart.
func TestCompareNamesDistinct(t *testing.T) {
	d := pipelineCompare(t)
	one := func(v float64) *float64 { return &v }
	d.Cmp.Rows = nil
	for _, n := range []string{"stream gaps per step: peer_wait", "stream gaps per step: other", "stream gaps per step: host_wait",
		"stream gaps per step: event_wait", "communication overlapped with compute", "communication on it per step"} {
		d.Cmp.Rows = append(d.Cmp.Rows, report.Row{Section: "s", Name: n, Unit: report.UnitNs, A: one(1), B: one(1)})
	}
	scr := text(sizedCompare(d, 80, 24))
	seen := map[string]bool{}
	for _, l := range strings.Split(scr, "\n") {
		if !strings.HasPrefix(l, "  stream") && !strings.HasPrefix(l, "  commun") {
			continue
		}
		name := strings.TrimSpace(string([]rune(l)[:80-12-12-11-8])) // no B − A column below 100
		if seen[name] {
			t.Errorf("two rows read %q at 80 columns:\n%s", name, scr)
		}
		seen[name] = true
	}
	if len(seen) != 6 {
		t.Errorf("%d of the 6 rows shown:\n%s", len(seen), scr)
	}
}

// Two values in neighbouring columns are at least two spaces apart: "110.98 GB/s 110.98 GB/s"
// (cells of 11 in columns of 12) read as one figure.
func TestCompareColumnsApart(t *testing.T) {
	got := ansi.Strip(sizedCompare(pipelineCompare(t), 120, 30).View().Content)
	together := regexp.MustCompile(`(GB/s|ms|µs|%) [−+0-9]`)
	for _, l := range strings.Split(got, "\n") {
		if together.MatchString(l) {
			t.Errorf("values run together: %q", l)
		}
	}
}

// More devices than the terminal has rows for strips: J and K scroll each run's strips, so that
// every GPU (a culprit among 1,024) can be reached, and the last row says how many are beyond.
func TestCompareStripsScroll(t *testing.T) {
	d := pipelineCompare(t)
	for range 5 { // lines above the strips: room for two strips a run at 80×24
		d.Cmp.Warnings = append(d.Cmp.Warnings, "a warning")
	}
	m := sizedCompare(d, 80, 24)
	scr := text(m)
	if !strings.Contains(scr, "A gpu 0 ") || strings.Contains(scr, "A gpu 4 ") || !strings.Contains(scr, "3 more devices, 0 before (J/K scroll)") {
		t.Fatalf("at 80×24: want gpu 0's strip and the rest a scroll away:\n%s", scr)
	}
	press(m, "J")
	scr = text(m)
	if strings.Contains(scr, "A gpu 0 ") || !strings.Contains(scr, "A gpu 4 ") || !strings.Contains(scr, "B gpu 4 ") || !strings.Contains(scr, "2 more devices, 1 before") {
		t.Fatalf("after J: want gpu 4's strips, not gpu 0's:\n%s", scr)
	}
	press(m, "K")
	if scr = text(m); !strings.Contains(scr, "A gpu 0 ") {
		t.Fatalf("after K: want gpu 0's strip again:\n%s", scr)
	}
}

// On a wide terminal the table's figures stay beside their names: the A column ends within a
// figure's width of the widest name, not across the whole width (at 200 columns the A column
// stood at column ~150, 100 columns past the names).
func TestCompareTableFitsTheWidth(t *testing.T) {
	d := pipelineCompare(t)
	longest := 0
	for _, r := range d.Cmp.Rows {
		longest = max(longest, 2+ansi.StringWidth(r.Name))
	}
	for _, w := range []int{120, 160, 200, 300} {
		lines := strings.Split(ansi.Strip(sizedCompare(d, w, 50).View().Content), "\n")
		head := ""
		for _, l := range lines {
			if strings.Contains(l, "change") && strings.Contains(l, " A ") {
				head = l
				break
			}
		}
		a := strings.Index(head, " A ") + 1
		if a <= 0 || a > longest+1+20 {
			t.Errorf("at %d columns the A column ends at column %d; the widest name ends at %d:\n%s", w, a, longest, head)
		}
	}
}
