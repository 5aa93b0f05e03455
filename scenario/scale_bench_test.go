package scenario_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/timeline"
)

// countingSink counts events and keeps none: the benchmark measures the simulator and scenario.
type countingSink struct{ n int }

func (c *countingSink) Emit(*timeline.Event) { c.n++ }

// minCPU is the CPU time BenchmarkSimScale spends on each size at least.
const minCPU = int64(500e6)

// BenchmarkSimScale runs one step of a built-in scenario on N hosts × 8 H100 and reports simulated
// events per CPU-second, so that the cost per event at 1,024 and 4,096 GPUs compares with 16 GPUs in
// the same run. Run with:
//
//	go test ./scenario -run '^$' -bench SimScale -benchtime 1x -cpu 1
func BenchmarkSimScale(b *testing.B) {
	for _, name := range []string{"allreduce-sweep", "llm-train"} {
		for _, hosts := range []int{2, 128, 512} {
			b.Run(fmt.Sprintf("%s/gpus=%d", name, hosts*8), func(b *testing.B) {
				topo, err := sim.TopologyByName("h100x8x4")
				if err != nil {
					b.Fatal(err)
				}
				topo.Hosts = hosts
				f, err := scenario.Builtin(name)
				if err != nil {
					b.Fatal(err)
				}
				step := func() int {
					// Resolved for each step: a phase keeps the streams it made on its client.
					sc, err := scenario.Resolve(f, nil, topo)
					if err != nil {
						b.Fatal(err)
					}
					sink := &countingSink{}
					s, err := sim.New(sim.Config{Topology: topo, Seed: 1, Model: sim.ModelOf(topo)}, sink, timeline.NewStrings())
					if err != nil {
						b.Fatal(err)
					}
					c := engine.NewClient(s, sink, sc.Options)
					if _, err := sc.Run(context.Background(), c, sink, scenario.RunConfig{Steps: 1, Seed: 1}); err != nil {
						b.Fatal(err)
					}
					return sink.n
				}
				// Each size starts from a collected heap, so a small step does not inherit the GC
				// headroom a large one left; and a step is repeated until it has used minCPU, since
				// one 16-GPU step takes a few ms, which the CPU clock measures coarsely.
				runtime.GC()
				var events, steps int
				cpu0, cpuOK := processCPUNs()
				for b.Loop() {
					for {
						events += step()
						steps++
						if cpu, ok := processCPUNs(); !cpuOK || !ok || cpu-cpu0 >= minCPU {
							break
						}
					}
				}
				if cpu1, ok := processCPUNs(); cpuOK && ok && cpu1 > cpu0 {
					b.ReportMetric(float64(events)/(float64(cpu1-cpu0)/1e9), "events/cpu-s")
				}
				b.ReportMetric(float64(events)/float64(steps), "events/step")
			})
		}
	}
}
