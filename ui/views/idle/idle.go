package idle

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
)

// Group is one stream's idle time of one cause, with its largest gap of that cause.
type Group struct {
	Cause analysis.Cause
	// CauseUnknown: the source records no kernels, so what the gaps waited for is unknown.
	CauseUnknown bool
	Role         string
	Device       int32
	Stream       uint32
	Total        int64
	GapAt, GapNs int64
}

// CauseName is the group's cause as shown: unknown (—) where the source cannot tell it.
func (g Group) CauseName() string {
	if g.CauseUnknown {
		return units.Unknown
	}
	return g.Cause.String()
}

// Groups ranks every stream's idle time by cause: idle compute streams first (that is GPU time
// lost), then by cost.
func Groups(si *analysis.StreamGaps) []Group {
	out := appendGroups(nil, si)
	slices.SortFunc(out, cmpGroup)
	return out
}

// appendGroups appends each stream's idle time of each cause to out, unordered.
func appendGroups(out []Group, si *analysis.StreamGaps) []Group {
	for _, s := range si.Streams {
		for _, c := range analysis.Causes() {
			if n := s.ByCause[c]; n > 0 {
				g := Group{Cause: c, CauseUnknown: s.CausesUnknown(), Role: s.Role, Device: s.Device, Stream: s.Stream, Total: n}
				for _, gap := range s.Largest {
					if gap.Cause == c {
						g.GapAt, g.GapNs = gap.Start, gap.Dur
					}
				}
				out = append(out, g)
			}
		}
	}
	return out
}

// cmpGroup is Groups' order: compute streams first, then the costliest, then by device, stream
// and cause. It is a total order, so the first k rows are the same however they were found.
func cmpGroup(a, b Group) int {
	return cmp.Or(cmp.Compare(roleRank(a.Role), roleRank(b.Role)), cmp.Compare(b.Total, a.Total), cmp.Compare(a.Device, b.Device),
		cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Cause, b.Cause))
}

func roleRank(role string) int {
	if role == "compute" {
		return 0
	}
	return 1
}

// first reorders gs so that its first k rows are those of Groups' order, in that order, and
// returns them: a frame orders the rows up to the last it draws, not every row (at 32,768
// streams sorting them all cost 7 ms a frame).
func first(gs []Group, k int) []Group {
	if k >= len(gs) {
		slices.SortFunc(gs, cmpGroup)
		return gs
	}
	lo, hi := 0, len(gs) // gs[:lo] are among the first k, gs[hi:] are not
	for hi-lo > 1 {
		// Quickselect, the pivot the median of the first, middle and last rows.
		mid := lo + (hi-lo)/2
		if cmpGroup(gs[mid], gs[lo]) < 0 {
			gs[mid], gs[lo] = gs[lo], gs[mid]
		}
		if cmpGroup(gs[hi-1], gs[lo]) < 0 {
			gs[hi-1], gs[lo] = gs[lo], gs[hi-1]
		}
		if cmpGroup(gs[hi-1], gs[mid]) < 0 {
			gs[hi-1], gs[mid] = gs[mid], gs[hi-1]
		}
		gs[mid], gs[hi-1] = gs[hi-1], gs[mid]
		p, at := gs[hi-1], lo
		for i := lo; i < hi-1; i++ {
			if cmpGroup(gs[i], p) < 0 {
				gs[i], gs[at] = gs[at], gs[i]
				at++
			}
		}
		gs[at], gs[hi-1] = gs[hi-1], gs[at] // the pivot, with every row before it less
		switch {
		case k <= at:
			hi = at
		default:
			lo = at + 1
		}
		if lo >= k || hi <= k {
			break
		}
	}
	slices.SortFunc(gs[:k], cmpGroup)
	return gs[:k]
}

// Model is the idle view.
type Model struct {
	widget.Base
	buf    []Group // the rows of the last frame, reused
	list   widget.List
	filter widget.Filter // rows by cause, role, device or stream
}

// New returns the idle view over fr.
func New(fr *widget.Frame) *Model {
	return &Model{Base: widget.Base{Fr: fr}, filter: widget.NewFilter("cause, role, device or stream")}
}

// Capturing reports whether the filter is being typed.
func (v *Model) Capturing() bool { return v.filter.Editing() }

// groups is the rows, filtered, unordered: first orders those a frame draws.
func (v *Model) groups() []Group {
	gs := appendGroups(v.buf[:0], &v.Fr.Res.StreamIdle)
	v.buf = gs
	if v.filter.Value() == "" {
		return gs
	}
	return slices.DeleteFunc(gs, func(g Group) bool {
		return !v.filter.Match(g.CauseName(), g.Role, fmt.Sprintf("device %d", g.Device), fmt.Sprintf("stream %d", g.Stream))
	})
}

// devices is the per-device breakdown the filter picks: the devices it names (at 1,024 GPUs the
// table has room for a dozen, so /299 is how device 299's row is reached), or every device when it
// names none (a filter by cause or role is the gap rows').
func (v *Model) devices(all []analysis.DeviceTime) []analysis.DeviceTime {
	if v.filter.Value() == "" {
		return all
	}
	var out []analysis.DeviceTime
	for _, d := range all {
		if v.filter.Match(fmt.Sprintf("device %d", d.Device)) {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}

// Selected returns the selected row of Groups.
func (v *Model) Selected() int { return v.list.Selected() }

// ShortHelp lists the view's keys.
func (v *Model) ShortHelp() []key.Binding {
	keys := append([]key.Binding{v.Fr.Keys.Select}, v.filter.Keys(v.Fr.Keys)...)
	return append(keys, widget.ListKeys(v.Fr.Keys)...)
}

// FullHelp groups the view's keys.
func (v *Model) FullHelp() [][]key.Binding { return [][]key.Binding{v.ShortHelp()} }

// Update takes the list's keys and the mouse; enter asks the timeline to show the row's gap.
func (v *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	k := v.Fr.Keys
	if cmd, ok := v.filter.Handle(msg, k); ok {
		return v, cmd
	}
	if v.list.Handle(msg, k) {
		return v, nil
	}
	if km, ok := msg.(tea.KeyPressMsg); ok && key.Matches(km, k.Select) {
		groups := v.groups()
		if sel := v.list.Selected(); sel < len(groups) && first(groups, sel+1)[sel].GapNs > 0 {
			g := groups[sel]
			return v, widget.JumpTo(widget.JumpToMsg{Device: g.Device, Stream: g.Stream, Time: g.GapAt, Dur: g.GapNs})
		}
	}
	return v, nil
}

// View draws the per-device breakdown and the ranked rows.
func (v *Model) View() string {
	fr, h := v.Fr, v.H
	st, si := fr.Styles, &fr.Res.StreamIdle
	groups := v.groups()
	if len(groups) == 0 && !v.filter.Shown() {
		return st.Muted.Render(v.Fr.None("idle time"))
	}
	var b strings.Builder
	var causes []string
	for _, c := range analysis.Causes() {
		if n := si.ByCause[c.String()]; n > 0 {
			causes = append(causes, fmt.Sprintf("%s %s (%.0f%%)", c, units.Dur(n), 100*float64(n)/float64(si.TotalNs)))
		}
	}
	devIdle := units.Dur(fr.Res.Breakdown.IdleNs)
	if fr.Res.Breakdown.NoKernels {
		devIdle, causes = units.Unknown, []string{"cause " + units.Unknown + " (" + analysis.NoKernelsWhy + ")"}
	}
	fmt.Fprintf(&b, "%s devices %s idle · gaps on streams %s (Σ over streams; %% of that): %s\n", st.Title.Render("Idle"),
		devIdle, units.Dur(si.TotalNs), strings.Join(causes, ", "))
	// Per device, HTA's temporal breakdown and overlap, as the report gives them.
	devs := v.devices(fr.Res.Breakdown.Devices)
	shown := min(len(devs), max(h/3, 1))
	col := 7 // the device column: as wide as the largest id (a trace's 2147483647)
	if n := len(fr.Res.Breakdown.Devices); n > 0 {
		col = max(col, len(fmt.Sprint(fr.Res.Breakdown.Devices[n-1].Device))+1)
	}
	b.WriteString(st.Muted.Render(fmt.Sprintf("%-*s%8s%10s%14s%11s   (%% of each device's span; overlap: %% of its communication; pooled %s)",
		col, "device", "idle %", "compute %", "non-compute %", "overlap %", units.Pct(fr.Res.Breakdown.OverlapPct))) + "\n")
	for _, d := range devs[:shown] {
		ov := units.Unknown
		if d.OverlapPct != nil {
			ov = fmt.Sprintf("%.1f", *d.OverlapPct)
		}
		if d.NoKernels {
			u := units.Unknown
			fmt.Fprintf(&b, "%-*d%8s%10s%14s%11s\n", col, d.Device, u, u, u, ov)
			continue
		}
		fmt.Fprintf(&b, "%-*d%8.1f%10.1f%14.1f%11s\n", col, d.Device, d.IdlePct, d.ComputePct, d.NonCompPct, ov)
	}
	y := 2 + shown
	if shown < len(devs) {
		b.WriteString(st.Muted.Render(fmt.Sprintf("… %d more devices (/ and a device number shows its row)", len(devs)-shown)) + "\n")
		y++
	}
	h -= shown + 1
	head := fmt.Sprintf("%-13s%*s%8s %-9s%11s  %s", "cause", col, "device", "stream", "role", "total", "largest gap (enter: show in timeline)")
	b.WriteString(st.Title.Render(head) + "\n")
	if v.filter.Shown() {
		h-- // the filter's line
	}
	from, to := v.list.Window(len(groups), h-3, y+1)
	first(groups, to)
	for i := from; i < to; i++ {
		g := groups[i]
		gap := units.Unknown
		if g.GapNs > 0 {
			gap = units.Dur(g.GapNs) + " at " + units.Dur(g.GapAt)
		}
		line := fmt.Sprintf("%-13s%*d%8d %-9s%11s  %s", g.CauseName(), col, g.Device, g.Stream, g.Role, units.Dur(g.Total), gap)
		if i == v.list.Selected() {
			line = st.Selected.Render(line)
		}
		b.WriteString(line + "\n")
	}
	if v.filter.Shown() {
		b.WriteString(v.filter.View() + st.Muted.Render("  "+units.Counted(len(groups), "row")) + "\n")
	}
	return b.String()
}
