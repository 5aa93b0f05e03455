package widget

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// WheelRows is how many rows one notch of the mouse wheel scrolls.
const WheelRows = 3

// List is the selection and scrolling of a table of rows, the same in every list view: j/k and
// the wheel move, PgUp/PgDn a page, g/G go to the first and last row, a click selects the row under it, and the
// window keeps the selection on screen.
type List struct {
	sel, top int
	// Where the rows were drawn last: the line of the first (in the view's coordinates) and how
	// many, so that a click finds its row.
	y0, shown int
}

// Selected returns the selected row.
func (l *List) Selected() int { return l.sel }

// Select selects row i (clamped when the rows are next drawn).
func (l *List) Select(i int) { l.sel = max(i, 0) }

// SelectFrom selects row i and scrolls the window to start at row top (at most i), so that what
// follows i (a heading's rows) is in sight, and as much above it as the caller chose.
func (l *List) SelectFrom(i, top int) { l.sel, l.top = max(i, 0), max(min(top, i), 0) }

// Reveal selects row i and scrolls the window of h rows as little as brings the n rows after i
// (an expanded heading's) in sight too, keeping i itself in sight.
func (l *List) Reveal(i, n, h int) {
	l.sel = max(i, 0)
	if l.sel+n >= l.top+h {
		l.top = l.sel + n - h + 1
	}
	l.top = max(min(l.top, l.sel), 0)
}

// Page moves the selection and the window by n screenfuls (as last drawn) less a row, so that a
// row of the last page stays in sight.
func (l *List) Page(n int) {
	d := n * max(l.shown-1, 1)
	l.sel, l.top = max(0, l.sel+d), max(0, l.top+d)
}

// Scroll moves the selection by n rows.
func (l *List) Scroll(n int) { l.sel = max(0, l.sel+n) }

// Handle takes the list's keys and mouse events and reports whether msg was one of them.
func (l *List) Handle(msg tea.Msg, k KeyMap) bool {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, k.Up):
			l.Scroll(-1)
		case key.Matches(msg, k.Down):
			l.Scroll(1)
		case key.Matches(msg, k.PageUp):
			l.Page(-1)
		case key.Matches(msg, k.PageDown):
			l.Page(1)
		case key.Matches(msg, k.Top):
			l.sel = 0
		case key.Matches(msg, k.Bottom):
			l.sel = 1 << 30
		default:
			return false
		}
		return true
	case tea.MouseWheelMsg:
		return l.Wheel(msg)
	case tea.MouseClickMsg:
		return l.Click(msg.Y)
	}
	return false
}

// Wheel scrolls the selection by WheelRows per notch and reports whether msg was a wheel up or
// down.
func (l *List) Wheel(msg tea.MouseWheelMsg) bool {
	switch msg.Button {
	case tea.MouseWheelUp:
		l.Scroll(-WheelRows)
	case tea.MouseWheelDown:
		l.Scroll(WheelRows)
	default:
		return false
	}
	return true
}

// Click selects the row drawn at line y and reports whether there was one.
func (l *List) Click(y int) bool {
	if y < l.y0 || y >= l.y0+l.shown {
		return false
	}
	l.sel = l.top + y - l.y0
	return true
}

// Window clamps the selection to n rows and returns the rows [from, to) that fit in h lines with
// the selection among them. y0 is the line the first of them is drawn at, for Click.
func (l *List) Window(n, h, y0 int) (from, to int) {
	h = max(h, 1)
	l.sel = min(l.sel, max(n-1, 0))
	if l.sel < l.top {
		l.top = l.sel
	}
	if l.sel >= l.top+h {
		l.top = l.sel - h + 1
	}
	l.top = max(min(l.top, max(n-h, 0)), 0)
	from, to = l.top, min(l.top+h, n)
	l.y0, l.shown = y0, to-from
	return from, to
}
