package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/session/manualclock"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui"
	"github.com/xfertop/xfertop/units"
)

// windowSource serves a console the events of a window, all at once.
type windowSource struct {
	info ui.SourceInfo
	snap func() timeline.Snapshot
}

func (s windowSource) Info() ui.SourceInfo         { return s.info }
func (s windowSource) Snapshot() timeline.Snapshot { return s.snap() }
func (s windowSource) Status() ui.Status           { return ui.Status{Done: true} }
func (s windowSource) SetSpeed(float64) bool       { return false }
func (s windowSource) SeekTo(int64) bool           { return false }

// growingSource serves a console a run's events as if it were going on: the first n of them, n
// growing by a step at each fold, and the run done once all are out, so that the console folds
// the run piece by piece (as a live console does) and then after its end.
type growingSource struct {
	info ui.SourceInfo
	all  timeline.Snapshot
	evs  []timeline.Event
	n    *int
}

func (s growingSource) Info() ui.SourceInfo   { return s.info }
func (s growingSource) Status() ui.Status     { return ui.Status{Done: *s.n == len(s.evs)} }
func (s growingSource) SetSpeed(float64) bool { return false }
func (s growingSource) SeekTo(int64) bool     { return false }
func (s growingSource) Snapshot() timeline.Snapshot {
	out := s.all
	out.Chunks, out.Base, out.Total, out.Trimmed, out.Now = [][]timeline.Event{s.evs[:*s.n]}, 0, int64(*s.n), 0, 0
	for i := range s.evs[:*s.n] {
		out.Now = max(out.Now, s.evs[i].End)
	}
	return out
}

// foldAsItRuns shows a console the events of snap in folds pieces, refreshing after each, then
// twice more after the run's end, and returns it.
func foldAsItRuns(info ui.SourceInfo, snap timeline.Snapshot, folds int) *ui.Model {
	n := 0
	src := growingSource{info: info, all: snap, evs: snap.Events(), n: &n}
	m := console(src)
	refresh := func() { refreshed(m) } // pause and resume: a refresh now
	for n < len(src.evs) {
		n = min(len(src.evs), n+max(1, len(src.evs)/folds))
		refresh()
	}
	refresh()
	refresh()
	return m
}

// console runs the console's model over src as the Bubble Tea runtime would, and returns it.
func console(src ui.Source) *ui.Model {
	m := ui.New(src, ui.Options{IsDark: true})
	m.Init()
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	return m
}

func press(m *ui.Model, k string) string {
	m.Update(tea.KeyPressMsg{Code: []rune(k)[0], Text: k})
	return ansi.Strip(m.View().Content)
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameNumbers checks every total the console shows against the report of the same events: the
// analysis behind the console's views field by field, then the numbers as the views print them.
func sameNumbers(t *testing.T, m *ui.Model, r *report.Report) {
	t.Helper()
	res := m.Result()
	pairs := []struct {
		what            string
		console, report any
	}{
		{"events", res.Events, r.Events},
		{"steps (count, p50, p99, setup)", res.Steps, r.Steps},
		{"transfers by kind and size class (bytes, GB/s, p50/p99)", res.Transfers, r.Transfers},
		{"collectives (algbw, busbw)", res.Collectives.Rows, r.Collectives},
		{"communicator cache (hits, misses, evictions)", res.CommCache, r.CommCache},
		{"groups", res.Groups, r.Groups},
		{"barrier waits and stragglers", res.Barriers, r.Barriers},
		{"idle by cause", res.StreamIdle.ByCause, r.Idle.ByCause},
		{"idle per stream", res.StreamIdle.Streams, r.Idle.Streams},
		{"temporal breakdown and overlap per device", res.Breakdown.Devices, ran(r.Idle.Devices)},
		{"pooled overlap", res.Breakdown.OverlapPct, r.Overlap.CommComputePct},
		{"link traffic per device, bytes moved", res.Links, r.Links},
		{"alerts", res.Alerts, r.Alerts},
	}
	for _, p := range pairs {
		if c, w := asJSON(t, p.console), asJSON(t, p.report); c != w {
			t.Errorf("%s: the console shows\n%s\nthe report says\n%s", p.what, c, w)
		}
	}
	over := press(m, "1")
	if want := "Moved on links " + report.MovedBytes(r.Links) + " (bus bytes)"; !strings.Contains(over, want) {
		t.Errorf("overview lacks %q:\n%s", want, over)
	}
	for _, d := range r.Idle.Devices {
		if d.SpanNs <= 0 {
			continue
		}
		row := fmt.Sprintf("%-5d%7s%11s%7s", d.Device, units.Share(d.ComputePct), units.Share(d.NonCompPct), units.Share(d.IdlePct)) // the overview's columns
		if !strings.Contains(over, row) {
			t.Errorf("overview lacks device %d's breakdown %q:\n%s", d.Device, row, over)
		}
	}
	if r.Steps.Count > 0 && !strings.Contains(over, "steps "+itoa(r.Steps.Count)+", ") {
		t.Errorf("overview does not show %d steps", r.Steps.Count)
	}
	tr := press(m, "3")
	for _, c := range r.Collectives {
		if c.BusBW != nil && !strings.Contains(tr, ftoa1(*c.BusBW)) {
			t.Errorf("transfers view lacks %s busbw %.1f:\n%s", c.Op, *c.BusBW, tr)
		}
	}
	// The smallest rows sort last (payload, most first): the reversed order shows them too, where
	// a sweep's rows are more than a screenful.
	both := tr + press(m, "S")
	press(m, "S")
	for _, row := range r.Transfers.BySize {
		if row.GBps != nil && !strings.Contains(both, ftoa1(*row.GBps)) {
			t.Errorf("transfers view lacks %s ≤%s at %.1f GB/s", row.Kind, units.Bytes(row.SizeClass), *row.GBps)
		}
	}
	// Stragglers: named alike, or "no straggler" in both when no rank was ever late.
	multi := false
	for _, c := range r.Collectives {
		multi = multi || c.Ranks > 1
	}
	if noneShown := strings.Contains(tr, "no straggler at collectives"); noneShown != (multi && len(r.CollStragglers) == 0) {
		t.Errorf("transfers view says no straggler: %v; the report lists %d stragglers over collectives of two ranks or more: %v",
			noneShown, len(r.CollStragglers), multi)
	}
	if len(r.CollStragglers) > 0 && !strings.Contains(tr, "last at collectives: rank "+strconv.Itoa(int(r.CollStragglers[0].Rank))+" ") {
		t.Errorf("transfers view does not name rank %d, the report's first straggler", r.CollStragglers[0].Rank)
	}
	cm := press(m, "6")
	cc := r.CommCache
	want := units.Counted(cc.Hits, "hit") + " · " + units.Counted(cc.Misses, "miss") + " · " + units.Counted(cc.Evictions, "eviction")
	if !cc.Known {
		want = "Communicator cache " + units.Unknown + " (the source does not record communicators)"
	}
	if !strings.Contains(cm, want) {
		t.Errorf("comms view does not show %q:\n%s", want, cm)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// ftoa1 is a rate as the console's transfers view shows it: one decimal, three significant digits
// below 1 GB/s.
func ftoa1(f float64) string {
	if f < 1 {
		return units.GBpsFigure(f)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}

// The console and the headless report give the same numbers: for every built-in scenario run live,
// for a recording replayed, and for an imported Kineto trace.
func TestConsoleEqualsReport(t *testing.T) {
	for _, name := range scenario.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			cfg := session.Config{Scenario: name, Steps: 3, Seed: 2}
			p, err := session.Prepare(cfg)
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			r := p.Report(out)
			cfg.Window = 1 << 22
			live, err := session.Prepare(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := live.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			info := ui.SourceInfo{Name: name, Meta: live.Meta()}
			m := console(windowSource{info: info, snap: live.Snapshot})
			sameNumbers(t, m, r)
			// Folded as the run went on, as a live console does, and asked again after its end
			// (the deadlock's run ends in a watchdog alert): the same numbers.
			t.Run("folded as it ran", func(t *testing.T) {
				sameNumbers(t, foldAsItRuns(info, live.Snapshot(), 16), r)
			})
		})
	}
	t.Run("replayed recording", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "moe.xfr")
		p, err := session.Prepare(session.Config{Scenario: "moe-alltoall", Steps: 3, Record: path})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		rp, err := session.Replay(context.Background(), session.ReplayConfig{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		rs, err := session.StartReplay(context.Background(), session.ReplayConfig{Path: path}, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Stop()
		for deadline := time.Now().Add(time.Minute); !rs.Done() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		m := console(replaySource{r: rs, info: ui.SourceInfo{Replay: true, Name: path, Meta: rs.Meta, Duration: rs.Duration}})
		sameNumbers(t, m, rp.Report())
	})
	// A console whose view falls behind the replay (a window far smaller than the recording, looked
	// at only once the replay is over) draws what the window still holds, but its numbers are the
	// report's all the same: the analysis never skips what the window trimmed.
	t.Run("replayed recording, the view behind", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "llm.xfr")
		p, err := session.Prepare(session.Config{Scenario: "llm-train", Steps: 6, Record: path})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		rp, err := session.Replay(context.Background(), session.ReplayConfig{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		r := rp.Report()
		const window = 1 // the least: two chunks of the window's
		rs, err := session.StartReplay(context.Background(), session.ReplayConfig{Path: path}, window)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Stop()
		for deadline := time.Now().Add(time.Minute); !rs.Done() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if snap := rs.Snapshot(); snap.Trimmed == 0 || r.Events <= int64(snap.Len()) {
			t.Fatalf("the window holds %d of the %d events (%d trimmed): the view would not be behind", snap.Len(), r.Events, snap.Trimmed)
		}
		m := console(replaySource{r: rs, info: ui.SourceInfo{Replay: true, Name: path, Meta: rs.Meta, Duration: rs.Duration}})
		if over := press(m, "1"); !strings.Contains(over, "went by while the view was behind: in every figure, not in the timeline or the log") {
			t.Errorf("the overview does not say the view was behind:\n%s", over)
		}
		sameNumbers(t, m, r)
		if len(r.Findings) != len(m.Result().Findings) {
			t.Errorf("the console has %d findings; the report %d", len(m.Result().Findings), len(r.Findings))
		}
	})
	t.Run("imported Kineto trace", func(t *testing.T) {
		path := filepath.Join("..", "..", "..", "shared", "data", "kineto", "sampled_rank-0.json.gz")
		if _, err := os.Stat(path); err != nil {
			path = filepath.Join("testdata", "hta_small.json")
		}
		im, err := kineto.ReadFiles([]string{path}, kineto.Options{})
		if err != nil {
			t.Fatal(err)
		}
		meta := importers.ImportedMeta(im, session.Writer)
		an := analysis.New(meta)
		win := timeline.NewWindow(1<<22, im.Strings)
		for i := range im.Events {
			an.Emit(&im.Events[i])
			win.Emit(&im.Events[i])
		}
		r := report.Build(an.Result(im.Strings), meta, report.Run{})
		m := console(windowSource{info: ui.SourceInfo{Name: path, Meta: meta}, snap: win.Snapshot})
		sameNumbers(t, m, r)
	})
	t.Run("256 GPUs: the cluster view's most idle GPUs are the report's", func(t *testing.T) {
		topo := filepath.Join(t.TempDir(), "h32.yaml")
		if err := os.WriteFile(topo, []byte("base: h100x8x4\nhosts: 32\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := session.Config{Scenario: "straggler", Steps: 2, Seed: 2, Topology: topo}
		p, err := session.Prepare(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r := p.Report(out)
		cfg.Window = 1 << 22
		live, err := session.Prepare(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := live.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		m := console(windowSource{info: ui.SourceInfo{Name: "straggler", Meta: live.Meta()}, snap: live.Snapshot})
		// The figures themselves (sameNumbers also reads each device's overview row, which 256
		// devices do not have on one screen).
		if c, w := asJSON(t, m.Result().Breakdown.Devices), asJSON(t, ran(r.Idle.Devices)); c != w {
			t.Errorf("temporal breakdown per device: the console shows\n%s\nthe report says\n%s", c, w)
		}
		press(m, "8")
		view := press(m, "m") // idle %
		if !strings.Contains(view, "metric: idle %") {
			t.Fatalf("the cluster view does not show idle %%:\n%s", view)
		}
		var text strings.Builder
		if err := report.TextWith(&text, r, report.TextOptions{Top: 5}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "across 256 devices") {
			t.Fatalf("the report of 256 devices is not summarised:\n%s", text.String())
		}
		for _, d := range report.MostIdle(r.Idle.Devices, 5) {
			want := fmt.Sprintf("gpu %-5d h%-4d %9s", d.Device, int(d.Device)/8, fmt.Sprintf("%.1f%%", d.IdlePct))
			if !strings.Contains(view, want) {
				t.Errorf("the cluster view's worst GPUs lack the report's %q:\n%s", want, view)
			}
			if row := fmt.Sprintf("%.1f", d.IdlePct); !strings.Contains(text.String(), row) {
				t.Errorf("the report's text lacks device %d's idle %% %s", d.Device, row)
			}
		}
	})
}

// Seeking back in a replay (`g` after the end) starts the console's numbers over: they equal the
// report's again, not twice its bytes, steps and cache hits.
func TestReplaySeekBackCountsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.xfr")
	p, err := session.Prepare(session.Config{Scenario: "pipeline", Steps: 3, Record: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rp, err := session.Replay(context.Background(), session.ReplayConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	want := rp.Report()
	rs, err := session.StartReplay(context.Background(), session.ReplayConfig{Path: path}, 1<<22)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Stop()
	src := replaySource{r: rs, info: ui.SourceInfo{Replay: true, Name: path, Meta: rs.Meta, Duration: rs.Duration}}
	m := console(src)
	settle := func() {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !rs.Done() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		m.Update(tea.KeyPressMsg{Code: ' ', Text: " "}) // pause and resume: a refresh now
		m.Update(tea.KeyPressMsg{Code: ' ', Text: " "})
	}
	settle()
	if got := m.Result().Links.MovedBytes; got != want.Links.MovedBytes {
		t.Fatalf("before the seek the console moved %d bytes; the report %d", got, want.Links.MovedBytes)
	}
	for range 3 {
		press(m, "g") // back to the start: the replay plays the whole recording again
		settle()
	}
	sameNumbers(t, m, want)
}

// A paced console replay emits each op when the position reaches its end, not in the recording's
// order (an imported trace holds ops by start): played to the end, its numbers are the headless
// report's all the same, for a simulator's recording (ops by end) and an imported trace (by start).
func TestPacedReplayEqualsReport(t *testing.T) {
	sim := filepath.Join(t.TempDir(), "pipeline.xfr")
	p, err := session.Prepare(session.Config{Scenario: "pipeline", Steps: 3, Record: sim})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	trace, err := importToRecording([]string{filepath.Join("testdata", "hta_small.json")}, importers.Options{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(filepath.Dir(trace))
	for _, path := range []string{sim, trace} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			rp, err := session.Replay(context.Background(), session.ReplayConfig{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			// A manual clock paces the replay, so every position is looked at whatever the load.
			clk := manualclock.New(time.Unix(1_000_000, 0))
			rs, err := session.StartReplay(context.Background(), session.ReplayConfig{Path: path, Speed: 1, Clock: clk}, 1<<22)
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Stop()
			src := replaySource{r: rs, info: ui.SourceInfo{Replay: true, Name: path, Meta: rs.Meta, Duration: rs.Duration}}
			m := console(src)
			running := 0
			// The whole recording in two seconds of the clock, looked at every 10 ms: coarser than
			// the replay's shortest sleep, so ops end, and are emitted, in between.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := clk.WaitSleeper(ctx, 0); err != nil {
				t.Fatal("the replay never waited for its first op:", err)
			}
			seq := clk.Seq()
			rs.SetSpeed(float64(rs.Duration) / 2e9)
			if err := clk.WaitSleeper(ctx, seq); err != nil {
				t.Fatal("the replay did not take the new speed:", err)
			}
			const step = 10 * time.Millisecond
			for deadline := time.Now().Add(time.Minute); !rs.Done() && time.Now().Before(deadline); {
				seq := clk.Seq()
				if clk.Advance(step) {
					// Wait until the replay has done what the new time asks and sleeps again.
					for settle := time.Now().Add(10 * time.Second); !rs.Done() && time.Now().Before(settle); time.Sleep(100 * time.Microsecond) {
						if woke(clk, seq) {
							break
						}
					}
				}
				running += len(rs.InFlight(nil))
			}
			if running == 0 {
				t.Error("nothing was ever under way during the replay")
			}
			rec, err := recordings.ReadFile(path, recordings.Options{})
			if err != nil {
				t.Fatal(err)
			}
			snap, moved := rs.Snapshot(), 0
			for i := snap.Base; i < snap.Total && int(i) < len(rec.Events); i++ {
				if *snap.At(i) != rec.Events[i] {
					moved++
				}
			}
			t.Logf("%d of %d events emitted out of the recording's order", moved, len(rec.Events))
			if strings.HasPrefix(filepath.Base(path), "hta") && moved == 0 {
				t.Error("the trace's ops, by start, were emitted in the recording's order: not each at its end")
			}
			m.Update(tea.KeyPressMsg{Code: ' ', Text: " "}) // pause and resume: a refresh now
			m.Update(tea.KeyPressMsg{Code: ' ', Text: " "})
			sameNumbers(t, m, rp.Report())
		})
	}
}

// woke reports whether the replay has set a timer since the seq-th: it has caught up with the clock.
func woke(clk *manualclock.Clock, seq uint64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	return clk.WaitSleeper(ctx, seq) == nil
}

// Seeking back in a console replay whose view fell behind (a window far smaller than the
// recording) counts no idle time for the jump: after the seek to T the console's idle accounting
// is the headless `replay --from T`'s, stream by stream, not gaps that run from T up to where the
// view last looked.
func TestReplaySeekBackIdleFromSeek(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llm.xfr")
	p, err := session.Prepare(session.Config{Scenario: "llm-train", Steps: 6, Record: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rs, err := session.StartReplay(context.Background(), session.ReplayConfig{Path: path}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Stop()
	m := console(replaySource{r: rs, info: ui.SourceInfo{Replay: true, Name: path, Meta: rs.Meta, Duration: rs.Duration}})
	settle := func() {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !rs.Done() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		m.Update(tea.KeyPressMsg{Code: ' ', Text: " "}) // pause and resume: a refresh now
		m.Update(tea.KeyPressMsg{Code: ' ', Text: " "})
	}
	settle()
	from := rs.Duration / 2
	rs.SeekTo(from)
	settle()
	rp, err := session.Replay(context.Background(), session.ReplayConfig{Path: path, From: time.Duration(from)})
	if err != nil {
		t.Fatal(err)
	}
	r := rp.Report()
	if snap := rs.Snapshot(); snap.Trimmed == 0 {
		t.Fatalf("the window trimmed nothing of the %d events replayed since the seek: the view was not behind", r.Events)
	}
	res := m.Result()
	if c, w := asJSON(t, res.StreamIdle.ByCause), asJSON(t, r.Idle.ByCause); c != w {
		t.Errorf("idle by cause since the seek: the console shows\n%s\nthe report from there says\n%s", c, w)
	}
	if c, w := asJSON(t, res.StreamIdle.Streams), asJSON(t, r.Idle.Streams); c != w {
		t.Errorf("idle per stream since the seek: the console shows\n%s\nthe report from there says\n%s", c, w)
	}
	if c, w := asJSON(t, res.Breakdown.Devices), asJSON(t, ran(r.Idle.Devices)); c != w {
		t.Errorf("idle per device since the seek: the console shows\n%s\nthe report from there says\n%s", c, w)
	}
}

// ran is the report's device rows of the devices that ran something: the report also lists each
// other device of the job with unknown figures, as the console's overview pads its table.
func ran(devs []analysis.DeviceTime) []analysis.DeviceTime {
	return slices.DeleteFunc(slices.Clone(devs), func(d analysis.DeviceTime) bool { return !d.Ran() })
}
