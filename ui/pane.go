package ui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/ui/theme"
)

// Frame is everything a view draws from: the analysis, the events held, the display state, the
// source, the theme and the keys. Views see this, never the root model; the root builds it once
// per frame.
type Frame struct {
	Res    *analysis.Result
	Snap   *timeline.Snapshot
	State  *agg.State
	Info   SourceInfo
	Styles theme.Styles
	Keys   KeyMap
	Width  int
	Paused bool
}

// JumpToMsg asks the console to show a stream of a device around a time in the timeline: how a
// view points at something in another view.
type JumpToMsg struct {
	Device int32
	Stream uint32
	Time   int64 // ns
	Dur    int64 // ns; the span to fit on screen
}

func jumpTo(msg JumpToMsg) tea.Cmd { return func() tea.Msg { return msg } }

// pane is one view of the console. Each is a concrete type with its own state; the root holds
// them in a slice, in tab order, and routes keys to the one shown.
type pane interface {
	// View draws the pane into exactly w×h cells.
	View(fr *Frame, w, h int) string
	// Key handles a key meant for this pane.
	Key(msg tea.KeyPressMsg, fr *Frame) tea.Cmd
	// Scroll moves the selection by n rows (the mouse wheel).
	Scroll(n int)
	// Capturing reports whether a text input of the pane takes every key now; CaptureKey gets them.
	Capturing() bool
	CaptureKey(msg tea.KeyPressMsg) tea.Cmd
	// Keys are the keys that work in this pane, beyond the global ones: what help lists.
	Keys(k KeyMap) []key.Binding
}

// listKeys are the keys of a list.
func listKeys(k KeyMap) []key.Binding { return []key.Binding{k.Up, k.Down, k.Top, k.Bottom} }

// noCapture is embedded by panes without a text input.
type noCapture struct{}

func (noCapture) Capturing() bool                         { return false }
func (noCapture) CaptureKey(tea.KeyPressMsg) tea.Cmd      { return nil }
func (*overviewView) Key(tea.KeyPressMsg, *Frame) tea.Cmd { return nil }
func (*overviewView) Scroll(int)                          {}
func (*overviewView) Keys(KeyMap) []key.Binding           { return nil }

func (t *timelineView) Key(msg tea.KeyPressMsg, fr *Frame) tea.Cmd { t.key(msg, fr); return nil }
func (t *timelineView) Keys(k KeyMap) []key.Binding {
	return []key.Binding{k.ZoomIn, k.ZoomOut, k.PanLeft, k.PanRight, k.Left, k.Right, k.Follow, k.Collapse, k.Up, k.Down}
}

func (v *transfersView) Key(msg tea.KeyPressMsg, fr *Frame) tea.Cmd { return v.key(msg, fr) }
func (v *transfersView) Capturing() bool                            { return v.filter.filtering }
func (v *transfersView) CaptureKey(msg tea.KeyPressMsg) tea.Cmd     { return v.filter.key(msg) }
func (v *transfersView) Keys(k KeyMap) []key.Binding {
	return append([]key.Binding{k.Sort, k.Reverse, k.Filter}, listKeys(k)...)
}

func (v *barriersView) Key(msg tea.KeyPressMsg, fr *Frame) tea.Cmd { v.key(msg, fr); return nil }
func (v *barriersView) Keys(k KeyMap) []key.Binding                { return listKeys(k) }

func (v *idleView) Key(msg tea.KeyPressMsg, fr *Frame) tea.Cmd { return v.key(msg, fr) }
func (v *idleView) Keys(k KeyMap) []key.Binding {
	return append([]key.Binding{k.Select}, listKeys(k)...)
}

func (v *commsView) Key(msg tea.KeyPressMsg, fr *Frame) tea.Cmd { v.key(msg, fr); return nil }
func (v *commsView) Keys(k KeyMap) []key.Binding                { return listKeys(k) }

func (v *eventsView) Key(msg tea.KeyPressMsg, fr *Frame) tea.Cmd { return v.key(msg, fr) }
func (v *eventsView) Capturing() bool                            { return v.filter.filtering }
func (v *eventsView) CaptureKey(msg tea.KeyPressMsg) tea.Cmd     { return v.filter.key(msg) }
func (v *eventsView) Keys(k KeyMap) []key.Binding {
	return append([]key.Binding{k.Filter}, listKeys(k)...)
}
