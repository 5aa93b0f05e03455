package diagnosis

import "testing"

// A job on two hosts: no median of two singles one out, yet a host whose least time between
// launches is many times the other's is the slow host (crosshost with host_slow on one of its two
// hosts ran 3× longer steps while the console said nothing stood out). Below twoHostRatio no host
// is named.
func TestSlowOfTwoHosts(t *testing.T) {
	for _, c := range []struct {
		name string
		gap1 int64 // host 1's launch gap; host 0's is 10 µs
		host int32 // -1: no finding
		conf float64
	}{
		{"host 1 launches 3x slower", 30_000, 1, 1 - 1.0/3},
		{"host 1 launches 100x slower", 1_000_000, 1, 0.99},
		{"host 1 launches 1.5x slower: below the two-host margin", 15_000, -1, 0},
		{"alike", 10_000, -1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStepper(8)
			for range 2 {
				s.kernels(16, 50, func(r, i int) int64 { return int64(float64(ms) * jitter(r, i)) }, func(r int) int64 {
					if r/8 == 1 {
						return c.gap1
					}
					return 10_000
				})
				s.endStep(100 * ms)
			}
			got := s.d.Result(s.strs)
			if c.host < 0 {
				if len(got) > 0 {
					t.Fatalf("finding %s; want none", got[0].String())
				}
				return
			}
			if len(got) != 1 || got[0].Kind != SlowHost || got[0].Host != c.host || got[0].Rank != -1 || got[0].Confidence < c.conf-1e-9 || got[0].Confidence > c.conf+1e-9 {
				for _, f := range got {
					t.Logf("%s (confidence %g)", f.String(), f.Confidence)
				}
				t.Fatalf("%d findings; want one slow host %d, rank unknown, confidence %g", len(got), c.host, c.conf)
			}
		})
	}
}
