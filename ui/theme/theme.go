// Package theme holds the console's styles and the glyph each kind of activity is drawn with. Kinds
// are told apart by glyph as well as colour, so the console reads the same with NO_COLOR or on a
// monochrome terminal.
package theme

import (
	"image/color"
	"strings"

	"charm.land/lipgloss/v2"
)

// Activity is what a timeline cell shows.
type Activity uint8

// Activities, in the order they win a cell (lower wins when several share it).
const (
	None Activity = iota
	Kernel
	H2D
	D2H
	D2D
	P2P
	Send
	Recv
	Collective
	EventWait
	BarrierWait
	PeerWait
	Idle
	// Pending is a live stream's time since its last reported op: an op may be running there (ops
	// are reported when they end) or the stream may be idle; its next event tells.
	Pending
	activityCount
	// NumActivities is how many activities there are.
	NumActivities = activityCount
)

// Glyphs are ASCII or single-width box characters that every terminal font has.
var glyphs = [activityCount]string{" ", "█", "↓", "↑", "=", "~", ">", "<", "#", ":", "|", "?", ".", "·"}

var names = [activityCount]string{"", "kernel", "h2d copy", "d2h copy", "d2d copy", "p2p copy", "send", "recv", "collective",
	"event wait", "barrier wait", "peer wait", "idle", "running or idle (not reported yet)"}

// RunningMark marks where an op still running reaches now: the live edge of a stream drawn in
// the op's kind.
const RunningMark = "»"

// PendingKnownName is Pending's name where the source reports the ops it has running: a stream's
// unreported time is then idle, or an op waiting to run (for the SMs, or queued on the stream).
const PendingKnownName = "idle or waiting (unreported)"

// Glyph returns the activity's glyph.
func (a Activity) Glyph() string { return glyphs[a] }

// Name returns the activity's name for legends.
func (a Activity) Name() string { return names[a] }

// Legend lists the activities a legend shows; a live legend adds Pending.
func Legend(live bool) []Activity {
	l := []Activity{Kernel, H2D, D2H, D2D, P2P, Send, Recv, Collective, EventWait, BarrierWait, PeerWait, Idle}
	if live {
		l = append(l, Pending)
	}
	return l
}

// Styles is every style the console uses. Build it with DefaultStyles; no package-level styles.
type Styles struct {
	App, Header, HeaderValue, Tab, ActiveTab, Muted, Title, Alert, Good, Warn, Selected, Cursor, Border lipgloss.Style
	Activity                                                                                            [activityCount]lipgloss.Style
	// ActivityOn and ActivityOff are each activity style's escape sequences, split once so the
	// timeline can colour thousands of cells a frame without rendering each through lipgloss.
	ActivityOn, ActivityOff [activityCount]string
	// The same for the styles views colour many cells with.
	MutedOn, MutedOff, WarnOn, WarnOff, GoodOn, GoodOff, AlertOn, AlertOff, CursorOn, CursorOff string
	// Captured underlines the timeline cells of ops a CUDA graph replayed (a captured region);
	// CapturedOn and CapturedOff are its escape sequences.
	Captured                string
	CapturedOn, CapturedOff string
}

// DefaultStyles returns the console's styles for a dark or light terminal.
func DefaultStyles(isDark bool) Styles {
	ld := lipgloss.LightDark(isDark)
	fg := ld(lipgloss.Color("#1a1a1a"), lipgloss.Color("#e4e4e4"))
	muted := ld(lipgloss.Color("#6c6c6c"), lipgloss.Color("#8a8a8a"))
	accent := ld(lipgloss.Color("#005f87"), lipgloss.Color("#5fafff"))
	s := Styles{
		App:         lipgloss.NewStyle().Foreground(fg),
		Header:      lipgloss.NewStyle().Bold(true).Foreground(accent),
		HeaderValue: lipgloss.NewStyle().Foreground(fg),
		Tab:         lipgloss.NewStyle().Foreground(muted).Padding(0, 1),
		ActiveTab:   lipgloss.NewStyle().Bold(true).Underline(true).Foreground(accent).Padding(0, 1),
		Muted:       lipgloss.NewStyle().Foreground(muted),
		Title:       lipgloss.NewStyle().Bold(true),
		Alert:       lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("#d70000")),
		Good:        lipgloss.NewStyle().Foreground(ld(lipgloss.Color("#008700"), lipgloss.Color("#5fd75f"))),
		Warn:        lipgloss.NewStyle().Foreground(ld(lipgloss.Color("#af5f00"), lipgloss.Color("#ffaf00"))),
		Selected:    lipgloss.NewStyle().Reverse(true),
		Cursor:      lipgloss.NewStyle().Reverse(true).Bold(true),
		Border:      lipgloss.NewStyle().Foreground(muted),
	}
	colors := [activityCount]color.Color{
		None:        nil,
		Kernel:      ld(lipgloss.Color("#008700"), lipgloss.Color("#5faf5f")),
		H2D:         ld(lipgloss.Color("#0000af"), lipgloss.Color("#5f87ff")),
		D2H:         ld(lipgloss.Color("#5f00af"), lipgloss.Color("#af87ff")),
		D2D:         ld(lipgloss.Color("#005f5f"), lipgloss.Color("#5fd7d7")),
		P2P:         ld(lipgloss.Color("#00875f"), lipgloss.Color("#5fffaf")),
		Send:        ld(lipgloss.Color("#af5f00"), lipgloss.Color("#ffaf5f")),
		Recv:        ld(lipgloss.Color("#875f00"), lipgloss.Color("#d7af5f")),
		Collective:  ld(lipgloss.Color("#af0087"), lipgloss.Color("#ff5fd7")),
		EventWait:   ld(lipgloss.Color("#878700"), lipgloss.Color("#d7d75f")),
		BarrierWait: ld(lipgloss.Color("#d70000"), lipgloss.Color("#ff5f5f")),
		PeerWait:    ld(lipgloss.Color("#d75f00"), lipgloss.Color("#ff875f")),
		Idle:        muted,
		Pending:     muted,
	}
	for i, c := range colors {
		st := lipgloss.NewStyle()
		if c != nil {
			st = st.Foreground(c)
		}
		s.Activity[i] = st
		s.ActivityOn[i], s.ActivityOff[i] = Split(st)
	}
	s.MutedOn, s.MutedOff = Split(s.Muted)
	s.WarnOn, s.WarnOff = Split(s.Warn)
	s.GoodOn, s.GoodOff = Split(s.Good)
	s.AlertOn, s.AlertOff = Split(s.Alert)
	s.CursorOn, s.CursorOff = Split(s.Cursor)
	// An attribute, not a colour: a captured region reads the same on any palette.
	s.CapturedOn, s.CapturedOff = "\x1b[4m", "\x1b[24m"
	s.Captured = "_"
	return s
}

// Split returns the escape sequences a style writes before and after a line of text, so that a
// view colouring many cells a frame writes them instead of rendering each through lipgloss. It is
// for styles that only colour (no padding, borders or widths).
func Split(st lipgloss.Style) (on, off string) {
	on, off, _ = strings.Cut(st.Render("\x00"), "\x00")
	return on, off
}
