package ui

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/session/manualclock"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/theme"
)

// longRecording writes a run whose ops on two streams last much longer than the rest, in end
// order as the simulator records ops: device 0's stream 1 runs a 1 s all-reduce from 1 ms,
// device 1's stream 2 an h2d copy from 200 ms to 800 ms, while device 0's stream 3 runs a 70 µs
// kernel every 100 µs (10,000 of them, in chunks of 1,024: the long ops are many chunks after the
// middle of the run). It returns the path and the events in the recording's order.
func longRecording(t testing.TB) (string, []timeline.Event) {
	t.Helper()
	evs := []timeline.Event{
		{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Device: 0, Stream: 1, Peer: -1, Start: 1e6, End: 1001e6, Bytes: 1 << 30, Ranks: 2, Label: 2, Queued: -1},
		{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Device: 1, Stream: 1, Peer: -1, Start: 1e6, End: 1001e6, Bytes: 1 << 30, Ranks: 2, Label: 2, Queued: -1},
		{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyH2D), Device: 1, Stream: 2, Peer: -1, Start: 200e6, End: 800e6, Bytes: 8 << 30, Queued: -1},
	}
	for i := range int64(10_000) {
		evs = append(evs, timeline.Event{Kind: timeline.KindKernel, Device: 0, Stream: 3, Peer: -1, Start: i * 100e3, End: i*100e3 + 70e3, Label: 1, Queued: -1})
	}
	slices.SortStableFunc(evs, func(a, b timeline.Event) int { return cmp.Compare(a.End, b.End) })
	path := filepath.Join(t.TempDir(), "long.xfr")
	w, err := recordings.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMeta(recordings.Meta{Source: "sim", Backend: "sim", Scenario: "long", Topology: "h100x2", Devices: 2, GPUsPerHost: 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteStrings(1, []string{"gemm", "all_reduce"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(evs); i += 1024 {
		if err := w.WriteEvents(evs[i:min(i+1024, len(evs))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, evs
}

// replaySrc is the console's view of a replay, as the command adapts it (cmd/xfertop), paced by a
// manual clock so that a test stops it where it wants. It reports no ops under way (as the console
// drew none before); withRunning does.
type replaySrc struct {
	rs   *session.ReplaySource
	info SourceInfo
	clk  *manualclock.Clock
	ctx  context.Context
	t    testing.TB
}

func (s *replaySrc) Info() SourceInfo {
	info := s.info
	info.Meta, info.Duration = s.rs.Description()
	return info
}
func (s *replaySrc) Snapshot() timeline.Snapshot { return s.rs.Snapshot() }
func (s *replaySrc) SetSpeed(x float64) bool     { s.rs.SetSpeed(x); return true }
func (s *replaySrc) Status() Status {
	return Status{Speed: s.rs.Speed(), Done: s.rs.Done(), Err: s.rs.Err()}
}

// SeekTo jumps and waits until the replay has taken the seek and waits at the new position.
func (s *replaySrc) SeekTo(t int64) bool {
	seq := s.clk.Seq()
	s.rs.SeekTo(t)
	if err := s.clk.WaitSleeper(s.ctx, seq); err != nil {
		s.t.Fatal("the replay did not settle after the seek:", err)
	}
	return true
}

// withRunning is the same replay reporting the ops under way at its position.
type withRunning struct{ *replaySrc }

func (s withRunning) InFlight(dst []timeline.Event) []timeline.Event { return s.rs.InFlight(dst) }

// source returns the console's source over the replay, with or without the ops under way.
func (s *replaySrc) source(running bool) Source {
	if running {
		return withRunning{s}
	}
	return s
}

// step moves the clock on by d in slices the replay sleeps through, and waits until it settles.
func (s *replaySrc) step(d time.Duration) {
	s.t.Helper()
	for ; d > 0; d -= 50 * time.Millisecond {
		if err := s.clk.Step(s.ctx, min(d, 50*time.Millisecond)); err != nil {
			s.t.Fatal("the replay did not settle:", err)
		}
	}
}

// startLongReplay replays longRecording at speed 1 on a manual clock, stopped at its start.
func startLongReplay(t *testing.T) (*replaySrc, []timeline.Event) {
	t.Helper()
	path, evs := longRecording(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	clk := manualclock.New(time.Unix(1_000_000, 0))
	rs, err := session.StartReplay(ctx, session.ReplayConfig{Path: path, Speed: 1, Clock: clk}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	if err := clk.WaitSleeper(ctx, 0); err != nil {
		t.Fatal(err)
	}
	return &replaySrc{rs: rs, info: SourceInfo{Replay: true, Name: path}, clk: clk, ctx: ctx, t: t}, evs
}

// A replay paused in the middle of the long ops draws them running, in their kind from their start
// to the position with the running mark there, as a live run does; the frame stays while paused,
// as the replay goes on behind. Goldens at two sizes.
func TestGoldenTimelineReplayPaused(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {160, 40}} {
		name := fmt.Sprintf("2-timeline-replay-paused-%dx%d", sz[0], sz[1])
		t.Run(name, func(t *testing.T) {
			src, _ := startLongReplay(t)
			src.step(500 * time.Millisecond)
			m := sized(src.source(true), sz[0], sz[1])
			press(m, "2", "j", "space") // device 0's s1: the cursor at the position describes its all-reduce
			if len(m.fr.Running) != 4 {
				t.Fatalf("paused at 500 ms: %d ops running; want the two all-reduce parts, the copy and a kernel", len(m.fr.Running))
			}
			frame := m.View().Content
			src.step(100 * time.Millisecond) // the replay goes on; the paused console does not
			m.Update(tickMsg{id: m.tickID})
			if got := m.View().Content; got != frame {
				t.Errorf("the paused frame changed as the replay went on:\n%s", text(m))
			}
			heads := 0
			for _, l := range strings.Split(text(m), "\n") {
				if strings.HasPrefix(l, "  s") && strings.HasSuffix(strings.TrimRight(l, " "), theme.RunningMark) {
					heads++
				}
			}
			if heads != 3 {
				t.Errorf("%d streams end in the running mark; want the 3 whose long op runs (the kernel starts at the position):\n%s", heads, text(m))
			}
			if !strings.Contains(text(m), "so far") {
				t.Errorf("the detail at the position does not describe the running all-reduce:\n%s", text(m))
			}
			checkGolden(t, name, frame, sz[0], sz[1])
		})
	}
}

// Without the ops under way (the replay before), the same position draws the long ops' streams
// with nothing running: the frame differs from the golden, which needs them.
func TestReplayWithoutRunningDrawsNone(t *testing.T) {
	src, _ := startLongReplay(t)
	src.step(500 * time.Millisecond)
	m := sized(src.source(false), 160, 40)
	press(m, "2")
	if strings.Contains(text(m), theme.RunningMark+"\n") || len(m.fr.Running) != 0 {
		t.Errorf("a replay that reports nothing running draws running ops:\n%s", text(m))
	}
}

// The analysis at a replay's position folds only the ops ended there: the Result is the same
// whether the console draws the ops under way or not (report JSON compared whole), at several
// positions, and counts exactly the ops emitted.
func TestReplayResultSameWithRunning(t *testing.T) {
	src, _ := startLongReplay(t)
	with, without := sized(src.source(true), 160, 40), sized(src.source(false), 160, 40)
	for _, d := range []time.Duration{50 * time.Millisecond, 450 * time.Millisecond, 350 * time.Millisecond} {
		src.step(d)
		with.refresh()
		without.refresh()
		if len(with.fr.Running) == 0 {
			t.Fatalf("after %v: nothing running: the test compares nothing", d)
		}
		a, b := reportJSON(t, with), reportJSON(t, without)
		if a != b {
			t.Errorf("after %v the analysis differs with the running ops:\nwith    %s\nwithout %s", d, a, b)
		}
		snap := src.rs.Snapshot()
		if got := with.Result().Events; got != snap.Total {
			t.Errorf("the analysis folded %d events; the replay emitted %d", got, snap.Total)
		}
	}
}

func reportJSON(t *testing.T, m *Model) string {
	t.Helper()
	b, err := json.Marshal(report.Build(m.Result(), m.info.Meta, report.Run{}))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A seek draws the ops under way at the new position only: into the long ops, from before them,
// and back into them, never one from before the seek; the position shown is the new one.
func TestReplaySeekRunning(t *testing.T) {
	src, evs := startLongReplay(t)
	src.step(500 * time.Millisecond)
	m := sized(src.source(true), 160, 40)
	press(m, "2")
	for _, to := range []int64{900e6, 0, 300e6} {
		m.seek(to)
		m.refresh()
		want := underWayAt(evs, to)
		if !slices.Equal(runningKeys(m.fr.Running), runningKeys(want)) {
			t.Errorf("after a seek to %d ns running %v; want %v", to, runningKeys(m.fr.Running), runningKeys(want))
		}
		if len(want) > 0 && m.fr.Now != to {
			t.Errorf("after a seek to %d ns the position is %d", to, m.fr.Now)
		}
	}
}

// underWayAt is the ops drawn running at pos: on a stream, start ≤ pos < end.
func underWayAt(evs []timeline.Event, pos int64) []timeline.Event {
	var out []timeline.Event
	for _, e := range evs {
		if e.OnStream() && e.Start <= pos && pos < e.End {
			out = append(out, e)
		}
	}
	return out
}

func runningKeys(evs []timeline.Event) [][3]int64 {
	var k [][3]int64
	for _, e := range evs {
		k = append(k, [3]int64{int64(e.Device), int64(e.Stream), e.Start})
	}
	slices.SortFunc(k, func(a, b [3]int64) int { return slices.Compare(a[:], b[:]) })
	return k
}

// lateSeekSource is a replay that takes a seek on its own goroutine: until take, it goes on
// serving the old start's window.
type lateSeekSource struct {
	*fakeSource
	next *timeline.Window
}

func (s *lateSeekSource) take() { s.win = s.next }

// Paused, a seek shows where it went once the replay has taken it: the next frame of the new
// start, and no later one (it showed the old start's, which kept playing behind the pause).
func TestSeekWhilePausedShowsTheTarget(t *testing.T) {
	old := timeline.NewWindow(0, nil)
	old.SetGeneration(1)
	kernels(old, 2, 10, 0)
	src := &lateSeekSource{fakeSource: &fakeSource{win: old, info: SourceInfo{Name: "replay", Replay: true, Meta: timeline.Meta{Backend: "sim", Devices: 2}}, status: Status{Speed: 1}}}
	m := sized(src, 120, 30)
	press(m, "space")
	if !m.Paused() {
		t.Fatal("space did not pause")
	}
	tick := func() {
		_, cmd := m.Update(tickMsg{id: m.tickID})
		batch, ok := cmd().(tea.BatchMsg) // paused, a tick only schedules the next
		if !ok {
			return
		}
		for _, c := range batch {
			if msg, ok := c().(foldedMsg); ok {
				m.Update(msg)
			}
		}
	}
	press(m, "right")
	if len(src.seeks) != 1 {
		t.Fatalf("seeks %v; want one", src.seeks)
	}
	kernels(old, 2, 10, 1000) // the old start plays on behind the pause
	tick()
	if g := m.fr.Snap.Generation; g != 1 {
		t.Fatalf("generation %d shown before the replay took the seek", g)
	}
	src.next = timeline.NewWindow(0, nil)
	src.next.SetGeneration(2)
	src.next.SetFrom(src.seeks[0])
	src.take()
	tick()
	if g := m.fr.Snap.Generation; g != 2 {
		t.Errorf("paused after a seek, generation %d shown; want the seek's, 2", g)
	}
	kernels(src.next, 2, 10, src.seeks[0]) // the new start plays on: the pause holds its first frame
	tick()
	if n := m.fr.Snap.Total; n != 0 {
		t.Errorf("paused, a later frame (%d events) replaced the seek's", n)
	}
}
