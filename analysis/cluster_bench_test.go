package analysis_test

import (
	"context"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
)

// capture keeps every event a session emits, in the order emitted.
type capture struct{ evs []timeline.Event }

func (c *capture) Emit(e *timeline.Event) { c.evs = append(c.evs, *e) }

// recordedRun is one run's events as the analyzer received them, and what the analyzer needs to
// fold them again.
type recordedRun struct {
	evs  []timeline.Event
	meta timeline.Meta
	strs *timeline.Strings
}

// llmTrain1024 is one step of llm-train on 128 hosts × 8 H100 (1,024 GPUs, some 3,000 streams),
// as `xfertop run --headless --scenario llm-train --steps 1 --topology h100x8x4 --hosts 128`
// emits it: 577,584 events. Simulated once, kept in memory (46 MB).
var llmTrain1024 = sync.OnceValues(func() (recordedRun, error) {
	c := &capture{}
	p, err := session.Prepare(session.Config{Scenario: "llm-train", Steps: 1, Seed: 1, Topology: "h100x8x4", Hosts: 128}, c)
	if err != nil {
		return recordedRun{}, err
	}
	if _, err := p.Run(context.Background()); err != nil {
		return recordedRun{}, err
	}
	return recordedRun{evs: c.evs, meta: p.Meta(), strs: p.Strings()}, nil
})

// BenchmarkAnalyzer1024GPUs folds a recorded 1,024-GPU llm-train step into a fresh analyzer and
// takes its Result (what `run --headless` asks the analysis for), once per iteration: events per
// CPU second (the process's user + system time, which a loaded machine stretches less than the
// wall clock) and bytes allocated per event.
//
//	go test ./analysis -run '^$' -bench Analyzer1024GPUs -benchtime 5x -cpu 1
func BenchmarkAnalyzer1024GPUs(b *testing.B) {
	run, err := llmTrain1024()
	if err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for b.Loop() {
		c0 := cpuTime()
		a := analysis.New(run.meta)
		for i := range run.evs {
			a.Emit(&run.evs[i])
		}
		_ = a.Result(run.strs)
		cpu += cpuTime() - c0
	}
	runtime.ReadMemStats(&ms1)
	n := float64(len(run.evs)) * float64(b.N)
	b.ReportMetric(n/cpu.Seconds(), "events/cpu-s")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/n, "B/event")
	b.ReportMetric(float64(len(run.evs)), "events")
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
