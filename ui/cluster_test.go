package ui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	xtimeline "github.com/xfertop/xfertop/timeline"

	"github.com/xfertop/xfertop/ui/views/cluster"
)

// The cluster view drills from a host to its GPUs to a GPU's streams, enter shows the stream in
// the timeline, and esc comes back the same way, the breadcrumb saying where it is at each step.
func TestClusterDrillDown(t *testing.T) {
	src := scenarioSource(t, "allreduce-sweep", 1, "h100x8x4")
	m := sized(src, 160, 45)
	press(m, "8", "j", "l") // host 1, its GPU 1
	cv := paneAt[*cluster.Model](m, TabCluster)
	crumbs := func() string { return strings.SplitN(ansi.Strip(m.render()), "\n", 4)[2] }
	press(m, "enter")
	if cv.Level() != cluster.LevelHost || !strings.Contains(crumbs(), "cluster (4 hosts × 8 GPUs) › host 1") {
		t.Fatalf("after enter: level %d, breadcrumb %q; want host 1", cv.Level(), crumbs())
	}
	press(m, "enter")
	if cv.Level() != cluster.LevelGPU || !strings.Contains(crumbs(), "› host 1 › gpu 9") {
		t.Fatalf("after enter: level %d, breadcrumb %q; want gpu 9", cv.Level(), crumbs())
	}
	cmd := press(m, "enter")
	if cmd == nil {
		t.Fatal("enter on a stream sends nothing")
	}
	m.Update(cmd())
	if m.Tab() != TabTimeline {
		t.Fatalf("after enter on a stream the console shows tab %d; want the timeline", m.Tab())
	}
	press(m, "esc")
	if m.Tab() != TabCluster || cv.Level() != cluster.LevelGPU {
		t.Fatalf("esc from the timeline: tab %d, level %d; want the cluster's GPU", m.Tab(), cv.Level())
	}
	press(m, "esc", "esc")
	if cv.Level() != cluster.LevelHosts || strings.Contains(crumbs(), "›") {
		t.Fatalf("esc esc: level %d, breadcrumb %q; want the whole cluster", cv.Level(), crumbs())
	}
}

// The cluster view at 16, 256 and 4,096 GPUs, at 80×24 and 200×50, colours pinned: a cell per
// GPU where they fit, per group of hosts where they do not (saying so).
func TestGoldenCluster(t *testing.T) {
	for _, gpus := range []int{16, 256, 4096} {
		src := clusterSource(t, gpus)
		for _, sz := range [][2]int{{80, 24}, {200, 50}} {
			name := fmt.Sprintf("8-cluster-%dgpus-%dx%d", gpus, sz[0], sz[1])
			t.Run(name, func(t *testing.T) {
				m := sized(src, sz[0], sz[1])
				press(m, "8")
				checkGolden(t, name, m.View().Content, sz[0], sz[1])
			})
		}
	}
}

// Without colour the heatmap still reads: each fifth of the scale has its own glyph, the legend
// says which, and unknown is "?", never a value.
func TestClusterReadsWithoutColour(t *testing.T) {
	m := sized(clusterSource(t, 256), 200, 50)
	press(m, "8")
	text := ansi.Strip(m.View().Content)
	for _, want := range []string{"· 0–20", "░ 20–40", "▒ 40–60", "▓ 60–80", "█ 80–100", "? unknown", "worst GPUs, lowest first", "cell: 1 GPU;"} {
		if !strings.Contains(text, want) {
			t.Errorf("the cluster view without colour lacks %q:\n%s", want, text)
		}
	}
	// Host 3 is slow (10% busy): its row is all the lowest glyph, and it leads the worst hosts.
	if !strings.Contains(text, " 3 ········") {
		t.Errorf("host 3's row does not show its 8 GPUs at the lowest glyph:\n%s", text)
	}
	if !strings.Contains(text, "host 3    gpu 24     10.0%") {
		t.Errorf("the worst hosts do not list host 3 at 10%%:\n%s", text)
	}
	press(m, "m") // idle %: now high is bad, and host 3 is 90% idle
	text = ansi.Strip(m.View().Content)
	if !strings.Contains(text, "metric: idle %") || !strings.Contains(text, " 3 ████████") {
		t.Errorf("idle %%: host 3's row is not at the top glyph:\n%s", text)
	}
}

// A click on a cell of the heatmap puts the cursor there; the line under the heatmap names it.
func TestClusterClick(t *testing.T) {
	m := sized(clusterSource(t, 256), 160, 45)
	press(m, "8")
	m.View()
	// The body starts under the header and the tabs; the heatmap's first row of cells is its 5th
	// line, after the host number (3 cells: "31 ").
	bodyTop := 2
	m.Update(tea.MouseClickMsg{Button: tea.MouseLeft, X: 3 + 5, Y: bodyTop + 4 + 3})
	if got := text(m); !strings.Contains(got, "cursor: host 3, GPU 5: 10.0%   enter") {
		t.Errorf("a click on host 3's GPU 5 does not put the cursor there:\n%s", got)
	}
}

// A source with nothing yet: the cluster view says it knows no device's value, and drilling
// down and back does not fail.
func TestClusterEmpty(t *testing.T) {
	src := &fakeSource{win: xtimeline.NewWindow(16, xtimeline.NewStrings()), info: SourceInfo{Name: "empty"}, status: Status{Speed: 1}}
	m := sized(src, 80, 24)
	press(m, "8", "enter", "enter", "enter", "m", "esc", "esc", "esc", "j", "l")
	got := text(m)
	if !strings.Contains(got, "cluster (no devices yet)") || !strings.Contains(got, "? unknown") {
		t.Errorf("an empty source's cluster view:\n%s", got)
	}
	typeCmd(m, "rank 0")
	if !strings.Contains(text(m), ":rank 0: no device has reported yet") {
		t.Errorf(":rank 0 with no devices:\n%s", text(m))
	}
}

// The help screen lists the cluster view's keys as they work at its level, esc once.
func TestClusterHelp(t *testing.T) {
	m := sized(clusterSource(t, 256), 100, 30)
	keys := func() string { _, k, _ := strings.Cut(text(m), "Keys"); return k } // below the header
	press(m, "8", "?")
	top := keys()
	for _, want := range []string{"drill down", "next metric", "pan left", ":     command"} {
		if !strings.Contains(top, want) {
			t.Errorf("the cluster's help lacks %q:\n%s", want, top)
		}
	}
	if strings.Contains(top, "back") || strings.Contains(top, "filter") {
		t.Errorf("the cluster's top level offers esc or / though neither works there:\n%s", top)
	}
	press(m, "?", "enter", "?")
	host := keys()
	if !strings.Contains(host, "/     filter") || strings.Count(host, "back") != 1 {
		t.Errorf("a host's help does not list / and esc once:\n%s", host)
	}
}
