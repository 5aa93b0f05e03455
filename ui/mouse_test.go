package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/ui/views/comms"
	"github.com/xfertop/xfertop/ui/views/timeline"
	"github.com/xfertop/xfertop/ui/views/transfers"
)

func click(m *Model, x, y int) { m.Update(tea.MouseClickMsg{X: x, Y: y, Button: tea.MouseLeft}) }

func wheel(m *Model, b tea.MouseButton) { m.Update(tea.MouseWheelMsg{Button: b}) }

// The console asks the terminal for mouse events (cell motion: clicks, the wheel, drags), and the
// terminal is given back without them (Bubble Tea turns it off on exit).
func TestMouseModeOn(t *testing.T) {
	m := sized(scenarioSource(t, "pipeline", 1, ""), 120, 30)
	if v := m.View(); v.MouseMode != tea.MouseModeCellMotion {
		t.Errorf("mouse mode %v; want cell motion", v.MouseMode)
	}
}

// The wheel scrolls the list of the view shown, a click selects the row under the pointer (in
// screen coordinates: the header and the tabs are above the view), and a click on a tab shows it.
func TestMouseSelects(t *testing.T) {
	m := sized(scenarioSource(t, "allreduce-sweep", 1, ""), 120, 40)
	// Line 0 is the header, line 1 the tabs, line 2 the view's first (the transfers' column names).
	click(m, 20, 1) // "3 Transfers" spans cells 22-34; cell 20 is "2 Timeline"'s
	if m.Tab() != TabTimeline {
		t.Fatalf("click on the second tab shows tab %d", m.Tab())
	}
	label := strings.Index(strings.Split(text(m), "\n")[1], "3 Transfers")
	click(m, label+2, 1)
	if m.Tab() != TabTransfers {
		t.Fatalf("click on %q at %d shows tab %d", "3 Transfers", label, m.Tab())
	}
	tr := paneAt[*transfers.Model](m, TabTransfers)
	steps := []struct {
		do   func()
		want int
	}{
		{func() { wheel(m, tea.MouseWheelDown) }, 3},
		{func() { wheel(m, tea.MouseWheelDown) }, 6},
		{func() { wheel(m, tea.MouseWheelUp) }, 3},
		{func() { click(m, 10, 2+1+7) }, 7}, // the eighth row
		{func() { click(m, 10, 2) }, 7},     // the column names: nothing
		{func() { click(m, 10, 0) }, 7},     // the header: nothing
	}
	for i, s := range steps {
		s.do()
		text(m) // rows are placed when drawn
		if got := tr.Selected(); got != s.want {
			t.Errorf("step %d: selected row %d; want %d", i, got, s.want)
		}
	}
	// The selected row is the one drawn highlighted: the click's row is the eighth.
	raw := strings.Split(m.View().Content, "\n")
	if !strings.Contains(raw[2+1+7], "\x1b[7m") || strings.Contains(raw[2+1+6], "\x1b[7m") {
		t.Errorf("the clicked line is not the one highlighted:\n%s", text(m))
	}
}

// In the timeline, the wheel moves the selected stream and a click selects the stream under the
// pointer and puts the cursor on the op there: the detail line names it.
func TestMouseTimeline(t *testing.T) {
	m := sized(scenarioSource(t, "pipeline", 2, ""), 120, 40)
	press(m, "2")
	tl := paneAt[*timeline.Model](m, TabTimeline)
	wheel(m, tea.MouseWheelDown)
	if tl.Selected() != 3 {
		t.Errorf("wheel down selected row %d; want 3", tl.Selected())
	}
	// Find a kernel drawn on device 0's compute stream (screen line 2 is the ruler; row 2 of the
	// timeline, line 5, under host 0's heading and device 0's, is device 0's first stream) and
	// click it.
	lines := strings.Split(text(m), "\n")
	row := []rune(lines[5])
	col := -1
	for x := timeline.LabelW; x < len(row); x++ {
		if row[x] == '█' {
			col = x
		}
	}
	if col < 0 {
		t.Fatalf("no kernel on line 5:\n%s", text(m))
	}
	click(m, col, 5)
	if tl.Selected() != 2 || tl.Cursor() != col-timeline.LabelW {
		t.Errorf("click at (%d, 5): row %d, cursor %d; want row 2, cursor %d", col, tl.Selected(), tl.Cursor(), col-timeline.LabelW)
	}
	if got := text(m); !strings.Contains(got, "stage0 fwd") {
		t.Errorf("the detail line does not name the clicked kernel:\n%s", got)
	}
}

// The wheel scrolls the communicators and the event log too.
func TestMouseWheelLists(t *testing.T) {
	m := sized(scenarioSource(t, "crosshost", 2, ""), 120, 30)
	press(m, "6")
	wheel(m, tea.MouseWheelDown)
	if got := paneAt[*comms.Model](m, TabComms).Selected(); got == 0 {
		t.Error("the wheel did not move the comms selection")
	}
	press(m, "7")
	before := text(m)
	wheel(m, tea.MouseWheelUp)
	if text(m) == before {
		t.Error("the wheel did not scroll the event log")
	}
}
