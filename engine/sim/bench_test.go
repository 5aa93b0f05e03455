package sim_test

import (
	"context"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// Run with: go test ./engine/sim -run '^$' -bench . -benchtime 3x -cpu 1
// and compare runs with benchstat.

// countSink counts events and keeps nothing: it measures the simulator, not a consumer.
type countSink struct{ n int }

func (c *countSink) Emit(*timeline.Event) { c.n++ }

func benchClient(b *testing.B, topo string, sink timeline.Sink) *engine.Client {
	tp, _ := sim.TopologyByName(topo)
	strs := timeline.NewStrings()
	s, err := sim.New(sim.Config{Topology: tp, Seed: 1}, sink, strs)
	if err != nil {
		b.Fatal(err)
	}
	return engine.NewClient(s, sink, engine.DefaultOptions())
}

// stepMix issues a training-step-like mix on every device of an 8-GPU host: kernels with events,
// copies in each direction, a ring of grouped sends/receives, an all-reduce and a barrier.
func stepMix(b *testing.B, c *engine.Client) {
	devs := []engine.DeviceID{0, 1, 2, 3, 4, 5, 6, 7}
	for _, d := range devs {
		comp := c.ComputeStream(d)
		for range 16 {
			_ = c.Kernel(comp, 50_000, "k")
		}
		ev, _ := c.Record(comp)
		_ = c.WaitEvent(c.TransferStream(d), ev)
		_, _ = c.Copy(comp, timeline.CopyH2D, 1<<20, -1, false)
		_, _ = c.Copy(comp, timeline.CopyD2H, 1<<20, -1, false)
	}
	c.GroupStart()
	for i, d := range devs {
		next := devs[(i+1)%len(devs)]
		id := c.NewOpID()
		_, _ = c.Send(c.TransferStream(d), next, 4<<20, id)
		_, _ = c.Recv(c.TransferStream(next), d, 4<<20, id)
	}
	c.GroupEnd()
	if _, err := c.Collective(timeline.CollAllReduce, devs, 16<<20, "ar"); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Barrier(devs, "b"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSimEvents measures simulated events per second on one core (goal ≥ 3 M/s). The
// baseline in the same run is the Store sink, which shows what keeping the events costs. On a
// shared machine the wall-clock rate (events/s) moves with the load; events/cpu-s divides by the
// CPU time the process used in the loop (getrusage user + system: the simulator, and the
// collector with it), which other processes do not take from.
func BenchmarkSimEvents(b *testing.B) {
	for _, tc := range []struct {
		name string
		sink func() timeline.Sink
	}{
		{"discard", func() timeline.Sink { return &countSink{} }},
		{"store", func() timeline.Sink { return timeline.NewStore(nil) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sink := tc.sink()
			counter := &countSink{}
			fan := fanSink{sink, counter}
			c := benchClient(b, "h100x8", fan)
			stepMix(b, c)
			if err := c.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			counter.n = 0
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, cpuOK := cpuNs()
			for b.Loop() {
				stepMix(b, c)
				if err := c.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			if cpu1, ok := cpuNs(); cpuOK && ok && cpu1 > cpu0 {
				b.ReportMetric(float64(counter.n)/(float64(cpu1-cpu0)/1e9), "events/cpu-s")
			}
			b.ReportMetric(float64(counter.n)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(counter.n)/float64(b.N), "events/op")
		})
	}
}

type fanSink [2]timeline.Sink

func (f fanSink) Emit(e *timeline.Event) { f[0].Emit(e); f[1].Emit(e) }

// BenchmarkPreparedExecute executes a prepared cross-host exchange (16 transfers, 8 per direction,
// grouped per device) in steady state: planning happened once, so it must report 0 allocs/op.
func BenchmarkPreparedExecute(b *testing.B) {
	sink := &countSink{}
	c := benchClient(b, "h100x8x2", sink)
	var pairs []engine.Pair
	for i := range engine.DeviceID(8) {
		pairs = append(pairs, engine.Pair{Src: i, Dst: 8 + i, Bytes: 8 << 20}, engine.Pair{Src: 8 + i, Dst: i, Bytes: 8 << 20})
	}
	p, err := c.Prepare(pairs, "exchange")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for range 3 { // warm up: communicator creation, pools and queues grow to their steady size
		if err := p.Execute(0); err != nil {
			b.Fatal(err)
		}
		if err := c.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
	sink.n = 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := p.Execute(0); err != nil {
			b.Fatal(err)
		}
		if err := c.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(sink.n)/float64(b.N), "events/op")
}
