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
// It also keeps a copy of its last interval, and its newest intervals (up to tailLen) in a tail
// of its own beside the array: ops arrive near the end of the set, and on a cluster the array's
// end is rarely in the caches when the device's next op comes, nor its page in the TLB (a
// device's three sets were three pages an op, 3,072 at 1,024 GPUs). The common cases (an op
// after the set's end, or overlapping its last interval) read the copy and write the tail, which
// lies in the device's state; the array is written once every tailLen new intervals.
type intervalSet struct {
	ivs  []timeline.Interval // the older intervals, before the tail's
	n    int64               // the length of the set
	last timeline.Interval   // the set's last interval, when it is not empty
	nt   int                 // how many intervals tail holds
	tail [tailLen]timeline.Interval
}

// tailLen is how many of its newest intervals a set keeps beside its array: 64 bytes, a line.
const tailLen = 4

// size returns how many disjoint intervals the set holds.
func (u *intervalSet) size() int { return len(u.ivs) + u.nt }

// at returns the set's i-th interval.
func (u *intervalSet) at(i int) timeline.Interval {
	if i < len(u.ivs) {
		return u.ivs[i]
	}
	return u.tail[i-len(u.ivs)]
}

// flat moves the tail into the array and returns the array: every interval of the set, in order.
func (u *intervalSet) flat() []timeline.Interval {
	if u.nt > 0 {
		u.ivs = append(u.ivs, u.tail[:u.nt]...)
		u.nt = 0
	}
	return u.ivs
}

// intervals returns a copy of the set's intervals, leaving the set as it is.
func (u *intervalSet) intervals() []timeline.Interval {
	return append(slices.Clip(slices.Clone(u.ivs)), u.tail[:u.nt]...)
}

// sync sets last from the array, after a change other than at its end (the tail then empty).
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
	// Most intervals arrive near the end of the set: look there first.
	if u.size() == 0 || s > u.last.End {
		u.last = timeline.Interval{Start: s, End: e}
		if u.nt == tailLen {
			u.flat()
		}
		u.tail[u.nt] = u.last
		u.nt++
		u.n += e - s
		return
	}
	if s >= u.last.Start {
		// Overlaps or touches the last: the common case.
		if e > u.last.End {
			u.n += e - u.last.End
			u.last.End = e
			if u.nt > 0 {
				u.tail[u.nt-1].End = e
			} else {
				u.ivs[len(u.ivs)-1].End = e
			}
		}
		return
	}
	ivs := u.flat()
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
	c := *u
	c.ivs = slices.Clone(u.ivs)
	return c
}

// length returns the total length of the set.
func (u *intervalSet) length() int64 { return u.n }

// first returns the index of the first interval that ends after t.
func (u *intervalSet) first(t int64) int {
	// Ops arrive near the end of the set, as add finds: look at the last two intervals before
	// searching (the ends increase, so the answer is the first whose end passes t), and in the
	// tail before the array.
	n := u.size()
	if n == 0 || u.last.End <= t {
		return n
	}
	if n == 1 || u.at(n-2).End <= t {
		return n - 1
	}
	if u.nt > 0 && u.tail[0].End <= t {
		i := 1
		for u.tail[i].End <= t {
			i++
		}
		return len(u.ivs) + i
	}
	if len(u.ivs) == 0 || u.ivs[len(u.ivs)-1].End <= t {
		return len(u.ivs) // the tail's first
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
	for i, m := u.first(s), u.size(); i < m; i++ {
		iv := u.at(i)
		if iv.Start >= e {
			break
		}
		n += min(e, iv.End) - max(s, iv.Start)
	}
	return n
}

// newOverlap returns the length of ([s, e) \ u) ∩ o: how much an add of [s, e) to u adds to the
// intersection of u and o.
func (u *intervalSet) newOverlap(o *intervalSet, s, e int64) int64 {
	if e <= s || o.size() == 0 {
		return 0
	}
	var n int64
	at := s
	for i, m := u.first(s), u.size(); i < m; i++ {
		iv := u.at(i)
		if iv.Start >= e {
			break
		}
		if iv.Start > at {
			n += o.overlap(at, iv.Start)
		}
		at = max(at, iv.End)
	}
	if at < e {
		n += o.overlap(at, e)
	}
	return n
}

// cut removes the part of the set before t and returns it, appended to buf[:0].
func (u *intervalSet) cut(t int64, buf []timeline.Interval) []timeline.Interval {
	u.flat()
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
