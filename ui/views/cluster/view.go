package cluster

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/units"
)

// View draws the breadcrumb line, then the level shown.
func (v *Model) View() string {
	v.refresh()
	var b strings.Builder
	b.WriteString(ansi.Truncate(v.breadcrumb(), v.W, "…") + "\n")
	switch c := v.top(); c.level {
	case LevelHosts:
		v.viewHosts(&b, c)
	case LevelHost:
		v.viewHost(&b, c.host)
	case LevelGPU:
		v.viewGPU(&b, c.dev)
	}
	return b.String()
}

// breadcrumb says where the drill-down is: cluster › hosts 128–255 › host 130 › gpu 1043.
func (v *Model) breadcrumb() string {
	st := v.Fr.Styles
	gpus, hosts := v.shape()
	parts := []string{fmt.Sprintf("cluster (%s × %s)", units.Counted(hosts, "host"), units.Counted(gpus, "GPU"))}
	if v.ds.N() == 0 {
		parts[0] = "cluster (" + v.Fr.None("devices") + ")"
	}
	for _, c := range v.crumbs[1:] {
		switch c.level {
		case LevelHosts:
			parts = append(parts, fmt.Sprintf("hosts %s–%s", v.hostLabel(c.h0), v.hostLabel(c.h1-1)))
		case LevelHost:
			parts = append(parts, "host "+v.hostLabel(c.host))
		case LevelGPU:
			parts = append(parts, fmt.Sprintf("gpu %d", c.dev))
		}
	}
	line := st.Title.Render(strings.Join(parts, " › "))
	if len(v.crumbs) > 1 {
		line += st.Muted.Render("   esc: back")
	}
	return line
}

// viewHosts draws the heatmap of a range of hosts with the worst lists beside it.
func (v *Model) viewHosts(b *strings.Builder, c crumb) {
	st := &v.Fr.Styles
	m := v.metrics[v.metric]
	gpus, _ := v.shape()
	g, side := v.grid(c)
	scale := v.scale()
	what := m.Name
	if strings.Contains(what, "peak") {
		what += ", " + v.ds.LinkWhen()
	}
	fmt.Fprintf(b, "%s %s   %s\n", st.Title.Render("metric: "+what), st.Muted.Render("(m: next)"),
		st.Muted.Render(g.grouped()+"; rows: hosts, columns: GPUs"))
	b.WriteString(ansi.Truncate(legend(st, m, scale), v.W, "…") + "\n")
	// The column line: each panel's GPU numbers (their last digit), over its cells.
	var cols strings.Builder
	for p := range g.panels {
		if p > 0 {
			cols.WriteByte(' ')
		}
		cols.WriteString(strings.Repeat(" ", g.labelW))
		for cc := range g.cols {
			cols.WriteByte(byte('0' + (cc*g.gg)%10))
		}
	}
	var grid strings.Builder
	grid.WriteString(st.MutedOn + cols.String() + st.MutedOff + "\n")
	g.draw(&grid, st, m, scale, v.cellValue(&g), v.curR, v.curC)
	lines := strings.Split(strings.TrimSuffix(grid.String(), "\n"), "\n")
	var sideLines []string
	if side > 0 {
		// As long as the heatmap, or the screen where the heatmap is shorter (a few hosts: a list
		// of one GPU beside two rows left the rest of the screen blank); the cursor's line goes
		// under both, on the screen.
		sideLines = v.worst(c, max(len(lines), v.H-4))
	}
	gridW := min(v.W-side-1, g.panels*g.panelW+1) // the lists right beside the heatmap
	for i := range max(len(lines), len(sideLines)) {
		l := ""
		if i < len(lines) {
			l = lines[i]
		}
		if i < len(sideLines) {
			if pad := gridW - ansi.StringWidth(l); pad > 0 {
				l += strings.Repeat(" ", pad)
			}
			l += " " + sideLines[i]
		}
		b.WriteString(l + "\n")
	}
	hf, ht := g.hosts(v.curR)
	sel := "host " + v.hostLabel(hf)
	if ht-hf > 1 {
		sel = fmt.Sprintf("hosts %s–%s", v.hostLabel(hf), v.hostLabel(ht-1))
	}
	lo, hi := v.curC*g.gg, min((v.curC+1)*g.gg, gpus)-1
	gsel := fmt.Sprintf("GPU %d", lo)
	if hi > lo {
		gsel = fmt.Sprintf("GPUs %d–%d", lo, hi)
	}
	if max(len(lines), len(sideLines)) < v.H-3 {
		val, dev := v.cellWorst(&g, v.curR, v.curC)
		what := v.fmtVal(val)
		if dev >= 0 && (ht-hf > 1 || hi > lo) {
			what = fmt.Sprintf("worst gpu %d, %s", v.ds.ID(dev), what) // the device the worst lists would name
		}
		b.WriteString(st.Muted.Render(fmt.Sprintf("cursor: %s, %s: %s   enter: drill down", sel, gsel, what)) + "\n")
	}
}

// ranked is a device or host with its value, for the worst lists.
type ranked struct {
	id  int   // a device's position, a host's index in Devices.Groups
	dev int32 // a host's worst device
	val float64
}

// worst lists the worst GPUs and hosts of hosts [c.h0, c.h1) under the metric shown, in h lines.
func (v *Model) worst(c crumb, h int) []string {
	st := v.Fr.Styles
	m := v.metrics[v.metric]
	k := max((h-3)/2, 1)
	var devs, hosts []ranked
	known := 0 // devices with a known value: with none, the lists say so rather than "none above 0"
	for host := c.h0; host < c.h1; host++ {
		hw := ranked{id: host, dev: -1, val: math.NaN()}
		for _, p := range v.hostPos(host) {
			d := int(p)
			x := v.vals[d]
			if !math.IsNaN(x) {
				known++
			}
			if m.HighIsBad && shown(x) <= 0 {
				continue // nothing of it is bad: a list of 0.0% GPUs would hide the one that is
			}
			if m.before(x, int32(d), hw.val, hw.dev) {
				hw.val, hw.dev = x, int32(d)
			}
			devs = topK(devs, ranked{id: d, dev: int32(d), val: x}, k, m)
		}
		hosts = topK(hosts, hw, k, m)
	}
	none := "  none above " + v.fmtVal(0)
	if known == 0 {
		none = "  unknown for every GPU" // the source does not measure it: an empty list would look like a fault of the view
	}
	out := []string{st.Title.Render(ansi.Truncate("worst GPUs, "+m.order(), sideW, "…"))}
	for _, r := range devs {
		gi, _ := v.ds.Place(r.dev)
		out = append(out, fmt.Sprintf("gpu %-5d %-5s %9s", v.ds.ID(r.dev), v.hostTag(gi), v.fmtVal(r.val)))
	}
	if len(devs) == 0 && (m.HighIsBad || known == 0) {
		out = append(out, none)
	}
	out = append(out, "", st.Title.Render(ansi.Truncate("worst hosts, by worst GPU", sideW, "…")))
	for _, r := range hosts {
		out = append(out, fmt.Sprintf("host %-4s gpu %-5d%7s", v.hostShort(r.id), v.ds.ID(r.dev), v.fmtVal(r.val)))
	}
	if len(hosts) == 0 && (m.HighIsBad || known == 0) {
		out = append(out, none)
	}
	return out
}

// topK keeps the k worst of rs and r, worst first as Metric.before orders them (ties by the lower
// device: a host by its worst device), leaving out unknown values: k is small, so an insertion
// costs less than sorting every device a frame.
func topK(rs []ranked, r ranked, k int, m Metric) []ranked {
	if math.IsNaN(r.val) || (len(rs) == k && !m.before(r.val, r.dev, rs[k-1].val, rs[k-1].dev)) {
		return rs
	}
	i := len(rs)
	for i > 0 && m.before(r.val, r.dev, rs[i-1].val, rs[i-1].dev) {
		i--
	}
	if len(rs) < k {
		rs = append(rs, ranked{})
	}
	copy(rs[i+1:], rs[i:len(rs)-1])
	rs[i] = r
	return rs
}

// viewHost draws one host's GPUs as a table: the metric shown, the time split and every link.
func (v *Model) viewHost(b *strings.Builder, host int) {
	st := v.Fr.Styles
	pos := v.hostPos(host)
	m := v.metrics[v.metric]
	// The columns after the metric's, less the one that is the metric ("busy %" coloured by busy
	// %, "NIC %" by NIC % of peak): a column twice says nothing more.
	dup := func(col string) bool { return m.Name == col || m.Name == col+" of peak" }
	col := 6 // the id column: as wide as the host's largest id (a trace's 2147483647)
	if len(pos) > 0 {
		col = max(col, len(fmt.Sprint(v.ds.ID(pos[len(pos)-1])))+1)
	}
	head := fmt.Sprintf("%-*s%-6s%10s", col, "gpu", "local", m.Name)
	placed := false // a GPU whose CUDA index on its host is not known is shown by its place, marked
	for l, d := range pos {
		if strings.HasPrefix(v.localLabel(d, l), "#") {
			placed = true
			break
		}
	}
	for _, col := range []string{"busy %", "idle %"} {
		if !dup(col) {
			head += fmt.Sprintf("%8s", col)
		}
	}
	for l := range analysis.NumLinks {
		if !dup(l.String() + " %") {
			head += fmt.Sprintf("%9s", l.String()+" %")
		}
	}
	note := "   links: % of peak, " + v.ds.LinkWhen() + "; enter: its streams"
	if placed {
		// A rank that named its host did not say which of the host's GPUs it drives: said
		// first, so that a narrow terminal cuts the rest.
		note = "   local #N: its place on the host (GPU index unknown);" + strings.TrimPrefix(note, "  ")
	}
	b.WriteString(st.Muted.Render(head+note) + "\n")
	locals := v.hostRows(host)
	from, to := v.list.Window(len(locals), v.H-3, 2)
	pct := func(x float64, ok bool) string {
		if !ok {
			return units.Unknown
		}
		return units.Share(x)
	}
	for i := from; i < to; i++ {
		l := locals[i]
		d := pos[l]
		glyph, on := cell(&st, m, v.vals[d], v.scale())
		val := fmt.Sprintf("%8s", v.fmtVal(v.vals[d]))
		line := fmt.Sprintf("%-*d%-6s", col, v.ds.ID(d), v.localLabel(d, l))
		t, tok := v.ds.Time(d)
		busy, bok := t.BusyPct()
		idle := math.NaN()
		if tok && t.Known() {
			idle = t.IdlePct
		}
		rest := ""
		if !dup("busy %") {
			rest += fmt.Sprintf("%8s", pct(busy, bok))
		}
		if !dup("idle %") {
			rest += fmt.Sprintf("%8s", pct(idle, !math.IsNaN(idle)))
		}
		for lk := range analysis.NumLinks {
			if !dup(lk.String() + " %") {
				rest += fmt.Sprintf("%9s", pct(v.ds.LinkPct(lk, d)))
			}
		}
		if i == v.list.Selected() {
			b.WriteString(st.Selected.Render(line+glyph+" "+val+rest) + "\n")
			continue
		}
		b.WriteString(line + on + glyph + " " + val + st.MutedOff + rest + "\n")
	}
	v.filterLine(b, len(locals), len(pos), "GPUs")
}

// filterLine writes the filter, and how many of the level's rows it keeps, while it is shown.
func (v *Model) filterLine(b *strings.Builder, kept, all int, what string) {
	if v.filter.Shown() {
		b.WriteString(v.filter.View() + v.Fr.Styles.Muted.Render(fmt.Sprintf("  %d of %d %s", kept, all, what)) + "\n")
	}
}

// localLabel is the local column of the GPU at position p, place l on its host: its index among
// the host's GPUs where the host map knows it (a topology's or --gpus-per-host's: d mod GPUs per
// host, whatever GPUs of the host ran nothing), else its place on the host marked as one (#l: a
// rank that named its host did not say which of the host's GPUs it drives), — where its host is
// unknown.
func (v *Model) localLabel(p int32, l int) string {
	if i, ok := v.ds.LocalIndex(p); ok {
		return strconv.Itoa(int(i))
	}
	if g, _ := v.ds.Place(p); !v.ds.Groups()[g].known {
		return units.Unknown // no host, no place on it
	}
	return "#" + strconv.Itoa(l)
}

// hostRows lists the places of host's GPUs (host: its index in Devices.Groups; a GPU's place
// among the host's devices) that pass the filter ("gpu 613", "local 3", "local #3").
func (v *Model) hostRows(host int) []int {
	var out []int
	for l, p := range v.hostPos(host) {
		if v.filter.Match(fmt.Sprintf("gpu %d ", v.ds.ID(p)), "local "+v.localLabel(p, l)+" ") {
			out = append(out, l)
		}
	}
	return out
}

// gpuRows lists device d's streams that pass the filter ("stream 3", role, idle cause).
func (v *Model) gpuRows(d int32) []stream {
	ss := v.streams(d)
	if v.filter.Value() == "" {
		return ss
	}
	return slices.DeleteFunc(ss, func(s stream) bool { return !v.filter.Match(fmt.Sprintf("stream %d ", s.stream), s.role, s.cause) })
}

// stream is one of a GPU's streams, as the GPU level lists it.
type stream struct {
	stream   uint32
	priority int8
	ops      int
	role     string
	idle     int64
	cause    string
}

// streams lists device d's streams: those the timeline holds, with their idle time by the
// analysis.
func (v *Model) streams(d int32) []stream {
	var out []stream
	if st := v.Fr.State; st != nil {
		i, _ := slices.BinarySearchFunc(st.Tracks, d, func(t *agg.Track, d int32) int { return cmp.Compare(t.Device, d) })
		for ; i < len(st.Tracks) && st.Tracks[i].Device == d; i++ {
			t := st.Tracks[i]
			out = append(out, stream{stream: t.Stream, priority: t.Priority, ops: len(t.Ops), role: units.Unknown, cause: units.Unknown})
		}
	}
	if v.Fr.Res == nil {
		return out
	}
	for _, si := range v.Fr.Res.StreamIdle.Streams {
		if si.Device != d {
			continue
		}
		for i := range out {
			if out[i].stream == si.Stream {
				out[i].role, out[i].idle = si.Role, si.TotalNs
				var top int64
				for _, c := range analysis.Causes() {
					if si.ByCause[c] > top {
						top, out[i].cause = si.ByCause[c], c.String()
					}
				}
			}
		}
	}
	return out
}

// viewGPU draws device d's streams (d its id); enter shows the selected one in the timeline.
func (v *Model) viewGPU(b *strings.Builder, d int32) {
	st := v.Fr.Styles
	ss := v.gpuRows(d)
	if len(ss) == 0 && !v.filter.Shown() {
		b.WriteString(st.Muted.Render(v.Fr.None("streams on this GPU")) + "\n")
		return
	}
	b.WriteString(st.Muted.Render(fmt.Sprintf("%-8s%5s%-10s%9s%12s  %-13s   enter: show in the timeline", "stream", "prio", "  role", "ops held", "idle gaps", "mostly")) + "\n")
	from, to := v.list.Window(len(ss), v.H-3, 2)
	for i := from; i < to; i++ {
		s := ss[i]
		idle := units.Unknown
		if s.role != units.Unknown {
			idle = units.Dur(s.idle)
		}
		line := fmt.Sprintf("%-8d%5d  %-8s%9d%12s  %-13s", s.stream, s.priority, s.role, s.ops, idle, s.cause)
		if i == v.list.Selected() {
			line = st.Selected.Render(line)
		}
		b.WriteString(line + "\n")
	}
	v.filterLine(b, len(ss), len(v.streams(d)), "streams")
}
