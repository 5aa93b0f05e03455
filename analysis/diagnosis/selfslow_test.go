package diagnosis

import (
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// A pipeline's stages each run kernels of their own name: a GPU slowed from an onset is compared
// with its own earlier steps, and named when the step grew with it (its peers waited on it).
func TestSelfSlowGPU(t *testing.T) {
	const ranks, calls = 4, 10
	for _, c := range []struct {
		name   string
		slow   float64 // rank 2's kernels from step 1 on, × their time
		stepMs func(step int) int64
		want   bool
		// noisy: the kernels jitter by ±2% a call (the simulator's); else by ±0.5% (a step's
		// mean, as ten calls of the simulator's give it).
		noisy bool
	}{
		{name: "rank 2 at 2x, the step grows", slow: 2, stepMs: func(s int) int64 { return 100 + min(int64(s), 1)*100 }, want: true},
		{name: "rank 2 at 1.3x, the step grows", slow: 1.3, stepMs: func(s int) int64 { return 100 + min(int64(s), 1)*30 }, want: true},
		{name: "rank 2 at 2x, hidden: the step does not grow", slow: 2, stepMs: func(int) int64 { return 200 }, want: false},
		{name: "healthy, jitter", slow: 1, stepMs: func(int) int64 { return 100 }, want: false, noisy: true},
		{name: "healthy, the step grows", slow: 1, stepMs: func(s int) int64 { return 100 + int64(s)*20 }, want: false, noisy: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStepper(8)
			for step := range 4 {
				for r := range ranks {
					at := s.t
					for i := range calls {
						d := int64(float64(5*ms) * (1 + 0.005*float64((r+step+i)%3-1)))
						if c.noisy {
							d = int64(float64(5*ms) * jitter(r+step*ranks, i))
						}
						if r == 2 && step >= 1 {
							d = int64(float64(d) * c.slow)
						}
						s.add(timeline.Event{Kind: timeline.KindKernel, Start: at, End: at + d, Queued: s.t + int64(i)*10_000, Device: int32(r), Peer: -1, Label: uint32(10 + r), Stream: 1})
						at += d
					}
				}
				s.endStep(c.stepMs(step) * ms)
			}
			fs := s.d.Result(s.strs)
			if !c.want {
				for _, f := range fs {
					t.Errorf("finding %s; want none", f.String())
				}
				return
			}
			if len(fs) != 1 || fs[0].Kind != SlowGPU || fs[0].Rank != 2 {
				t.Fatalf("findings %v; want one slow GPU, rank 2", fs)
			}
			// Weaker than strong (1.5×): a second step in a row first.
			want := 1
			if c.slow < strong {
				want = 2
			}
			if fs[0].Step != want || fs[0].Onset != 100*ms {
				t.Errorf("found at step %d, onset %d; want step %d, onset %d (its first kernel of step 1)", fs[0].Step, fs[0].Onset, want, 100*ms)
			}
		})
	}
}
