package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/ui/views/timeline"
)

// clickAt sends a left click at a cell of the pane (0-based) as a terminal in SGR mouse mode
// reports it: a press and a release, 1-based.
func (s *tmuxSession) clickAt(col, row int) {
	s.t.Helper()
	seq := fmt.Sprintf("\x1b[<0;%d;%dM\x1b[<0;%d;%dm", col+1, row+1, col+1, row+1)
	if out, err := exec.Command("tmux", "send-keys", "-t", s.name, "-l", seq).CombinedOutput(); err != nil {
		s.t.Fatalf("send-keys %q: %v: %s", seq, err, out)
	}
}

// The real binary under a real terminal's mouse: a click on a tab shows that view, a click on a
// kernel in the timeline puts the cursor on it and the detail line names it.
func TestMouseEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	s := startTmux(t, 120, 36, bin+" --scenario pipeline; echo XFERTOP_EXIT=$?; sleep 30")
	scr := s.waitFor("1 Overview", 10*time.Second)
	if s.format("#{mouse_sgr_flag}") != "1" {
		t.Fatalf("the console did not turn on SGR mouse reporting")
	}
	tab := func(scr, name string) (int, int) {
		for y, line := range strings.Split(scr, "\n") {
			if x := strings.Index(line, name); x >= 0 && strings.Contains(line, "1 Overview") {
				return len([]rune(line[:x])) + 1, y
			}
		}
		t.Fatalf("no tab %q on the screen:\n%s", name, scr)
		return 0, 0
	}
	s.clickAt(tab(scr, "2 Timeline"))
	s.waitFor("following", 5*time.Second)
	// Device 0's first stream is the line under its heading; wait for a kernel drawn on it, then
	// pause so that it stays where it is.
	var row, col int
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.keys("Space")
		scr = s.waitFor("paused", 3*time.Second)
		if row, col = firstKernel(scr); col >= 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no kernel drawn on device 0's first stream:\n%s", scr)
		}
		s.keys("Space")
		s.waitFor("running", 3*time.Second)
		time.Sleep(300 * time.Millisecond)
	}
	if strings.Contains(scr, "stage0 fwd") {
		t.Fatalf("the detail line names a kernel before any click:\n%s", scr)
	}
	s.clickAt(col, row)
	s.waitFor("stage0 fwd", 5*time.Second)
	s.clickAt(tab(s.screen(), "3 Transfers"))
	s.waitFor("payload", 5*time.Second) // the transfers table (busbw is dropped when no row has one)
	s.keys("q")
	s.waitFor("XFERTOP_EXIT=0", 10*time.Second)
	s.restored()
}

// firstKernel finds the first kernel cell drawn on the stream under "device 0" in a timeline
// screen: its column and line, or -1 for the column when there is none.
func firstKernel(scr string) (row, col int) {
	lines := strings.Split(scr, "\n")
	for y, line := range lines {
		if strings.Contains(line, "device 0") && y+1 < len(lines) {
			for x, r := range []rune(lines[y+1]) {
				if x >= timeline.LabelW && r == '█' {
					return y + 1, x
				}
			}
			return y + 1, -1
		}
	}
	return -1, -1
}
