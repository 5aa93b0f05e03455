package compare

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/ui/strip"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
)

// Run is one side of a comparison: its label and the events held of it (a bounded window: the
// steps it holds are the ones that can be shown).
type Run struct {
	Label string
	Snap  timeline.Snapshot
	// Critical holds the events (by index in Snap) on their step's critical path, drawn
	// underlined; nil when the run's critical path is not known.
	Critical map[int64]bool
}

// Data is what the compare view shows: the comparison and the two runs it was made from.
type Data struct {
	Cmp  *report.Comparison
	Runs [2]Run
}

// side is a run made ready to draw: its steps in order and each device's activity as one track.
type side struct {
	steps   []timeline.Interval
	devices []*agg.Track // one per device, its streams' ops merged, by start
}

func prepare(r *Run) side {
	var s side
	st := agg.New()
	st.Update(&r.Snap, func(e *timeline.Event) {
		if e.Kind == timeline.KindStep && e.Status == timeline.StatusOK {
			s.steps = append(s.steps, timeline.Interval{Start: e.Start, End: e.End})
		}
	})
	slices.SortFunc(s.steps, func(a, b timeline.Interval) int { return cmp.Compare(a.Start, b.Start) })
	for _, tr := range st.Tracks { // sorted by device, then stream
		if n := len(s.devices); n == 0 || s.devices[n-1].Device != tr.Device {
			s.devices = append(s.devices, &agg.Track{Device: tr.Device})
		}
		d := s.devices[len(s.devices)-1]
		d.Ops = append(d.Ops, tr.Ops...)
	}
	for _, d := range s.devices {
		slices.SortStableFunc(d.Ops, func(a, b agg.Op) int { return cmp.Compare(a.Start, b.Start) })
	}
	return s
}

// Model is the compare view.
type Model struct {
	widget.NoCapture
	widget.Base
	data     Data
	sides    [2]side
	list     widget.List // the table's lines
	step     int
	nsPerCol int64 // 0: fit the longer of the two steps to the width
	pan      int64 // ns from the step's start to the strips' left edge
	devOff   int   // the first device of each run's strips (J/K scroll them)
	perRun   int   // strips a run had room for at the last drawing
	scratch  strip.Scratch
	marks    []bool // the cells of a strip on the critical path, reused
}

// Keys of the strips' devices: a run of 1,024 GPUs has more strips than any terminal's rows.
var (
	keyDevDown = key.NewBinding(key.WithKeys("J"), key.WithHelp("J", "later GPUs' strips"))
	keyDevUp   = key.NewBinding(key.WithKeys("K"), key.WithHelp("K", "earlier GPUs' strips"))
)

// labelW is the width of the strips' labels.
const labelW = 12

// New returns the compare view of d, showing the second step (the first carries setup) when
// both runs have one.
func New(fr *widget.Frame, d Data) *Model {
	m := &Model{Base: widget.Base{Fr: fr}, data: d}
	for i := range d.Runs {
		m.sides[i] = prepare(&m.data.Runs[i])
	}
	m.step = min(1, max(m.steps()-1, 0))
	return m
}

// steps is how many steps both runs hold.
func (m *Model) steps() int { return min(len(m.sides[0].steps), len(m.sides[1].steps)) }

// Step returns the step the strips are aligned on (0-based).
func (m *Model) Step() int { return m.step }

// Rows returns the comparison's rows, as the table shows them.
func (m *Model) Rows() []report.Row { return m.data.Cmp.Rows }

// ShortHelp lists the view's keys.
func (m *Model) ShortHelp() []key.Binding {
	k := m.Fr.Keys
	return []key.Binding{k.PrevStep, k.NextStep, k.ZoomIn, k.ZoomOut, k.PanLeft, k.PanRight, keyDevDown, keyDevUp, k.Up, k.Down}
}

// FullHelp groups the view's keys: the strips', then the table's.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.Fr.Keys
	return [][]key.Binding{{k.PrevStep, k.NextStep, k.ZoomIn, k.ZoomOut, k.PanLeft, k.PanRight, keyDevDown, keyDevUp}, widget.ListKeys(k)}
}

// Update takes the table's keys and the mouse, and the strips' keys: n/p choose the step, +/-
// zoom, h/l pan within it.
func (m *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	k := m.Fr.Keys
	if m.list.Handle(msg, k) {
		return m, nil
	}
	km, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return m, nil
	}
	plotW := int64(max(m.W-labelW, 1))
	switch {
	case key.Matches(km, k.NextStep):
		m.step = min(m.step+1, max(m.steps()-1, 0))
		m.pan = 0
	case key.Matches(km, k.PrevStep):
		m.step = max(m.step-1, 0)
		m.pan = 0
	case key.Matches(km, k.ZoomIn):
		m.nsPerCol = max(m.scale()/2, 1)
	case key.Matches(km, k.ZoomOut):
		m.nsPerCol = min(m.scale()*2, 1<<40)
	case key.Matches(km, k.PanLeft):
		m.pan -= plotW / 4 * m.scale()
	case key.Matches(km, k.PanRight):
		m.pan += plotW / 4 * m.scale()
	case key.Matches(km, keyDevDown):
		m.devOff = min(m.devOff+max(m.perRun-1, 1), max(m.devices()-1, 0))
	case key.Matches(km, keyDevUp):
		m.devOff = max(m.devOff-max(m.perRun-1, 1), 0)
	}
	return m, nil
}

// devices is the larger run's count of devices with strips.
func (m *Model) devices() int { return max(len(m.sides[0].devices), len(m.sides[1].devices)) }

// scale is ns a column: the zoom chosen, or the longer step fitted to the width.
func (m *Model) scale() int64 {
	if m.nsPerCol > 0 {
		return m.nsPerCol
	}
	plotW := int64(max(m.W-labelW, 1))
	var d int64 = 1
	if m.step < m.steps() {
		for _, s := range m.sides {
			iv := s.steps[m.step]
			d = max(d, iv.End-iv.Start)
		}
	}
	return max((d+plotW-1)/plotW, 1)
}

// View draws the table, then the two runs' strips aligned on the step.
func (m *Model) View() string {
	st, w, h := &m.Fr.Styles, m.W, m.H
	c := m.data.Cmp
	var b strings.Builder
	top := 0
	if head := st.Title.Render("A ") + c.A + st.Title.Render("   B ") + c.B; ansi.StringWidth(head) <= w {
		b.WriteString(head + "\n")
		top++
	} else { // each on its line, so that B's description, the change, is not cut first
		b.WriteString(ansi.Truncate(st.Title.Render("A ")+c.A, w, "…") + "\n")
		top++
		lines := wrapped("B "+c.B, w, maxBLines)
		lines[0] = st.Title.Render("B") + strings.TrimPrefix(lines[0], "B")
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
		top += len(lines)
	}
	for _, warn := range c.Warnings { // as the text comparison prints them, above the figures
		b.WriteString(st.Warn.Render(ansi.Truncate("WARNING: "+warn, w, "…")) + "\n")
	}
	top += len(c.Warnings)
	if c.Verdict != "" { // a what-if's answer, with its noise floor: wrapped, never cut short of its %
		lines := wrapped("verdict "+c.Verdict, w, maxVerdictLines)
		lines[0] = st.Title.Render("verdict") + strings.TrimPrefix(lines[0], "verdict")
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
		top += len(lines)
	}
	// The strips: a header line, each device of A then of B, and the legend.
	mark := ""
	if m.data.Runs[0].Critical != nil || m.data.Runs[1].Critical != nil {
		mark = "on the critical path"
	}
	legend := strip.LegendUnderlined(st, w, false, false, mark)
	legendH := strings.Count(legend, "\n") + 1
	nd := max(len(m.sides[0].devices), len(m.sides[1].devices))
	perRun := min(nd, max((h-top-2-6-1-legendH)/2, 1)) // keep six lines of table
	stripH := 1 + 2*perRun + legendH
	tableH := max(h-top-stripH, 2)
	m.table(&b, w, tableH)
	b.WriteString(m.strips(perRun) + legend)
	return b.String()
}

// padTo pads s with spaces to w display columns (fmt pads by runes, and a name's "→" and "×"
// are one column each but so are they as runes: this is for names with wider characters too).
func padTo(s string, w int) string {
	return s + strings.Repeat(" ", max(0, w-ansi.StringWidth(s)))
}

// truncMiddle fits s into w cells by cutting its middle: rows' names differ at their ends
// ("stream gaps per step: peer_wait", "…: host_wait"), so a cut end would make two rows read alike.
func truncMiddle(s string, w int) string {
	n := ansi.StringWidth(s)
	if n <= w {
		return s
	}
	if w < 3 {
		return ansi.Truncate(s, w, "")
	}
	tail := (w - 1) / 2
	return ansi.Truncate(s, w-1-tail, "") + "…" + ansi.TruncateLeft(s, n-tail, "")
}

// Column widths of the table, beside the name's. Below narrowTable columns the B − A column is
// left out (A, B and the change say it), for the names.
const (
	colA, colB, colDiff, colPct, colVerdict = 12, 12, 13, 11, 8
	narrowTable                             = 100
	maxVerdictLines, maxBLines              = 3, 2
)

// wrapped is s wrapped at words to w columns, in at most n lines (the last cut, with "…", when
// more are needed).
func wrapped(s string, w, n int) []string {
	lines := strings.Split(ansi.Wrap(s, w, " "), "\n")
	if len(lines) > n {
		lines = lines[:n]
		lines[n-1] = ansi.Truncate(lines[n-1], w-1, "") + "…"
	}
	for i, l := range lines {
		lines[i] = ansi.Truncate(strings.TrimRight(l, " "), w, "…")
	}
	return lines
}

// table writes the column names and the rows that fit in h lines, sections as their own lines.
func (m *Model) table(b *strings.Builder, w, h int) {
	st := &m.Fr.Styles
	cDiff, diffHead := colDiff, "B − A"
	if w < narrowTable {
		cDiff, diffHead = 0, ""
	}
	// Each column at least two wider than its widest cell, so that two values never run together
	// ("110.98 GB/s 110.98 GB/s" read as one figure in columns of 12).
	cA, cB, cPct := colA, colB, colPct
	longest := 0 // the widest row name, indented
	for _, r := range m.data.Cmp.Rows {
		a, bv, diff, pct, _ := r.Cells()
		cA, cB, cPct = max(cA, ansi.StringWidth(a)+2), max(cB, ansi.StringWidth(bv)+2), max(cPct, ansi.StringWidth(pct)+2)
		if cDiff > 0 {
			cDiff = max(cDiff, ansi.StringWidth(diff)+2)
		}
		longest = max(longest, 2+ansi.StringWidth(r.Name))
	}
	// The names' column is as wide as the widest name (and a space), not the whole width left:
	// on a wide terminal the figures stay beside the names they belong to, the rest of the line
	// blank, rather than 100 columns away across a gap the eye must cross on every row.
	nameW := max(min(w-cA-cB-cDiff-cPct-colVerdict, longest+1), 16)
	fmt.Fprintf(b, "%s\n", st.Title.Render(fmt.Sprintf("%-*s%*s%*s%*s%*s%*s", nameW, "", cA, "A", cB, "B", cDiff, diffHead, cPct, "change", colVerdict, "")))
	type line struct {
		section string
		row     *report.Row
		name    bool // the row's name alone, on a line of its own (its cells follow)
	}
	var lines []line
	section := ""
	for i, r := range m.data.Cmp.Rows {
		if r.Section != section {
			section = r.Section
			lines = append(lines, line{section: section})
		}
		// A collective's name ends with what tells its rows apart (the algorithm each run
		// chose): one too long for its column gets a line of its own rather than lose it.
		if r.Section == "collectives" && ansi.StringWidth(r.Name) > nameW-3 {
			lines = append(lines, line{row: &m.data.Cmp.Rows[i], name: true})
		}
		lines = append(lines, line{row: &m.data.Cmp.Rows[i]})
	}
	from, to := m.list.Window(len(lines), h-1, 2)
	for i := from; i < to; i++ {
		l := lines[i]
		var s string
		switch {
		case l.row == nil:
			s = st.Title.Render(fmt.Sprintf("%-*s", w, l.section))
		case l.name:
			s = padTo("  "+truncMiddle(l.row.Name, w-2), w)
		default:
			a, bv, diff, pct, verdict := l.row.Cells()
			name := "  " + truncMiddle(l.row.Name, nameW-3)
			if i > 0 && lines[i-1].name && lines[i-1].row == l.row {
				name = "" // said on the line above
			}
			if cDiff == 0 {
				diff = ""
			}
			s = fmt.Sprintf("%s%*s%*s%*s%*s", padTo(name, nameW), cA, a, cB, bv, cDiff, diff, cPct, pct)
			v := fmt.Sprintf("%*s", colVerdict, verdict)
			switch verdict {
			case "better":
				v = st.Good.Render(v)
			case "worse":
				v = st.Warn.Render(v)
			}
			s += v
		}
		if i == m.list.Selected() {
			s = st.Selected.Render(ansi.Strip(s))
		}
		b.WriteString(s + "\n")
	}
	for range h - 1 - (to - from) {
		b.WriteString("\n")
	}
}

// strips writes the step line and each run's first perRun devices, aligned at the step's start.
func (m *Model) strips(perRun int) string {
	m.perRun = perRun
	st, w := &m.Fr.Styles, m.W
	var b strings.Builder
	n := m.steps()
	if n == 0 {
		b.WriteString(st.Muted.Render("no step held by both runs: nothing to align the timelines on") + "\n")
		for range 2 * perRun {
			b.WriteString("\n")
		}
		return b.String()
	}
	ns := m.scale()
	ivA, ivB := m.sides[0].steps[m.step], m.sides[1].steps[m.step]
	head := fmt.Sprintf("step %d of %d (n/p): A %s, B %s long · %s/col (+/-) · from %s into the step (h/l)",
		m.step+1, n, units.Dur(ivA.End-ivA.Start), units.Dur(ivB.End-ivB.Start), units.Dur(ns), units.Dur(m.pan))
	b.WriteString(st.Title.Render(ansi.Truncate(head, w, "…")) + "\n")
	plotW := max(w-labelW, 1)
	for i, s := range m.sides {
		name := [2]string{"A", "B"}[i]
		step := s.steps[m.step]
		t0 := step.Start + m.pan
		for k := range perRun {
			at := m.devOff + k
			if at >= len(s.devices) {
				b.WriteString("\n")
				continue
			}
			if k == perRun-1 && perRun > 1 && len(s.devices) > at+1 { // with room for one, the strip itself
				b.WriteString(st.Muted.Render(fmt.Sprintf("%s: … %d more devices, %d before (J/K scroll)", name, len(s.devices)-at, m.devOff)) + "\n")
				continue
			}
			d := s.devices[at]
			lbl := fmt.Sprintf("%-*s", labelW, fmt.Sprintf("%s gpu %d", name, d.Device))
			act, which := m.scratch.Cells(d, t0, ns, plotW, 0, nil)
			crit := m.data.Runs[i].Critical
			marks := m.marks[:0]
			for c := range act { // the strip ends with the step: a shorter step is a shorter strip
				if t0+int64(c)*ns >= step.End {
					act[c] = theme.None
				}
				marks = append(marks, crit != nil && which[c] >= 0 && crit[which[c]] && act[c] != theme.None)
			}
			m.marks = marks
			b.WriteString(st.Muted.Render(lbl) + strip.DrawMarked(st, act, marks, -1, -1) + "\n")
		}
	}
	return b.String()
}
