package analysis

import (
	"math"
	"slices"
)

// busBytes sums bytes × num/den exactly: whole bytes, plus the remainders kept per denominator (a
// job's collectives have few distinct rank counts). The total is then the same whatever order the
// ops arrive in, as a live attach and a merged replay of the same job deliver them differently.
type busBytes struct {
	whole int64
	rem   []busRem // by denominator, few: a short list, searched, costs less than a map per op
}

// busRem is the fractional bytes × den, below den, of the ops whose bus factor has denominator den.
type busRem struct{ den, rem int64 }

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
	i := slices.IndexFunc(s.rem, func(x busRem) bool { return x.den == den })
	if i < 0 {
		i = len(s.rem)
		s.rem = append(s.rem, busRem{den: den})
	}
	x := &s.rem[i]
	if x.rem += r % den; x.rem >= den {
		s.whole++
		x.rem -= den
	}
}

// total is the sum, rounded to the nearest byte once (the fractions summed in the order of their
// denominators, so that the rounding too is the same every time).
func (s *busBytes) total() int64 {
	rem := slices.SortedFunc(slices.Values(s.rem), func(a, b busRem) int { return int(a.den - b.den) })
	frac := 0.0
	for _, x := range rem {
		frac += float64(x.rem) / float64(x.den)
	}
	return s.whole + int64(math.Round(frac))
}
