package session

import (
	"context"
	"fmt"
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
		name     string
		steps    int
		topology string
		hosts    int
	}{
		{"llm-train", 40, "", 0}, {"overlap", 400, "", 0}, {"allreduce-sweep", 200, "", 0},
		// At cluster scale: 128 hosts × 8 H100, one step.
		{"llm-train", 1, "h100x8x4", 128}, {"allreduce-sweep", 2, "h100x8x4", 128},
	} {
		name := sc.name
		if sc.hosts > 0 {
			name = fmt.Sprintf("%s-%dgpu", sc.name, sc.hosts*8)
		}
		cfg := Config{Scenario: sc.name, Steps: sc.steps, Seed: 1, Topology: sc.topology, Hosts: sc.hosts}
		b.Run(name, func(b *testing.B) {
			var whole, engine time.Duration
			events, i := 0, 0
			for b.Loop() {
				// In turn, each first every other time: the first of a pair grows the heap
				// the second then finds.
				first := i%2 == 0
				i++
				n, d := headless(b, cfg, first)
				n2, d2 := headless(b, cfg, !first)
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
func headless(b *testing.B, cfg Config, analyse bool) (int, time.Duration) {
	p, err := Prepare(cfg)
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
