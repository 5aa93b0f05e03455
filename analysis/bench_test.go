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
