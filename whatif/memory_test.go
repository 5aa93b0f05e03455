package whatif

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// stepsTrace is a host launching ops kernels a step, steps times, each step marked: per step 2×ops
// graph nodes (the launches and the kernels) and the step.
func stepsTrace(s *timeline.Strings, steps, ops int) []timeline.Event {
	evs := make([]timeline.Event, 0, steps*(2*ops+1))
	t, op := int64(0), uint64(0)
	for k := range steps {
		start := t
		for i := range ops {
			op++
			evs = append(evs, launch(s, t, t+2, op), kern(s, fmt.Sprintf("k%d", i%8), 0, 7, t+3, t+8, op))
			t += 10
		}
		evs = append(evs, timeline.Event{Kind: timeline.KindStep, Start: start * us, End: t * us, Device: timeline.NoDevice,
			Peer: timeline.NoDevice, Aux: uint32(k + 1)})
		t += 50
	}
	return evs
}

// BenchmarkRunMemory measures what a what-if holds per op of the trace (its graph, the two
// replays, the critical paths): the heap live after Run, and all it allocated, per node. The two
// sizes have steps of the same size and ten times as many of them: a memory bounded by a step
// would hold about as much for both; today it grows with the trace (docs/whatif.md).
func BenchmarkRunMemory(b *testing.B) {
	for _, steps := range []int{10, 100} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			s := timeline.NewStrings()
			evs := stepsTrace(s, steps, 1000)
			o := Options{Scale: map[string]float64{"*": 0.5}}
			var live, alloc, nodes float64
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				w, err := Run(evs, s, o)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				nodes = float64(len(w.Graph.Nodes))
				live = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / nodes
				alloc = float64(after.TotalAlloc-before.TotalAlloc) / nodes
				runtime.KeepAlive(w)
			}
			b.ReportMetric(live, "live-B/node")
			b.ReportMetric(alloc, "alloc-B/node")
			b.ReportMetric(nodes, "nodes")
		})
	}
}
