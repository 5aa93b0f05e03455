package ui

import (
	"regexp"
	"strings"
	"testing"

	xtimeline "github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/strip"
	"github.com/xfertop/xfertop/ui/views/idle"
	"github.com/xfertop/xfertop/ui/views/timeline"
	"github.com/xfertop/xfertop/ui/views/transfers"
	"github.com/xfertop/xfertop/units"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

func text(m *Model) string { return ansi.Strip(m.View().Content) }

func TestTabsAndKeys(t *testing.T) {
	src := scenarioSource(t, "pipeline", 2, "")
	m := sized(src, 100, 30)
	tests := []struct {
		keys []string
		tab  int
		has  string
	}{
		{[]string{"2"}, TabTimeline, "following"},
		{[]string{"3"}, TabTransfers, "send"},
		{[]string{"tab"}, TabBarriers, "no barriers"}, // the run has ended: not "yet"
		{[]string{"tab"}, TabIdle, ""},
		{[]string{"6"}, TabComms, "Communicator cache"},
		{[]string{"7"}, TabEvents, "promise_fulfilled"},
		{[]string{"tab"}, TabCluster, "cluster ("},
		{[]string{"tab"}, TabFindings, "No findings"},
		{[]string{"tab"}, TabOverview, "NVLink"},
		{[]string{"shift+tab"}, TabFindings, "No findings"},
		{[]string{"shift+tab"}, TabCluster, "worst GPUs"},
		{[]string{"shift+tab"}, TabEvents, "kind"},
		{[]string{"1"}, TabOverview, "Moved"},
	}
	for _, tc := range tests {
		press(m, tc.keys...)
		if m.Tab() != tc.tab {
			t.Fatalf("after %v: tab %d; want %d", tc.keys, m.Tab(), tc.tab)
		}
		if tc.has != "" && !strings.Contains(text(m), tc.has) {
			t.Errorf("view %d lacks %q:\n%s", tc.tab, tc.has, text(m))
		}
	}
	if cmd := press(m, "q"); cmd == nil || cmd() != tea.Quit() {
		t.Error("q does not quit")
	}
	if cmd := press(m, "ctrl+c"); cmd == nil || cmd() != tea.Quit() {
		t.Error("ctrl+c does not quit")
	}
}

// Bubble Tea asks for a frame after every message; a tick changes nothing drawn (it only starts a
// fold), so the frame after it is the one before, not drawn again, and is what drawing afresh gives.
// The fold's frame, once installed, is drawn anew.
func TestTickDrawsNothingNew(t *testing.T) {
	src := scenarioSource(t, "pipeline", 2, "")
	m := sized(src, 120, 30)
	before, n := text(m), m.Frames()
	src.status.Dropped = 7 // seen by the next fold, not by the tick
	if _, cmd := m.Update(tickMsg{id: m.tickID}); cmd == nil {
		t.Fatal("a tick started no fold")
	}
	if got := text(m); got != before || m.Frames() != n {
		t.Errorf("after a tick: %d frames drawn, want 0; the frame unchanged: %v", m.Frames()-n, got == before)
	}
	if fresh := ansi.Strip(m.render()); fresh != before {
		t.Errorf("the frame kept after a tick is not what drawing gives:\n%s\nwant\n%s", before, fresh)
	}
	n = m.Frames()
	m.Update(m.feed.foldCmd()())
	if got := text(m); !strings.Contains(got, "dropped 7") || m.Frames() != n+1 {
		t.Errorf("the fold's frame: %d frames drawn, want 1; shows the status it read: %v", m.Frames()-n, strings.Contains(got, "dropped 7"))
	}
}

// Space pauses the view: ticks go on folding (nothing the source produces is lost) but the frame
// drawn stays, and space again shows what was folded.
func TestPause(t *testing.T) {
	src := scenarioSource(t, "pipeline", 2, "")
	m := sized(src, 100, 30)
	press(m, "space")
	if !m.Paused() || !strings.Contains(text(m), "paused") {
		t.Fatal("space did not pause")
	}
	seq := m.seq
	src.status.Dropped = 5 // something new for the paused tick's fold
	tickAndFold(m)
	if m.seq != seq || strings.Contains(text(m), "dropped 5") {
		t.Error("a paused console installed a new frame on tick")
	}
	resume(m)
	if m.Paused() || m.seq == seq || !strings.Contains(text(m), "dropped 5") {
		t.Errorf("space did not resume showing what was folded (paused %v, new frame %v)", m.Paused(), m.seq != seq)
	}
	// A tick from an old chain is ignored.
	m.tickID++
	before := src.snaps
	m.Update(tickMsg{id: m.tickID - 1})
	if src.snaps != before {
		t.Error("a stale tick was acted on")
	}
}

// Help lists only keys that work: replay keys are absent from a live session's help and present in
// a replay's.
func TestHelpNeverLies(t *testing.T) {
	live := sized(scenarioSource(t, "pipeline", 1, ""), 120, 30)
	press(live, "2", "?")
	h := text(live)
	if !strings.Contains(h, "zoom in") || strings.Contains(h, "slower") || strings.Contains(h, "seek") {
		t.Errorf("live help:\n%s", h)
	}
	press(live, "?")
	if strings.Contains(text(live), "reverse sort") {
		t.Error("? did not close help")
	}
	src := scenarioSource(t, "pipeline", 1, "")
	src.info.Replay, src.info.Duration = true, 2_000_000_000
	rp := sized(src, 120, 30)
	press(rp, "?")
	if h := text(rp); !strings.Contains(h, "slower") || !strings.Contains(h, "seek back") ||
		!strings.Contains(h, "replay from the start") || !strings.Contains(h, "play to the end") {
		t.Errorf("replay help lacks replay keys (g and G among them):\n%s", h)
	}
	// G plays on to the end as fast as it can (speed 0), so the figures keep covering the
	// recording; a seek to the end had blanked them. g replays from the start.
	press(rp, "esc", "]", "[", "[", "right", "left", "G", "g")
	if len(src.speeds) != 4 || src.speeds[3] != 0 || len(src.seeks) != 3 || src.seeks[2] != 0 {
		t.Errorf("replay keys: speeds %v seeks %v; want G's speed 0 and no seek to the end, g's seek to 0", src.speeds, src.seeks)
	}
}

func TestTooSmall(t *testing.T) {
	src := scenarioSource(t, "pipeline", 1, "")
	for _, sz := range [][2]int{{79, 24}, {80, 23}, {20, 5}, {1, 1}} {
		m := sized(src, sz[0], sz[1])
		for tab := range len(tabNames) {
			m.tab = tab
			if got := text(m); !strings.Contains(strings.ReplaceAll(got, "\n", " "), "xfertop needs at least 80×24") && sz[0] >= 20 {
				t.Errorf("%dx%d: %q", sz[0], sz[1], got)
			}
		}
	}
	// Resizing through many sizes, large and tiny, never panics and always fills the frame.
	m := sized(src, 80, 24)
	for w := 1; w < 300; w += 37 {
		for h := 1; h < 90; h += 13 {
			m.Update(tea.WindowSizeMsg{Width: w, Height: h})
			for tab := range len(tabNames) {
				m.tab = tab
				frame := m.View().Content
				if w >= MinWidth && h >= MinHeight {
					checkFrame(t, frame, w, h)
				}
			}
		}
	}
}

func TestTimelineKeys(t *testing.T) {
	m := sized(scenarioSource(t, "pipeline", 2, ""), 120, 40)
	press(m, "2")
	tl := paneAt[*timeline.Model](m, TabTimeline)
	z := tl.NsPerCol()
	press(m, "+")
	if tl.NsPerCol() != z/2 {
		t.Errorf("+ zoom: %d → %d", z, tl.NsPerCol())
	}
	press(m, "-", "-")
	if tl.NsPerCol() != z*2 {
		t.Errorf("- zoom: %d", tl.NsPerCol())
	}
	press(m, "h")
	if tl.Following() {
		t.Error("panning left should stop following")
	}
	press(m, "f")
	if !tl.Following() {
		t.Error("f should follow again")
	}
	// Select device 0's compute stream (under host 0's heading and device 0's) and walk the
	// cursor left onto its last kernel: the detail line names the op under it.
	press(m, "j", "j")
	rows := tl.Rows()
	plotW := 120 - timeline.LabelW
	t1 := m.snap.Now
	act, _ := strip.Cells(rows[2].Track, t1-int64(plotW)*tl.NsPerCol(), tl.NsPerCol(), plotW, 0, nil)
	col := -1
	for c := range act {
		if act[c] == 1 { // theme.Kernel
			col = c
		}
	}
	if col < 0 {
		t.Fatal("no kernel on device 0's compute stream in view")
	}
	for range plotW - 1 - col {
		press(m, "left")
	}
	if got := text(m); !strings.Contains(got, "stage0 fwd") {
		t.Errorf("cursor detail does not show the kernel under it:\n%s", got)
	}
	press(m, "k", "c")
	if got := text(m); !strings.Contains(got, "▸ device 0 (2 streams)") {
		t.Errorf("c did not collapse device 0:\n%s", got)
	}
}

func TestTransfersSortFilter(t *testing.T) {
	m := sized(scenarioSource(t, "allreduce-sweep", 1, ""), 120, 40)
	press(m, "3")
	if got := text(m); !strings.Contains(got, "all_reduce") || !strings.Contains(got, "busbw") {
		t.Fatalf("transfers:\n%s", got)
	}
	col := paneAt[*transfers.Model](m, TabTransfers).SortCol()
	press(m, "s")
	if paneAt[*transfers.Model](m, TabTransfers).SortCol() != (col+1)%len(transfers.Cols) {
		t.Error("s does not change the sort column")
	}
	press(m, "/", "s", "e", "n", "d", "enter")
	if got := text(m); strings.Contains(got, "all_reduce") || !strings.Contains(got, "/send") {
		t.Errorf("filter 'send' still lists all_reduce or is not shown:\n%s", got)
	}
	press(m, "/", "esc")
	if got := text(m); !strings.Contains(got, "all_reduce") {
		t.Error("esc did not clear the filter")
	}
}

func TestIdleJumpsToTimeline(t *testing.T) {
	m := sized(scenarioSource(t, "straggler", 2, ""), 120, 40)
	press(m, "5")
	if got := text(m); !strings.Contains(got, "barrier_wait") {
		t.Fatalf("idle view:\n%s", got)
	}
	g := idle.Groups(&m.Result().StreamIdle)[0]
	cmd := press(m, "enter")
	if cmd == nil {
		t.Fatal("enter on an idle row asked for no jump")
	}
	jump, ok := cmd().(JumpToMsg)
	if !ok || jump.Device != g.Device || jump.Stream != g.Stream {
		t.Fatalf("enter asked for %#v; want a jump to device %d stream %d", jump, g.Device, g.Stream)
	}
	m.Update(jump) // as the runtime delivers the command's message
	tl := paneAt[*timeline.Model](m, TabTimeline)
	if m.Tab() != TabTimeline || tl.Following() {
		t.Fatalf("enter did not jump to the timeline (tab %d)", m.Tab())
	}
	rows := tl.Rows()
	if r := rows[tl.Selected()]; r.Track == nil || r.Track.Device != g.Device || r.Track.Stream != g.Stream {
		t.Errorf("timeline row %+v; want device %d stream %d", r, g.Device, g.Stream)
	}
	// Every row's gap, the earliest in the run too (where the view cannot centre on it, as it never
	// starts before 0): the cursor's column lies in the gap.
	for i, g := range idle.Groups(&m.Result().StreamIdle) {
		if g.GapNs <= 0 {
			continue
		}
		m.Update(JumpToMsg{Device: g.Device, Stream: g.Stream, Time: g.GapAt, Dur: g.GapNs})
		if at := tl.CursorAt(); at+tl.NsPerCol() <= g.GapAt || at >= g.GapAt+g.GapNs {
			t.Errorf("row %d: the cursor's column [%d, %d) misses the gap [%d, %d)", i, at, at+tl.NsPerCol(), g.GapAt, g.GapAt+g.GapNs)
		}
	}
	m.Update(JumpToMsg{Device: g.Device, Stream: g.Stream, Time: 0, Dur: 1_000_000})
	if at := tl.CursorAt(); at >= 1_000_000 {
		t.Errorf("a gap at the run's start: the cursor's column starts at %d, past it", at)
	}
}

func TestBarriersView(t *testing.T) {
	m := sized(scenarioSource(t, "straggler", 2, ""), 120, 40)
	press(m, "4")
	got := text(m)
	if !strings.Contains(got, "Most often last: rank 3 (8×") || !strings.Contains(got, "◀ last (straggler)") {
		t.Errorf("barriers view:\n%s", got)
	}
}

func TestEventsFilter(t *testing.T) {
	m := sized(scenarioSource(t, "crosshost", 2, ""), 120, 40)
	press(m, "7", "/", "r", "e", "c", "v", "enter")
	for _, l := range strings.Split(text(m), "\n")[4:] {
		if l != "" && !strings.Contains(strings.ToLower(l), "recv") && !strings.HasPrefix(l, "/") && !strings.Contains(l, "help") {
			t.Errorf("filtered log shows %q", l)
		}
	}
}

// An error from the source shows in the console; the console keeps running.
func TestErrorShown(t *testing.T) {
	src := scenarioSource(t, "pipeline", 1, "")
	src.status.Err = errString("watchdog: send op 1 from rank 0 waited 2000 ms")
	m := sized(src, 120, 30)
	if got := text(m); !strings.Contains(got, "error: watchdog: send op 1") || !strings.Contains(got, "stopped") {
		t.Errorf("error not shown:\n%s", got)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// NVML samples show on the overview.
func TestTelemetryShown(t *testing.T) {
	win := xtimeline.NewWindow(0, nil)
	src := &fakeSource{win: win, info: SourceInfo{Name: "nvml", Meta: xtimeline.Meta{Devices: 1}}}
	for _, v := range []struct {
		m xtimeline.SampleMetric
		v int64
	}{{xtimeline.SampleUtilization, 87}, {xtimeline.SamplePowerMilliW, 412_000}, {xtimeline.SampleTempC, 66}} {
		e := xtimeline.Event{Kind: xtimeline.KindDeviceSample, Sub: uint8(v.m), Device: 0, Bytes: v.v}
		win.Emit(&e)
	}
	m := sized(src, 160, 40)
	if got := text(m); !strings.Contains(got, "gpu0 87% 412W 66°C PCIe —/— GB/s") {
		t.Errorf("overview lacks the telemetry, or shows PCIe, not sampled, as other than unknown:\n%s", got)
	}
}

// Above 64 GPUs the telemetry is summarised as the report's tables are: each sampled metric's
// min, p10, p50, p90 and max across the GPUs now, and the least utilised GPUs; under the device
// table, which leaves it the lines it needs.
func TestTelemetrySummarised(t *testing.T) {
	win := xtimeline.NewWindow(0, nil)
	src := &fakeSource{win: win, info: SourceInfo{Name: "nvml", Meta: xtimeline.Meta{Devices: 128, GPUsPerHost: 8}}, status: Status{Done: true}}
	emit := func(d int32, m xtimeline.SampleMetric, v int64) {
		e := xtimeline.Event{Kind: xtimeline.KindDeviceSample, Sub: uint8(m), Device: d, Bytes: v}
		win.Emit(&e)
	}
	for d := range int32(128) {
		emit(d, xtimeline.SampleUtilization, 10) // earlier: the latest counts
		emit(d, xtimeline.SampleUtilization, int64(100-d%100))
		emit(d, xtimeline.SamplePowerMilliW, 300_000+int64(d)*1000)
	}
	m := sized(src, 160, 40)
	got := text(m)
	for _, want := range []string{
		// 1..100 and 73..100 again: the 13th, 64th and 116th of 128 are 13, 64 and 94 (nearest rank).
		"GPU telemetry (NVML) now, across 128 GPUs         min    p10    p50    p90    max   GPUs",
		"  utilisation %                                     1     13     64     94    100    128",
		"  power W                                         300    312    363    415    427    128",
		"  least utilised now: gpu99 1%, gpu98 2%, gpu97 3%, gpu96 4%, gpu95 5%, gpu94 6%, gpu93 7%, gpu92 8%, gpu91 9%, gpu90 10%\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the overview at 128 GPUs lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "temperature") || strings.Contains(got, "PCIe rx") || strings.Contains(got, "gpu0 ") {
		t.Errorf("the summary has a row for a metric no GPU sampled, or a GPU's own line:\n%s", got)
	}
	// At 80×24 the device table scrolls, and the summary keeps its lines under it.
	small := text(sized(src, 80, 24))
	if !strings.Contains(small, "rows 1–") || !strings.Contains(small, "  power W") || !strings.Contains(small, "  least utilised now: gpu99 1%, gpu98 2%") {
		t.Errorf("at 80×24 the telemetry summary is not under the scrolling device table:\n%s", small)
	}
}

// Every communicator is reachable: the comms view scrolls, cached ones first.
func TestCommsScroll(t *testing.T) {
	win := xtimeline.NewWindow(0, nil)
	for i := range 60 {
		e := xtimeline.Event{Kind: xtimeline.KindCommInit, Comm: uint32(i + 1), Device: int32(i % 8), Peer: -1, Start: int64(i) * 1000, End: int64(i)*1000 + 500}
		win.Emit(&e)
	}
	ev := xtimeline.Event{Kind: xtimeline.KindCommEvict, Comm: 60, Device: -1, Peer: -1, Start: 70_000, End: 70_000, Status: xtimeline.StatusLRU}
	win.Emit(&ev)
	m := sized(&fakeSource{win: win, info: SourceInfo{Name: "comms", Meta: xtimeline.Meta{Devices: 8}}}, 100, 24)
	press(m, "6")
	first := text(m)
	if !strings.Contains(first, "    59  ") || strings.Contains(first, "    60  ") {
		t.Errorf("the newest cached communicator is not first, or the evicted one is not last:\n%s", first)
	}
	for range 70 {
		press(m, "j")
	}
	if last := text(m); !strings.Contains(last, "    60  ") || !strings.Contains(last, "evicted") {
		t.Errorf("scrolling to the end does not reach the evicted communicator:\n%s", last)
	}
}

// Help lists the keys that work in the view it is opened from, and no others.
func TestHelpFollowsTheView(t *testing.T) {
	m := sized(scenarioSource(t, "pipeline", 1, ""), 160, 40)
	press(m, "2", "?")
	tl := text(m)
	if !strings.Contains(tl, "zoom in") || !strings.Contains(tl, "filter") || strings.Contains(tl, "sort column") {
		t.Errorf("timeline help lists the wrong keys:\n%s", tl)
	}
	press(m, "?", "3", "?")
	if tr := text(m); !strings.Contains(tr, "filter") || !strings.Contains(tr, "sort column") || strings.Contains(tr, "zoom in") {
		t.Errorf("transfers help lists the wrong keys:\n%s", tr)
	}
}

// A replay says where it is in the recording: position / total and a progress bar.
func TestReplayProgress(t *testing.T) {
	src := scenarioSource(t, "pipeline", 1, "")
	src.info.Replay = true
	src.info.Duration = 2 * src.win.Snapshot().Now
	m := sized(src, 160, 30)
	want := " / " + units.Dur(src.info.Duration) + " █████░░░░░"
	if got := strings.Split(text(m), "\n")[0]; !strings.Contains(got, want) {
		t.Errorf("replay header %q lacks %q", got, want)
	}
}

// A failing export shows as a warning because the source says it fails, not because of its words.
func TestExportFailureIsTyped(t *testing.T) {
	src := scenarioSource(t, "pipeline", 1, "")
	src.status.Export = &ExportStatus{Text: "otlp ok: 10 exported, 0 dropped"}
	m := sized(src, 200, 30)
	ok := m.View().Content
	src.status.Export = &ExportStatus{Text: "otlp ok: 10 exported, 0 dropped", Failing: true}
	m.refresh()
	failing := m.View().Content
	if ansi.Strip(ok) != ansi.Strip(failing) || ok == failing {
		t.Error("a failing export is not drawn apart from a healthy one with the same words")
	}
}

// Every row of the idle view can be shown in the timeline: each carries its stream's longest gap
// of that cause, not only the rows among the run's fifty longest gaps.
func TestIdleRowsEachHaveTheirLargestGap(t *testing.T) {
	m := sized(scenarioSource(t, "pipeline", 3, ""), 160, 40)
	groups := idle.Groups(&m.Result().StreamIdle)
	if len(groups) == 0 {
		t.Fatal("no idle groups")
	}
	for _, g := range groups {
		if g.GapNs <= 0 || g.GapNs > g.Total {
			t.Errorf("%s on device %d stream %d: largest gap %d ns of %d", g.Cause, g.Device, g.Stream, g.GapNs, g.Total)
		}
	}
}

// streamLine is a stream's line in the timeline: its label, indented under its headings.
var streamLine = regexp.MustCompile(`^ +s[0-9]`)

// Live, every stream of the timeline reaches the right edge (now): its time since its last
// reported op is drawn, not left blank. A finished run leaves streams that ended early blank.
func TestTimelineLiveEdge(t *testing.T) {
	for _, live := range []bool{true, false} {
		src := scenarioSource(t, "pipeline", 2, "")
		src.status.Done = !live
		m := sized(src, 120, 40)
		press(m, "2", "+", "+", "+", "+", "+", "+") // 31 µs a column: streams end apart
		blank := 0
		for _, l := range strings.Split(text(m), "\n") {
			if streamLine.MatchString(l) && len([]rune(l)) == 120 && []rune(l)[119] == ' ' {
				blank++
			}
		}
		if live && blank > 0 {
			t.Errorf("live: %d streams stop short of now:\n%s", blank, text(m))
		}
		if !live && blank == 0 {
			t.Errorf("finished: every stream reaches the end; the test shows nothing:\n%s", text(m))
		}
		if has := strings.Contains(text(m), "not reported yet"); has != live {
			t.Errorf("live %v: the legend names the pending glyph: %v", live, has)
		}
	}
}

// A fabric's hottest switch ports show on the overview with their share of a port's bandwidth.
func TestFabricPortsShown(t *testing.T) {
	win := xtimeline.NewWindow(0, nil)
	meta := xtimeline.Meta{Devices: 8, GPUsPerHost: 8, LinkBytes: true, FabricPortBps: 25e9}
	src := &fakeSource{win: win, info: SourceInfo{Name: "fabric", Meta: meta}}
	e := xtimeline.Event{Kind: xtimeline.KindLinkBytes, Sub: xtimeline.PackLink(xtimeline.LinkFabric, xtimeline.LinkRx), Start: 0, End: 50_000_000,
		Bytes: 1e9, Device: xtimeline.NoDevice, Peer: xtimeline.NoDevice, Aux: xtimeline.PackPort(2, 5)}
	win.Emit(&e)
	m := sized(src, 160, 40)
	if got := text(m); !strings.Contains(got, "Switch ports:") || !strings.Contains(got, "leaf g2.r5 80%") {
		t.Errorf("overview lacks the hot switch port:\n%s", got)
	}
}
