package timeline

import (
	"cmp"
	"slices"
)

// Interval is a half-open time range [Start, End) in ns.
type Interval struct{ Start, End int64 }

// Merge sorts ivs and merges overlapping or touching intervals in place, returning the union.
func Merge(ivs []Interval) []Interval {
	if len(ivs) == 0 {
		return ivs
	}
	slices.SortFunc(ivs, func(a, b Interval) int { return cmp.Compare(a.Start, b.Start) })
	out := ivs[:1]
	for _, iv := range ivs[1:] {
		last := &out[len(out)-1]
		if iv.Start <= last.End {
			last.End = max(last.End, iv.End)
			continue
		}
		out = append(out, iv)
	}
	return out
}

// Length returns the total length of merged (disjoint) intervals.
func Length(merged []Interval) int64 {
	var n int64
	for _, iv := range merged {
		n += iv.End - iv.Start
	}
	return n
}

// IntersectLength returns the length of the intersection of two merged interval lists.
func IntersectLength(a, b []Interval) int64 {
	var n int64
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		lo, hi := max(a[i].Start, b[j].Start), min(a[i].End, b[j].End)
		if hi > lo {
			n += hi - lo
		}
		if a[i].End < b[j].End {
			i++
		} else {
			j++
		}
	}
	return n
}

// Percentile returns the p-th percentile (0..100) of vals by the nearest-rank method; vals is sorted
// in place. It returns the zero value for no values.
func Percentile[T cmp.Ordered](vals []T, p float64) T {
	var zero T
	if len(vals) == 0 {
		return zero
	}
	slices.Sort(vals)
	rank := int(p/100*float64(len(vals))+0.9999999) - 1
	return vals[max(0, min(rank, len(vals)-1))]
}
