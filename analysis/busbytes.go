package analysis

import (
	"maps"
	"math"
	"slices"
)

// busBytes sums bytes × num/den exactly: whole bytes, plus the remainders kept per denominator (a
// job's collectives have few distinct rank counts). The total is then the same whatever order the
// ops arrive in, as a live attach and a merged replay of the same job deliver them differently.
type busBytes struct {
	whole int64
	rem   map[int64]int64 // by denominator: the fractional bytes × den, below den
}

// add counts b × num/den (den > 0).
func (s *busBytes) add(b, num, den int64) {
	if b <= 0 || num <= 0 {
		return
	}
	if den == 1 {
		s.whole += b * num
		return
	}
	// b×num overflows int64 only past 4 EB per op at 2,048 ranks: divide first to keep it small.
	q, r := b/den, b%den
	s.whole += q * num
	r *= num
	s.whole += r / den
	if s.rem == nil {
		s.rem = map[int64]int64{}
	}
	s.rem[den] += r % den
	if s.rem[den] >= den {
		s.whole++
		s.rem[den] -= den
	}
}

// total is the sum, rounded to the nearest byte once (the fractions summed in the order of their
// denominators, so that the rounding too is the same every time).
func (s *busBytes) total() int64 {
	dens := slices.Sorted(maps.Keys(s.rem))
	frac := 0.0
	for _, den := range dens {
		frac += float64(s.rem[den]) / float64(den)
	}
	return s.whole + int64(math.Round(frac))
}
