package whatif

import (
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
