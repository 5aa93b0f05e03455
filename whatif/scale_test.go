package whatif

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/timeline"
)

// A kernel that several --scale-kernel NAMEs match takes the product of their factors, whatever
// their order: *=2 with gemm=0.5 leaves gemm (10 µs) at 10 µs and doubles relu (5 µs) to 10.
// Map order is random, so the replay is run many times.
func TestReplayScaleFactorsMultiply(t *testing.T) {
	s := timeline.NewStrings()
	g, err := depgraph.Build(oneRank(s), s)
	if err != nil {
		t.Fatal(err)
	}
	for range 32 {
		r, err := Replay(g, s, Options{Scale: map[string]float64{"*": 2, "gemm": 0.5}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range r.Events {
			if e.Kind == timeline.KindKernel && e.End-e.Start != 10*us {
				t.Fatalf("%s takes %d ns; want 10 µs (its factors multiplied)", s.Lookup(e.Label), e.End-e.Start)
			}
		}
		if r.Scaled != 2 {
			t.Fatalf("scaled %d kernels; want 2", r.Scaled)
		}
	}
}

// --scale-kernel names compute kernels: a NAME only NCCL kernels contain is refused saying they are
// communication, and what changes them.
func TestReplayScaleNCCLKernel(t *testing.T) {
	s := timeline.NewStrings()
	evs := oneRank(s)
	evs = append(evs, timeline.Event{Kind: timeline.KindCollective, Device: 0, Peer: timeline.NoDevice, Stream: 20,
		Start: 40 * us, End: 60 * us, Label: s.ID("ncclDevKernel_SendRecv(ncclDevComm*)")})
	g, err := depgraph.Build(evs, s)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Replay(g, s, Options{Scale: map[string]float64{"SendRecv": 0.5}})
	if err == nil || !strings.Contains(err.Error(), `the kernels whose name contains "SendRecv" are NCCL's (1), communication`) || !strings.Contains(err.Error(), "--comm") {
		t.Errorf("--scale-kernel SendRecv=0.5: %v; want it refused as communication, pointing at --comm", err)
	}
}
