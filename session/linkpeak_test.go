package session

import (
	"context"
	"errors"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/scenario"
)

// No link is ever shown above its peak: every built-in scenario on every built-in topology, one
// step each, and in every 50 ms of the run each direction of each device's links carried no more
// than the link's bandwidth. The report, the console and the OTLP metrics all read these rates
// from the one analysis (TestConsoleEqualsReport and otel's TestMetricsEqualReport hold them equal).
// A topology with an oversubscribed rail fabric (testdata) also has every switch port's busiest
// 50 ms, and the hottest port of every bucket, within the port's bandwidth.
func TestNoLinkAbovePeak(t *testing.T) {
	if testing.Short() {
		t.Skip("every built-in on every topology: not in -short")
	}
	for _, name := range scenario.BuiltinNames() {
		for _, topo := range append(topology.Names(), "testdata/rail-oversubscribed.yaml") {
			t.Run(name+"/"+topo, func(t *testing.T) {
				sets := map[string]string{}
				if name == "allreduce-sweep" {
					sets["max_bytes"] = "256MiB" // what the test proves needs no gigabyte collectives
				}
				p, err := Prepare(Config{Scenario: name, Topology: topo, Sets: sets, Steps: 1, Seed: 1})
				var cfgErr *ConfigError
				if errors.As(err, &cfgErr) {
					t.Skipf("%s does not run on %s: %v", name, topo, err)
				}
				if err != nil {
					t.Fatal(err)
				}
				out, err := p.Run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				rep := p.Report(out)
				peaks := p.Meta().LinkPeaks
				if !rep.Links.Measured {
					t.Fatal("the simulator's link figures are not its measurements")
				}
				first, last := int64(0), rep.DurationNs/analysis.BucketNs // a simulated run starts at 0
				checked := 0
				for _, d := range rep.Links.Devices {
					for l := range analysis.NumLinks {
						for dir := range analysis.NumDirs {
							for k := max(first, last-analysis.HistoryBuckets+1); k <= last; k++ {
								r, ok := d.RateDir(l, dir, k)
								if !ok || r == 0 {
									continue
								}
								checked++
								if r > peaks[l]*(1+1e-6) {
									t.Errorf("device %d %v dir %d: %.4g B/s in bucket %d; its peak is %.4g (%.1f%%)", d.Device, l, dir, r, k, peaks[l], 100*r/peaks[l])
								}
							}
						}
					}
				}
				checked += checkFabric(t, rep.Links.Fabric, p.Meta().FabricPortBps, first, last)
				if checked == 0 && rep.Links.MovedBytes > 0 {
					t.Errorf("%d bytes moved and no link rate to check", rep.Links.MovedBytes)
				}
			})
		}
	}
}

// checkFabric checks every fabric port's rates against the port's bandwidth, and returns how many
// rates it checked.
func checkFabric(t *testing.T, f *analysis.Fabric, portBps float64, first, last int64) int {
	t.Helper()
	if f == nil {
		return 0
	}
	if portBps <= 0 || f.PortBps != portBps {
		t.Fatalf("fabric ports carried bytes; their bandwidth is %v in the meta, %v in the analysis", portBps, f.PortBps)
	}
	checked := 0
	for _, p := range f.Hot {
		checked++
		if p.PeakBps > portBps*(1+1e-6) || p.PeakPct == nil || *p.PeakPct > 100+1e-4 {
			t.Errorf("%s: busiest 50 ms %.4g B/s; the port's bandwidth is %.4g", p.Name, p.PeakBps, portBps)
		}
	}
	for k := max(first, last-analysis.HistoryBuckets+1); k <= last; k++ {
		if r, port, ok := f.Rate(k); ok && r > 0 {
			checked++
			if r > portBps*(1+1e-6) {
				t.Errorf("port %d: %.4g B/s in bucket %d; its bandwidth is %.4g", port, r, k, portBps)
			}
		}
	}
	return checked
}
