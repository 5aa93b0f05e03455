package analysis

import (
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// maxIntervals bounds how many disjoint intervals a set keeps before it commits the older half.
const maxIntervals = 1024

// intervalSet is the union of intervals added in any order, kept as sorted disjoint intervals. It
// keeps its total length as intervals come and go, so that a result does not walk every interval.
//
// It also keeps a copy of its last interval beside the array: ops arrive near the end of the set,
// and on a cluster the array's end is rarely in the caches when the device's next op comes (a
// device's three sets were three misses an op), so the common cases (an op after the set's end,
// or overlapping its last interval) read the copy and only write the array.
type intervalSet struct {
	ivs  []timeline.Interval
	n    int64             // Length(ivs)
	last timeline.Interval // ivs[len(ivs)-1] when ivs is not empty
}

// sync sets last from the array, after a change other than at its end.
func (u *intervalSet) sync() {
	if n := len(u.ivs); n > 0 {
		u.last = u.ivs[n-1]
	}
}

// add merges [s, e) into the set.
func (u *intervalSet) add(s, e int64) {
	if e <= s {
		return
	}
	ivs := u.ivs
	// Most intervals arrive near the end of the set: look there first.
	n := len(ivs)
	if n == 0 || s > u.last.End {
		u.last = timeline.Interval{Start: s, End: e}
		u.ivs = append(ivs, u.last)
		u.n += e - s
		return
	}
	if s >= u.last.Start {
		// Overlaps or touches the last: the common case.
		if e > u.last.End {
			u.n += e - u.last.End
			u.last.End = e
			ivs[n-1].End = e
		}
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
	} else {
		merged := timeline.Interval{Start: min(s, ivs[i].Start), End: max(e, ivs[j-1].End)}
		u.n += merged.End - merged.Start - timeline.Length(ivs[i:j])
		u.ivs = slices.Replace(ivs, i, j, merged)
	}
	u.sync()
}

// clone returns an independent copy.
func (u *intervalSet) clone() intervalSet {
	return intervalSet{ivs: slices.Clone(u.ivs), n: u.n, last: u.last}
}

// length returns the total length of the set.
func (u *intervalSet) length() int64 { return u.n }

// first returns the index of the first interval that ends after t.
func (u *intervalSet) first(t int64) int {
	// Ops arrive near the end of the set, as add finds: look at the last two intervals before
	// searching (the ends increase, so the answer is the first whose end passes t).
	ivs := u.ivs
	n := len(ivs)
	if n == 0 || u.last.End <= t {
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
	u.sync()
	return before
}
