package ui

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/views/compare"
)

// Run with: go test ./ui -run '^$' -bench 'Frame|RunningTick' -cpu 1 -count 5 (frame time p99 goal: ≤ 3 ms)

// millionEvents runs the overlap scenario on 32 GPUs (a compute and a transfer stream each: 64
// streams) until its window holds a million events.
func millionEvents(b *testing.B) *fakeSource {
	p, err := session.Prepare(session.Config{Scenario: "overlap", Topology: "h100x8x4", Steps: 180, Seed: 1, Window: 1 << 21})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	return &fakeSource{win: p, info: SourceInfo{Name: "overlap", Meta: p.Meta()}, status: Status{Speed: 1}}
}

// BenchmarkFrame renders one frame of each view with 64 streams and ≥ 1 M events in the store
// (goal: ≤ 3 ms p99 on one core), the compare view over two such runs too. Ingest is measured
// separately by BenchmarkIngest.
func BenchmarkFrame(b *testing.B) {
	src := millionEvents(b)
	snap := src.win.Snapshot()
	if snap.Len() < 1_000_000 {
		b.Fatalf("only %d events", snap.Len())
	}
	m := sized(src, 200, 60)
	if n := len(m.state.Tracks); n != 64 {
		b.Fatalf("%d streams; want 64", n)
	}
	for tab := range len(tabNames) {
		b.Run(tabNames[tab], func(b *testing.B) {
			m.tab = tab
			frameP99(b, m)
			b.ReportMetric(float64(snap.Len()), "events")
		})
	}
	// The timeline of a live run whose every stream has an op running: each drawn from its start
	// to now, against the Timeline above (the same events, finished).
	b.Run("TimelineRunning", func(b *testing.B) {
		live := running(src, m)
		lm := sized(live, 200, 60)
		lm.tab = TabTimeline
		if len(lm.fr.Running) != 64 || !lm.fr.Live {
			b.Fatalf("%d ops running (live %v); want one per stream", len(lm.fr.Running), lm.fr.Live)
		}
		frameP99(b, lm)
		b.ReportMetric(float64(snap.Len()), "events")
	})
	b.Run("Compare", func(b *testing.B) {
		rep := report.Build(m.Result(), src.info.Meta, report.Run{})
		run := compare.Run{Label: "overlap", Snap: snap}
		c := sizedCompare(compare.Data{Cmp: report.Compare(rep, rep, "a", "b"), Runs: [2]compare.Run{run, run}}, 200, 60)
		frameP99(b, c)
		b.ReportMetric(float64(2*snap.Len()), "events")
	})
}

// frameP99 draws m's frame b.N times and reports the 99th percentile of the time one takes on the
// wall clock (ms-p99) and, on Linux, of the CPU time it takes (cpu-ms-p99: the frame's own cost,
// which a machine busy with other work does not inflate). before runs ahead of each frame, untimed.
func frameP99(b *testing.B, m *Model, before ...func()) {
	runtime.LockOSThread() // the thread's CPU clock must be this goroutine's
	defer runtime.UnlockOSThread()
	var wall, cpu []time.Duration
	for b.Loop() {
		for _, f := range before {
			f()
		}
		t0 := time.Now()
		c0, ok := threadCPU()
		_ = m.View()
		if c1, ok1 := threadCPU(); ok && ok1 {
			cpu = append(cpu, c1-c0)
		}
		wall = append(wall, time.Since(t0))
	}
	p99 := func(ts []time.Duration) float64 {
		slices.Sort(ts)
		return float64(ts[min(len(ts)-1, len(ts)*99/100)].Microseconds()) / 1000
	}
	b.ReportMetric(p99(wall), "ms-p99")
	if len(cpu) > 0 {
		b.ReportMetric(p99(cpu), "cpu-ms-p99")
	}
}

// BenchmarkIngest folds a million events into the console's display state and its analysis, as
// ticks do a little at a time while a session runs (goal ≥ 10 M events/s).
func BenchmarkIngest(b *testing.B) {
	src := millionEvents(b)
	snap := src.win.Snapshot()
	for b.Loop() {
		f := newFeed(src, src.Info())
		f.state.Update(&snap, f.an.Emit)
	}
	b.ReportMetric(float64(snap.Len())*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// running is src, live, with an op running on each of m's streams since its last one ended.
func running(src *fakeSource, m *Model) *runningSource {
	live := &runningSource{fakeSource: &fakeSource{win: src.win, info: src.info, status: Status{Speed: 1}}}
	now := m.snap.Now
	for _, tr := range m.state.Tracks {
		start := tr.Ops[len(tr.Ops)-1].End - 1
		live.running = append(live.running, timeline.Event{Kind: timeline.KindKernel, Device: tr.Device, Stream: tr.Stream,
			Start: min(start, now-1), End: now})
	}
	return live
}

// BenchmarkRunningTick is what a tick adds to ask a live source for its running ops (one per
// stream of 64) and sort them for the timeline: no allocation once the buffer has grown (the fold
// then copies them into its frame, which the console reads while the next fold runs).
func BenchmarkRunningTick(b *testing.B) {
	src := millionEvents(b)
	m := sized(src, 200, 60)
	live := running(src, m)
	lm := New(live, Options{IsDark: true})
	lm.feed.readRunning()
	b.ReportAllocs()
	for b.Loop() {
		lm.feed.readRunning()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/tick")
	b.ReportMetric(float64(len(lm.feed.running)), "ops")
}

// streams8 is a scenario of 8 streams a GPU: a data-parallel overlap phase (a compute and a
// transfer stream) and six copy sweeps (a stream each).
const streams8 = `name: streams8
description: 8 streams a GPU, for the console's frame at cluster scale
topology: h100x8
steps: 1
phases:
  - overlap: {buckets: 4, bucket_bytes: 1MiB, compute: 1ms, kernels_per_bucket: 4, groups: "off"}
  - copy_sweep: {dirs: h2d, min_bytes: 64KiB, max_bytes: 1MiB, factor: 4, iters: 8}
  - copy_sweep: {dirs: d2h, min_bytes: 64KiB, max_bytes: 1MiB, factor: 4, iters: 8}
  - copy_sweep: {dirs: d2d, min_bytes: 64KiB, max_bytes: 1MiB, factor: 4, iters: 8}
  - copy_sweep: {dirs: h2d, min_bytes: 64KiB, max_bytes: 1MiB, factor: 4, iters: 8}
  - copy_sweep: {dirs: d2h, min_bytes: 64KiB, max_bytes: 1MiB, factor: 4, iters: 8}
  - copy_sweep: {dirs: d2d, min_bytes: 64KiB, max_bytes: 1MiB, factor: 4, iters: 8}
`

// clusterRun runs streams8 for a step on 512 hosts of 8 H100s (4,096 GPUs, 32,768 streams: 1.4 M
// events) into a window of 1 M events (2^20).
func clusterRun(b *testing.B) *fakeSource {
	dir := b.TempDir()
	topo, scen := filepath.Join(dir, "h512.yaml"), filepath.Join(dir, "streams8.yaml")
	if err := os.WriteFile(topo, []byte("base: h100x8x4\nhosts: 512\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(scen, []byte(streams8), 0o644); err != nil {
		b.Fatal(err)
	}
	p, err := session.Prepare(session.Config{Scenario: scen, Topology: topo, Steps: 1, Seed: 1, Window: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	return &fakeSource{win: p, info: SourceInfo{Name: "streams8", Meta: p.Meta()}, status: Status{Speed: 1}}
}

// BenchmarkFrameAtScale renders one frame of each view at 4,096 GPUs and 32,768 streams with a
// full window of 1 M events, at 200×50 (goal: ≤ 8 ms p99 of CPU per frame). The cluster view is drawn at its top
// level and drilled into a host; the overview rolled up by host and sorted most idle first.
//
//	go test ./ui -run '^$' -bench FrameAtScale -cpu 1 -count 5
func BenchmarkFrameAtScale(b *testing.B) {
	src := clusterRun(b)
	snap := src.win.Snapshot()
	m := sized(src, 200, 50)
	if m.info.Meta.Devices != 4096 || len(m.state.Tracks) != 32768 || snap.Len() < 1<<20 {
		b.Fatalf("%d devices, %d streams, %d events; want 4,096, 32,768 and a full window of 2^20", m.info.Meta.Devices, len(m.state.Tracks), snap.Len())
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(snap.Len()), "events")
		b.ReportMetric(float64(len(m.state.Tracks)), "streams")
	}
	for tab := range len(tabNames) {
		b.Run(tabNames[tab], func(b *testing.B) {
			m.tab = tab
			frameP99(b, m)
			report(b)
		})
	}
	// The timeline with every host open (C twice: only the first, then all): 37,376 rows laid out
	// a frame, of which a screenful drawn.
	b.Run("TimelineAllHostsOpen", func(b *testing.B) {
		m.tab = TabTimeline
		press(m, "C", "C")
		defer press(m, "C")
		frameP99(b, m)
		report(b)
	})
	b.Run("OverviewMostIdleFirst", func(b *testing.B) {
		m.tab = TabOverview
		press(m, "s")
		defer press(m, "s")
		frameP99(b, m)
		report(b)
	})
	b.Run("ClusterHost", func(b *testing.B) {
		m.tab = TabCluster
		press(m, "enter")
		defer press(m, "esc")
		frameP99(b, m)
		report(b)
	})
	// Every frame after a tick: a new Result, so the cluster view reads every device's value again
	// (a frame without a new one reuses them, as the Cluster run above does).
	b.Run("ClusterNewResult", func(b *testing.B) {
		m.tab = TabCluster
		frameP99(b, m, func() {
			r := *m.res
			m.res = &r
			m.syncFrame()
		})
		report(b)
	})
	b.Run("ClusterNICMetric", func(b *testing.B) {
		m.tab = TabCluster
		typeCmd(m, "link nic")
		frameP99(b, m)
		report(b)
	})
}
