package whatif

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// noStepsTrace is stepsTrace's host and kernels with no step marked: ops kernels and their
// launches, 2×ops graph nodes.
func noStepsTrace(s *timeline.Strings, ops int) []timeline.Event {
	evs := stepsTrace(s, 1, ops)
	return evs[:len(evs)-1] // the step mark is last
}

// A trace without steps is one window, its whole graph held at once (what the command's
// --max-graph-ops bounds); the same ops marked in 10 steps are windows of about two steps' ops.
func TestNoStepsHoldsWholeGraph(t *testing.T) {
	const ops = 2000
	s := timeline.NewStrings()
	none, _ := streamed(t, noStepsTrace(s, ops), s, Options{Scale: map[string]float64{"*": 0.5}}, 512)
	if none.Windows != 1 || none.MaxWindow != 2*ops {
		t.Errorf("no steps: %d windows, at most %d events a window; want 1 window of all %d", none.Windows, none.MaxWindow, 2*ops)
	}
	steps, _ := streamed(t, stepsTrace(s, 10, ops/10), s, Options{Scale: map[string]float64{"*": 0.5}}, 512)
	if steps.Windows < 10 || steps.MaxWindow > 2*(2*ops/10+1)+8 {
		t.Errorf("10 steps: %d windows, at most %d events a window; want ≥ 10 windows of about two steps' %d", steps.Windows, steps.MaxWindow, 2*(2*ops/10+1))
	}
}

// BenchmarkNoStepsMemory streams the what-if of traces without steps, as the command does (the
// plan, then the replay), of 10,000 and 100,000 kernels (and their launches), every kernel
// halved, and reports the peak heap in use while replaying (sampled every 5 ms), per graph op
// and in all: with no steps to cut at, the peak grows with the trace, at about the same bytes an
// op (what the command's --max-graph-ops bound and its warning state).
//
//	go test ./whatif -run '^$' -bench NoStepsMemory -benchtime 1x
func BenchmarkNoStepsMemory(b *testing.B) {
	for _, ops := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("kernels=%d", ops), func(b *testing.B) {
			s := timeline.NewStrings()
			evs := noStepsTrace(s, ops)
			o := Options{Scale: map[string]float64{"*": 0.5}}
			var peak, live uint64
			for b.Loop() {
				var plan Plan
				plan.Events(evs)
				runtime.GC()
				h := watchHeap()
				st := NewStream(s, o, plan.Params(), Outputs{})
				for rest := evs; len(rest) > 0; {
					n := min(4096, len(rest))
					if err := st.Events(rest[:n]); err != nil {
						b.Fatal(err)
					}
					rest = rest[n:]
				}
				if _, err := st.Close(); err != nil {
					b.Fatal(err)
				}
				p, l := h.end()
				peak, live = max(peak, p), max(live, l)
			}
			b.ReportMetric(float64(peak)/float64(2*ops), "peak-B/op")
			b.ReportMetric(float64(live)/float64(2*ops), "live-B/op")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}
