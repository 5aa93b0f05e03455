package timeline

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/analysis/hostmap"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/ui/strip"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
)

// LabelW is the width of the stream labels left of the plot.
const LabelW = 15

// Model is the timeline view.
type Model struct {
	widget.Base
	filter    widget.Filter // streams by device, host (h76) or stream (s3)
	follow    bool
	end       int64 // right edge (ns) when not following
	nsPerCol  int64
	cursor    int         // column of the cursor in the plot
	list      widget.List // the selected row and the first shown
	collapsed map[int32]bool
	hostOpen  map[int]bool // hosts the user opened (true) or closed (false)
	rolled    bool         // as last laid out: hosts not in hostOpen are closed
	rows      []Row        // as last drawn, reused
	scratch   strip.Scratch
	merged    mergedTracks
	hostOrder hostOrder
}

// hostOrder is a frame's tracks ordered host by host (byHost), as of the tracks and the host map
// it was made from.
type hostOrder struct {
	from   **agg.Track // the tracks' first element: a new frame's, or a filter's, are a new slice
	n      int
	hosts  *hostmap.Map
	tracks []*agg.Track
}

// mergedTracks is the display state's tracks with the streams that only have ops running, as of
// one frame (the state and the running ops it was made from).
type mergedTracks struct {
	state   *agg.State
	running *timeline.Event // the frame's first running op: a new frame's are a new copy
	n       int
	tracks  []*agg.Track
}

// New returns the timeline view over fr, following live at 2 ms a column.
func New(fr *widget.Frame) *Model {
	return &Model{Base: widget.Base{Fr: fr}, follow: true, nsPerCol: 2_000_000, cursor: -1, collapsed: map[int32]bool{}, hostOpen: map[int]bool{},
		filter: widget.NewFilter("device, host (h76: that host alone) or stream (s3)")}
}

// Capturing reports whether the filter is being typed.
func (t *Model) Capturing() bool { return t.filter.Editing() }

// matches reports whether a stream passes the filter: its device ("device 613", "613"), its
// host ("h76") or its stream ("s3").
func (t *Model) matches(tr *agg.Track) bool {
	if t.filter.Value() == "" {
		return true
	}
	host := t.hostOf(tr.Device)
	fields := []string{fmt.Sprintf("device %d", tr.Device), "h" + hostName(host) + " ", fmt.Sprintf("s%d ", tr.Stream)}
	if name, ok := t.hosts().Name(int32(host)); ok {
		fields = append(fields, name) // the host's name, where a source named it
	}
	return t.filter.MatchHost(host, fields...)
}

// Row is a line of the timeline: a host's heading (on a job of several hosts), a device's heading
// or one of its streams.
type Row struct {
	Device     int32 // the device; a host's heading: its first device shown
	Host       int
	HostHeader bool
	Header     bool // a device's heading
	Track      *agg.Track
	n          int // streams under a heading
	gpus       int // devices under a host's heading
}

// tracks returns the display state's tracks and, in their order, an empty track for each stream
// that has ops running but none reported: its first op is still under way (a long one, or one a
// replay sought into), and is drawn from its start to now.
func (t *Model) tracks() []*agg.Track {
	st, run := t.Fr.State, t.Fr.Running
	if len(run) == 0 {
		return st.Tracks
	}
	if m := &t.merged; m.state == st && m.running == &run[0] && m.n == len(run) {
		return m.tracks
	}
	out := make([]*agg.Track, 0, len(st.Tracks)+1)
	i := 0
	for j := 0; j < len(run); j++ {
		r := &run[j]
		if !r.OnStream() || (j > 0 && run[j-1].Device == r.Device && run[j-1].Stream == r.Stream) {
			continue // a host's work (a communicator's init, a sleep) is not drawn on a stream
		}
		for i < len(st.Tracks) && trackBefore(st.Tracks[i], r.Device, r.Stream) {
			out = append(out, st.Tracks[i])
			i++
		}
		if i < len(st.Tracks) && st.Tracks[i].Device == r.Device && st.Tracks[i].Stream == r.Stream {
			continue
		}
		out = append(out, &agg.Track{Device: r.Device, Stream: r.Stream, Priority: r.Priority})
	}
	out = append(out, st.Tracks[i:]...)
	t.merged = mergedTracks{state: st, running: &run[0], n: len(run), tracks: out}
	return out
}

func trackBefore(tr *agg.Track, dev int32, stream uint32) bool {
	return tr.Device < dev || (tr.Device == dev && tr.Stream < stream)
}

// hosts is the analysis's one device→host map (Result.Hosts: the cluster view, the findings and
// the report place devices by it); the run's description's before a Result.
func (t *Model) hosts() *hostmap.Map {
	if t.Fr.Res != nil && t.Fr.Res.Hosts != nil {
		return t.Fr.Res.Hosts
	}
	return hostmap.New(t.Fr.Meta)
}

// grouped reports whether the streams are grouped by host: the job has several (by its
// topology's count, or the hosts its ranks named).
func (t *Model) grouped() bool {
	hosts := t.hosts()
	if g := hosts.PerHost(); g > 0 {
		return t.Fr.Meta.Devices > g
	}
	_, n := hosts.Learned()
	return n > 1
}

// hostOf returns the host of a device as the host map places it; -1 when unknown.
func (t *Model) hostOf(d int32) int { return int(t.hosts().HostOr(d)) }

// hostLabel names host h as headings do: its name where a source of the job named it, else its
// number, ? when unknown (hostmap.Map.Label).
func (t *Model) hostLabel(h int) string { return t.hosts().Label(int32(h)) }

// hostName is host h's number as the filter's h token takes it, ? when unknown.
func hostName(h int) string {
	if h < 0 {
		return "?"
	}
	return fmt.Sprint(h)
}

// Rows lists the lines the timeline has now, collapsed hosts and devices folded. Above a
// screenful of streams on several hosts, the hosts a user has not opened or closed are closed
// (rolled up, as the overview's devices are): a line a host, enter opens one.
func (t *Model) Rows() []Row { return t.layout(nil) }

// layout appends the rows to out (View reuses its slice from frame to frame; Rows, for callers
// that keep them, starts afresh).
func (t *Model) layout(out []Row) []Row {
	tracks := t.tracks()
	if t.filter.Value() != "" {
		all := tracks
		tracks = make([]*agg.Track, 0, len(all))
		for _, tr := range all {
			if t.matches(tr) {
				tracks = append(tracks, tr)
			}
		}
	}
	grouped := t.grouped()
	if grouped {
		tracks = t.byHost(tracks)
	}
	devs := 0 // device headings, for the roll-up
	for i, tr := range tracks {
		if i == 0 || tracks[i-1].Device != tr.Device {
			devs++
		}
	}
	t.rolled = grouped && !t.filter.Shown() && len(tracks)+devs > t.visible()
	for i := 0; i < len(tracks); {
		host := t.hostOf(tracks[i].Device)
		j, gpus := i, 0
		for j < len(tracks) && t.hostOf(tracks[j].Device) == host {
			if j == i || tracks[j-1].Device != tracks[j].Device {
				gpus++
			}
			j++
		}
		if grouped {
			out = append(out, Row{Device: tracks[i].Device, Host: host, HostHeader: true, n: j - i, gpus: gpus})
			if t.HostClosed(host) {
				i = j
				continue
			}
		}
		for k := i; k < j; k++ {
			tr := tracks[k]
			if k == i || tracks[k-1].Device != tr.Device {
				n := 0
				for _, o := range tracks[k:j] {
					if o.Device != tr.Device {
						break
					}
					n++
				}
				out = append(out, Row{Device: tr.Device, Host: host, Header: true, n: n})
			}
			if !t.collapsed[tr.Device] {
				out = append(out, Row{Device: tr.Device, Host: host, Track: tr})
			}
		}
		i = j
	}
	return out
}

// byHost orders tracks host by host, the hosts by number and the devices of unknown host last,
// each host's devices and streams in the order they come (by id): a job whose ranks interleave
// hosts (rank 0 on node-a, 1 on node-b, 2 on node-a) has each host's streams under one heading,
// not a heading each time the host comes back. Tracks already in that order (a topology's, whose
// hosts are by id) are returned as they are; a reordering is kept while the frame's tracks and
// host map are the same.
func (t *Model) byHost(tracks []*agg.Track) []*agg.Track {
	if len(tracks) < 2 {
		return tracks
	}
	hosts := t.hosts()
	key := func(d int32) int64 {
		if h, ok := hosts.Host(d); ok {
			return int64(h)
		}
		return math.MaxInt64
	}
	sorted := true
	for i := 1; i < len(tracks) && sorted; i++ {
		sorted = tracks[i-1].Device == tracks[i].Device || key(tracks[i-1].Device) <= key(tracks[i].Device)
	}
	if sorted {
		return tracks
	}
	if o := &t.hostOrder; o.from == &tracks[0] && o.n == len(tracks) && o.hosts == hosts {
		return o.tracks
	}
	out := slices.Clone(tracks)
	slices.SortStableFunc(out, func(a, b *agg.Track) int { return cmp.Compare(key(a.Device), key(b.Device)) })
	t.hostOrder = hostOrder{from: &tracks[0], n: len(tracks), hosts: hosts, tracks: out}
	return out
}

// HostClosed reports whether a host's streams are folded under its heading: as the user left it,
// or rolled up when the user has not opened or closed it.
func (t *Model) HostClosed(h int) bool {
	if open, ok := t.hostOpen[h]; ok {
		return !open
	}
	return t.rolled
}

// Selected returns the selected row's index in Rows.
func (t *Model) Selected() int { return t.list.Selected() }

// NsPerCol returns the zoom: ns a column.
func (t *Model) NsPerCol() int64 { return t.nsPerCol }

// PlotW is how many columns the timeline draws.
func (t *Model) PlotW() int { return t.plotW() }

// Following reports whether the right edge follows the newest time.
func (t *Model) Following() bool { return t.follow }

// Cursor returns the cursor's column in the plot.
func (t *Model) Cursor() int { return t.col(t.plotW()) }

func (t *Model) plotW() int { return t.W - LabelW }

// ShortHelp lists the timeline's keys.
func (t *Model) ShortHelp() []key.Binding {
	k := t.Fr.Keys
	sel := k.Select
	sel.SetHelp("enter", "open/close heading")
	keys := []key.Binding{k.ZoomIn, k.ZoomOut, k.PanLeft, k.PanRight, k.Left, k.Right, k.Follow, sel, k.Collapse}
	if t.grouped() { // one host has nothing else to close
		keys = append(keys, k.CollapseOthers)
	}
	keys = append(keys, k.Up, k.Down, k.PageUp, k.PageDown)
	if !t.Fr.Replay { // a replay's g and G seek to its start and end
		top, bottom := k.Top, k.Bottom
		top.SetHelp("g", "first row")
		bottom.SetHelp("G", "last row")
		keys = append(keys, top, bottom)
	}
	fk := t.filter.Keys(k)
	fk[0].SetHelp("/", "filter (h1: host 1)")
	return append(keys, fk...)
}

// FullHelp groups the timeline's keys.
func (t *Model) FullHelp() [][]key.Binding { return [][]key.Binding{t.ShortHelp()} }

// Update takes keys, the mouse (wheel: rows; click: a stream and the op under the pointer), a
// JumpToMsg and a SeekedMsg.
func (t *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	if cmd, ok := t.filter.Handle(msg, t.Fr.Keys); ok {
		return t, cmd
	}
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if !t.list.Handle(msg, t.Fr.Keys) {
			t.key(msg)
		}
	case tea.MouseWheelMsg:
		t.list.Wheel(msg)
	case tea.MouseClickMsg:
		// A click on a stream selects it and puts the cursor on the column under the pointer.
		if t.list.Click(msg.Y) {
			if c := msg.X - LabelW; c >= 0 && c < t.plotW() {
				t.cursor = c
			}
		}
	case widget.JumpToMsg:
		t.Jump(msg)
	case widget.SeekedMsg:
		t.follow = true
	}
	return t, nil
}

func (t *Model) key(msg tea.KeyPressMsg) {
	k, fr := t.Fr.Keys, t.Fr
	plotW := t.plotW()
	switch {
	case key.Matches(msg, k.ZoomIn):
		t.nsPerCol = max(t.nsPerCol/2, 1)
	case key.Matches(msg, k.ZoomOut):
		if int64(plotW)*t.nsPerCol < fr.Now { // once the whole run fits, zooming out shows nothing more
			t.nsPerCol = min(t.nsPerCol*2, 1<<40)
		}
	case key.Matches(msg, k.PanLeft):
		t.end = t.right() - int64(plotW/4)*t.nsPerCol
		t.follow = false
	case key.Matches(msg, k.PanRight):
		t.end = t.right() + int64(plotW/4)*t.nsPerCol
		t.follow = t.end >= fr.Now
	case key.Matches(msg, k.Left):
		t.cursor = max(t.col(plotW)-1, 0)
	case key.Matches(msg, k.Right):
		t.cursor = min(t.col(plotW)+1, plotW-1)
	case key.Matches(msg, k.Follow):
		t.follow = !t.follow
		if !t.follow {
			t.end = fr.Now
		}
	case key.Matches(msg, k.Collapse, k.Select):
		t.toggle(key.Matches(msg, k.Select))
	case key.Matches(msg, k.CollapseOthers):
		t.onlyHost()
	}
}

// toggle opens or closes the selected heading: a host's or a device's. c on a stream closes its
// device; enter on a stream does nothing.
func (t *Model) toggle(enter bool) {
	rows := t.Rows()
	sel := t.list.Selected()
	if sel >= len(rows) {
		return
	}
	r := rows[sel]
	switch {
	case r.HostHeader:
		t.hostOpen[r.Host] = t.HostClosed(r.Host)
	case r.Header:
		t.collapsed[r.Device] = !t.collapsed[r.Device]
	case enter:
		return
	default:
		t.collapsed[r.Device] = true
		r = Row{Device: r.Device, Host: r.Host, Header: true} // the selection goes to its heading
	}
	t.reselect(r)
}

// reselect selects the row that is r (the same heading or stream) in the rows as they are now.
func (t *Model) reselect(r Row) {
	for i, o := range t.Rows() {
		same := o.HostHeader == r.HostHeader && o.Header == r.Header && o.Host == r.Host && o.Track == r.Track
		if same && (o.HostHeader || o.Device == r.Device) {
			t.list.Select(i)
			return
		}
	}
}

// onlyHost closes every host but the selected row's, and opens that one, leaving the selection
// on its row; when that is already so, it opens every host.
func (t *Model) onlyHost() {
	rows := t.Rows()
	sel := t.list.Selected()
	if sel >= len(rows) || !t.grouped() {
		return
	}
	host := rows[sel].Host
	only := true // is every other host closed, and this one open?
	for _, r := range rows {
		if r.HostHeader && (r.Host == host) == t.HostClosed(r.Host) {
			only = false
		}
	}
	for _, r := range rows {
		if r.HostHeader {
			t.hostOpen[r.Host] = only || r.Host == host
		}
	}
	t.reselect(rows[sel])
}

// ShowDevice selects a device's heading, opening it and its host, and keeps the time shown (:rank
// N). It reports false when the device has no stream in the timeline.
func (t *Model) ShowDevice(d int32) bool {
	t.filter.Clear()
	t.collapsed[d] = false
	t.hostOpen[t.hostOf(d)] = true
	rows := t.Rows()
	for i, r := range rows {
		if r.Header && r.Device == d {
			t.list.SelectFrom(i, t.topFor(rows, i))
			return true
		}
	}
	return false
}

// topFor is the first row to draw so that the device heading at row hdr is the first row, its
// streams under it: a device named (:rank N, a finding's culprit) must not be one heading among
// its host's others, where the eye lands on the wrong one first. Its host's heading stays above
// it where it is the row just before (the host's first GPU), saying whose GPU it is.
func (t *Model) topFor(rows []Row, hdr int) int {
	if hdr > 0 && rows[hdr-1].HostHeader {
		return hdr - 1
	}
	return hdr
}

// heading is a host's or a device's heading: ▾ open, ▸ closed (and what it holds).
func (t *Model) heading(r Row, grouped bool) string {
	if r.HostHeader {
		mark := "▾"
		if t.HostClosed(r.Host) {
			mark = "▸"
		}
		return fmt.Sprintf("%s host %s · %s on %s", mark, t.hostLabel(r.Host), units.Counted(r.n, "stream"), units.Counted(r.gpus, "GPU"))
	}
	mark, indent := "▾", ""
	if t.collapsed[r.Device] {
		mark = "▸"
	}
	if grouped {
		indent = "  "
	}
	lbl := fmt.Sprintf("%s%s device %d", indent, mark, r.Device)
	if t.collapsed[r.Device] {
		lbl += " (" + units.Counted(r.n, "stream") + ")"
	}
	return lbl
}

// hostDetail is the line under the rows while a host's heading is selected.
func (t *Model) hostDetail(r Row) string {
	verb := "closes"
	if t.HostClosed(r.Host) {
		verb = "opens"
	}
	return fmt.Sprintf("host %s: enter %s its %s on %s; C shows only this host", t.hostLabel(r.Host), verb, units.Counted(r.n, "stream"), units.Counted(r.gpus, "GPU"))
}

// CursorAt returns the time at the start of the cursor's column.
func (t *Model) CursorAt() int64 {
	plotW := t.plotW()
	return t.right() - int64(plotW)*t.nsPerCol + int64(t.col(plotW))*t.nsPerCol
}

func (t *Model) col(plotW int) int {
	if t.cursor < 0 || t.cursor >= plotW {
		return plotW - 1
	}
	return t.cursor
}

func (t *Model) right() int64 {
	end := t.end
	if t.follow {
		end = t.Fr.Now
	}
	// The view never starts before time 0: zoomed out past the whole run, or panned left of its
	// start, the run is drawn from the left edge, and the ruler's times stay true.
	return max(end, int64(t.plotW())*t.nsPerCol)
}

// visible is how many rows fit: the ruler, the detail line and a legend of up to three lines
// take the rest.
func (t *Model) visible() int {
	if t.filter.Shown() {
		return t.H - 6 // and the filter's line
	}
	return t.H - 5
}

// Jump centres the timeline on a time on a stream (from the idle view) or on a device (a finding's
// culprit, Stream 0), clearing any filter so that it is shown. It reports false when the device
// has no row in the timeline (a hung rank that launched nothing, or whose events were trimmed):
// its host's heading is then the first row, opened, its other GPUs under it, and the caller says
// why the culprit is not there.
func (t *Model) Jump(j widget.JumpToMsg) bool {
	t.filter.Clear()
	plotW := max(t.plotW(), 1)
	t.nsPerCol = max(j.Dur*4/int64(plotW), 1)
	t.end = j.Time + j.Dur/2 + int64(plotW/2)*t.nsPerCol
	t.follow = false
	// The cursor goes on the gap's middle, wherever the view put it: a gap near the run's start
	// cannot be centred (the view never starts before 0).
	t0 := t.right() - int64(plotW)*t.nsPerCol
	t.cursor = int(min(max((j.Time+j.Dur/2-t0)/t.nsPerCol, 0), int64(plotW-1)))
	t.collapsed[j.Device] = false
	host := t.hostOf(j.Device)
	t.hostOpen[host] = true
	// The device's heading goes on the first row, as :rank puts it: its streams, below it, are
	// then on screen, not below the fold.
	rows := t.Rows()
	hdr, hostRow := -1, -1
	for i, r := range rows {
		if r.HostHeader && r.Host == host {
			hostRow = i
		}
		if r.Header && r.Device == j.Device {
			hdr = i
			if j.Stream == 0 { // a device, not one of its streams (a finding's culprit)
				t.list.SelectFrom(i, t.topFor(rows, i))
				return true
			}
		}
		if r.Track != nil && r.Track.Device == j.Device && r.Track.Stream == j.Stream {
			top := i
			if hdr >= 0 {
				top = t.topFor(rows, hdr)
			}
			t.list.SelectFrom(i, top)
			return true
		}
	}
	if hostRow >= 0 {
		t.list.SelectFrom(hostRow, hostRow)
	}
	return false
}

// View draws the ruler, the rows that fit, the op under the cursor and the legend.
func (t *Model) View() string {
	fr, w := t.Fr, t.W
	st := &fr.Styles
	plotW := t.plotW()
	t1 := t.right()
	t0 := t1 - int64(plotW)*t.nsPerCol
	now := int64(0) // a finished session has nothing still running
	if fr.Live {
		now = fr.Now
	}
	cur := t.col(plotW)
	var b strings.Builder
	// Ruler: start, cursor and end times.
	// Times carry the digits that tell one column from the next (31.2 µs/col: "10.80012 s").
	ruler := fmt.Sprintf("%-*s%s", LabelW, units.Dur(t.nsPerCol)+"/col", units.DurAt(max(t0, 0), t.nsPerCol))
	endLbl := units.DurAt(t1, t.nsPerCol)
	if t.follow {
		endLbl += " (following)"
	}
	pad := w - len([]rune(ruler)) - len([]rune(endLbl))
	b.WriteString(st.Muted.Render(ruler+strings.Repeat(" ", max(pad, 1))+endLbl) + "\n")
	t.rows = t.layout(t.rows[:0])
	rows, grouped := t.rows, t.grouped()
	from, to := t.list.Window(len(rows), t.visible(), 1)
	var detail string
	anyCapt := false // a captured region is on screen: the legend says what the underline means
	for i := from; i < to; i++ {
		r := rows[i]
		sel := i == t.list.Selected()
		if r.HostHeader || r.Header {
			lbl := t.heading(r, grouped)
			if sel {
				lbl = st.Selected.Render(lbl)
				if r.HostHeader {
					detail = st.Muted.Render(t.hostDetail(r))
				}
			}
			b.WriteString(st.Title.Render(lbl) + "\n")
			continue
		}
		tr := r.Track
		prio := ""
		if tr.Priority < 0 {
			prio = " hi"
		}
		indent := "  "
		if grouped {
			indent = "    " // under its host's heading and its device's
		}
		lbl := fmt.Sprintf("%-*s", LabelW, fmt.Sprintf("%ss%d%s", indent, tr.Stream, prio))
		c := -1
		if sel {
			lbl, c = st.Selected.Render(lbl), cur
		}
		running := fr.RunningOn(tr.Device, tr.Stream)
		act, which := t.scratch.Cells(tr, t0, t.nsPerCol, plotW, now, running)
		capt := t.scratch.Captured()
		anyCapt = anyCapt || slices.Contains(capt, true)
		b.WriteString(lbl + strip.DrawMarked(st, act, capt, c, t.scratch.Head()) + "\n")
		switch w := which[cur]; {
		case !sel:
		case w >= 0:
			detail = strip.Describe(fr.Snap, st, w)
		case w <= -2:
			detail = strip.DescribeRunning(fr.Snap, st, &running[-2-w], now)
		}
	}
	if held, trimmed, ok := widget.HeldFrom(fr.Snap); ok && !t.follow && t0 < held {
		// A span the window no longer holds (a jump, then the run went on), or that a replay
		// sought past, would draw as idle.
		how := "f follows live; record and replay to look back"
		if fr.Replay {
			how = "f follows the replay; seek back (←) to look there" // a replay already: recording it again shows nothing more
		}
		if trimmed {
			detail = st.Warn.Render(fmt.Sprintf("before %s the events were trimmed from memory (%d older): %s",
				units.DurAt(held, t.nsPerCol), fr.Snap.Trimmed, how))
		} else {
			detail = st.Warn.Render(fmt.Sprintf("before %s no events are held (the replay went there): %s",
				units.DurAt(held, t.nsPerCol), how))
		}
	}
	if detail == "" {
		detail = st.Muted.Render(fmt.Sprintf("cursor at %s: nothing on the selected stream", units.DurAt(t0+int64(cur)*t.nsPerCol, t.nsPerCol)))
	}
	b.WriteString(detail + "\n")
	if t.filter.Shown() {
		b.WriteString(t.filter.View() + "\n")
	}
	b.WriteString(strip.LegendMarked(st, w, fr.Live, fr.RunningKnown, anyCapt))
	return b.String()
}
