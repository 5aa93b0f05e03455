package widget

import (
	"cmp"
	"slices"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/units"
)

// Frame is everything a view draws from: the analysis, the events held, the display state, the
// run's description, the theme and the keys. The root owns it and updates it in place on each
// refresh; every view holds the same pointer and reads it when it draws or takes a key, so a
// view never sees the root model.
type Frame struct {
	Res    *analysis.Result
	Snap   *timeline.Snapshot
	State  *agg.State
	Meta   timeline.Meta
	Styles theme.Styles
	Keys   KeyMap
	Paused bool
	// Replay is true for a recording's replay, where g and G seek unless a view uses them.
	Replay bool
	// Live is true while the source still produces events: the timeline then draws each stream
	// up to now, the latest time any stream has reported.
	Live bool
	// Running is the ops the source reported still running when the snapshot was taken, sorted
	// by device, stream and start; End is when each was last seen running. Ops are otherwise
	// reported when they end, so these are drawn from their start to now. RunningKnown is whether
	// the source can tell (ui.InFlighter); where it cannot, a stream's time since its last
	// reported op may be an op running.
	Running      []timeline.Event
	RunningKnown bool
	// AnalysesAll is whether the source analyses every event it produces itself (ui.Analyser: a
	// replay), so that the figures count the events the view missed while it was behind; a
	// source that does not is analysed from what the console reads of its window, and the
	// figures miss them too.
	AnalysesAll bool
	// Recording is the file a live source records every event to ("" when none).
	Recording string
	// Now is how far the source has got: the snapshot's latest reported end, or later when an op
	// was seen running later than that (long ops run while nothing ends). The timeline's live
	// edge; the analysis keeps to the snapshot's ops.
	Now int64
}

// None says that there is none of what: "yet" while the source still produces events; since the
// time a replay started or sought to, where the figures count from then; plainly once it ended
// (a finished run has no steps, not "no steps yet").
func (f *Frame) None(what string) string {
	switch {
	case f.Snap != nil && f.Snap.From > 0:
		return "no " + what + " since " + units.Dur(f.Snap.From)
	case f.Live:
		return "no " + what + " yet"
	}
	return "no " + what
}

// RunningOn returns the running ops of a device's stream (a sub-slice of Running; no copy).
func (f *Frame) RunningOn(dev int32, stream uint32) []timeline.Event {
	r := f.Running
	i, _ := slices.BinarySearchFunc(r, [2]int64{int64(dev), int64(stream)}, cmpStream)
	j := i
	for j < len(r) && r[j].Device == dev && r[j].Stream == stream {
		j++
	}
	return r[i:j:j]
}

func cmpStream(e timeline.Event, k [2]int64) int {
	if c := cmp.Compare(int64(e.Device), k[0]); c != 0 {
		return c
	}
	return cmp.Compare(int64(e.Stream), k[1])
}

// SortRunning sorts running ops as Frame.Running holds them: by device, stream and start.
func SortRunning(r []timeline.Event) {
	slices.SortFunc(r, func(a, b timeline.Event) int {
		if c := cmpStream(a, [2]int64{int64(b.Device), int64(b.Stream)}); c != 0 {
			return c
		}
		return cmp.Compare(a.Start, b.Start)
	})
}

// Widget is what a view is: a concrete type T (a pointer) that updates itself and gives itself
// back, as bubbles' components do, so the root never needs a type assertion.
type Widget[T any] interface {
	// Update takes a message meant for the view: keys while it is shown, mouse events in its own
	// coordinates (row 0 is its first line), and messages it owns (a JumpToMsg for the timeline).
	Update(msg tea.Msg) (T, tea.Cmd)
	// View draws the view into the size last set; the root cuts or pads it to exactly that.
	View() string
	// SetSize sets the cells the view has.
	SetSize(w, h int)
	// ShortHelp lists the keys that work in the view, beyond the console's own: the footer's.
	ShortHelp() []key.Binding
	// FullHelp groups the same keys for the help screen.
	FullHelp() [][]key.Binding
	// Capturing reports whether a text input of the view takes every key now.
	Capturing() bool
}

// JumpToMsg asks the console to show a stream of a device around a time in the timeline: how a
// view points at something in another view.
type JumpToMsg struct {
	Device int32
	Stream uint32
	Time   int64 // ns
	Dur    int64 // ns; the span to fit on screen
}

// JumpTo returns the command that sends msg.
func JumpTo(msg JumpToMsg) tea.Cmd { return func() tea.Msg { return msg } }

// SeekedMsg tells the timeline that a replay jumped: it follows the new position.
type SeekedMsg struct{}

// ListKeys are the keys of a list.
func ListKeys(k KeyMap) []key.Binding {
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}
}

// NoCapture is embedded by views without a text input.
type NoCapture struct{}

// Capturing reports false: the view has no text input.
func (NoCapture) Capturing() bool { return false }

// Base is what every view holds: the Frame it draws from and the cells it has.
type Base struct {
	Fr   *Frame
	W, H int
}

// SetSize sets the cells the view has.
func (b *Base) SetSize(w, h int) { b.W, b.H = w, h }

// HeldFrom is the time from which the console holds events, when it holds none before: the start
// of the oldest event held once the window trimmed older ones (trimmed), or the time a replay
// started or was sought to (From, trimmed false: nothing before it was read). ok is false when
// the console holds the run from its start.
func HeldFrom(sn *timeline.Snapshot) (at int64, trimmed, ok bool) {
	switch {
	case sn == nil:
		return 0, false, false
	case sn.Trimmed > 0 && sn.Total > sn.Base:
		return sn.At(sn.Base).Start, true, true
	case sn.From > 0:
		return sn.From, false, true
	}
	return 0, false, false
}
