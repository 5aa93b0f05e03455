package session

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// BenchmarkHeadless is `xfertop run --headless` without the printing: a scenario prepared, run to
// its end with the analysis folding every event, and the report built, in events per CPU second
// (the process's user and system time: a loaded machine stretches the wall clock, not this). The
// same run without the analysis (its sink taken out of the fan-out, no report) runs beside it in
// the same benchmark, so that the analysis's share of the whole is their difference:
//
//	go test ./session -run '^$' -bench Headless -benchtime 3x -cpu 1
func BenchmarkHeadless(b *testing.B) {
	for _, sc := range []struct {
		name  string
		steps int
	}{{"llm-train", 40}, {"overlap", 400}, {"allreduce-sweep", 200}} {
		b.Run(sc.name, func(b *testing.B) {
			var whole, engine time.Duration
			events, i := 0, 0
			for b.Loop() {
				// In turn, each first every other time: the first of a pair grows the heap
				// the second then finds.
				first := i%2 == 0
				i++
				n, d := headless(b, sc.name, sc.steps, first)
				n2, d2 := headless(b, sc.name, sc.steps, !first)
				if !first {
					d, d2 = d2, d
				}
				whole += d
				engine += d2
				if n != n2 {
					b.Fatalf("%d events with the analysis, %d without", n, n2)
				}
				events = n
			}
			b.ReportMetric(float64(events)*float64(b.N)/whole.Seconds(), "events/cpu-s")
			b.ReportMetric(float64(events)*float64(b.N)/engine.Seconds(), "engine-events/cpu-s")
			b.ReportMetric(100*(whole-engine).Seconds()/whole.Seconds(), "analysis-%")
			b.ReportMetric(float64(events), "events")
		})
	}
}

// headless runs a scenario, with the analysis and the report or without, and returns its events
// and the CPU time it took.
func headless(b *testing.B, name string, steps int, analyse bool) (int, time.Duration) {
	p, err := Prepare(Config{Scenario: name, Steps: steps, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	if !analyse {
		p.fan.sinks = slices.DeleteFunc(p.fan.sinks, func(s timeline.Sink) bool { _, ok := s.(*analysis.Analyzer); return ok })
	}
	c0 := cpuTime()
	out, err := p.Run(context.Background())
	if err != nil || out.Ended != nil {
		b.Fatal(err, out.Ended)
	}
	if analyse {
		p.Report(out)
	}
	d := cpuTime() - c0
	return int(p.progress.events.Load()), d
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
