package whatif

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/timeline"
)

// simRecordingHosts is simRecording on h100x8x4 scaled to hosts hosts (8 GPUs each), as
// `xfertop run --scenario llm-train --topology h100x8x4 --hosts N` records it.
func simRecordingHosts(tb testing.TB, hosts, steps int) (*events, *timeline.Strings, engine.Topology) {
	tb.Helper()
	f, err := scenario.Builtin("llm-train")
	if err != nil {
		tb.Fatal(err)
	}
	topo, err := topology.Builtin("h100x8x4")
	if err != nil {
		tb.Fatal(err)
	}
	if topo, err = topology.WithHosts(topo, hosts); err != nil {
		tb.Fatal(err)
	}
	sc, err := scenario.Resolve(f, nil, topo)
	if err != nil {
		tb.Fatal(err)
	}
	evs, names := &events{}, timeline.NewStrings()
	b, err := sim.New(sim.Config{Topology: topo, Seed: 1}, evs, names)
	if err != nil {
		tb.Fatal(err)
	}
	c := engine.NewClient(b, evs, sc.Options)
	res, err := sc.Run(context.Background(), c, evs, scenario.RunConfig{Steps: steps, Seed: 1})
	if err != nil || res.Err != nil || res.Steps != steps {
		tb.Fatalf("run: %+v, %v", res, err)
	}
	return evs, names, topo
}

// liveHeap is the heap a full garbage collection finds live.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// graphBytes replays evs as `xfertop whatif --topology <NICs at 800 Gb/s>` does, and returns the
// bytes a window holds per event of its graph: the heap a full GC finds live at the window's
// fullest (its graph and both replays built, its ops in the reorder buffers, what earlier windows
// kept), less what was live before the replay began (the recording's events), over the window's
// events, at the window where that is most; and the largest window's events.
func graphBytes(tb testing.TB, evs []timeline.Event, names *timeline.Strings, topo engine.Topology) (perEvent float64, window int) {
	tb.Helper()
	fast := topo
	fast.NICs.Bps *= 2
	var plan Plan
	plan.Events(evs)
	o := Options{Topology: fast, Recorded: topo, TraceDevices: topo.Devices()}
	base := liveHeap()
	s := NewStream(names, o, plan.Params(), Outputs{})
	s.full = func(events int) {
		perEvent = max(perEvent, float64(liveHeap()-base)/float64(events))
	}
	if err := s.Events(evs); err != nil {
		tb.Fatal(err)
	}
	res, err := s.Close()
	if err != nil {
		tb.Fatal(err)
	}
	return perEvent, res.MaxWindow
}

// A window of the simulator's recording (32 GPUs) holds under 1,150 bytes per event of its graph:
// 1,735 while it stored every point it finalised, held its input twice and each replayed op as a
// whole event (88 bytes, twice over with the merge's second array); 975 packed.
func TestStreamGraphBytes(t *testing.T) {
	evs, names, topo := simRecordingHosts(t, 4, 3)
	perEvent, window := graphBytes(t, *evs, names, topo)
	t.Logf("%.0f bytes per event of a window's graph (%d events)", perEvent, window)
	if perEvent > 1150 {
		t.Errorf("%.0f bytes per event of a window's graph (%d events); want under 1,150", perEvent, window)
	}
}

// BenchmarkStreamGraphBytes replays the simulator's llm-train recording (3 steps) at 32 and 1,024
// GPUs as `xfertop whatif r3.xfr --topology <NICs at 800 Gb/s> --hosts N` does, and reports the
// bytes a window holds per event of its graph (graphBytes: B/event) and the largest window's
// events.
//
//	go test ./whatif -run '^$' -bench StreamGraphBytes -benchtime 1x -count 3 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkStreamGraphBytes(b *testing.B) {
	for _, hosts := range []int{4, 128} {
		b.Run(fmt.Sprintf("gpus=%d", hosts*8), func(b *testing.B) {
			evs, names, topo := simRecordingHosts(b, hosts, 3)
			var perEvent float64
			var window int
			for b.Loop() {
				perEvent, window = graphBytes(b, *evs, names, topo)
			}
			b.ReportMetric(perEvent, "B/event")
			b.ReportMetric(float64(window), "window-events")
		})
	}
}
