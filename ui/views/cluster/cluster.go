package cluster

import (
	"fmt"
	"math"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/ui/widget"
)

// Level is how deep the view has drilled.
type Level int

// Levels, from the whole job down.
const (
	LevelHosts Level = iota // a heatmap of a range of hosts (all of them at first)
	LevelHost               // one host's GPUs
	LevelGPU                // one GPU's streams
)

// crumb is one step of the drill-down: a range of hosts, a host, or a GPU.
type crumb struct {
	level  Level
	h0, h1 int   // LevelHosts: the hosts shown (indices in Devices.Groups)
	host   int   // LevelHost: the host's index in Devices.Groups
	dev    int32 // LevelGPU: the device id
}

// sideW is the width of the worst lists beside the heatmap.
const sideW = 28

// Model is the cluster view.
type Model struct {
	widget.Base
	filter  widget.Filter // the host's GPUs, the GPU's streams
	metrics []Metric
	metric  int
	crumbs  []crumb // the drill-down; crumbs[0] is every host
	curR    int     // the heatmap's cursor: row and column of cells
	curC    int
	list    widget.List // the host's GPUs, the GPU's streams

	// Per frame, rebuilt when the Result or the metric changes.
	ds       Devices
	vals     []float64
	valsFor  int // the metric vals holds, -1 for none
	lastGrid grid
	gridY    int // the line the heatmap's first row was drawn at, for clicks
}

// New returns the cluster view over fr.
func New(fr *widget.Frame) *Model {
	return &Model{Base: widget.Base{Fr: fr}, metrics: Metrics(), valsFor: -1, filter: widget.NewFilter("gpu or stream, role, idle cause")}
}

// Capturing reports whether the filter is being typed.
func (v *Model) Capturing() bool { return v.filter.Editing() }

// push drills down to c; the filter was the level's above.
func (v *Model) push(c crumb) {
	v.crumbs = append(v.crumbs, c)
	v.filter.Clear()
}

// shape is the most GPUs a host has (1 at least), and how many hosts there are, as the
// analysis's host map places the devices (the devices of unknown host as one more).
func (v *Model) shape() (gpus, hosts int) {
	gpus = 1
	for _, g := range v.ds.Groups() {
		gpus = max(gpus, len(g.pos))
	}
	return gpus, len(v.ds.Groups())
}

// hostLabel names the host at index gi of Devices.Groups.
func (v *Model) hostLabel(gi int) string {
	if gs := v.ds.Groups(); gi >= 0 && gi < len(gs) {
		return gs[gi].label()
	}
	return "?"
}

// hostShort names the host at index gi of Devices.Groups as the worst lists do: a long name's end.
func (v *Model) hostShort(gi int) string {
	if gs := v.ds.Groups(); gi >= 0 && gi < len(gs) {
		return gs[gi].shortLabel(maxLabel)
	}
	return "?"
}

// hostTag is the host at index gi of Devices.Groups beside a GPU in the worst list: h and its
// number (h? when unknown), or its name where a source named it (a long one's end).
func (v *Model) hostTag(gi int) string {
	if gs := v.ds.Groups(); gi >= 0 && gi < len(gs) && gs[gi].name != "" && gs[gi].known {
		return gs[gi].shortLabel(maxLabel)
	}
	return "h" + v.hostLabel(gi)
}

// hostPos is the positions of the devices of the host at index gi of Devices.Groups.
func (v *Model) hostPos(gi int) []int32 {
	if gs := v.ds.Groups(); gi >= 0 && gi < len(gs) {
		return gs[gi].pos
	}
	return nil
}

// refresh brings the per-device values up to date with the frame.
func (v *Model) refresh() {
	if v.ds.Reset(v.Fr) || v.valsFor != v.metric {
		v.vals = v.ds.Fill(v.metrics[v.metric], v.vals)
		v.valsFor = v.metric
	}
	if len(v.crumbs) == 0 {
		_, hosts := v.shape()
		v.crumbs = []crumb{{level: LevelHosts, h1: hosts}}
	}
	if top := &v.crumbs[0]; top.level == LevelHosts { // a live job's hosts appear as they report
		_, hosts := v.shape()
		top.h1 = max(top.h1, hosts)
	}
}

func (v *Model) top() crumb { return v.crumbs[len(v.crumbs)-1] }

// Level returns how deep the view is.
func (v *Model) Level() Level {
	if len(v.crumbs) == 0 {
		return LevelHosts
	}
	return v.top().level
}

// Metric returns the metric shown.
func (v *Model) Metric() Metric { return v.metrics[v.metric] }

// SetMetric shows the metric named name (as Metrics names it, or its first word: "nic"); it
// reports whether there is one.
func (v *Model) SetMetric(name string) bool {
	name = strings.ToLower(strings.TrimSpace(name))
	for i, m := range v.metrics {
		if n := strings.ToLower(m.Name); n == name || strings.Fields(n)[0] == name {
			v.metric = i
			return true
		}
	}
	return false
}

// MetricNames lists the metrics' first words, for completion.
func (v *Model) MetricNames() []string {
	out := make([]string, len(v.metrics))
	for i, m := range v.metrics {
		out[i] = strings.ToLower(strings.Fields(m.Name)[0])
	}
	return out
}

// HostOf names the host the view lists device dev (its id) under: its number as the analysis's
// host map places it, "?" among the devices whose host is unknown; false for a device the job
// does not have.
func (v *Model) HostOf(dev int32) (string, bool) {
	v.refresh()
	p, ok := v.ds.Pos(dev)
	if !ok {
		return "", false
	}
	g, _ := v.ds.Place(p)
	return v.hostLabel(g), true
}

// HostNumbers lists the numbers of the job's hosts as the host map places its devices, in order
// (the devices of unknown host are on none of them), and each one's name where a source of the
// job named it ("" where none did).
func (v *Model) HostNumbers() (nums []int, names []string) {
	v.refresh()
	for _, g := range v.ds.Groups() {
		if g.known {
			nums, names = append(nums, int(g.host)), append(names, g.name)
		}
	}
	return nums, names
}

// HostNamed returns the number of the job's host a source named name, and whether one is (the
// lowest numbered where two share it).
func (v *Model) HostNamed(name string) (int, bool) {
	v.refresh()
	for _, g := range v.ds.Groups() {
		if g.known && g.name != "" && g.name == name {
			return int(g.host), true
		}
	}
	return 0, false
}

// GoCluster goes back up to the whole cluster's heatmap, its cursor where it was (on the host
// last drilled into).
func (v *Model) GoCluster() {
	v.refresh()
	v.crumbs = v.crumbs[:1]
	v.filter.Clear()
}

// GoHost drills straight to host h's GPUs (h the host's number, as the host map numbers it),
// selecting its GPU local (-1: none in particular). It reports false for a host the job does not
// have.
func (v *Model) GoHost(h, local int) bool {
	v.refresh()
	gi, ok := v.ds.HostGroup(h)
	if !ok {
		return false
	}
	v.goGroup(gi, local)
	return true
}

// goGroup drills to the GPUs of the host at index h of Devices.Groups, selecting its GPU local.
func (v *Model) goGroup(h, local int) {
	v.crumbs = v.crumbs[:1]
	// Back on the heatmap, the cursor is on the host gone to.
	g, _ := v.grid(v.crumbs[0])
	v.curR, v.curC = (h-g.h0)/g.hg, max(local, 0)/g.gg
	v.push(crumb{level: LevelHost, host: h})
	v.list.Select(max(local, 0))
}

// GoDevice drills straight to the streams of device d (its id: a device past the job's own,
// 20,000 or 2³¹−1, is where the view lists it). It reports false for a device the job does not
// have.
func (v *Model) GoDevice(d int) bool {
	v.refresh()
	if d < 0 || d > math.MaxInt32 {
		return false
	}
	p, ok := v.ds.Pos(int32(d))
	if !ok {
		return false
	}
	v.goGroup(v.ds.Place(p))
	v.push(crumb{level: LevelGPU, dev: int32(d)})
	v.list.Select(0)
	return true
}

// ShortHelp lists the view's keys; esc only where there is a level to go back to.
func (v *Model) ShortHelp() []key.Binding {
	k := v.Fr.Keys
	sel := k.Select
	sel.SetHelp("enter", "drill down")
	keys := []key.Binding{sel, k.Metric}
	if v.Level() == LevelHosts {
		if len(v.crumbs) > 1 {
			keys = append(keys, k.Back)
		}
		return append(keys, k.Up, k.Down, k.PanLeft, k.PanRight)
	}
	keys = append(keys, v.filter.Keys(k)...)
	if !v.filter.Shown() { // esc clears the filter first, then goes back
		keys = append(keys, k.Back)
	}
	return append(keys, widget.ListKeys(k)...)
}

// FullHelp groups the view's keys: what it does, then how to move.
func (v *Model) FullHelp() [][]key.Binding {
	var do, move []key.Binding
	for _, b := range v.ShortHelp() {
		switch b.Help().Key {
		case "↑/k", "↓/j", "h", "l", "g", "G":
			move = append(move, b)
		default:
			do = append(do, b)
		}
	}
	return [][]key.Binding{do, move}
}

// Update takes keys and the mouse: the cursor moves over the heatmap (j/k hosts, h/l GPUs) or the
// list, enter drills down, esc goes back up, m changes the metric.
func (v *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	v.refresh()
	k := v.Fr.Keys
	if v.Level() != LevelHosts {
		if cmd, ok := v.filter.Handle(msg, k); ok {
			return v, cmd
		}
	}
	if km, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(km, k.Metric):
			v.metric = (v.metric + 1) % len(v.metrics)
			return v, nil
		case key.Matches(km, k.Back):
			v.Back()
			return v, nil
		case key.Matches(km, k.Select):
			return v, v.enter()
		}
	}
	if v.Level() != LevelHosts {
		v.list.Handle(msg, k)
		return v, nil
	}
	g := &v.lastGrid
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, k.Up):
			v.curR--
		case key.Matches(msg, k.Down):
			v.curR++
		case key.Matches(msg, k.PanLeft, k.Left):
			v.curC--
		case key.Matches(msg, k.PanRight, k.Right):
			v.curC++
		case key.Matches(msg, k.Top):
			v.curR, v.curC = 0, 0
		case key.Matches(msg, k.Bottom):
			v.curR = 1 << 30
		}
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			v.curR -= widget.WheelRows
		case tea.MouseWheelDown:
			v.curR += widget.WheelRows
		}
	case tea.MouseClickMsg:
		if r, c, ok := g.at(msg.X, msg.Y-v.gridY); ok {
			v.curR, v.curC = r, c
		}
	}
	return v, nil
}

// Back goes up one level; it reports false at the top.
func (v *Model) Back() bool {
	if len(v.crumbs) <= 1 {
		return false
	}
	v.crumbs = v.crumbs[:len(v.crumbs)-1]
	v.list.Select(0)
	v.filter.Clear()
	return true
}

// gridHead is the lines above the heatmap's cells: breadcrumb, title, legend, column numbers.
const gridHead = 4

// grid lays out the heatmap of c for the view's size, with the width left to the worst lists
// (0 when the terminal is too narrow for both), and keeps the cursor on a cell of it.
func (v *Model) grid(c crumb) (g grid, side int) {
	gpus, _ := v.shape()
	side = sideW
	if v.W < 2*sideW+20 {
		side = 0 // too narrow for both: the heatmap wins
	}
	g = layout(c.h0, c.h1, v.ds.Groups(), gpus, v.W-side-1, v.H-gridHead-1)
	v.lastGrid, v.gridY = g, gridHead
	v.curR = min(max(v.curR, 0), g.rows-1)
	v.curC = min(max(v.curC, 0), g.cols-1)
	return g, side
}

// enter drills down from the selection: a group of hosts to its hosts, a host to its GPUs, a GPU
// to its streams, a stream to the timeline.
func (v *Model) enter() tea.Cmd {
	c := v.top()
	switch c.level {
	case LevelHosts:
		g, _ := v.grid(c)
		hf, ht := g.hosts(v.curR)
		if ht-hf > 1 {
			v.push(crumb{level: LevelHosts, h0: hf, h1: ht})
			v.curR, v.curC = 0, v.curC*g.gg
			return nil
		}
		v.push(crumb{level: LevelHost, host: hf})
		v.list.Select(v.curC * g.gg)
	case LevelHost:
		if locals := v.hostRows(c.host); v.list.Selected() < len(locals) {
			v.push(crumb{level: LevelGPU, dev: v.ds.ID(v.hostPos(c.host)[locals[v.list.Selected()]])})
			v.list.Select(0)
		}
	case LevelGPU:
		streams := v.gpuRows(c.dev)
		if sel := v.list.Selected(); sel < len(streams) {
			// The stream's latest ops: the last eighth of what the console holds, at most a second.
			now := v.Fr.Now
			dur := min(max(now/8, 1), 1_000_000_000)
			return widget.JumpTo(widget.JumpToMsg{Device: c.dev, Stream: streams[sel].stream, Time: max(now-dur, 0), Dur: dur})
		}
	}
	return nil
}

// cellValue is cell (r, c)'s worst value under the metric shown.
func (v *Model) cellValue(g *grid) cellView {
	return func(r, c int) float64 {
		x, _ := v.cellWorst(g, r, c)
		return x
	}
}

// cellWorst is cell (r, c)'s worst device and its value, ranked as the worst lists rank devices
// (Metric.before); -1 and NaN when none is known.
func (v *Model) cellWorst(g *grid, r, c int) (float64, int32) {
	m := v.metrics[v.metric]
	worst, dev := math.NaN(), int32(-1)
	g.devices(r, c, func(d int32) {
		if x := v.vals[d]; m.before(x, d, worst, dev) {
			worst, dev = x, d
		}
	})
	return worst, dev
}

// scale is the top of the metric's scale: its Max, or the frame's largest value.
func (v *Model) scale() float64 {
	m := v.metrics[v.metric]
	if m.Max > 0 {
		return m.Max
	}
	s := 0.0
	for _, x := range v.vals {
		if !math.IsNaN(x) {
			s = max(s, x)
		}
	}
	return s
}

// fmtVal formats a value of the metric shown.
func (v *Model) fmtVal(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.1f%s", x, v.metrics[v.metric].Unit)
}
