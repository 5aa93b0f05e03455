package ui

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/ui/widget"
)

// A jump to a finding's culprit device, far down a cluster's timeline, scrolls so that the
// device's heading and its streams are on screen, the device near the top: not its heading on the
// last row with its streams below the fold.
func TestJumpShowsTheDevicesStreams(t *testing.T) {
	m := sized(clusterSource(t, 1024), 80, 24)
	m.Update(widget.JumpToMsg{Device: 613, Stream: 0, Time: 10_000_000, Dur: 1_000_000})
	lines := strings.Split(text(m), "\n")
	at := -1
	for i, l := range lines {
		if strings.Contains(l, "device 613") {
			at = i
			break
		}
	}
	if at < 0 || at > 8 || at+1 >= len(lines) || !strings.Contains(lines[at+1], "s1") {
		t.Fatalf("device 613's heading at line %d (want near the top, its stream under it):\n%s", at, strings.Join(lines, "\n"))
	}
}

// Enter on a rolled-up host far down the overview's table expands it with its GPUs in sight: the
// host's row near the top, not its GPUs below the fold.
func TestOverviewExpandShowsTheGPUs(t *testing.T) {
	m := sized(clusterSource(t, 1024), 80, 24)
	text(m) // drawn once: the table knows it scrolls
	press(m, "G")
	text(m)
	press(m, "enter")
	lines := strings.Split(text(m), "\n")
	at := -1
	for i, l := range lines {
		if strings.Contains(l, "▾h127") {
			at = i
		}
	}
	if at < 0 || at+8 >= len(lines) || !strings.Contains(lines[at+8], "1023") {
		t.Fatalf("host 127's row at line %d (want its 8 GPUs under it on screen):\n%s", at, strings.Join(lines, "\n"))
	}
}
