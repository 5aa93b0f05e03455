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

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/units"
)

// ---- transfers ----

var transferCols = []string{"kind", "size", "ranks", "count", "bytes", "p50", "p99", "GB/s", "busbw", "algo_proto"}

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
	list
	sortCol int
	reverse bool
	filter  filterBox
}

func newTransfersView() transfersView {
	return transfersView{sortCol: 4, reverse: true, filter: newFilterBox("kind, e.g. send or all_reduce")}
}

func (v *transfersView) key(msg tea.KeyPressMsg, fr *Frame) tea.Cmd {
	k := fr.Keys
	switch {
	case v.move(msg, k):
	case key.Matches(msg, k.Sort):
		v.sortCol = (v.sortCol + 1) % len(transferCols)
	case key.Matches(msg, k.Reverse):
		v.reverse = !v.reverse
	case key.Matches(msg, k.Filter):
		return v.filter.open()
	}
	return nil
}

// trow is a transfers-table row: a transfer kind or a collective at a size class.
type trow struct {
	kind         string
	size         int64
	ranks        int
	count, bytes int64
	p50, p99     *int64
	rate, bus    *float64
	algoProto    string // collectives: NCCL's algorithm and protocol ("Ring_LL128"), "" when not known
}

// transferRows lists the analysis's transfer and collective rows, filtered.
func transferRows(res *analysis.Result, f string) []trow {
	var rows []trow
	for _, r := range res.Transfers.BySize {
		rows = append(rows, trow{kind: r.Kind, size: r.SizeClass, count: r.Count, bytes: r.Bytes, p50: r.P50Ns, p99: r.P99Ns, rate: r.GBps})
	}
	for _, c := range res.Collectives.Rows {
		rows = append(rows, trow{kind: c.Op, size: c.SizeClass, ranks: c.Ranks, count: c.Count, bytes: c.Bytes * c.Count,
			p50: c.P50Ns, p99: c.P99Ns, rate: c.AlgBW, bus: c.BusBW, algoProto: c.AlgoProto})
	}
	if f != "" {
		rows = slices.DeleteFunc(rows, func(t trow) bool { return !strings.Contains(strings.ToLower(t.kind), f) })
	}
	return rows
}

func orZero[T int64 | float64](p *T) T {
	if p == nil {
		return -1 // unknown sorts below every known value
	}
	return *p
}

func gbpsCell(p *float64) string {
	if p == nil {
		return units.Unknown
	}
	return fmt.Sprintf("%.1f", *p)
}

func (v *transfersView) View(fr *Frame, w, h int) string {
	st := fr.Styles
	rows := transferRows(fr.Res, v.filter.value())
	keyOf := func(t trow) []any {
		return []any{t.kind, t.size, int64(t.ranks), t.count, t.bytes, orZero(t.p50), orZero(t.p99), orZero(t.rate), orZero(t.bus), t.algoProto}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := keyOf(rows[i])[v.sortCol], keyOf(rows[j])[v.sortCol]
		var c int
		switch x := a.(type) {
		case string:
			c = cmp.Compare(x, b.(string))
		case int64:
			c = cmp.Compare(x, b.(int64))
		case float64:
			c = cmp.Compare(x, b.(float64))
		}
		if c == 0 {
			c = cmp.Or(cmp.Compare(rows[i].kind, rows[j].kind), cmp.Compare(rows[i].size, rows[j].size), cmp.Compare(rows[i].algoProto, rows[j].algoProto))
		}
		if v.reverse {
			return c > 0
		}
		return c < 0
	})
	var b strings.Builder
	widths := []int{18, 11, 6, 8, 11, 10, 10, 9, 9, 17}
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
	from, to := v.window(len(rows), h-3)
	for i := from; i < to; i++ {
		t := rows[i]
		ranks, bus := "", ""
		if t.ranks > 0 {
			ranks, bus = fmt.Sprint(t.ranks), gbpsCell(t.bus)
		}
		line := fmt.Sprintf("%-*s%*s%*s%*d%*s%*s%*s%*s%*s%*s", widths[0], t.kind, widths[1], "≤"+units.Bytes(t.size),
			widths[2], ranks, widths[3], t.count, widths[4], units.Bytes(t.bytes), widths[5], units.DurP(t.p50),
			widths[6], units.DurP(t.p99), widths[7], gbpsCell(t.rate), widths[8], bus, widths[9], t.algoProto)
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
		b.WriteString(st.Muted.Render(fmt.Sprintf("%d rows · GB/s = bytes / time of the row's ops (algbw for collectives)", len(rows))))
	}
	return b.String()
}

// ---- barriers ----

// barriersView shows one barrier at a time (the selection, newest first) with each rank's wait.
type barriersView struct {
	noCapture
	list
}

func (v *barriersView) key(msg tea.KeyPressMsg, fr *Frame) { v.move(msg, fr.Keys) }

func (v *barriersView) View(fr *Frame, w, h int) string {
	st, bs := fr.Styles, fr.Res.Barriers
	var b strings.Builder
	if len(bs.Recent) == 0 {
		return st.Muted.Render("no barriers yet")
	}
	var lp []string
	for _, l := range bs.Stragglers[:min(len(bs.Stragglers), 4)] {
		lp = append(lp, fmt.Sprintf("rank %d (%d×, p50 %s late)", l.Rank, l.TimesLast, units.DurP(l.LatenessNs50)))
	}
	b.WriteString(st.Title.Render("Most often last: ") + strings.Join(lp, ", ") + "\n")
	// The selected barrier (newest first) with each rank's wait.
	v.window(len(bs.Recent), 1)
	br := bs.Recent[len(bs.Recent)-1-v.sel]
	fmt.Fprintf(&b, "%s %d of %d (newest first, j/k): op %d, released at %s, straggler rank %d, %s after the median\n",
		st.Title.Render("Barrier"), v.sel+1, len(bs.Recent), br.Op, units.Dur(br.Release), br.Straggler, units.Dur(br.LatenessNs))
	var maxWait int64 = 1
	for _, a := range br.Arrivals {
		maxWait = max(maxWait, a.WaitNs)
	}
	barW := max(w-40, 10)
	for i, a := range br.Arrivals {
		if i >= h-4 {
			fmt.Fprintf(&b, "… %d more ranks\n", len(br.Arrivals)-i)
			break
		}
		n := int(float64(a.WaitNs) / float64(maxWait) * float64(barW))
		bar := st.Activity[11].Render(strings.Repeat("|", n))
		mark := ""
		if a.Rank == br.Straggler {
			mark = st.Alert.Render(" ◀ last (straggler)")
		}
		fmt.Fprintf(&b, "rank %-4d waited %10s %s%s\n", a.Rank, units.Dur(a.WaitNs), bar, mark)
	}
	return b.String()
}

// ---- idle ----

// idleGroup is one stream's idle time of one cause, with its largest gap when among the longest kept.
type idleGroup struct {
	cause        analysis.Cause
	role         string
	device       int32
	stream       uint32
	total        int64
	gapAt, gapNs int64
}

type idleView struct {
	noCapture
	list
}

// idleGroups ranks every stream's idle time by cause, most costly first.
func idleGroups(si *analysis.StreamGaps) []idleGroup {
	var out []idleGroup
	for _, s := range si.Streams {
		for _, c := range analysis.Causes() {
			if n := s.ByCause[c.String()]; n > 0 {
				g := idleGroup{cause: c, role: s.Role, device: s.Device, stream: s.Stream, total: n}
				for _, gap := range s.Largest {
					if gap.Cause == c {
						g.gapAt, g.gapNs = gap.Start, gap.Dur
					}
				}
				out = append(out, g)
			}
		}
	}
	// Idle compute streams first: that is GPU time lost; then by cost.
	slices.SortFunc(out, func(a, b idleGroup) int {
		rank := func(g idleGroup) int {
			if g.role == "compute" {
				return 0
			}
			return 1
		}
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(b.total, a.total), cmp.Compare(a.device, b.device), cmp.Compare(a.stream, b.stream))
	})
	return out
}

func (v *idleView) key(msg tea.KeyPressMsg, fr *Frame) tea.Cmd {
	switch k := fr.Keys; {
	case v.move(msg, k):
	case key.Matches(msg, k.Select):
		groups := idleGroups(&fr.Res.StreamIdle)
		if v.sel < len(groups) && groups[v.sel].gapNs > 0 {
			g := groups[v.sel]
			return jumpTo(JumpToMsg{Device: g.device, Stream: g.stream, Time: g.gapAt, Dur: g.gapNs})
		}
	}
	return nil
}

func (v *idleView) View(fr *Frame, w, h int) string {
	st, si := fr.Styles, &fr.Res.StreamIdle
	groups := idleGroups(si)
	if len(groups) == 0 {
		return st.Muted.Render("no idle time yet")
	}
	var b strings.Builder
	var causes []string
	for _, c := range analysis.Causes() {
		if n := si.ByCause[c.String()]; n > 0 {
			causes = append(causes, fmt.Sprintf("%s %s (%.0f%%)", c, units.Dur(n), 100*float64(n)/float64(si.TotalNs)))
		}
	}
	fmt.Fprintf(&b, "%s devices %s idle · gaps on streams %s (Σ over streams; %% of that): %s\n", st.Title.Render("Idle"),
		units.Dur(fr.Res.Breakdown.IdleNs), units.Dur(si.TotalNs), strings.Join(causes, ", "))
	// Per device, HTA's temporal breakdown and overlap, as the report gives them.
	devs := fr.Res.Breakdown.Devices
	shown := min(len(devs), max(h/3, 1))
	b.WriteString(st.Muted.Render(fmt.Sprintf("%-7s%8s%10s%14s%11s   (%% of each device's span; overlap: %% of its communication; pooled %s)",
		"device", "idle %", "compute %", "non-compute %", "overlap %", units.Pct(fr.Res.Breakdown.OverlapPct))) + "\n")
	for _, d := range devs[:shown] {
		ov := units.Unknown
		if d.OverlapPct != nil {
			ov = fmt.Sprintf("%.1f", *d.OverlapPct)
		}
		fmt.Fprintf(&b, "%-7d%8.1f%10.1f%14.1f%11s\n", d.Device, d.IdlePct, d.ComputePct, d.NonCompPct, ov)
	}
	if shown < len(devs) {
		b.WriteString(st.Muted.Render(fmt.Sprintf("… %d more devices", len(devs)-shown)) + "\n")
	}
	h -= shown + 1
	head := fmt.Sprintf("%-13s%7s%8s %-9s%11s  %s", "cause", "device", "stream", "role", "total", "largest gap (enter: show in timeline)")
	b.WriteString(st.Title.Render(head) + "\n")
	from, to := v.window(len(groups), h-3)
	for i := from; i < to; i++ {
		g := groups[i]
		gap := units.Unknown
		if g.gapNs > 0 {
			gap = units.Dur(g.gapNs) + " at " + units.Dur(g.gapAt)
		}
		line := fmt.Sprintf("%-13s%7d%8d %-9s%11s  %s", g.cause, g.device, g.stream, g.role, units.Dur(g.total), gap)
		if i == v.sel {
			line = st.Selected.Render(line)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// ---- comms ----

// commsView lists the communicators, cached ones first (newest first), then evicted ones; j/k
// scroll, so no entry is out of reach.
type commsView struct {
	noCapture
	list
}

func (v *commsView) key(msg tea.KeyPressMsg, fr *Frame) { v.move(msg, fr.Keys) }

// commsOrder sorts communicators for the view: cached before evicted, newest first.
func commsOrder(cs []analysis.Comm) []analysis.Comm {
	out := slices.Clone(cs)
	slices.SortStableFunc(out, func(a, b analysis.Comm) int {
		if a.Evicted != b.Evicted {
			if a.Evicted {
				return 1
			}
			return -1
		}
		return cmp.Compare(b.CreatedNs, a.CreatedNs)
	})
	return out
}

func (v *commsView) View(fr *Frame, w, h int) string {
	st, cc := fr.Styles, fr.Res.CommCache
	var b strings.Builder
	rate := units.Unknown
	if lookups := cc.Hits + cc.Misses; lookups > 0 {
		rate = fmt.Sprintf("%.1f%%", 100*float64(cc.Hits)/float64(lookups))
	}
	fmt.Fprintf(&b, "%s %d entries seen · %d hits · %d misses · %d evictions · hit rate %s of lookups · %s spent creating\n",
		st.Title.Render("Communicator cache"), len(cc.Comms), cc.Hits, cc.Misses, cc.Evictions, rate, units.Dur(cc.InitNsTotal))
	b.WriteString(st.Title.Render(fmt.Sprintf("%6s  %-28s%8s%12s%12s  %s", "id", "devices", "hits", "created", "cost", "state")) + "\n")
	comms := commsOrder(cc.Comms)
	from, to := v.window(len(comms), h-3)
	for i := from; i < to; i++ {
		c := comms[i]
		state := st.Good.Render("cached")
		switch {
		case c.Faulted:
			state = st.Alert.Render("evicted (error)")
		case c.Evicted:
			state = st.Muted.Render("evicted")
		}
		devs := deviceSet(c.Devices)
		if len(devs) > 28 {
			devs = devs[:27] + "…"
		}
		line := fmt.Sprintf("%6d  %-28s%8d%12s%12s  ", c.ID, devs, c.Hits, units.Dur(c.CreatedNs), units.Dur(c.InitNs))
		if i == v.sel {
			line = st.Selected.Render(line)
		}
		b.WriteString(line + state + "\n")
	}
	if to-from < len(comms) {
		b.WriteString(st.Muted.Render(fmt.Sprintf("%d–%d of %d (j/k to scroll)", from+1, to, len(comms))))
	}
	return b.String()
}

// deviceSet writes device ids compactly: 0-7,12.
func deviceSet(ds []int32) string {
	var parts []string
	for i := 0; i < len(ds); {
		j := i
		for j+1 < len(ds) && ds[j+1] == ds[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ds[i], ds[j]))
		} else {
			parts = append(parts, fmt.Sprint(ds[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
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

func (v *eventsView) Scroll(n int) { v.offset = max(0, v.offset-n) }

func (v *eventsView) key(msg tea.KeyPressMsg, fr *Frame) tea.Cmd {
	switch k := fr.Keys; {
	case key.Matches(msg, k.Filter):
		return v.filter.open()
	case key.Matches(msg, k.Up):
		v.Scroll(-1)
	case key.Matches(msg, k.Down):
		v.Scroll(1)
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
		extra = units.Bytes(e.Bytes)
	}
	// Start times to the microsecond, so that neighbours are told apart.
	at := fmt.Sprintf("%.6f s", float64(e.Start)/1e9)
	return fmt.Sprintf("%14s %-17s dev %-3s s%-4d %10s %9s  %s", at, e.Kind, dev, e.Stream, units.Dur(e.Dur()), extra,
		e.Title(snap))
}

func (v *eventsView) View(fr *Frame, w, h int) string {
	st := fr.Styles
	f := v.filter.value()
	idx := fr.State.RecentLog(agg.MaxLog)
	list := h - 2
	if v.lines == nil || len(v.lines) > 4*agg.MaxLog {
		v.lines = map[int64]string{} // formatted lines never change: keep them, bounded
	}
	line := func(i int64) (string, bool) {
		if l, ok := v.lines[i]; ok {
			return l, true
		}
		e := fr.Snap.At(i)
		if e == nil {
			return "", false
		}
		l := eventLine(fr.Snap, e)
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
	if fr.Paused {
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
