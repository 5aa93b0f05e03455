package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/ui/views/cluster"
)

func TestCmdLineCompletes(t *testing.T) {
	m := sized(clusterSource(t, 256), 160, 45)
	tests := []struct{ in, want string }{
		{"ra", "rank "},
		{"h", "host "},       // host, not the help: only commands and views
		{"t", "t"},           // timeline, transfers: no common prefix longer than t
		{"tr", "transfers "}, // a view's name alone is a command
		{"view cl", "view cluster "},
		{"link n", "link n"}, // nic, nvlink
		{"link ni", "link nic "},
		{"q", "q"}, // q, quit: q is already a command's whole name
		{"zz", "zz"},
	}
	for _, tt := range tests {
		if got := m.complete(tt.in); got != tt.want {
			t.Errorf("complete(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// typeCmd opens the command line, types line and runs it, as a person does.
func typeCmd(m *Model, line string) tea.Cmd {
	press(m, ":")
	for _, r := range line {
		press(m, string(r))
	}
	return press(m, "enter")
}

func TestCmdLineRuns(t *testing.T) {
	m := sized(clusterSource(t, 256), 160, 45)
	cv := paneAt[*cluster.Model](m, TabCluster)
	footer := func() string {
		lines := strings.Split(ansi.Strip(m.View().Content), "\n")
		return lines[len(lines)-1]
	}
	typeCmd(m, "rank 613")
	if !strings.Contains(footer(), ":rank 613: give a rank (GPU) from 0 to 255") || m.Tab() != TabOverview {
		t.Errorf("rank 613 of 256: tab %d, footer %q", m.Tab(), footer())
	}
	typeCmd(m, "rank 77")
	if m.Tab() != TabTimeline {
		t.Fatalf(":rank 77: tab %d; want the timeline:\n%s", m.Tab(), text(m))
	}
	press(m, "esc") // up to its GPU in the cluster view
	if m.Tab() != TabCluster || cv.Level() != cluster.LevelGPU || !strings.Contains(text(m), "cluster (32 hosts × 8 GPUs) › host 9 › gpu 77") {
		t.Fatalf("esc after :rank 77: tab %d, level %d:\n%s", m.Tab(), cv.Level(), text(m))
	}
	press(m, "esc")
	if cv.Level() != cluster.LevelHost {
		t.Errorf("esc after :rank: level %d; want the host's GPUs", cv.Level())
	}
	press(m, "esc")
	if !strings.Contains(text(m), "cursor: host 9, GPU 5:") {
		t.Errorf("esc to the heatmap: the cursor is not on rank 77 (host 9, GPU 5):\n%s", text(m))
	}
	typeCmd(m, "host 31")
	if !strings.Contains(text(m), "› host 31") {
		t.Errorf(":host 31:\n%s", text(m))
	}
	typeCmd(m, "rank 77")
	typeCmd(m, "link nic") // after a drill-down too: the whole cluster's heatmap, by NIC
	if cv.Metric().Name != "NIC % of peak" || m.Tab() != TabCluster || cv.Level() != cluster.LevelHosts {
		t.Errorf(":link nic after :rank 77: metric %q, tab %d, level %d; want the cluster's heatmap by NIC", cv.Metric().Name, m.Tab(), cv.Level())
	}
	typeCmd(m, "view timeline")
	if m.Tab() != TabTimeline {
		t.Errorf(":view timeline: tab %d", m.Tab())
	}
	typeCmd(m, "cluster")
	if m.Tab() != TabCluster {
		t.Errorf(":cluster: tab %d", m.Tab())
	}
	typeCmd(m, "frob")
	if !strings.Contains(footer(), ":frob: no such command; rank, host, link, view, q, quit, or a view's name") {
		t.Errorf(":frob: footer %q", footer())
	}
	press(m, "j") // the next key clears what the command said
	if strings.Contains(footer(), "frob") {
		t.Errorf("the footer still says %q after a key", footer())
	}
	// esc leaves the command line without running it; tab completes in place.
	press(m, ":", "v", "i", "tab")
	if !strings.Contains(footer(), ":view ") || !strings.Contains(footer(), "overview timeline") {
		t.Errorf("tab after :vi: footer %q; want :view and the views to choose from", footer())
	}
	press(m, "esc")
	if m.Tab() != TabCluster || strings.Contains(footer(), ":view") {
		t.Errorf("esc: tab %d, footer %q", m.Tab(), footer())
	}
	if cmd := typeCmd(m, "q"); cmd == nil || cmd() != tea.Quit() {
		t.Error(":q does not quit")
	}
}
