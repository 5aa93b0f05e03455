package ui

import (
	"fmt"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/units"
)

const labelW = 15

type timelineView struct {
	noCapture
	follow    bool
	end       int64 // right edge (ns) when not following
	nsPerCol  int64
	cursor    int // column of the cursor in the plot
	row       int // selected row
	top       int // first visible row
	collapsed map[int32]bool
}

func newTimelineView() timelineView {
	return timelineView{follow: true, nsPerCol: 2_000_000, cursor: -1, collapsed: map[int32]bool{}}
}

type tlRow struct {
	device int32
	header bool
	track  *agg.Track
	n      int // streams of a collapsed device
}

func (t *timelineView) rows(s *agg.State) []tlRow {
	var out []tlRow
	for i, tr := range s.Tracks {
		if i == 0 || s.Tracks[i-1].Device != tr.Device {
			n := 0
			for _, o := range s.Tracks[i:] {
				if o.Device != tr.Device {
					break
				}
				n++
			}
			out = append(out, tlRow{device: tr.Device, header: true, n: n})
		}
		if !t.collapsed[tr.Device] {
			out = append(out, tlRow{device: tr.Device, track: tr})
		}
	}
	return out
}

func (t *timelineView) Scroll(n int) { t.row = max(0, t.row+n) }

func (t *timelineView) key(msg tea.KeyPressMsg, fr *Frame) {
	k := fr.Keys
	plotW := fr.Width - labelW
	switch {
	case key.Matches(msg, k.ZoomIn):
		t.nsPerCol = max(t.nsPerCol/2, 1)
	case key.Matches(msg, k.ZoomOut):
		t.nsPerCol = min(t.nsPerCol*2, 1<<40)
	case key.Matches(msg, k.PanLeft):
		t.end = t.right(fr) - int64(plotW/4)*t.nsPerCol
		t.follow = false
	case key.Matches(msg, k.PanRight):
		t.end = t.right(fr) + int64(plotW/4)*t.nsPerCol
		t.follow = t.end >= fr.Snap.Now
	case key.Matches(msg, k.Left):
		t.cursor = max(t.col(plotW)-1, 0)
	case key.Matches(msg, k.Right):
		t.cursor = min(t.col(plotW)+1, plotW-1)
	case key.Matches(msg, k.Follow):
		t.follow = !t.follow
		if !t.follow {
			t.end = fr.Snap.Now
		}
	case key.Matches(msg, k.Up):
		t.Scroll(-1)
	case key.Matches(msg, k.Down):
		t.Scroll(1)
	case key.Matches(msg, k.Top):
		t.row = 0
	case key.Matches(msg, k.Bottom):
		t.row = 1 << 30
	case key.Matches(msg, k.Collapse):
		rows := t.rows(fr.State)
		if t.row < len(rows) {
			d := rows[t.row].device
			t.collapsed[d] = !t.collapsed[d]
		}
	}
}

func (t *timelineView) col(plotW int) int {
	if t.cursor < 0 || t.cursor >= plotW {
		return plotW - 1
	}
	return t.cursor
}

func (t *timelineView) right(fr *Frame) int64 {
	if t.follow {
		return fr.Snap.Now
	}
	return t.end
}

// jump centres the timeline on time at on the given stream (from the idle view).
func (t *timelineView) jump(fr *Frame, dev int32, stream uint32, at, dur int64) {
	plotW := max(fr.Width-labelW, 1)
	t.nsPerCol = max(dur*4/int64(plotW), 1)
	t.end = at + dur/2 + int64(plotW/2)*t.nsPerCol
	t.follow = false
	t.cursor = plotW / 2
	t.collapsed[dev] = false
	for i, r := range t.rows(fr.State) {
		if !r.header && r.track.Device == dev && r.track.Stream == stream {
			t.row = i
		}
	}
}

func activityOf(k timeline.Kind, sub uint8) theme.Activity {
	switch k {
	case timeline.KindKernel:
		return theme.Kernel
	case timeline.KindMemcpy:
		switch timeline.CopyDir(sub) {
		case timeline.CopyH2D:
			return theme.H2D
		case timeline.CopyD2H:
			return theme.D2H
		case timeline.CopyP2P:
			return theme.P2P
		}
		return theme.D2D
	case timeline.KindSend:
		return theme.Send
	case timeline.KindRecv:
		return theme.Recv
	case timeline.KindCollective:
		return theme.Collective
	case timeline.KindEventWait:
		return theme.EventWait
	case timeline.KindBarrier:
		return theme.BarrierWait
	case timeline.KindPeerWait:
		return theme.PeerWait
	}
	return theme.None
}

// cells draws one track over [t0, t0+w·ns). Zoomed out, several ops share a cell: the cell shows
// the kind that fills most of its time (busy ops before waits when they tie), not whichever op
// happens to touch it; time between ops is idle.
func cells(tr *agg.Track, t0, ns int64, w int) ([]theme.Activity, []int64) {
	act := make([]theme.Activity, w)
	which := make([]int64, w)
	whichNs := make([]int64, w)                   // how much of its cell the op named in which fills
	sums := make([][theme.NumActivities]int64, w) // time each kind fills in each cell
	for i := range which {
		which[i] = -1
	}
	add := func(c, lo, hi int64, a theme.Activity, idx int64) {
		n := max(hi-lo, 1)
		sums[c][a] += n
		if idx >= 0 && n > whichNs[c] {
			which[c], whichNs[c] = idx, n
		}
	}
	t1 := t0 + ns*int64(w)
	ops := tr.Ops
	k := sort.Search(len(ops), func(i int) bool { return ops[i].Start >= t0 })
	for back := 0; k > 0 && back < 64; back++ { // ops that started before t0 but are still running
		k--
		if ops[k].End < t0 && back > 8 {
			k++
			break
		}
	}
	prevEnd := int64(-1)
	for ; k < len(ops) && ops[k].Start < t1; k++ {
		o := ops[k]
		if o.End < t0 {
			prevEnd = max(prevEnd, o.End)
			continue
		}
		if prevEnd >= 0 && o.Start > prevEnd {
			for c := max((prevEnd-t0)/ns, 0); c < min((o.Start-t0+ns-1)/ns, int64(w)); c++ {
				if lo, hi := max(prevEnd, t0+c*ns), min(o.Start, t0+(c+1)*ns); hi > lo {
					add(c, lo, hi, theme.Idle, -1)
				}
			}
		}
		a := activityOf(o.Kind, o.Sub)
		lo := max((o.Start-t0)/ns, 0)
		hi := min(max((o.End-t0+ns-1)/ns, lo+1), int64(w))
		for c := lo; c < hi; c++ {
			add(c, max(o.Start, t0+c*ns), min(o.End, t0+(c+1)*ns), a, o.Index)
		}
		prevEnd = max(prevEnd, o.End)
	}
	for c := range sums {
		var best int64
		for a, n := range sums[c] {
			if n > best { // strictly more: on a tie the earlier kind (busy before waits) stays
				act[c], best = theme.Activity(a), n
			}
		}
	}
	return act, which
}

func (t *timelineView) View(fr *Frame, w, h int) string {
	st, s := fr.Styles, fr.State
	plotW := w - labelW
	t1 := t.right(fr)
	t0 := t1 - int64(plotW)*t.nsPerCol
	cur := t.col(plotW)
	var b strings.Builder
	// Ruler: start, cursor and end times.
	ruler := fmt.Sprintf("%-*s%s", labelW, units.Dur(t.nsPerCol)+"/col", units.Dur(max(t0, 0)))
	endLbl := units.Dur(t1)
	if t.follow {
		endLbl += " (following)"
	}
	pad := w - len([]rune(ruler)) - len([]rune(endLbl))
	b.WriteString(st.Muted.Render(ruler+strings.Repeat(" ", max(pad, 1))+endLbl) + "\n")
	rows := t.rows(s)
	t.row = min(t.row, max(len(rows)-1, 0))
	visible := h - 5 // ruler, detail line, and a legend of up to three lines
	if t.row < t.top {
		t.top = t.row
	}
	if t.row >= t.top+visible {
		t.top = t.row - visible + 1
	}
	var detail string
	for i := t.top; i < len(rows) && i < t.top+visible; i++ {
		r := rows[i]
		sel := i == t.row
		if r.header {
			mark := "▾"
			if t.collapsed[r.device] {
				mark = "▸"
			}
			lbl := fmt.Sprintf("%s device %d", mark, r.device)
			if t.collapsed[r.device] {
				lbl += fmt.Sprintf(" (%d streams)", r.n)
			}
			if sel {
				lbl = st.Selected.Render(lbl)
			}
			b.WriteString(st.Title.Render(lbl) + "\n")
			continue
		}
		tr := r.track
		prio := ""
		if tr.Priority < 0 {
			prio = " hi"
		}
		lbl := fmt.Sprintf("  s%d%s", tr.Stream, prio)
		lbl = fmt.Sprintf("%-*s", labelW, lbl)
		if sel {
			lbl = st.Selected.Render(lbl)
		}
		act, which := cells(tr, t0, t.nsPerCol, plotW)
		b.WriteString(lbl + drawCells(fr, act, cur, sel) + "\n")
		if sel && which[cur] >= 0 {
			detail = describe(fr, which[cur])
		}
	}
	if detail == "" {
		detail = st.Muted.Render(fmt.Sprintf("cursor at %s: nothing on the selected stream", units.Dur(t0+int64(cur)*t.nsPerCol)))
	}
	b.WriteString(detail + "\n")
	// The legend wraps to the width rather than being cut.
	line, lineW := "", 0
	for _, a := range theme.Legend() {
		item := a.Glyph() + " " + a.Name()
		if lineW > 0 && lineW+2+len([]rune(item)) > w {
			b.WriteString(line + "\n")
			line, lineW = "", 0
		}
		if lineW > 0 {
			line += "  "
			lineW += 2
		}
		line += st.Activity[a].Render(a.Glyph()) + " " + a.Name()
		lineW += len([]rune(item))
	}
	b.WriteString(line)
	return b.String()
}

func drawCells(fr *Frame, act []theme.Activity, cur int, sel bool) string {
	var b strings.Builder
	st := fr.Styles
	for i := 0; i < len(act); {
		j := i
		for j < len(act) && act[j] == act[i] && !(sel && j == cur) {
			j++
		}
		if sel && i == cur {
			b.WriteString(st.Cursor.Render(act[i].Glyph()))
			i++
			continue
		}
		b.WriteString(st.ActivityOn[act[i]])
		for range j - i {
			b.WriteString(act[i].Glyph())
		}
		b.WriteString(st.ActivityOff[act[i]])
		i = j
	}
	return b.String()
}

// describe is the detail line for the op under the cursor.
func describe(fr *Frame, idx int64) string {
	e := fr.Snap.At(idx)
	if e == nil {
		return fr.Styles.Muted.Render("(that op has left the window)")
	}
	parts := []string{fr.Styles.Title.Render(e.Title(fr.Snap))}
	if e.Bytes > 0 {
		parts = append(parts, units.Bytes(e.Bytes))
	}
	if e.Peer >= 0 {
		parts = append(parts, fmt.Sprintf("peer %d", e.Peer))
	}
	parts = append(parts, units.Dur(e.Dur()))
	if e.Bytes > 0 && e.Dur() > 0 && e.Kind.IsComm() {
		parts = append(parts, fmt.Sprintf("%.1f GB/s", float64(e.Bytes)/float64(e.Dur())))
	}
	if e.Group != 0 {
		parts = append(parts, fmt.Sprintf("group %d", e.Group))
	}
	if e.Comm != 0 {
		parts = append(parts, fmt.Sprintf("comm %d", e.Comm))
	}
	parts = append(parts, "at "+units.Dur(e.Start))
	return strings.Join(parts, "  ")
}
