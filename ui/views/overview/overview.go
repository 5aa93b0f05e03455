package overview

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/hostmap"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
)

// Model is the overview.
type Model struct {
	widget.Base
	tele     teleCache // the telemetry's lines, as last drawn
	spark    sparkTotals
	devs     widget.DeviceRows
	list     widget.List
	filter   widget.Filter // devices by id, host (h76: exactly) or idle cause
	worst    bool          // devices sorted most idle first, rather than by id
	expanded map[int]bool  // rolled up, the hosts shown GPU by GPU
	// groups are the devices by host as the host map placedBy places them (placed), the devices
	// being placedIDs (by position); hostOfPos is each position's host (-1: unknown).
	groups    []hostGroup
	hostOfPos []int
	placedIDs []int32
	placedBy  *hostmap.Map
	// As last drawn: the rows, and whether they outnumbered the lines (the list then scrolls, and
	// g/G are its, not a replay's start and end).
	rows     []devRow
	overflow bool
	rolled   bool
	// lines is how many lines the table had, and gpus how many GPUs a host row rolls up.
	lines, gpus int
}

// devRow is a line of the device table: a device, or a host rolled up (drawn as its most idle
// GPU).
type devRow struct {
	dev    int // index into the table's devices: the device, or the host's most idle
	host   int
	isHost bool
}

// New returns the overview over fr.
func New(fr *widget.Frame) *Model {
	return &Model{Base: widget.Base{Fr: fr}, expanded: map[int]bool{}, filter: widget.NewFilter("device, host (h76: that host alone) or idle cause")}
}

// Capturing reports whether the filter is being typed.
func (m *Model) Capturing() bool { return m.filter.Editing() }

// Update takes the device table's keys and the mouse: j/k, the wheel and g/G scroll it, s sorts
// it most idle first (or back by id), enter expands or collapses a rolled-up host.
func (m *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	k := m.Fr.Keys
	if cmd, ok := m.filter.Handle(msg, k); ok {
		return m, cmd
	}
	if km, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(km, k.Sort):
			m.worst = !m.worst
			return m, nil
		case key.Matches(km, k.Select, k.Collapse):
			if sel := m.list.Selected(); sel < len(m.rows) && m.rolled {
				h := m.rows[sel].host
				m.expanded[h] = !m.expanded[h]
				if m.expanded[h] && m.rows[sel].isHost {
					// The table scrolls as little as brings the host's GPUs, under it, in sight
					// (a line of it then says which rows are shown).
					m.list.Reveal(sel, m.gpus, m.lines-1)
				}
				if !m.expanded[h] { // the selection goes back to the host's row
					for i, r := range m.rows {
						if r.isHost && r.host == h {
							m.list.Select(i)
						}
					}
				}
			}
			return m, nil
		case key.Matches(km, k.Top, k.Bottom) && !m.overflow:
			return m, nil
		}
	}
	m.list.Handle(msg, k)
	return m, nil
}

// Sorted reports whether the devices are sorted most idle first.
func (m *Model) Sorted() bool { return m.worst }

// ShortHelp lists the overview's keys: g/G only while the table scrolls (a replay's overview
// otherwise seeks with them), enter while hosts are rolled up.
func (m *Model) ShortHelp() []key.Binding {
	k := m.Fr.Keys
	sort := k.Sort
	sort.SetHelp("s", "most idle first")
	keys := append([]key.Binding{sort}, hostFilterKeys(m.filter.Keys(k))...)
	keys = append(keys, k.Up, k.Down)
	if m.overflow {
		keys = append(keys, k.PageUp, k.PageDown, k.Top, k.Bottom)
	}
	if m.rolled {
		sel := k.Select
		sel.SetHelp("enter", "expand host")
		keys = append(keys, sel)
	}
	return keys
}

// FullHelp groups the overview's keys.
func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

var sparks = []rune("▁▂▃▄▅▆▇█")

// View draws the overview.
func (m *Model) View() string {
	fr, res := m.Fr, m.Fr.Res
	st := fr.Styles
	var b strings.Builder
	steps := fr.None("steps")
	if s := res.Steps; s.Count > 0 {
		steps = fmt.Sprintf("steps %d, last %s, p50 %s", s.Count, units.DurP(s.LastNs), units.DurP(s.P50Ns))
	}
	cache := "comm cache: " + fr.None("lookups")
	if cc := res.CommCache; !cc.Known {
		cache = "comm cache: " + units.Unknown + " (the source does not record communicators)"
	} else if cc.Hits+cc.Misses > 0 {
		cache = fmt.Sprintf("comm cache %s hits (%s, %s, %s)", units.HitRate(cc.Hits, cc.Misses),
			units.Counted(cc.Hits, "hit"), units.Counted(cc.Misses, "miss"), units.Counted(cc.Evictions, "eviction"))
	}
	moved := report.MovedBytes(res.Links)
	if fr.Snap != nil && fr.Snap.From > 0 {
		// A replay started or sought there: every figure counts from then on, as the headless
		// report of a replay --from does.
		moved += " since " + units.Dur(fr.Snap.From)
	}
	// What crossed links (bus bytes), not the payload the transfers view counts: say which.
	moved += " (bus bytes)"
	if analysis.OpsUnknown(res, fr.Meta) {
		// The source records no ops (NCCL RAS): what moved is unknown, not 0 B, as the report says.
		moved = units.Unknown + " (the source records no ops)"
	}
	fmt.Fprintf(&b, "%s %s   %s   %s\n", st.Title.Render("Moved on links"), moved, steps, cache)
	now := "each link now, % of peak"
	if !fr.Live {
		now = "each link now (ended: idle), % of peak"
	}
	b.WriteString(st.Muted.Render("per GPU: where its time went (temporal breakdown of its span), the top cause of its streams' idle gaps while it sat idle; "+now) + "\n")
	tele := m.telemetry()
	if len(res.ProfilerCost) > 0 {
		tele += profilerCostLine(res.ProfilerCost) + "\n"
	}
	m.writeDevices(&b, strings.Count(tele, "\n"))
	m.writeFabric(&b)
	b.WriteString(tele)
	if res.AlertCount > 0 {
		b.WriteString(st.Alert.Render(fmt.Sprintf("Alerts (%d):", res.AlertCount)) + "\n")
		for _, a := range res.Alerts[max(0, len(res.Alerts)-3):] {
			line := "  " + units.Dur(a.At) + "  " + a.Message
			if a.Root != nil {
				line += " — " + a.Root.String()
			}
			b.WriteString(st.Alert.Render(line) + "\n")
		}
	}
	if fr.State.Missed > 0 {
		b.WriteString(st.Warn.Render(behind(fr)) + "\n")
	}
	return b.String()
}

// behind says how many events went by while the view was behind (trimmed from the window before
// the console read them) and what they are missing from. A source that analyses every event itself
// (a replay) has them in every figure: only the timeline and the log skipped them. Any other is
// analysed from what the console reads, so its figures miss them too, and only a recording the
// source writes beside the console still holds them.
func behind(fr *widget.Frame) string {
	n := units.Counted(fr.State.Missed, "event") + " went by while the view was behind: "
	switch {
	case fr.AnalysesAll && fr.Replay:
		return n + "in every figure, not in the timeline or the log (seek back to see them)"
	case fr.AnalysesAll:
		return n + "in every figure, not in the timeline or the log"
	case fr.Recording != "":
		return n + "not in the figures, the timeline or the log; " + fr.Recording + " has them"
	}
	return n + "not in the figures, the timeline or the log, and not recorded (--record FILE keeps every event)"
}

// Column widths of the device table: the device, the time split, the idle cause and the total.
// The split's middle column says non-compute, as the idle view and the report do (HTA's word);
// the cause column is as wide as the longest cause, barrier_wait.
const colDev, colSplit, colCause, colTotal = 5, 25, 12, 9

// deviceTable is the layout of one drawing of the device table: what fits the width, and the
// history's scale shared by every row shown so that their sparklines compare (the rows on screen:
// over 4,096 devices the scale of every device would cost more than the rest of the frame).
type deviceTable struct {
	fr     *widget.Frame
	colDev int   // width of the device column
	cell   int   // width of one link's column
	histW  int   // sparkline buckets shown; under 8 none
	total  bool  // the GB/s column fits: it gives way whole, never cut mid-value
	noOps  bool  // the source records no ops (analysis.OpsUnknown): every link's rate is unknown
	bucket int64 // the newest complete bucket
	peak   float64
}

// writeDevices writes the table of devices, a row each, as many as the height allows and the
// rest a scroll away; above a screenful of devices on several hosts, a row per host (its most
// idle GPU's) that enter expands.
func (m *Model) writeDevices(b *strings.Builder, below int) {
	fr, res := m.Fr, m.Fr.Res
	st := fr.Styles
	m.devs.Of(res, fr.Meta.Devices)
	devs, times := m.devs.Links(), m.devs.Times()
	t := deviceTable{fr: fr, cell: 7, bucket: fr.State.Now/analysis.BucketNs - 1, colDev: colDev, noOps: analysis.OpsUnknown(res, fr.Meta)}
	if m.W >= 140 { // wide terminals show each link's GB/s beside its share of peak
		t.cell = 14
	}
	lines := m.H - 5 - below // the lines under the table are its too
	if m.filter.Shown() {
		lines-- // the filter's line
	}
	if res.Links.Fabric != nil {
		lines-- // the fabric's line
	}
	groups := m.placed(res, fr.Meta)
	gpus := 1 // the most GPUs a host has
	for _, g := range groups {
		gpus = max(gpus, len(g.pos))
	}
	// Filtered, the devices that match are listed each: a host's name matches its GPUs.
	m.rolled = len(devs) > lines && gpus > 1 && len(groups) > 1 && !m.filter.Shown()
	if n := len(devs); n > 0 {
		t.colDev = max(t.colDev, len(fmt.Sprint(devs[n-1].Device))+1) // a trace's 2147483647
	}
	if m.rolled {
		t.colDev += 2 // "▸h511"
		for _, g := range groups {
			t.colDev = max(t.colDev, utf8.RuneCountInString(m.hostLabel(g.host))+2) // "▸node-a"
		}
	}
	t.total = m.W >= t.colDev+colSplit+1+colCause+int(analysis.NumLinks)*t.cell+colTotal
	t.histW = min(max(m.W-t.colDev-colSplit-1-colCause-int(analysis.NumLinks)*t.cell-colTotal-2, 0), analysis.HistoryBuckets)
	m.rows = m.layoutRows(m.rows[:0], times, groups)
	if m.filter.Value() != "" {
		m.rows = slices.DeleteFunc(m.rows, func(r devRow) bool {
			name, _ := m.placedBy.Name(int32(r.host)) // a host's name matches its GPUs, as its number does
			return !m.filter.MatchHost(r.host, fmt.Sprint(devs[r.dev].Device), idleCause(times[r.dev]), name)
		})
	}
	m.overflow = len(m.rows) > lines
	m.lines, m.gpus = lines, gpus
	shown := lines
	if m.overflow {
		shown-- // a line says which rows are shown
	}
	from, to := m.list.Window(len(m.rows), shown, 3)
	for _, r := range m.rows[from:to] {
		for _, v := range m.spark.of(res, t.bucket, t.histW, &devs[r.dev]) {
			t.peak = max(t.peak, v)
		}
	}
	head := t.head()
	if m.rolled {
		head = note(head, m.W, "   rolled up: a row per host, its most idle GPU's (enter expands)", "   per host (enter)")
	}
	if m.worst {
		head = note(head, m.W, "   most idle first (s: by id)", "   most idle")
	}
	b.WriteString(st.Muted.Render(head) + "\n")
	for i := from; i < to; i++ {
		r := m.rows[i]
		label := fmt.Sprint(devs[r.dev].Device)
		switch {
		case r.isHost && m.expanded[r.host]:
			label = "▾" + m.hostLabel(r.host)
		case r.isHost:
			label = "▸" + m.hostLabel(r.host)
		case m.rolled:
			label = "  " + label
		}
		line := t.row(label, &devs[r.dev], &times[r.dev], idleCause(times[r.dev]), m.spark.of(res, t.bucket, t.histW, &devs[r.dev]))
		if i == m.list.Selected() && m.overflow {
			line = st.Selected.Render(ansi.Strip(line))
		}
		b.WriteString(line + "\n")
	}
	if m.overflow {
		b.WriteString(st.Muted.Render(fmt.Sprintf("rows %d–%d of %d (j/k, wheel, g/G scroll)", from+1, to, len(m.rows))) + "\n")
	}
	if m.filter.Shown() {
		b.WriteString(m.filter.View() + st.Muted.Render(fmt.Sprintf("  %d of %s", len(m.rows), units.Counted(len(devs), "device"))) + "\n")
	}
}

// layoutRows lists the table's rows: every device, or (rolled up) every host with the GPUs of the
// hosts expanded under it; most idle first when asked, else by id (hosts by number, the devices
// of unknown host last).
func (m *Model) layoutRows(rows []devRow, times []analysis.DeviceTime, groups []hostGroup) []devRow {
	idle := func(d int) float64 { // unknown sorts last
		if !times[d].Known() {
			return -1
		}
		return times[d].IdlePct
	}
	byIdle := func(a, b devRow) int { return cmp.Or(cmp.Compare(idle(b.dev), idle(a.dev)), cmp.Compare(a.dev, b.dev)) }
	if !m.rolled {
		for d := range times {
			rows = append(rows, devRow{dev: d, host: m.hostOfPos[d]})
		}
		if m.worst {
			slices.SortStableFunc(rows, byIdle)
		}
		return rows
	}
	var hosts []devRow
	for _, g := range groups {
		w := devRow{dev: g.pos[0], host: g.host, isHost: true}
		for _, d := range g.pos {
			if idle(d) > idle(w.dev) {
				w.dev = d
			}
		}
		hosts = append(hosts, w)
	}
	if m.worst {
		slices.SortStableFunc(hosts, byIdle)
	}
	for _, h := range hosts {
		rows = append(rows, h)
		if !m.expanded[h.host] {
			continue
		}
		start := len(rows)
		for _, g := range groups {
			if g.host != h.host {
				continue
			}
			for _, d := range g.pos {
				rows = append(rows, devRow{dev: d, host: h.host})
			}
		}
		if m.worst {
			slices.SortStableFunc(rows[start:], byIdle)
		}
	}
	return rows
}

// hostGroup is one host's devices, by position in the table.
type hostGroup struct {
	host int // -1: the devices whose host is unknown
	pos  []int
}

// placed groups the table's devices by host as the analysis's one host map places them
// (Result.Hosts: the cluster view, the findings and the report place them alike; the run's
// description's before a Result); it also fills hostOfPos.
func (m *Model) placed(res *analysis.Result, meta timeline.Meta) []hostGroup {
	hosts := res.Hosts
	if hosts == nil {
		hosts = hostmap.New(meta)
	}
	// Again only when the map learned something or the devices changed: a live console's Result
	// changes every frame, its hosts seldom.
	n := m.devs.Len()
	same := m.placedBy == hosts && res.Hosts != nil && len(m.placedIDs) == n
	m.placedIDs = slices.Grow(m.placedIDs[:0], n)[:n]
	for p := range n {
		id := m.devs.ID(p)
		same = same && m.placedIDs[p] == id
		m.placedIDs[p] = id
	}
	if same {
		return m.groups
	}
	m.placedBy = hosts
	m.groups, m.hostOfPos = m.groups[:0], slices.Grow(m.hostOfPos[:0], n)[:n]
	for _, g := range hosts.Layout(m.placedIDs) {
		hg := hostGroup{host: int(g.Host), pos: make([]int, len(g.Devs))}
		for i, id := range g.Devs {
			p, _ := m.devs.Pos(id)
			hg.pos[i] = p
			m.hostOfPos[p] = hg.host
		}
		m.groups = append(m.groups, hg)
	}
	return m.groups
}

// maxHostLabel is the widest a host's name is drawn in the device column: a job's names share
// their start ("gpu-node-0417"), so a longer one keeps its end.
const maxHostLabel = 12

// hostLabel names host h as the rolled-up rows do: its name where a source of the job named it
// (the host map's; a long one's end), else h and its number, h? when unknown.
func (m *Model) hostLabel(h int) string {
	if name, ok := m.placedBy.Name(int32(h)); ok {
		if r := []rune(name); len(r) > maxHostLabel {
			return "…" + string(r[len(r)-maxHostLabel+1:])
		}
		return name
	}
	if h < 0 {
		return "h?"
	}
	return "h" + strconv.Itoa(h)
}

// sparkTotals are devices' total rates over the sparkline's buckets, for one Result, newest bucket
// and width. The peak and the rows read the same figures (each row's were computed twice a frame),
// and a frame drawn from the same Result as the last (a tick's, while the fold runs) reuses them:
// under a listening console's load they were a tenth of its CPU.
type sparkTotals struct {
	res    *analysis.Result
	bucket int64
	histW  int
	byDev  map[int32][]float64
}

// of returns d's total rate in each of the histW buckets up to bucket, oldest first.
func (c *sparkTotals) of(res *analysis.Result, bucket int64, histW int, d *analysis.DeviceLinks) []float64 {
	if c.res != res || c.bucket != bucket || c.histW != histW || c.byDev == nil {
		*c = sparkTotals{res: res, bucket: bucket, histW: histW, byDev: map[int32][]float64{}}
	}
	if v, ok := c.byDev[d.Device]; ok {
		return v
	}
	v := make([]float64, histW)
	for i := range v {
		v[i] = d.TotalRate(bucket - int64(histW) + 1 + int64(i))
	}
	c.byDev[d.Device] = v
	return v
}

// note appends to the table's heading the longest of its notes that fits whole in w columns, or
// none: a note cut mid-word ("rol…") says nothing.
func note(head string, w int, notes ...string) string {
	for _, n := range notes {
		if ansi.StringWidth(head+n) <= w {
			return head + n
		}
	}
	return head
}

// idleCause is what the idle-mostly column says of a device: its idle time's top cause; "not
// idle" when it never was (so no cause stands beside an idle figure of 0); unknown before it ran
// anything, or when its streams had no gap to name a cause by.
func idleCause(tm analysis.DeviceTime) string {
	switch {
	case !tm.Known():
		return units.Unknown // ran nothing, or its source records no kernels
	case tm.IdleNs <= 0:
		return "not idle"
	case tm.IdleCause == "":
		return units.Unknown
	}
	return tm.IdleCause
}

func (t *deviceTable) head() string {
	head := fmt.Sprintf("%-*s%7s%11s%7s %-*s", t.colDev, "gpu", "comp %", "non-comp %", "idle %", colCause, "idle mostly")
	for l := range analysis.NumLinks {
		head += fmt.Sprintf("%*s", t.cell, l)
	}
	if t.total {
		head += fmt.Sprintf("%*s", colTotal, "GB/s")
	}
	if t.histW >= 8 {
		head += "  last " + units.Dur(t.histSpan())
	}
	return head
}

// histSpan is the time the sparklines cover: their width in buckets, or the buckets since the
// start when the run is younger (a 1.55 s run's history is not "the last 4.40 s").
func (t *deviceTable) histSpan() int64 {
	return min(int64(t.histW), max(t.bucket+1, 0)) * analysis.BucketNs
}

// row draws one device: its time split (unknown without a span), its streams' top idle cause,
// each link's rate now as a share of the link's peak, the total and the sparkline.
func (t *deviceTable) row(label string, ds *analysis.DeviceLinks, tm *analysis.DeviceTime, cause string, spark []float64) string {
	st := t.fr.Styles
	line := fmt.Sprintf("%-*s", t.colDev, label)
	if tm.Known() {
		idle := fmt.Sprintf("%7s", units.Share(tm.IdlePct))
		if tm.IdlePct >= 50 {
			idle = st.WarnOn + idle + st.WarnOff
		}
		line += fmt.Sprintf("%7s%11s", units.Share(tm.ComputePct), units.Share(tm.NonCompPct)) + idle
	} else {
		line += st.MutedOn + fmt.Sprintf("%7s%11s%7s", units.Unknown, units.Unknown, units.Unknown) + st.MutedOff
	}
	line += " " + cause + strings.Repeat(" ", max(colCause-ansi.StringWidth(cause), 0))
	var sum float64
	for l := range analysis.NumLinks {
		r, _ := ds.Rate(l, t.bucket)
		if !t.fr.Live {
			r = 0 // the source has ended: nothing moves now, whatever the last bucket held
		}
		if !ds.Known(l) || t.noOps {
			// Part of the link's bytes are in no source (the report's "≥" or "—"): its rate now is
			// unknown, not the part counted.
			line += st.MutedOn + fmt.Sprintf("%*s", t.cell, units.Unknown) + st.MutedOff
			continue
		}
		sum += r
		p := t.fr.Meta.LinkPeaks[l]
		txt := units.Unknown // no peak known for this link: a share of it is unknown
		if p > 0 {
			txt = fmt.Sprintf("%.0f%%", 100*r/p)
		}
		if t.cell > 7 {
			txt = fmt.Sprintf("%.1f %s", r/1e9, txt)
		}
		txt = fmt.Sprintf("%*s", t.cell, txt)
		switch {
		case p > 0 && r > 0.8*p:
			txt = st.WarnOn + txt + st.WarnOff
		case r == 0:
			txt = st.MutedOn + txt + st.MutedOff
		}
		line += txt
	}
	switch {
	case t.total && t.noOps:
		line += st.MutedOn + fmt.Sprintf("%*s", colTotal, units.Unknown) + st.MutedOff
	case t.total:
		line += fmt.Sprintf("%*.1f", colTotal, sum/1e9)
	}
	if t.histW >= 8 {
		var bars strings.Builder
		for _, v := range spark {
			if v <= 0 || t.peak <= 0 {
				bars.WriteRune(' ')
				continue
			}
			bars.WriteRune(sparks[min(int(v/t.peak*float64(len(sparks)-1)+0.5), len(sparks)-1)])
		}
		line += "  " + st.GoodOn + bars.String() + st.GoodOff
	}
	return line
}

// writeFabric writes a line on the fabric's switch ports, when the source reported any: the
// hottest port now, and the busiest ports so far by their busiest 50 ms, as a share of a port's
// bandwidth (unknown without it).
func (m *Model) writeFabric(b *strings.Builder) {
	fr := m.Fr
	f := fr.Res.Links.Fabric
	if f == nil {
		return
	}
	st := fr.Styles
	pct := func(r float64) string {
		if f.PortBps <= 0 {
			return units.Unknown
		}
		return fmt.Sprintf("%.0f%%", 100*r/f.PortBps)
	}
	now := "idle"
	if r, port, ok := f.Rate(fr.State.Now/analysis.BucketNs - 1); fr.Live && ok && r > 0 {
		now = fmt.Sprintf("%s %.1f GB/s (%s)", timeline.PortName(port), r/1e9, pct(r))
		if f.PortBps > 0 && r > 0.8*f.PortBps {
			now = st.WarnOn + now + st.WarnOff
		}
	}
	var hot []string
	for i, p := range f.Hot {
		if i == 4 {
			break
		}
		share := units.Unknown
		if p.PeakPct != nil {
			share = fmt.Sprintf("%.0f%%", *p.PeakPct)
		}
		hot = append(hot, p.Name+" "+share)
	}
	fmt.Fprintf(b, "%s now %s; busiest 50 ms, %% of peak: %s\n", st.Title.Render("Switch ports:"), now, strings.Join(hot, ", "))
}

// profilerCostLine is the NCCL profiler plugin's own cost over the ranks: its time per callback
// and its share of the NCCL operations' time, the median rank's and the worst's.
func profilerCostLine(rows []analysis.ProfilerCost) string {
	s := analysis.SummarizeProfilerCost(rows)
	share := "share of NCCL op time " + units.Unknown + " (none observed yet)"
	if s.OverheadPctMax != nil {
		share = fmt.Sprintf("%.2f %% of NCCL op time (worst %.2f %%, rank %d)", *s.OverheadPctP50, *s.OverheadPctMax, s.OverheadWorstRank)
	}
	return fmt.Sprintf("NCCL profiler plugin's cost: %.0f ns/callback (p50 of %s, worst %.0f, rank %d), %s", s.NsPerCallbackP50, units.Counted(s.Ranks, "rank"),
		s.NsPerCallbackMax, s.NsWorstRank, share)
}

// teleCache is the telemetry's lines for one Result's telemetry rows and one width: the rows are
// shared from frame to frame while no sample arrives.
type teleCache struct {
	first *analysis.DeviceTelemetry
	n, w  int
	text  string
}

// teleMetrics are the metrics the overview shows of each GPU's telemetry: report key, heading,
// scale (a sample / scale is shown) and format.
var teleMetrics = []struct {
	key, name string
	scale     float64
	format    string
}{
	{"utilization_pct", "utilisation %", 1, "%.0f"},
	{"power_milliwatts", "power W", 1e3, "%.0f"},
	{"temperature_c", "temperature °C", 1, "%.0f"},
	{"pcie_rx_bytes_per_s", "PCIe rx GB/s", 1e9, "%.1f"},
	{"pcie_tx_bytes_per_s", "PCIe tx GB/s", 1e9, "%.1f"},
}

// telemetry returns the NVML section's lines (each ending in a newline; none without samples):
// each GPU's latest samples on a line, or above report.SummariseAbove GPUs each metric's spread
// across them (min, p10, p50, p90, max, as the report's summarised tables) and the least
// utilised GPUs.
func (m *Model) telemetry() string {
	tel := m.Fr.Res.Telemetry
	if len(tel) == 0 {
		return ""
	}
	if c := &m.tele; c.first == &tel[0] && c.n == len(tel) && c.w == m.W {
		return c.text
	}
	st := m.Fr.Styles
	var b strings.Builder
	if len(tel) <= report.SummariseAbove {
		b.WriteString(st.Title.Render("GPU telemetry (NVML):"))
		for _, t := range tel {
			v := func(i int) string { // a metric not sampled is unknown, not 0
				mt := teleMetrics[i]
				if s, ok := t.Metrics.Get(mt.key); ok {
					return fmt.Sprintf(mt.format, float64(s.Latest)/mt.scale)
				}
				return units.Unknown
			}
			fmt.Fprintf(&b, "  gpu%d %s%% %sW %s°C PCIe %s/%s GB/s", t.Device, v(0), v(1), v(2), v(3), v(4))
		}
		b.WriteString("\n")
	} else {
		fmt.Fprintf(&b, "%s %-*s%7s%7s%7s%7s%7s%7s\n", st.Title.Render("GPU telemetry (NVML)"), 25, fmt.Sprintf("now, across %d GPUs", len(tel)),
			"min", "p10", "p50", "p90", "max", "GPUs")
		for _, mt := range teleMetrics {
			s := analysis.TelemetrySpread(tel, mt.key, analysis.Latest)
			if s.N == 0 {
				continue // no GPU samples it: no row, as the report leaves it out
			}
			f := func(v float64) string { return fmt.Sprintf(mt.format, v/mt.scale) }
			fmt.Fprintf(&b, "  %-44s%7s%7s%7s%7s%7s%7d\n", mt.name, f(s.Min), f(s.P10), f(s.P50), f(s.P90), f(s.Max), s.N)
		}
		if worst := analysis.LeastUtilised(tel, report.DefaultTop, analysis.Latest); len(worst) > 0 {
			line := "  least utilised now:"
			for _, d := range worst {
				u, _ := d.Metrics.Get("utilization_pct")
				line += fmt.Sprintf(" gpu%d %d%%,", d.Device, u.Latest)
			}
			b.WriteString(ansi.Truncate(strings.TrimSuffix(line, ","), m.W, "…") + "\n")
		}
	}
	m.tele = teleCache{first: &tel[0], n: len(tel), w: m.W, text: b.String()}
	return m.tele.text
}

// hostFilterKeys says in help that the filter takes a host's name as that host alone.
func hostFilterKeys(ks []key.Binding) []key.Binding {
	if len(ks) > 0 {
		ks[0].SetHelp("/", "filter (h1: host 1)")
	}
	return ks
}
