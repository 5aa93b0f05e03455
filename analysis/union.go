package analysis

import (
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// maxIntervals bounds how many disjoint intervals a set keeps before it commits the older half.
const maxIntervals = 1024

// intervalSet is the union of intervals added in any order, kept as sorted disjoint intervals. It
// keeps its total length as intervals come and go, so that a result does not walk every interval.
type intervalSet struct {
	ivs []timeline.Interval
	n   int64 // Length(ivs)
}

// add merges [s, e) into the set.
func (u *intervalSet) add(s, e int64) {
	if e <= s {
		return
	}
	ivs := u.ivs
	// Most intervals arrive near the end of the set: look there first.
	n := len(ivs)
	if n == 0 || s > ivs[n-1].End {
		u.ivs = append(ivs, timeline.Interval{Start: s, End: e})
		u.n += e - s
		return
	}
	if last := &ivs[n-1]; s >= last.Start {
		old := last.End
		last.End = max(last.End, e) // overlaps or touches the last: the common case
		u.n += last.End - old
		return
	}
	i, _ := slices.BinarySearchFunc(ivs, s, func(iv timeline.Interval, t int64) int {
		if iv.End < t {
			return -1
		}
		return 1
	})
	j, _ := slices.BinarySearchFunc(ivs, e, func(iv timeline.Interval, t int64) int {
		if iv.Start <= t {
			return -1
		}
		return 1
	})
	if i == j {
		u.ivs = slices.Insert(ivs, i, timeline.Interval{Start: s, End: e})
		u.n += e - s
		return
	}
	merged := timeline.Interval{Start: min(s, ivs[i].Start), End: max(e, ivs[j-1].End)}
	u.n += merged.End - merged.Start - timeline.Length(ivs[i:j])
	u.ivs = slices.Replace(ivs, i, j, merged)
}

// clone returns an independent copy.
func (u *intervalSet) clone() intervalSet { return intervalSet{ivs: slices.Clone(u.ivs), n: u.n} }

// length returns the total length of the set.
func (u *intervalSet) length() int64 { return u.n }

// first returns the index of the first interval that ends after t.
func (u *intervalSet) first(t int64) int {
	// Ops arrive near the end of the set, as add finds: look at the last two intervals before
	// searching (the ends increase, so the answer is the first whose end passes t).
	ivs := u.ivs
	n := len(ivs)
	if n == 0 || ivs[n-1].End <= t {
		return n
	}
	if n == 1 || ivs[n-2].End <= t {
		return n - 1
	}
	i, _ := slices.BinarySearchFunc(u.ivs, t, func(iv timeline.Interval, t int64) int {
		if iv.End <= t {
			return -1
		}
		return 1
	})
	return i
}

// overlap returns the length of [s, e) ∩ the set.
func (u *intervalSet) overlap(s, e int64) int64 {
	var n int64
	for i := u.first(s); i < len(u.ivs) && u.ivs[i].Start < e; i++ {
		n += min(e, u.ivs[i].End) - max(s, u.ivs[i].Start)
	}
	return n
}

// newOverlap returns the length of ([s, e) \ u) ∩ o: how much an add of [s, e) to u adds to the
// intersection of u and o.
func (u *intervalSet) newOverlap(o *intervalSet, s, e int64) int64 {
	if e <= s || len(o.ivs) == 0 {
		return 0
	}
	var n int64
	at := s
	for i := u.first(s); i < len(u.ivs) && u.ivs[i].Start < e; i++ {
		if u.ivs[i].Start > at {
			n += o.overlap(at, u.ivs[i].Start)
		}
		at = max(at, u.ivs[i].End)
	}
	if at < e {
		n += o.overlap(at, e)
	}
	return n
}

// cut removes the part of the set before t and returns it, appended to buf[:0].
func (u *intervalSet) cut(t int64, buf []timeline.Interval) []timeline.Interval {
	k := 0
	for k < len(u.ivs) && u.ivs[k].End <= t {
		k++
	}
	before := append(buf[:0], u.ivs[:k]...)
	if k < len(u.ivs) && u.ivs[k].Start < t {
		before = append(before, timeline.Interval{Start: u.ivs[k].Start, End: t})
		u.ivs[k].Start = t
	}
	// Move the live intervals to the front of the same array: reslicing past the cut instead left
	// append to reallocate the array every few commits (3 MB of garbage per 20 000 events at 512
	// devices); this copies about half a set per commit, which a commit walks anyway.
	u.ivs = u.ivs[:copy(u.ivs, u.ivs[k:])]
	u.n -= timeline.Length(before)
	return before
}
