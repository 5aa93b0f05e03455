package ui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// list is the selection and scrolling of a table of rows, the same in every list view: j/k move,
// g/G go to the first and last row, and the window keeps the selection on screen.
type list struct{ sel, top int }

// Scroll moves the selection by n rows.
func (l *list) Scroll(n int) { l.sel = max(0, l.sel+n) }

// move handles the list keys and reports whether msg was one.
func (l *list) move(msg tea.KeyPressMsg, k KeyMap) bool {
	switch {
	case key.Matches(msg, k.Up):
		l.Scroll(-1)
	case key.Matches(msg, k.Down):
		l.Scroll(1)
	case key.Matches(msg, k.Top):
		l.sel = 0
	case key.Matches(msg, k.Bottom):
		l.sel = 1 << 30
	default:
		return false
	}
	return true
}

// window clamps the selection to n rows and returns the rows [from, to) that fit in h lines with
// the selection among them.
func (l *list) window(n, h int) (from, to int) {
	h = max(h, 1)
	l.sel = min(l.sel, max(n-1, 0))
	if l.sel < l.top {
		l.top = l.sel
	}
	if l.sel >= l.top+h {
		l.top = l.sel - h + 1
	}
	l.top = max(min(l.top, max(n-h, 0)), 0)
	return l.top, min(l.top+h, n)
}
