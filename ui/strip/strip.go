package strip

import (
	"fmt"
	"sort"
	"strings"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/units"
)

// ActivityOf is the activity a timeline cell shows for an event of kind k (Sub sub).
func ActivityOf(k timeline.Kind, sub uint8) theme.Activity {
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

// Cells draws one track over [t0, t0+w·ns). Zoomed out, several ops share a cell: the cell shows
// the kind that fills most of its time (busy ops before waits when they tie), not whichever op
// happens to touch it; time between ops is idle. which[c] is the event index of the op that fills
// most of cell c, -2-i for running[i], or -1.
//
// now > 0 is a live session's latest time. Ops are reported when they end, so a stream's time
// since its last reported op is drawn up to now, and every stream reaches the live right edge:
// running (the stream's ops the source says are still running, Frame.RunningOn) are drawn in
// their kind from their start to now, and the rest is Pending (idle, or running unreported where
// the source cannot tell). A running op seen before the stream's last reported end is stale (it
// ended since) and left out.
func Cells(tr *agg.Track, t0, ns int64, w int, now int64, running []timeline.Event) (act []theme.Activity, which []int64) {
	var s Scratch
	return s.Cells(tr, t0, ns, w, now, running)
}

// Scratch holds the buffers Cells fills, so that a view drawing many tracks a frame reuses them
// instead of allocating each track's (64 streams × 200 columns of per-kind sums is over a
// megabyte a frame, and the garbage collector's pauses show in the frame time's tail).
type Scratch struct {
	act     []theme.Activity
	which   []int64
	whichNs []int64                      // how much of its cell the op named in which fills
	sums    [][theme.NumActivities]int64 // time each kind fills in each cell
	head    int                          // the column of the last Cells' running mark, or -1
	capt    []bool                       // the op filling most of the cell was replayed by a CUDA graph
}

// Captured reports, per cell of the last Cells, whether the op filling most of it was replayed by
// a CUDA graph: the cells DrawMarked draws as a captured region.
func (s *Scratch) Captured() []bool { return s.capt }

// Head is the column where the last Cells drew the head of an op still running (the cell of
// now), or -1: Draw marks it.
func (s *Scratch) Head() int { return s.head }

// Cells is Cells drawn into s's buffers: what it returns is valid until s's next call.
func (s *Scratch) Cells(tr *agg.Track, t0, ns int64, w int, now int64, running []timeline.Event) (act []theme.Activity, which []int64) {
	if cap(s.act) < w {
		s.act, s.which, s.whichNs, s.sums = make([]theme.Activity, w), make([]int64, w), make([]int64, w), make([][theme.NumActivities]int64, w)
		s.capt = make([]bool, w)
	}
	act, which, whichNs, sums, capt := s.act[:w], s.which[:w], s.whichNs[:w], s.sums[:w], s.capt[:w]
	s.capt = capt
	clear(capt)
	clear(act)
	clear(whichNs)
	clear(sums)
	for i := range which {
		which[i] = -1
	}
	s.head = -1
	add := func(c, lo, hi int64, a theme.Activity, idx int64, captured bool) {
		n := max(hi-lo, 1)
		sums[c][a] += n
		if idx != -1 && n > whichNs[c] {
			which[c], whichNs[c], capt[c] = idx, n, captured
		}
	}
	// span adds [lo, hi) as a, cell by cell.
	span := func(lo, hi int64, a theme.Activity, idx int64) {
		for c := max((lo-t0)/ns, 0); c < min((hi-t0+ns-1)/ns, int64(w)); c++ {
			if l, h := max(lo, t0+c*ns), min(hi, t0+(c+1)*ns); h > l {
				add(c, l, h, a, idx, false)
			}
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
		if o.TimeUnknown {
			// When it ran is unknown: it is drawn in the cell it was created in, and the time
			// around it is not called idle (it may have run then), up to the next op.
			if c := (o.Start - t0) / ns; o.Start >= t0 && c < int64(w) {
				add(c, 0, ns, ActivityOf(o.Kind, o.Sub), o.Index, o.Captured)
			}
			prevEnd = -1
			continue
		}
		if o.End < t0 {
			prevEnd = max(prevEnd, o.End)
			continue
		}
		if prevEnd >= 0 && o.Start > prevEnd {
			span(prevEnd, o.Start, theme.Idle, -1)
		}
		a := ActivityOf(o.Kind, o.Sub)
		lo := max((o.Start-t0)/ns, 0)
		hi := min(max((o.End-t0+ns-1)/ns, lo+1), int64(w))
		for c := lo; c < hi; c++ {
			add(c, max(o.Start, t0+c*ns), min(o.End, t0+(c+1)*ns), a, o.Index, o.Captured)
		}
		prevEnd = max(prevEnd, o.End)
	}
	if k < len(ops) && prevEnd >= 0 && prevEnd < t1 { // the next op starts past the right edge: idle up to it
		span(prevEnd, t1, theme.Idle, -1)
	}
	if now > 0 {
		s.live(tr, now, running, span)
		if s.head >= 0 {
			s.head = int((now - 1 - t0) / ns)
			if s.head < 0 || s.head >= w {
				s.head = -1
			}
		}
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

// live adds a live track's time from its last reported end up to now: its running ops in their
// kinds, Pending before the first of them (or up to now when none runs). It sets s.head to 0
// when a running op reaches now.
func (s *Scratch) live(tr *agg.Track, now int64, running []timeline.Event, span func(lo, hi int64, a theme.Activity, idx int64)) {
	last := lastEnd(tr.Ops)
	pendTo := now
	for i := range running {
		r := &running[i]
		if r.End < last {
			continue // seen running before the stream's last reported end: it has ended since
		}
		lo := max(r.Start, last)
		if lo >= now {
			continue
		}
		span(lo, now, ActivityOf(r.Kind, r.Sub), int64(-2-i))
		pendTo = min(pendTo, lo)
		s.head = 0
	}
	if last >= 0 && last < pendTo {
		span(last, pendTo, theme.Pending, -1)
	}
}

// lastEnd is the latest end among a track's last ops (sorted by start, so a late end is near the
// tail), or -1 for none.
func lastEnd(ops []agg.Op) int64 {
	end := int64(-1)
	for i := len(ops) - 1; i >= 0 && i >= len(ops)-64; i-- {
		end = max(end, ops[i].End)
	}
	return end
}

// Draw writes cells in their colours; cur >= 0 marks the cursor's cell, head >= 0 the cell where
// an op still running reaches now (theme.RunningMark in its kind's colour).
func Draw(st *theme.Styles, act []theme.Activity, cur, head int) string {
	return DrawMarked(st, act, nil, cur, head)
}

// DrawMarked is Draw with the cells where capt is set underlined: a captured region, the ops one
// CUDA graph launch replayed. capt may be nil.
func DrawMarked(st *theme.Styles, act []theme.Activity, capt []bool, cur, head int) string {
	var b strings.Builder
	marked := func(i int) bool { return i < len(capt) && capt[i] }
	for i := 0; i < len(act); {
		j := i
		for j < len(act) && act[j] == act[i] && j != cur && j != head && marked(j) == marked(i) {
			j++
		}
		// Each run sets the underline itself: the styles' closing sequences reset every attribute.
		on, off := st.ActivityOn[act[i]], st.ActivityOff[act[i]]
		if marked(i) {
			on, off = st.CapturedOn+on, off+st.CapturedOff
		}
		switch i {
		case cur:
			b.WriteString(st.Cursor.Render(glyphAt(act, i, head)))
			i++
			continue
		case head:
			b.WriteString(on + theme.RunningMark + off)
			i++
			continue
		}
		b.WriteString(on)
		for range j - i {
			b.WriteString(act[i].Glyph())
		}
		b.WriteString(off)
		i = j
	}
	return b.String()
}

func glyphAt(act []theme.Activity, i, head int) string {
	if i == head {
		return theme.RunningMark
	}
	return act[i].Glyph()
}

// Describe is a line about event idx: what it is, its bytes, peer, duration, rate and start.
func Describe(snap *timeline.Snapshot, st *theme.Styles, idx int64) string {
	e := snap.At(idx)
	if e == nil {
		return st.Muted.Render("(that op has left the window)")
	}
	parts := []string{st.Title.Render(e.Title(snap))}
	if e.Bytes > 0 {
		parts = append(parts, units.Bytes(e.Bytes))
	}
	if e.Peer >= 0 {
		parts = append(parts, fmt.Sprintf("peer %d", e.Peer))
	}
	if e.TimeUnknown() {
		// Its source recorded no duration (a Flight Recorder entry not retired): not an op of 0 s.
		parts = append(parts, "time "+units.Unknown)
	} else {
		parts = append(parts, units.Dur(e.Dur()))
	}
	if e.Bytes > 0 && e.Dur() > 0 && e.Kind.IsComm() && !e.Emulated() && !e.TimeUnknown() {
		parts = append(parts, fmt.Sprintf("%.1f GB/s", float64(e.Bytes)/float64(e.Dur())))
	}
	if e.Emulated() { // its time is no rate of the topology's links (docs/report.md)
		parts = append(parts, "emulated (--fit: ranks sharing a GPU)")
	}
	if e.Group != 0 {
		parts = append(parts, fmt.Sprintf("group %d", e.Group))
	}
	if e.Comm != 0 {
		parts = append(parts, fmt.Sprintf("comm %d", e.Comm))
	}
	if e.Captured() {
		parts = append(parts, "replayed by a CUDA graph")
	}
	parts = append(parts, "at "+units.Dur(e.Start))
	return strings.Join(parts, "  ")
}

// DescribeRunning is a line about an op still running at now: what it is, its bytes, peer, how
// long it has run and its start.
func DescribeRunning(snap *timeline.Snapshot, st *theme.Styles, e *timeline.Event, now int64) string {
	parts := []string{st.Title.Render(e.Title(snap)), "running"}
	if e.Bytes > 0 {
		parts = append(parts, units.Bytes(e.Bytes))
	}
	if e.Peer >= 0 {
		parts = append(parts, fmt.Sprintf("peer %d", e.Peer))
	}
	parts = append(parts, "for "+units.Dur(max(now, e.End)-e.Start)+" so far", "since "+units.Dur(e.Start))
	return strings.Join(parts, "  ")
}

// Legend draws the activities' glyphs and names, wrapped to w cells; live adds Pending, and
// running (the source reports the ops it has running) the running mark.
func Legend(st *theme.Styles, w int, live, running bool) string {
	return LegendMarked(st, w, live, running, false)
}

// LegendMarked is Legend with, when captured, the underline of a captured region explained.
func LegendMarked(st *theme.Styles, w int, live, running, captured bool) string {
	mark := ""
	if captured {
		mark = "replayed by a CUDA graph"
	}
	return LegendUnderlined(st, w, live, running, mark)
}

// LegendUnderlined is Legend with the underline DrawMarked draws explained as mark ("": none).
func LegendUnderlined(st *theme.Styles, w int, live, running bool, mark string) string {
	var b strings.Builder
	line, lineW := "", 0
	put := func(glyph, styled, name string) {
		item := glyph + " " + name
		if lineW > 0 && lineW+2+len([]rune(item)) > w {
			b.WriteString(line + "\n")
			line, lineW = "", 0
		}
		if lineW > 0 {
			line += "  "
			lineW += 2
		}
		line += styled + " " + name
		lineW += len([]rune(item))
	}
	for _, a := range theme.Legend(live) {
		name := a.Name()
		if a == theme.Pending && running {
			name = theme.PendingKnownName
		}
		put(a.Glyph(), st.Activity[a].Render(a.Glyph()), name)
	}
	if live && running {
		// The analysis (the overview's busy/idle split, idle gaps, rates) folds ops as they end: a
		// running op is drawn here and counted there once it ends.
		put(theme.RunningMark, st.Title.Render(theme.RunningMark), "running (in totals once it ends)")
	}
	if mark != "" {
		put("__", st.CapturedOn+"__"+st.CapturedOff, mark)
	}
	b.WriteString(line)
	return b.String()
}
