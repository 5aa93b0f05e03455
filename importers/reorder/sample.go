package reorder

import "slices"

// DefaultSampleCap is the cap of a Sample that sets none.
const DefaultSampleCap = 1 << 12

// Sample keeps an evenly spaced sample of a sequence of starts in at most Cap values (0:
// DefaultSampleCap): every start while they fit, then every second, fourth, ... one. The survey
// passes estimate the median start from it for the outlier check, whatever the size of the input.
type Sample struct {
	Cap    int
	keep   []int64
	stride int64
	n      int64
	next   int64 // the next start to look at: a multiple of stride (a division a start costs more)
}

// Add takes the next start.
func (s *Sample) Add(t int64) {
	if s.n == s.next {
		if s.stride == 0 {
			s.stride = 1
		}
		limit := s.Cap
		if limit <= 0 {
			limit = DefaultSampleCap
		}
		if len(s.keep) == limit {
			n := 0
			for i := 0; i < len(s.keep); i += 2 { // those at multiples of the doubled stride
				s.keep[n] = s.keep[i]
				n++
			}
			s.keep, s.stride = s.keep[:n], 2*s.stride
		}
		if s.n%s.stride == 0 {
			s.keep = append(s.keep, t)
		}
		s.next = (s.n/s.stride + 1) * s.stride
	}
	s.n++
}

// Kept is the sample, in the order the starts came. The slice is the Sample's own.
func (s *Sample) Kept() []int64 { return s.keep }

// Weight is how many starts each kept one stands for.
func (s *Sample) Weight() int64 { return max(s.stride, 1) }

// Len is how many starts were added.
func (s *Sample) Len() int64 { return s.n }

// Clone is a copy of the sample that shares no memory with it: a survey that may give up on a
// table part-way keeps one to go back to.
func (s *Sample) Clone() Sample {
	c := *s
	c.keep = slices.Clone(s.keep)
	return c
}
