package analysis

import (
	"sync"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// benchWorkload is 16 GPUs on two hosts, 20 kernels per device per step: about 1M events (≈2500
// steps) of kernels, copies, sends, receives, all-reduces, waits, barriers, samples and comm events,
// in end order. Generated once: the benchmark function runs several times while b.N ramps up.
var benchWorkload = synthWorkload{devices: 16, gpusPerHost: 8, kernels: 20}

var benchEvents = sync.OnceValues(func() ([]timeline.Event, *timeline.Strings) {
	strs := timeline.NewStrings()
	return benchWorkload.events(7, 1_000_000, strs), strs
})

// BenchmarkAnalyzer folds the workload one event per op: ns/op and allocs/op are per event (the
// analyzer is Reset, outside the timer, each time the workload is used up).
func BenchmarkAnalyzer(b *testing.B) {
	evs, _ := benchEvents()
	a := New(benchWorkload.meta())
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i % len(evs)
		if j == 0 && i > 0 {
			b.StopTimer()
			a.Reset()
			b.StartTimer()
		}
		a.Emit(&evs[j])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAnalyzerResult is the cost of one Result over the whole workload: what the console pays
// each frame.
func BenchmarkAnalyzerResult(b *testing.B) {
	evs, strs := benchEvents()
	a := fold(benchWorkload.meta(), evs)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = a.Result(strs)
	}
}

// bench512 is 512 GPUs on 64 hosts (the load of `xfertop listen` with 64 senders of 8 GPUs), 20
// kernels per device per step: about 1 M events, 15 k per step.
var bench512 = synthWorkload{devices: 512, gpusPerHost: 8, kernels: 20}

var bench512Events = sync.OnceValues(func() ([]timeline.Event, *timeline.Strings) {
	strs := timeline.NewStrings()
	return bench512.events(11, 1_000_000, strs), strs
})

// BenchmarkResult512Devices is the console's refresh at 512 devices: Result over an analyzer that
// holds about 900 k events, after nothing new ("idle") and after a frame tick's 20 k new events
// ("tick", the fold not timed). ns/op and allocs/op are one Result's. "frame" times the fold of the
// tick's events and the Result together: what a frame costs in all (work a result saves by sharing
// may move into the fold, as the link history's copy on write does).
//
// Run with: go test ./analysis -run '^$' -bench Result512 -count 6 | benchstat -col /… -
func BenchmarkResult512Devices(b *testing.B) {
	evs, strs := bench512Events()
	benchResult(b, bench512, evs, strs)
}

// bench4096 is 4,096 GPUs on 512 hosts, 20 kernels per device per step: a cluster-scale console's
// window of about 1 M events (12 steps of 82 k events).
var bench4096 = synthWorkload{devices: 4096, gpusPerHost: 8, kernels: 20}

var bench4096Events = sync.OnceValues(func() ([]timeline.Event, *timeline.Strings) {
	strs := timeline.NewStrings()
	return bench4096.events(11, 1_000_000, strs), strs
})

// BenchmarkResult4096Devices is BenchmarkResult512Devices at 4,096 devices (the console at
// cluster scale: a Result after a tick should stay within a frame's few milliseconds).
//
// Run with: go test ./analysis -run '^$' -bench Result4096 -count 6
func BenchmarkResult4096Devices(b *testing.B) {
	evs, strs := bench4096Events()
	benchResult(b, bench4096, evs, strs)
}

// benchResult times Result over an analyzer holding evs: idle, after a tick of new events, and a
// tick's fold with its Result.
func benchResult(b *testing.B, w synthWorkload, evs []timeline.Event, strs *timeline.Strings) {
	const tick = 20_000
	base := len(evs) - 5*tick
	b.Run("idle", func(b *testing.B) {
		a := fold(w.meta(), evs)
		a.Result(strs)
		b.ReportAllocs()
		for b.Loop() {
			_ = a.Result(strs)
		}
	})
	for _, timeFold := range []bool{false, true} {
		name := "tick"
		if timeFold {
			name = "frame"
		}
		b.Run(name, func(b *testing.B) {
			a := fold(w.meta(), evs[:base])
			a.Result(strs)
			next := base
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if next+tick > len(evs) {
					a = fold(w.meta(), evs[:base])
					a.Result(strs)
					next = base
				}
				if timeFold {
					b.StartTimer()
				}
				for j := next; j < next+tick; j++ {
					a.Emit(&evs[j])
				}
				next += tick
				b.StartTimer()
				_ = a.Result(strs)
			}
		})
	}
}
