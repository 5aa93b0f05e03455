package report

import (
	"context"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// tiledEvents runs a short mixed workload on the simulator and repeats its events, shifted in time,
// until there are n: a realistic mix of kernels, copies, sends, collectives, waits and barriers.
func tiledEvents(b *testing.B, n int) ([]timeline.Event, *timeline.Strings) {
	store := timeline.NewStore(nil)
	topo, _ := sim.TopologyByName("h100x8")
	s, err := sim.New(sim.Config{Topology: topo, Seed: 1}, store, store.Strings)
	if err != nil {
		b.Fatal(err)
	}
	c := engine.NewClient(s, store, engine.DefaultOptions())
	devs := []engine.DeviceID{0, 1, 2, 3, 4, 5, 6, 7}
	for step := range 20 {
		for _, d := range devs {
			for range 8 {
				_ = c.Kernel(c.ComputeStream(d), 200_000, "k")
			}
			ev, _ := c.Record(c.ComputeStream(d))
			_ = c.WaitEvent(c.TransferStream(d), ev)
			_, _ = c.Copy(c.ComputeStream(d), timeline.CopyH2D, 4<<20, -1, false)
		}
		_, _ = c.Collective(timeline.CollAllReduce, devs, 64<<20, "ar")
		_, _ = c.Barrier(devs, "b")
		if err := c.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		_ = step
	}
	base := store.Events()
	span := s.Now() + 1
	out := make([]timeline.Event, 0, n)
	for shift := int64(0); len(out) < n; shift += span {
		for _, e := range base {
			if len(out) == n {
				break
			}
			e.Start += shift
			e.End += shift
			e.Queued += shift
			e.Op += uint64(shift) // keep instances distinct across tiles
			out = append(out, e)
		}
	}
	return out, store.Strings
}

// BenchmarkReport10M builds the full report over 10 M events: every accumulator folds each event,
// then the report is laid out. Compare with the report of the commit before the analysis layer
// (report.Build over []Event) by running this benchmark at both commits in one script.
func BenchmarkReport10M(b *testing.B) {
	const n = 10_000_000
	events, strs := tiledEvents(b, n)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m := timeline.Meta{Source: "bench", GPUsPerHost: 8, Devices: 8}
		an := analysis.New(m)
		for i := range events {
			an.Emit(&events[i])
		}
		r := Build(an.Result(strs), m, Run{})
		if r.Events != n {
			b.Fatal("wrong count")
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
