package whatif

import (
	"errors"
	"testing"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/timeline"
)

// fuzzEvents turns bytes into a small trace: 8 bytes an event (kind, device, stream, op, start,
// duration, ranks, label), times in µs, so that ops collide on streams, correlations and instants.
func fuzzEvents(b []byte, s *timeline.Strings) []timeline.Event {
	kinds := []timeline.Kind{timeline.KindKernel, timeline.KindMemcpy, timeline.KindCollective, timeline.KindRuntime,
		timeline.KindEventWait, timeline.KindEventRecord, timeline.KindStep, timeline.KindSend, timeline.KindRecv, timeline.KindPeerWait, timeline.KindBarrier}
	labels := []string{"gemm", "cudaLaunchKernel", "cudaDeviceSynchronize", "cudaMemcpy", "FSDP::root_pre_forward"}
	var evs []timeline.Event
	for ; len(b) >= 8; b = b[8:] {
		k := kinds[int(b[0])%len(kinds)]
		e := timeline.Event{Kind: k, Device: int32(b[1] % 3), Stream: uint32(b[2]%3) + 1, Op: uint64(b[3] % 5), Peer: timeline.NoDevice,
			Start: int64(b[4]) * 1000, Ranks: uint16(b[6] % 4), Label: s.ID(labels[int(b[7])%len(labels)]), Aux: uint32(b[3] % 2), Barrier: uint32(b[3] % 2)}
		e.End = e.Start + int64(b[5]%16)*1000
		if k == timeline.KindRuntime || k == timeline.KindStep {
			e.Device, e.Stream = timeline.NoDevice, 0
			e.Queued = e.Start
		}
		if b[1]&0x80 != 0 {
			e.Queued = int64(b[4]) * 1000
		}
		evs = append(evs, e)
	}
	return evs
}

// No trace makes the graph or the replay panic; a graph built is replayed unchanged to its measured
// times, and a step's critical path sums to its length, measured and replayed with the kernels
// scaled (below 1 and just above: the replayed path follows the edges that bound the replay).
func FuzzReplay(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 10, 5, 0, 0, 3, 0, 0, 1, 0, 2, 0, 1, 6, 0, 0, 0, 0, 40, 0, 0})
	f.Add([]byte{2, 0, 0, 3, 10, 9, 2, 0, 2, 1, 1, 3, 12, 9, 2, 0, 4, 0, 1, 1, 5, 9, 0, 0, 5, 1, 2, 1, 5, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 8*64 {
			return
		}
		s := timeline.NewStrings()
		g, err := depgraph.Build(fuzzEvents(b, s), s)
		if errors.Is(err, depgraph.ErrCycle) {
			t.Fatalf("a cycle from timestamps alone: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		r, err := Replay(g, s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for p, tm := range g.Time {
			if r.Times[p] != tm {
				t.Fatalf("point %d replayed at %d; measured %d", p, r.Times[p], tm)
			}
		}
		paths := append(g.CriticalPaths(nil, nil), g.CriticalPathsHTA(nil, nil, nil)...)
		for _, x := range []float64{0, 0.5, 1.01} {
			r, err := Replay(g, s, Options{Scale: map[string]float64{"*": x}})
			if errors.Is(err, ErrOption) {
				break // no kernel to scale
			}
			if err != nil {
				t.Fatal(err)
			}
			paths = append(paths, g.CriticalPathsBound(r.Times, r.Weight, r.Bound)...)
		}
		// Either definition's categories are shares of the step: none negative, summing to it.
		for _, p := range paths {
			var sum int64
			for _, v := range p.ByCategory {
				if v < 0 {
					t.Fatalf("critical path %+v has a negative category", p)
				}
				sum += v
			}
			if sum != p.EndNs-p.StartNs {
				t.Fatalf("critical path %+v sums to %d; want %d", p, sum, p.EndNs-p.StartNs)
			}
		}
	})
}
