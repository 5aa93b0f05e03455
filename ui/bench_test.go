package ui

import (
	"context"
	"sort"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/session"
)

// Run with: go test ./ui -run '^$' -bench Frame -cpu 1

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
// (goal: ≤ 8 ms p99 on one core). Ingest is measured separately by BenchmarkIngest.
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
			var times []time.Duration
			for b.Loop() {
				t0 := time.Now()
				_ = m.View()
				times = append(times, time.Since(t0))
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			p99 := times[min(len(times)-1, len(times)*99/100)]
			b.ReportMetric(float64(p99.Microseconds())/1000, "ms-p99")
			b.ReportMetric(float64(snap.Len()), "events")
		})
	}
}

// BenchmarkIngest folds a million events into the console's display state and its analysis, as
// ticks do a little at a time while a session runs (goal ≥ 10 M events/s).
func BenchmarkIngest(b *testing.B) {
	src := millionEvents(b)
	snap := src.win.Snapshot()
	for b.Loop() {
		m := New(src, Options{IsDark: true})
		m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
		m.state.Update(&snap, m.an.Emit)
	}
	b.ReportMetric(float64(snap.Len())*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
