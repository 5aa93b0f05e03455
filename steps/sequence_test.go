package steps

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// trace builds the ops of one stream from steps of names: each step after an idle gap, its ops back
// to back, 10 ns each. Names starting "ar:" are reducing collectives, "ag:" other collectives. It
// returns the ops and each step's interval.
type trace struct {
	ops   []Op
	steps []timeline.Interval
	syms  map[string]uint32
	t     int64
}

func (tr *trace) step(gap int64, names ...string) {
	if tr.syms == nil {
		tr.syms = map[string]uint32{}
	}
	tr.t += gap
	start := tr.t
	for _, n := range names {
		s, ok := tr.syms[n]
		if !ok {
			s = uint32(len(tr.syms) + 1)
			tr.syms[n] = s
		}
		c := NotColl
		switch {
		case strings.HasPrefix(n, "ar:"):
			c = Reducing
		case strings.HasPrefix(n, "ag:"):
			c = Collective
		}
		tr.ops = append(tr.ops, Op{Start: tr.t, End: tr.t + 10, Sym: s, Stream: 7, Coll: c})
		tr.t += 10
	}
	tr.steps = append(tr.steps, timeline.Interval{Start: start, End: tr.t})
}

// layered is one training step: an embedding, layers forward (each of fwd), the loss, layers
// backward (each of bwd), then tail (the gradients' collective, the optimizer).
func layered(layers int, fwd, bwd []string, tail ...string) []string {
	s := []string{"embed"}
	for range layers {
		s = append(s, fwd...)
	}
	s = append(s, "loss")
	for range layers {
		s = append(s, bwd...)
	}
	return append(s, tail...)
}

func TestInferSequence(t *testing.T) {
	fwd := []string{"gemm", "relu", "norm", "attn", "mlp"}
	bwd := []string{"gemm_bwd", "relu_bwd"}
	for _, tc := range []struct {
		name  string
		build func(tr *trace)
		first int // the first expected step of tr.steps (an unlike warm-up step before it is left out)
		p     int // the period, in ops; 0: none is found
	}{
		{"layers inside steps, an all-reduce per step", func(tr *trace) {
			for range 6 {
				tr.step(1000, layered(4, fwd, bwd, "ar:all_reduce", "adam")...)
			}
		}, 0, 1 + 4*5 + 1 + 4*2 + 2},
		{"twenty layers repeat as well as steps do, and no collectives", func(tr *trace) {
			for range 4 {
				tr.step(1000, layered(20, fwd, bwd, "adam")...)
			}
		}, 0, 1 + 20*5 + 1 + 20*2 + 1},
		{"steps made only of layers: the all-reduce marks the step", func(tr *trace) {
			for range 3 {
				var s []string
				for range 8 {
					s = append(s, "ag:all_gather", "gemm", "relu")
				}
				s[len(s)-1] = "ar:all_reduce" // the last layer's relu is the gradients' all-reduce
				tr.step(1000, s...)
			}
		}, 0, 24},
		{"a warm-up step unlike the rest", func(tr *trace) {
			warm := layered(3, fwd, bwd, "ar:all_reduce", "adam")
			warm = append(warm[:12], append(slices.Repeat([]string{"autotune"}, 10), warm[12:]...)...) // autotuning mid-step
			tr.step(1000, warm...)
			for range 5 {
				tr.step(1000, layered(3, fwd, bwd, "ar:all_reduce", "adam")...)
			}
		}, 1, 1 + 3*5 + 1 + 3*2 + 2},
		{"one step does not repeat", func(tr *trace) {
			tr.step(1000, layered(4, fwd, bwd, "ar:all_reduce", "adam")...)
		}, 0, 0},
		{"no sequence repeats", func(tr *trace) {
			var s []string
			for i := range 200 {
				s = append(s, fmt.Sprintf("k%d", i))
			}
			tr.step(1000, s...)
		}, 0, 0},
		{"a forward pass's layers, each with an all-gather, are not steps", func(tr *trace) {
			for range 10 {
				tr.step(1000, "ag:all_gather", "gemm", "relu")
			}
		}, 0, 0},
		{"a single GPU's steps, no collectives", func(tr *trace) {
			for range 3 {
				tr.step(1000, "embed", "gemm", "relu", "gemm", "relu", "adam")
			}
		}, 0, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr trace
			tc.build(&tr)
			// A second, quieter stream whose ops do not repeat.
			ops := append(tr.ops, Op{Start: 5, End: 6, Sym: 999, Stream: 9}, Op{Start: 50, End: 60, Sym: 998, Stream: 9})
			f, ok := InferSequence(ops)
			if ok != (tc.p > 0) {
				t.Fatalf("found %v (%s); want %v", ok, f.How, tc.p > 0)
			}
			if !ok {
				return
			}
			want := tr.steps[tc.first:]
			how := fmt.Sprintf("a kernel sequence of %d ops repeating %d×", tc.p, len(want))
			if !strings.Contains(f.How, how) {
				t.Errorf("how = %q; want it to say %q", f.How, how)
			}
			if len(f.Steps) != len(want) {
				t.Fatalf("%d steps %v; want %d %v", len(f.Steps), f.Steps, len(want), want)
			}
			for i := range f.Steps {
				// A step runs to the next one's first op; the last to its own last op's end.
				w := want[i]
				if i+1 < len(want) {
					w.End = want[i+1].Start
				}
				if f.Steps[i] != w {
					t.Errorf("step %d = %v; want %v", i, f.Steps[i], w)
				}
			}
		})
	}
}

// BenchmarkInferSequence: a stream of a million ops, 200 steps of 5,000 (layers inside), searched.
func BenchmarkInferSequence(b *testing.B) {
	fwd := []string{"gemm", "relu", "norm", "attn", "mlp"}
	bwd := []string{"gemm_bwd", "relu_bwd", "norm_bwd", "attn_bwd", "mlp_bwd"}
	var tr trace
	for range 200 {
		tr.step(1000, layered(499, fwd, bwd, "ar:all_reduce", "adam", "zero_grad")...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if f, ok := InferSequence(tr.ops); !ok || len(f.Steps) != 200 {
			b.Fatalf("%d steps (%s); want 200", len(f.Steps), f.How)
		}
	}
	b.ReportMetric(float64(len(tr.ops)), "ops")
}
