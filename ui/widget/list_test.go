package widget

import (
	"testing"

	tea "charm.land/bubbletea/v2"
)

func TestListWindow(t *testing.T) {
	tests := []struct {
		sel, top, n, h       int
		wantFrom, wantTo, ws int
	}{
		{0, 0, 0, 5, 0, 0, 0},    // empty
		{3, 0, 10, 5, 0, 5, 3},   // selection on screen
		{7, 0, 10, 5, 3, 8, 7},   // selection below: scroll down to it
		{2, 5, 10, 5, 2, 7, 2},   // selection above: scroll up to it
		{99, 0, 10, 5, 5, 10, 9}, // past the end: the last row
		{4, 8, 10, 5, 4, 9, 4},   // top kept where the selection still shows
		{0, 0, 3, 5, 0, 3, 0},    // fewer rows than lines
	}
	for _, tt := range tests {
		l := List{sel: tt.sel, top: tt.top}
		from, to := l.Window(tt.n, tt.h, 0)
		if from != tt.wantFrom || to != tt.wantTo || l.sel != tt.ws {
			t.Errorf("List{sel %d, top %d}.Window(%d, %d) = [%d, %d) sel %d; want [%d, %d) sel %d",
				tt.sel, tt.top, tt.n, tt.h, from, to, l.sel, tt.wantFrom, tt.wantTo, tt.ws)
		}
	}
}

// The wheel scrolls by WheelRows; a click selects the row under it, counted from where the rows
// were drawn and the first shown; a click off the rows does nothing.
func TestListMouse(t *testing.T) {
	k := DefaultKeyMap()
	var l List
	l.Window(100, 10, 2) // rows 0-9 drawn at lines 2-11
	tests := []struct {
		msg     tea.Msg
		handled bool
		want    int
	}{
		{tea.MouseWheelMsg{Button: tea.MouseWheelDown}, true, 3},
		{tea.MouseWheelMsg{Button: tea.MouseWheelDown}, true, 6},
		{tea.MouseWheelMsg{Button: tea.MouseWheelUp}, true, 3},
		{tea.MouseClickMsg{Y: 7, Button: tea.MouseLeft}, true, 5},
		{tea.MouseClickMsg{Y: 1, Button: tea.MouseLeft}, false, 5},  // the header
		{tea.MouseClickMsg{Y: 12, Button: tea.MouseLeft}, false, 5}, // below the rows
	}
	for i, tt := range tests {
		if got := l.Handle(tt.msg, k); got != tt.handled || l.Selected() != tt.want {
			t.Errorf("step %d: Handle(%v) = %v, selection %d; want %v, %d", i, tt.msg, got, l.Selected(), tt.handled, tt.want)
		}
	}
	// Scrolled down, a click counts from the first row shown.
	l.Select(50)
	l.Window(100, 10, 2)
	l.Handle(tea.MouseClickMsg{Y: 2, Button: tea.MouseLeft}, k)
	if l.Selected() != 41 {
		t.Errorf("click on the first row shown selected %d; want 41", l.Selected())
	}
}
