package analysis

import (
	"math/rand/v2"
	"testing"
)

// TestIntervalSetFirst: first finds the first interval ending after t wherever t lies (before,
// inside, between and after the intervals, at their ends, in sets of every size from 0), as a
// walk from the front does.
func TestIntervalSetFirst(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for size := range 12 {
		for range 20 {
			var u intervalSet
			at := int64(r.IntN(5))
			for range size {
				s := at + int64(1+r.IntN(4))
				e := s + int64(1+r.IntN(4))
				u.add(s, e)
				at = e
			}
			for q := int64(-1); q <= at+2; q++ {
				want := 0
				for want < len(u.ivs) && u.ivs[want].End <= q {
					want++
				}
				if got := u.first(q); got != want {
					t.Fatalf("first(%d) of %v = %d; want %d", q, u.ivs, got, want)
				}
			}
		}
	}
}
