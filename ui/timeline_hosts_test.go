package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	xtimeline "github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/views/cluster"
	"github.com/xfertop/xfertop/ui/views/timeline"
)

// On a job of several hosts the timeline groups its streams under a heading per host, saying how
// many streams it holds on how many GPUs; enter on a host's heading closes it (its streams fold into the
// heading) and enter again opens it.
func TestTimelineGroupsByHost(t *testing.T) {
	m := sized(clusterSource(t, 32), 160, 80) // 4 hosts of 8 GPUs, a stream each: 68 rows fit
	press(m, "2")
	got := text(m)
	for _, want := range []string{"▾ host 0 · 8 streams on 8 GPUs", "  ▾ device 7", "    s1", "▾ host 1 · 8 streams on 8 GPUs", "  ▾ device 8"} {
		if !strings.Contains(got, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, got)
		}
	}
	// Host 1's heading follows device 7's stream: the groups are drawn in host order.
	if i, j := strings.Index(got, "device 7\n"), strings.Index(got, "host 1 ·"); i < 0 || j < i {
		t.Errorf("host 1's heading is not after host 0's last device:\n%s", got)
	}
	tl := paneAt[*timeline.Model](m, TabTimeline)
	press(m, "G") // the last row: host 3's last stream (drawn, so the selection is clamped to it)
	text(m)
	for range 16 { // up to host 3's heading

		press(m, "k")
	}
	if r := tl.Rows()[tl.Selected()]; !r.HostHeader || r.Host != 3 {
		t.Fatalf("16 rows above host 3's last stream: row %+v; want host 3's heading", r)
	}
	if !strings.Contains(text(m), "host 3: enter closes its 8 streams on 8 GPUs; C shows only this host") {
		t.Errorf("the detail line does not say what enter does on a host's heading:\n%s", text(m))
	}
	press(m, "enter")
	if got := text(m); !strings.Contains(got, "▸ host 3 · 8 streams on 8 GPUs") || strings.Contains(got, "device 24") {
		t.Errorf("enter on host 3's heading did not close it:\n%s", got)
	}
	if r := tl.Rows()[tl.Selected()]; !r.HostHeader || r.Host != 3 {
		t.Errorf("after closing host 3 the selection is on %+v; want its heading", r)
	}
	press(m, "enter")
	if got := text(m); !strings.Contains(got, "▾ host 3 · 8 streams on 8 GPUs") || !strings.Contains(got, "device 24") {
		t.Errorf("enter again did not open host 3:\n%s", got)
	}
}

// Above a screenful of streams, the hosts start closed: a line a host, each opened by enter.
func TestTimelineRollsUpHosts(t *testing.T) {
	m := sized(clusterSource(t, 256), 160, 45)
	press(m, "2")
	got := text(m)
	if !strings.Contains(got, "▸ host 0 · 8 streams on 8 GPUs") || !strings.Contains(got, "▸ host 1 · 8 streams on 8 GPUs") || strings.Contains(got, "device ") {
		t.Fatalf("256 GPUs at 45 lines: the hosts are not rolled up:\n%s", got)
	}
	press(m, "j", "enter")
	got = text(m)
	if !strings.Contains(got, "▸ host 0") || !strings.Contains(got, "▾ host 1 · 8 streams on 8 GPUs") || !strings.Contains(got, "  ▾ device 8") {
		t.Errorf("enter on host 1 did not open it alone:\n%s", got)
	}
}

// C keeps only the selected row's host open and closes every other; C again opens them all. The
// devices keep their own state.
func TestTimelineOnlyHost(t *testing.T) {
	m := sized(clusterSource(t, 32), 160, 80)
	press(m, "2", "j", "j", "c") // device 0 closed
	for range 18 {               // down to host 1's device 9 (row 19: host 0 is 16 rows, device 0 closed)
		press(m, "j")
	}
	tl := paneAt[*timeline.Model](m, TabTimeline)
	if r := tl.Rows()[tl.Selected()]; !r.Header || r.Device != 9 {
		t.Fatalf("selected %+v; want device 9's heading", r)
	}
	sel := tl.Rows()[tl.Selected()]
	press(m, "C")
	got := text(m)
	for _, want := range []string{"▸ host 0 · 8 streams on 8 GPUs", "▾ host 1 · 8 streams on 8 GPUs", "  ▾ device 13", "▸ host 2 · 8 streams on 8 GPUs", "▸ host 3 · 8 streams on 8 GPUs"} {
		if !strings.Contains(got, want) {
			t.Errorf("after C on host 1, the timeline lacks %q:\n%s", want, got)
		}
	}
	if r := tl.Rows()[tl.Selected()]; r != sel {
		t.Errorf("C moved the selection from %+v to %+v", sel, r)
	}
	press(m, "C")
	got = text(m)
	if strings.Contains(got, "▸ host") || !strings.Contains(got, "▸ device 0 (1 stream)") {
		t.Errorf("C again left a host closed, or opened device 0:\n%s", got)
	}
}

// :rank N shows the rank's streams in the timeline, its host opened among closed ones; esc goes up
// to its GPU in the cluster view, and esc again to its host.
func TestCmdRankShowsTimeline(t *testing.T) {
	m := sized(clusterSource(t, 256), 160, 45)
	typeCmd(m, "rank 77")
	tl := paneAt[*timeline.Model](m, TabTimeline)
	if m.Tab() != TabTimeline {
		t.Fatalf(":rank 77: tab %d; want the timeline", m.Tab())
	}
	if r := tl.Rows()[tl.Selected()]; !r.Header || r.Device != 77 {
		t.Errorf(":rank 77 selected %+v; want device 77's heading", r)
	}
	got := text(m)
	for _, want := range []string{"  ▾ device 77\n    s1 ", "▸ host 10 · 8 streams on 8 GPUs", "rank 77: its streams (esc: its GPU in the cluster view)"} {
		if !strings.Contains(got, want) {
			t.Errorf(":rank 77: the timeline lacks %q:\n%s", want, got)
		}
	}
	if tl.HostClosed(9) || !tl.HostClosed(8) || !tl.HostClosed(10) {
		t.Errorf(":rank 77 did not open host 9 alone: 8 closed %v, 9 %v, 10 %v", tl.HostClosed(8), tl.HostClosed(9), tl.HostClosed(10))
	}
	cv := paneAt[*cluster.Model](m, TabCluster)
	press(m, "esc")
	if m.Tab() != TabCluster || cv.Level() != cluster.LevelGPU || !strings.Contains(ansi.Strip(m.render()), "› host 9 › gpu 77") {
		t.Errorf("esc after :rank 77: tab %d, level %d:\n%s", m.Tab(), cv.Level(), text(m))
	}
	// A rank far down the rows: its heading scrolls to the top, its streams in sight under it.
	typeCmd(m, "rank 200")
	if got := text(m); !strings.Contains(got, "/col") || !strings.Contains(got, "  ▾ device 200\n    s1 ") {
		t.Errorf(":rank 200: its stream is not in sight under its heading:\n%s", got)
	}
}

// :rank N of a GPU with no stream in the timeline yet shows its GPU in the cluster view, and says so.
func TestCmdRankWithoutStreams(t *testing.T) {
	src := clusterSource(t, 16)
	src.info.Meta.Devices = 24 // host 2's GPUs have not reported
	m := sized(src, 160, 45)
	typeCmd(m, "rank 20")
	if cv := paneAt[*cluster.Model](m, TabCluster); m.Tab() != TabCluster || cv.Level() != cluster.LevelGPU {
		t.Errorf(":rank 20 without streams: tab %d, level %d; want its GPU in the cluster view", m.Tab(), cv.Level())
	}
	if got := text(m); !strings.Contains(got, "rank 20: no stream has reported yet; its GPU in the cluster view") {
		t.Errorf(":rank 20 without streams does not say why it shows the cluster view:\n%s", got)
	}
}

// The timeline of 256 GPUs at 80×24 and 200×50, colours pinned: rolled up, a heading a host; and
// host 9 opened by :rank 77, its GPUs' streams under it.
func TestGoldenTimelineHosts(t *testing.T) {
	src := clusterSource(t, 256)
	for _, sz := range [][2]int{{80, 24}, {200, 50}} {
		for _, rank := range []bool{false, true} {
			name := fmt.Sprintf("2-timeline-256gpus-%dx%d", sz[0], sz[1])
			if rank {
				name = fmt.Sprintf("2-timeline-256gpus-rank77-%dx%d", sz[0], sz[1])
			}
			t.Run(name, func(t *testing.T) {
				m := sized(src, sz[0], sz[1])
				press(m, "2")
				if rank {
					typeCmd(m, "rank 77")
				}
				checkGolden(t, name, m.View().Content, sz[0], sz[1])
			})
		}
	}
}

// interleavedSource is an attach-like job whose ranks interleave two named hosts (even ranks on
// host 0, node-a; odd on host 1, node-b), a stream each, as a job launched round-robin is.
func interleavedSource(t *testing.T) *fakeSource {
	t.Helper()
	meta := xtimeline.Meta{Source: "attach", Backend: "nccl", Topology: "unknown", Devices: 6,
		Extra: map[string]string{xtimeline.HostsInEventsKey: "1", xtimeline.HostNameKey(0): "node-a", xtimeline.HostNameKey(1): "node-b"}}
	win := xtimeline.NewWindow(1<<20, xtimeline.NewStrings())
	for d := range int32(6) {
		e := xtimeline.Event{Kind: xtimeline.KindKernel, Device: d, Peer: -1, Host: uint16(d % 2), Stream: 1, Queued: -1, Start: int64(d) * 100_000, End: 1_000_000}
		win.Emit(&e)
	}
	return &fakeSource{win: win, info: SourceInfo{Name: "interleaved", Meta: meta}, status: Status{Speed: 1, Done: true}}
}

// Ranks that interleave hosts are grouped under one heading per host, named as the ranks named
// it: node-a's devices 0, 2, 4, then node-b's 1, 3, 5. Before, a heading came each time the host
// changed (six headings for two hosts), each naming the host by its number.
func TestTimelineInterleavedHosts(t *testing.T) {
	m := sized(interleavedSource(t), 120, 30)
	press(m, "2")
	var heads []int
	var devs []int32
	for _, r := range paneAt[*timeline.Model](m, TabTimeline).Rows() {
		switch {
		case r.HostHeader:
			heads = append(heads, r.Host)
		case r.Header:
			devs = append(devs, r.Device)
		}
	}
	if fmt.Sprint(heads) != "[0 1]" || fmt.Sprint(devs) != "[0 2 4 1 3 5]" {
		t.Errorf("host headings %v, devices %v; want hosts [0 1], devices [0 2 4 1 3 5]", heads, devs)
	}
	got := text(m)
	for _, want := range []string{"▾ host node-a · 3 streams on 3 GPUs", "▾ host node-b · 3 streams on 3 GPUs"} {
		if !strings.Contains(got, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, got)
		}
	}
	checkGolden(t, "2-timeline-interleaved-hosts-120x30", m.View().Content, 120, 30)
}

// The cluster view and the overview of the same job, named hosts and all: the heatmap's rows,
// the worst lists and a host's GPUs (local: their place, marked) name node-a and node-b.
func TestGoldenNamedHosts(t *testing.T) {
	m := sized(interleavedSource(t), 120, 30)
	press(m, "8")
	checkGolden(t, "8-cluster-named-hosts-120x30", m.View().Content, 120, 30)
	typeCmd(m, "host node-b")
	checkGolden(t, "8-cluster-host-node-b-120x30", m.View().Content, 120, 30)
}
