package session

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/session/manualclock"
	"github.com/xfertop/xfertop/timeline"
)

// Run with: go test ./session -run '^$' -bench ReplayTick -count 5

// BenchmarkReplayTick is what a paced replay costs per console tick (60 ms of wall clock, at speed
// 1) over a recording of the overlap scenario on 32 GPUs (64 streams, ops by end) and over the same
// ops by start (an import's order, with ops 1,000 times longer than the rest among them), with the
// ops under way tracked and published and asked for once a tick as the console does (the console's
// replay) and without (the replay as it was: the recording's order, nothing tracked), the two in
// turn in the same run. It reports each one's ns/tick and their ratio. Most of the difference is
// decoding: in a simulator's recording nearly every chunk holds an op that started long before it
// (a step, a wait), so the look ahead decodes nearly every chunk once before the replay reads it.
func BenchmarkReplayTick(b *testing.B) {
	byEnd := recordOverlap(b)
	rec, err := recordings.ReadFile(byEnd, recordings.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(rec.Events); i += 997 { // some long ops among the rest
		rec.Events[i].End += 1000 * (rec.Events[i].End - rec.Events[i].Start)
	}
	byStart, _ := writeOrdered(b, rec.Events, false)
	for _, c := range []struct{ name, path string }{{"by-end", byEnd}, {"by-start", byStart}} {
		b.Run(c.name, func(b *testing.B) {
			var with, without time.Duration
			ticks, ops := 0, 0
			for b.Loop() {
				d, _, _ := replayTicks(b, c.path, false)
				without += d
				d, n, o := replayTicks(b, c.path, true)
				with, ticks, ops = with+d, ticks+n, ops+o
			}
			b.ReportMetric(float64(without.Nanoseconds())/float64(ticks), "ns/tick-without")
			b.ReportMetric(float64(with.Nanoseconds())/float64(ticks), "ns/tick-with")
			b.ReportMetric(float64(with)/float64(without), "ratio")
			b.ReportMetric(float64(ops)/float64(ticks), "running/tick")
			b.ReportMetric(float64(len(rec.Events))/float64(ticks/b.N), "events/tick")
		})
	}
}

// recordOverlap records 40 steps of the overlap scenario on 32 GPUs.
func recordOverlap(b *testing.B) string {
	path := filepath.Join(b.TempDir(), "overlap.xfr")
	p, err := Prepare(Config{Scenario: "overlap", Topology: "h100x8x4", Steps: 40, Seed: 1, Record: path})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	return path
}

// replayTicks replays path at speed 1 into a window, on a manual clock moved on 60 ms a tick, and
// returns the wall time it took, the ticks, and how many ops it reported under way in all.
func replayTicks(b *testing.B, path string, running bool) (time.Duration, int, int) {
	r, err := recordings.Open(path, recordings.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	win := timeline.NewWindow(1<<20, r.Strings())
	clk := manualclock.New(time.Unix(1_000_000, 0))
	set := &runningSet{clock: clk}
	o := playOpts{clock: clk}
	if running {
		o.running = set
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		if _, err := play(context.Background(), r, 0, func() float64 { return 1 }, win.Emit, o); err != nil {
			b.Error(err)
		}
	}()
	_ = clk.WaitSleeper(ctx, 0)
	var buf []timeline.Event
	begin, ticks, ops := time.Now(), 0, 0
	for ctx.Err() == nil {
		s := clk.Seq()
		if clk.Advance(60 * time.Millisecond) {
			_ = clk.WaitSleeper(ctx, s)
		}
		if running {
			buf = set.inFlight(buf[:0])
			ops += len(buf)
		}
		ticks++
	}
	<-done
	return time.Since(begin), ticks, ops
}
