package events

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
)

// Model is the events view.
type Model struct {
	widget.Base
	filter widget.Filter
	offset int              // lines scrolled up from the newest
	lines  map[int64]string // formatted lines by event index
	found  search           // the search over every event held
}

// New returns the events view over fr.
func New(fr *widget.Frame) *Model {
	return &Model{Base: widget.Base{Fr: fr}, filter: widget.NewFilter("search kind, label, device…")}
}

// Offset returns how many lines the log is scrolled up from the newest.
func (v *Model) Offset() int { return v.offset }

// Capturing reports whether the search is being typed.
func (v *Model) Capturing() bool { return v.filter.Editing() }

// ShortHelp lists the view's keys.
func (v *Model) ShortHelp() []key.Binding {
	return append(v.filter.Keys(v.Fr.Keys), widget.ListKeys(v.Fr.Keys)...)
}

// FullHelp groups the view's keys.
func (v *Model) FullHelp() [][]key.Binding { return [][]key.Binding{v.ShortHelp()} }

func (v *Model) scroll(n int) { v.offset = max(0, v.offset-n) }

// Update takes keys (the search's while it is open) and the wheel.
func (v *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		// The filter's own keys, esc clearing a kept search among them, as in every other list.
		if cmd, ok := v.filter.Handle(msg, v.Fr.Keys); ok {
			return v, cmd
		}
		switch k := v.Fr.Keys; {
		case key.Matches(msg, k.Up):
			v.scroll(-1)
		case key.Matches(msg, k.Down):
			v.scroll(1)
		case key.Matches(msg, k.PageUp):
			v.scroll(-max(v.H-3, 1))
		case key.Matches(msg, k.PageDown):
			v.scroll(max(v.H-3, 1))
		case key.Matches(msg, k.Top):
			v.offset = 1 << 30
		case key.Matches(msg, k.Bottom):
			v.offset = 0
		}
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			v.scroll(-widget.WheelRows)
		case tea.MouseWheelDown:
			v.scroll(widget.WheelRows)
		}
	}
	return v, nil
}

// line formats one event for the log.
func line(snap *timeline.Snapshot, e *timeline.Event) string {
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
	dur := units.Dur(e.Dur())
	if e.TimeUnknown() {
		dur = units.Unknown // its source recorded no duration: not 0 s
	}
	return fmt.Sprintf("%14s %-17s dev %-3s s%-4d %10s %9s  %s", at, e.Kind, dev, e.Stream, dur, extra,
		what(snap, e))
}

// what is the line's last column: the event's title, and for transfers and collectives (whose
// titles leave it out) their label too, such as NCCL's algorithm or a call's profiler tag, so
// that `/` finds them by it.
//
// Sends, receives, collectives and peer waits carry their op id ("op 7"), the number the watchdog's
// alert and the findings name ("send op 7 from rank 3 waited …"), so that `/` finds the op's
// events by it.
func what(snap *timeline.Snapshot, e *timeline.Event) string {
	t := e.Title(snap)
	switch e.Kind {
	case timeline.KindCollective, timeline.KindSend, timeline.KindRecv, timeline.KindPeerWait:
		if e.Op != 0 {
			t += fmt.Sprintf(" · op %d", e.Op)
		}
		if l := snap.Lookup(e.Label); l != "" && e.Label != 0 && e.Kind != timeline.KindPeerWait {
			t += " · " + l
		}
	}
	return t
}

// runningLine formats an op still running at now: "running" in place of its duration, and how
// long it has run so far.
func runningLine(snap *timeline.Snapshot, e *timeline.Event, now int64) string {
	dev := "-"
	if e.Device >= 0 {
		dev = fmt.Sprint(e.Device)
	}
	extra := ""
	if e.Bytes > 0 {
		extra = units.Bytes(e.Bytes)
	}
	at := fmt.Sprintf("%.6f s", float64(e.Start)/1e9)
	return fmt.Sprintf("%14s %-17s dev %-3s s%-4d %10s %9s  %s (%s so far)", at, e.Kind, dev, e.Stream, "running", extra,
		what(snap, e), units.Dur(max(now, e.End)-e.Start))
}

// View draws the newest lines that fit (the scroll offset above them), matching the search.
func (v *Model) View() string {
	fr, h := v.Fr, v.H
	st := fr.Styles
	f := v.filter.Value()
	idx := fr.State.RecentLog(agg.MaxLog)
	list := h - 2
	if v.lines == nil || len(v.lines) > 4*agg.MaxLog {
		v.lines = map[int64]string{} // formatted lines never change: keep them, bounded
	}
	get := func(i int64) (string, bool) {
		if l, ok := v.lines[i]; ok {
			return l, true
		}
		e := fr.Snap.At(i)
		if e == nil {
			return "", false
		}
		l := line(fr.Snap, e)
		v.lines[i] = l
		return l, true
	}
	// Walk from the newest back, formatting only until the visible lines (and the scroll offset
	// above them) are found: a frame must not format thousands of lines.
	want := list + v.offset
	var picked []string
	state := "in the order they ended, newest last"
	if fr.Paused {
		state = "paused"
	}
	// Ops still running are the newest lines; they change each frame, so they are not kept.
	if fr.Live {
		for k := len(fr.Running) - 1; k >= 0 && len(picked) < want; k-- {
			if l := runningLine(fr.Snap, &fr.Running[k], fr.Now); f == "" || strings.Contains(strings.ToLower(l), f) {
				picked = append(picked, l)
			}
		}
	}
	held := units.Count(float64(fr.Snap.Len()))
	header := fmt.Sprintf("last %s, %s; / searches all %s held", units.Counted(len(idx), "event"), state, held)
	if f == "" {
		for k := len(idx) - 1; k >= 0 && len(picked) < want; k-- {
			if l, ok := get(idx[k]); ok {
				picked = append(picked, l)
			}
		}
	} else {
		v.found.update(f, fr.Snap, func(i int64) string {
			if e := fr.Snap.At(i); e == nil || e.Kind == timeline.KindLinkBytes {
				return "" // link measurements are the overview's, not the log's
			}
			l, _ := get(i)
			return l
		})
		for k := 0; k < v.found.matches() && len(picked) < want; k++ {
			if l, ok := get(v.found.nth(k)); ok {
				picked = append(picked, l)
			}
		}
		header = v.found.header(fr.Snap, held, state)
	}
	v.offset = min(v.offset, max(len(picked)-list, 0))
	var b strings.Builder
	b.WriteString(st.Title.Render(fmt.Sprintf("%12s %-17s %-7s %-5s %10s %9s  %s", "start", "kind", "device", "strm", "dur", "bytes", "what")) +
		st.Muted.Render("  "+header) + "\n")
	end := len(picked)
	start := min(v.offset, end)
	shown := picked[start:min(start+list, end)]
	for k := len(shown) - 1; k >= 0; k-- {
		b.WriteString(shown[k] + "\n")
	}
	for strings.Count(b.String(), "\n") < h-1 {
		b.WriteString("\n")
	}
	if v.filter.Shown() {
		b.WriteString(v.filter.View())
	}
	return b.String()
}
