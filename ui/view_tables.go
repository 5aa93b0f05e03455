package ui

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/recordings/trace"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
)

// ---- transfers ----

var transferCols = []string{"kind", "size", "ranks", "count", "bytes", "p50", "p99", "GB/s", "busbw"}

// filterBox is the `/` filter of a list: typing edits it, enter keeps it, esc clears it.
type filterBox struct {
	input     textinput.Model
	filtering bool
}

func newFilterBox(placeholder string) filterBox {
	ti := textinput.New()
	ti.Prompt = "/"
	ti.Placeholder = placeholder
	return filterBox{input: ti}
}

func (f *filterBox) open() tea.Cmd {
	f.filtering = true
	return f.input.Focus()
}

// key takes a key while the filter is open.
func (f *filterBox) key(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "enter", "esc":
		f.filtering = false
		f.input.Blur()
		if msg.String() == "esc" {
			f.input.SetValue("")
		}
		return nil
	}
	var cmd tea.Cmd
	f.input, cmd = f.input.Update(msg)
	return cmd
}

// value is the filter in lower case ("" for none).
func (f *filterBox) value() string { return strings.ToLower(f.input.Value()) }

// shown reports whether the filter line is on screen.
func (f *filterBox) shown() bool { return f.filtering || f.input.Value() != "" }

type transfersView struct {
	sortCol  int
	reverse  bool
	filter   filterBox
	sel, top int
}

func newTransfersView() transfersView {
	return transfersView{sortCol: 4, reverse: true, filter: newFilterBox("kind, e.g. send or all_reduce")}
}

func (v *transfersView) move(n int) { v.sel = max(0, v.sel+n) }

func (v *transfersView) key(msg tea.KeyPressMsg, m *Model) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(msg, k.Sort):
		v.sortCol = (v.sortCol + 1) % len(transferCols)
	case key.Matches(msg, k.Reverse):
		v.reverse = !v.reverse
	case key.Matches(msg, k.Filter):
		return v.filter.open()
	case key.Matches(msg, k.Up):
		v.move(-1)
	case key.Matches(msg, k.Down):
		v.move(1)
	case key.Matches(msg, k.Top):
		v.sel = 0
	case key.Matches(msg, k.Bottom):
		v.sel = 1 << 30
	}
	return nil
}

type trow struct {
	r              *agg.Row
	p50, p99, rate float64
	bus            float64
}

func (v *transfersView) view(m *Model, w, h int) string {
	st := m.styles
	var rows []trow
	f := v.filter.value()
	for _, r := range m.state.Rows {
		if f != "" && !strings.Contains(strings.ToLower(r.Kind), f) {
			continue
		}
		tr := trow{r: r, p50: r.Lat.Quantile(0.5), p99: r.Lat.Quantile(0.99), rate: r.Rate.Quantile(0.5)}
		if r.Ranks > 0 {
			op := collByName(r.Kind)
			tr.rate = float64(r.Size) / tr.p50 * 1e9 // algbw from the median time, as nccl-tests
			tr.bus = tr.rate * op.BusFactor(r.Ranks)
		}
		rows = append(rows, tr)
	}
	keyOf := func(t trow) []any {
		return []any{t.r.Kind, t.r.Size, t.r.Ranks, t.r.Count, t.r.Bytes, t.p50, t.p99, t.rate, t.bus}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := keyOf(rows[i])[v.sortCol], keyOf(rows[j])[v.sortCol]
		var c int
		switch x := a.(type) {
		case string:
			c = cmp.Compare(x, b.(string))
		case int64:
			c = cmp.Compare(x, b.(int64))
		case int:
			c = cmp.Compare(x, b.(int))
		case float64:
			c = cmp.Compare(x, b.(float64))
		}
		if c == 0 {
			c = cmp.Compare(rows[i].r.Kind+fmt.Sprint(rows[i].r.Size), rows[j].r.Kind+fmt.Sprint(rows[j].r.Size))
		}
		if v.reverse {
			return c > 0
		}
		return c < 0
	})
	var b strings.Builder
	widths := []int{18, 9, 6, 8, 10, 10, 10, 9, 9}
	head := ""
	for i, c := range transferCols {
		name := c
		if i == v.sortCol {
			arrow := "▲"
			if v.reverse {
				arrow = "▼"
			}
			name += arrow
		}
		if i == 0 {
			head += fmt.Sprintf("%-*s", widths[i], name)
		} else {
			head += fmt.Sprintf("%*s", widths[i], name)
		}
	}
	b.WriteString(st.Title.Render(head) + "\n")
	list := h - 3
	v.sel = min(v.sel, max(len(rows)-1, 0))
	if v.sel < v.top {
		v.top = v.sel
	}
	if v.sel >= v.top+list {
		v.top = v.sel - list + 1
	}
	for i := v.top; i < len(rows) && i < v.top+list; i++ {
		t := rows[i]
		ranks, bus := "", ""
		if t.r.Ranks > 0 {
			ranks, bus = fmt.Sprint(t.r.Ranks), fmt.Sprintf("%.1f", t.bus/1e9)
		}
		line := fmt.Sprintf("%-*s%*s%*s%*d%*s%*s%*s%*.1f%*s", widths[0], t.r.Kind, widths[1], "≤"+report.Bytes(t.r.Size),
			widths[2], ranks, widths[3], t.r.Count, widths[4], report.Bytes(t.r.Bytes), widths[5], report.Dur(int64(t.p50)),
			widths[6], report.Dur(int64(t.p99)), widths[7], t.rate/1e9, widths[8], bus)
		if i == v.sel {
			line = st.Selected.Render(line)
		}
		b.WriteString(line + "\n")
	}
	if len(rows) == 0 {
		b.WriteString(st.Muted.Render("no transfers yet") + "\n")
	}
	for strings.Count(b.String(), "\n") < h-1 {
		b.WriteString("\n")
	}
	if v.filter.shown() {
		b.WriteString(v.filter.input.View())
	} else {
		b.WriteString(st.Muted.Render(fmt.Sprintf("%d rows · GB/s is the median per op (algbw for collectives) · latency percentiles are ±3%%", len(rows))))
	}
	return b.String()
}

func collByName(name string) timeline.CollOp {
	for op := timeline.CollAllReduce; op <= timeline.CollSendRecv; op++ {
		if op.String() == name {
			return op
		}
	}
	return 0
}

// ---- barriers ----

type barriersView struct{ sel int }

func (v *barriersView) move(n int) { v.sel = max(0, v.sel+n) }

func (v *barriersView) key(msg tea.KeyPressMsg, m *Model) {
	switch k := m.keys; {
	case key.Matches(msg, k.Up):
		v.move(-1)
	case key.Matches(msg, k.Down):
		v.move(1)
	case key.Matches(msg, k.Top):
		v.sel = 0
	}
}

func (v *barriersView) view(m *Model, w, h int) string {
	st, s := m.styles, m.state
	var b strings.Builder
	if len(s.Barriers) == 0 {
		return st.Muted.Render("no barriers yet")
	}
	// Ranks most often last.
	type last struct {
		rank int32
		n    int
		p50  int64
	}
	var ls []last
	for r, n := range s.LastAt {
		ls = append(ls, last{r, n, timeline.Percentile(append([]int64(nil), s.Lateness[r]...), 50)})
	}
	slices.SortFunc(ls, func(a, b last) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.rank, b.rank)) })
	var lp []string
	for _, l := range ls[:min(len(ls), 4)] {
		lp = append(lp, fmt.Sprintf("rank %d (%d×, p50 %s late)", l.rank, l.n, report.Dur(l.p50)))
	}
	b.WriteString(st.Title.Render("Most often last: ") + strings.Join(lp, ", ") + "\n")
	// The selected barrier (newest first) with each rank's wait.
	v.sel = min(v.sel, len(s.Barriers)-1)
	br := s.Barriers[len(s.Barriers)-1-v.sel]
	fmt.Fprintf(&b, "%s %d of %d (newest first, j/k): op %d, released at %s, straggler rank %d, %s after the median\n",
		st.Title.Render("Barrier"), v.sel+1, len(s.Barriers), br.Op, report.Dur(br.Release), br.Straggler, report.Dur(br.Lateness))
	var maxWait int64 = 1
	for _, a := range br.Arrivals {
		maxWait = max(maxWait, a.Wait)
	}
	barW := max(w-40, 10)
	for i, a := range br.Arrivals {
		if i >= h-4 {
			fmt.Fprintf(&b, "… %d more ranks\n", len(br.Arrivals)-i)
			break
		}
		n := int(float64(a.Wait) / float64(maxWait) * float64(barW))
		bar := st.Activity[11].Render(strings.Repeat("|", n))
		mark := ""
		if a.Rank == br.Straggler {
			mark = st.Alert.Render(" ◀ last (straggler)")
		}
		fmt.Fprintf(&b, "rank %-4d waited %10s %s%s\n", a.Rank, report.Dur(a.Wait), bar, mark)
	}
	return b.String()
}

// ---- idle ----

type idleGroup struct {
	cause        timeline.Cause
	device       int32
	stream       uint32
	total        int64
	count        int
	gapAt, gapNs int64
}

type idleResultMsg struct {
	groups  []idleGroup
	byCause map[timeline.Cause]int64
	total   int64
	events  int
	upTo    int64
}

type idleView struct {
	groups   []idleGroup
	byCause  map[timeline.Cause]int64
	total    int64
	events   int
	computed int64 // snapshot Total the result is for
	running  bool
	sel, top int
}

func (v *idleView) move(n int) { v.sel = max(0, v.sel+n) }

// IdleWindow is how many recent events the idle analysis covers.
const IdleWindow = 200_000

// maybeCompute starts an idle analysis of the recent events when new ones arrived and none runs.
func (v *idleView) maybeCompute(m *Model) tea.Cmd {
	if v.running || m.snap.Total == v.computed {
		return nil
	}
	v.running = true
	snap, mode := m.snap, m.info.IdleMode
	return func() tea.Msg {
		from := max(snap.Base, snap.Total-IdleWindow)
		evs := make([]timeline.Event, 0, snap.Total-from)
		for i := from; i < snap.Total; i++ {
			evs = append(evs, *snap.At(i))
		}
		gaps := timeline.IdleGaps(evs, mode, timeline.DefaultKernelWaitNs)
		type gk struct {
			c timeline.Cause
			d int32
			s uint32
		}
		idx := map[gk]*idleGroup{}
		res := idleResultMsg{byCause: map[timeline.Cause]int64{}, events: len(evs), upTo: snap.Total}
		for _, g := range gaps {
			if g.Dur <= 0 {
				continue
			}
			res.byCause[g.Cause] += g.Dur
			res.total += g.Dur
			k := gk{g.Cause, g.Device, g.Stream}
			ig := idx[k]
			if ig == nil {
				ig = &idleGroup{cause: g.Cause, device: g.Device, stream: g.Stream}
				idx[k] = ig
			}
			ig.total += g.Dur
			ig.count++
			if g.Dur > ig.gapNs {
				ig.gapAt, ig.gapNs = g.Start, g.Dur
			}
		}
		for _, g := range idx {
			res.groups = append(res.groups, *g)
		}
		slices.SortFunc(res.groups, func(a, b idleGroup) int {
			return cmp.Or(cmp.Compare(b.total, a.total), cmp.Compare(a.device, b.device), cmp.Compare(a.stream, b.stream))
		})
		return res
	}
}

func (v *idleView) result(r idleResultMsg) {
	v.running = false
	v.groups, v.byCause, v.total, v.events, v.computed = r.groups, r.byCause, r.total, r.events, r.upTo
}

func (v *idleView) key(msg tea.KeyPressMsg, m *Model) tea.Cmd {
	switch k := m.keys; {
	case key.Matches(msg, k.Up):
		v.move(-1)
	case key.Matches(msg, k.Down):
		v.move(1)
	case key.Matches(msg, k.Top):
		v.sel = 0
	case key.Matches(msg, k.Select):
		if v.sel < len(v.groups) {
			g := v.groups[v.sel]
			m.timeline.jump(m, g.device, g.stream, g.gapAt, g.gapNs)
			m.tab = TabTimeline
		}
	}
	return nil
}

func (v *idleView) view(m *Model, w, h int) string {
	st := m.styles
	var b strings.Builder
	if v.groups == nil {
		if v.running {
			return st.Muted.Render("computing idle time…")
		}
		return st.Muted.Render("no idle time yet")
	}
	var causes []string
	for _, c := range timeline.Causes() {
		if n := v.byCause[c]; n > 0 {
			causes = append(causes, fmt.Sprintf("%s %s (%.0f%%)", c, report.Dur(n), 100*float64(n)/float64(v.total)))
		}
	}
	fmt.Fprintf(&b, "%s %s over the last %d events: %s\n", st.Title.Render("Idle"), report.Dur(v.total), v.events, strings.Join(causes, ", "))
	head := fmt.Sprintf("%-13s%7s%8s%12s%8s  %s", "cause", "device", "stream", "total", "gaps", "largest gap (enter: show in timeline)")
	b.WriteString(st.Title.Render(head) + "\n")
	list := h - 3
	v.sel = min(v.sel, max(len(v.groups)-1, 0))
	if v.sel < v.top {
		v.top = v.sel
	}
	if v.sel >= v.top+list {
		v.top = v.sel - list + 1
	}
	for i := v.top; i < len(v.groups) && i < v.top+list; i++ {
		g := v.groups[i]
		line := fmt.Sprintf("%-13s%7d%8d%12s%8d  %s at %s", g.cause, g.device, g.stream, report.Dur(g.total), g.count, report.Dur(g.gapNs), report.Dur(g.gapAt))
		if i == v.sel {
			line = st.Selected.Render(line)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// ---- comms ----

type commsView struct{}

func (commsView) view(m *Model, w, h int) string {
	st, s := m.styles, m.state
	var b strings.Builder
	lookups := s.CommHits + s.CommMiss
	rate := 0.0
	if lookups > 0 {
		rate = 100 * float64(s.CommHits) / float64(lookups)
	}
	fmt.Fprintf(&b, "%s %d entries seen · %d hits · %d misses · %d evictions · hit rate %.1f%% · %s spent creating\n",
		st.Title.Render("Communicator cache"), len(s.Comms), s.CommHits, s.CommMiss, s.CommEvict, rate, report.Dur(s.CommInit))
	b.WriteString(st.Title.Render(fmt.Sprintf("%6s  %-28s%8s%12s%12s  %s", "id", "devices", "hits", "created", "cost", "state")) + "\n")
	ids := make([]uint32, 0, len(s.Comms))
	for id := range s.Comms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if i >= h-3 {
			fmt.Fprintf(&b, "… %d more\n", len(ids)-i)
			break
		}
		c := s.Comms[id]
		state := st.Good.Render("cached")
		switch {
		case c.Faulted:
			state = st.Alert.Render("evicted (error)")
		case c.Evicted:
			state = st.Muted.Render("evicted")
		}
		devs := c.Devices
		if len(devs) > 28 {
			devs = devs[:27] + "…"
		}
		fmt.Fprintf(&b, "%6d  %-28s%8d%12s%12s  %s\n", c.ID, devs, c.Hits, report.Dur(c.Created), report.Dur(c.InitNs), state)
	}
	return b.String()
}

// ---- events ----

type eventsView struct {
	filter filterBox
	offset int              // lines scrolled up from the newest
	lines  map[int64]string // formatted lines by event index
}

func newEventsView() eventsView {
	return eventsView{filter: newFilterBox("search kind, label, device…")}
}

func (v *eventsView) move(n int) { v.offset = max(0, v.offset-n) }

func (v *eventsView) key(msg tea.KeyPressMsg, m *Model) tea.Cmd {
	switch k := m.keys; {
	case key.Matches(msg, k.Filter):
		return v.filter.open()
	case key.Matches(msg, k.Up):
		v.move(-1)
	case key.Matches(msg, k.Down):
		v.move(1)
	case key.Matches(msg, k.Top):
		v.offset = 1 << 30
	case key.Matches(msg, k.Bottom):
		v.offset = 0
	}
	return nil
}

// eventLine formats one event for the log.
func eventLine(snap *timeline.Snapshot, e *timeline.Event) string {
	dev := "-"
	if e.Device >= 0 {
		dev = fmt.Sprint(e.Device)
	}
	extra := ""
	if e.Bytes > 0 {
		extra = report.Bytes(e.Bytes)
	}
	return fmt.Sprintf("%12s %-17s dev %-3s s%-4d %10s %9s  %s", report.Dur(e.Start), e.Kind, dev, e.Stream, report.Dur(e.Dur()), extra,
		trace.EventName(e, snap))
}

func (v *eventsView) view(m *Model, w, h int) string {
	st := m.styles
	f := v.filter.value()
	idx := m.state.RecentLog(agg.MaxLog)
	list := h - 2
	if v.lines == nil || len(v.lines) > 4*agg.MaxLog {
		v.lines = map[int64]string{} // formatted lines never change: keep them, bounded
	}
	line := func(i int64) (string, bool) {
		if l, ok := v.lines[i]; ok {
			return l, true
		}
		e := m.snap.At(i)
		if e == nil {
			return "", false
		}
		l := eventLine(&m.snap, e)
		v.lines[i] = l
		return l, true
	}
	// Walk from the newest back, formatting only until the visible lines (and the scroll offset
	// above them) are found: a frame must not format thousands of lines.
	want := list + v.offset
	var picked []string
	matched := 0
	for k := len(idx) - 1; k >= 0 && len(picked) < want; k-- {
		l, ok := line(idx[k])
		if !ok || (f != "" && !strings.Contains(strings.ToLower(l), f)) {
			continue
		}
		matched++
		picked = append(picked, l)
	}
	v.offset = min(v.offset, max(len(picked)-list, 0))
	var b strings.Builder
	state := "newest last"
	if m.paused {
		state = "paused"
	}
	b.WriteString(st.Title.Render(fmt.Sprintf("%12s %-17s %-7s %-5s %10s %9s  %s", "start", "kind", "device", "strm", "dur", "bytes", "what")) +
		st.Muted.Render(fmt.Sprintf("  last %d events, %s", len(idx), state)) + "\n")
	end := len(picked)
	start := min(v.offset, end)
	shown := picked[start:min(start+list, end)]
	for k := len(shown) - 1; k >= 0; k-- {
		b.WriteString(shown[k] + "\n")
	}
	for strings.Count(b.String(), "\n") < h-1 {
		b.WriteString("\n")
	}
	if v.filter.shown() {
		b.WriteString(v.filter.input.View())
	}
	_ = matched
	return b.String()
}
