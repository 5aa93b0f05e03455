package analysis

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
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
				want, ivs := 0, u.intervals()
				for want < len(ivs) && ivs[want].End <= q {
					want++
				}
				if got := u.first(q); got != want {
					t.Fatalf("first(%d) of %v = %d; want %d", q, u.intervals(), got, want)
				}
			}
		}
	}
}

// TestIntervalSetAgainstBitmap: intervals added in any order (none before the latest cut, as
// deviceTime adds them), with cuts between, leave the set, its length, its copy of the last
// interval, overlap and newOverlap as a bitmap of the time line says.
func TestIntervalSetAgainstBitmap(t *testing.T) {
	const span = 200
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 300 {
		var u, o intervalSet
		var inU, inO [span]bool
		cutAt := 0
		for step := range 60 {
			s := r.IntN(span - 1)
			if round%2 == 0 {
				s = min(span-2, step*3+r.IntN(8)) // mostly near the end, as ops arrive
			}
			e := s + 1 + r.IntN(min(12, span-s))
			s = max(s, cutAt) // as deviceTime does: nothing is added before a cut
			if e <= s {
				continue
			}
			if got, want := u.newOverlap(&o, int64(s), int64(e)), bitsNew(&inU, &inO, s, e, cutAt); got != want {
				t.Fatalf("round %d: newOverlap(%d, %d) = %d; want %d (u %v, o %v)", round, s, e, got, want, u.intervals(), o.intervals())
			}
			u.add(int64(s), int64(e))
			for x := max(s, cutAt); x < e; x++ {
				inU[x] = true
			}
			if r.IntN(3) == 0 {
				os, oe := r.IntN(span-1), 0
				oe = os + 1 + r.IntN(min(12, span-os))
				os = max(os, cutAt)
				o.add(int64(os), int64(oe))
				for x := max(os, cutAt); x < oe; x++ {
					inO[x] = true
				}
			}
			if r.IntN(15) == 0 {
				c := r.IntN(span)
				u.cut(int64(c), nil)
				o.cut(int64(c), nil)
				for x := range c {
					inU[x], inO[x] = false, false
				}
				cutAt = max(cutAt, c)
			}
			checkSet(t, &u, &inU)
			checkSet(t, &o, &inO)
			c := u.clone()
			checkSet(t, &c, &inU)
		}
	}
}

// bitsNew is |([s, e) \ u) ∩ o| on the bitmaps, from cutAt on.
func bitsNew(u, o *[200]bool, s, e, cutAt int) int64 {
	var n int64
	for x := max(s, cutAt); x < e; x++ {
		if !u[x] && o[x] {
			n++
		}
	}
	return n
}

func checkSet(t *testing.T, u *intervalSet, bits *[200]bool) {
	t.Helper()
	var want []timeline.Interval
	for x := range int64(len(bits)) {
		if !bits[x] {
			continue
		}
		if n := len(want); n > 0 && want[n-1].End == x {
			want[n-1].End++
		} else {
			want = append(want, timeline.Interval{Start: x, End: x + 1})
		}
	}
	if !slices.Equal(u.intervals(), want) {
		t.Fatalf("set %v; want %v", u.intervals(), want)
	}
	if u.length() != timeline.Length(want) {
		t.Fatalf("length %d of %v; want %d", u.length(), u.intervals(), timeline.Length(want))
	}
	if n := len(want); n > 0 && u.last != want[n-1] {
		t.Fatalf("last %v of %v; want %v", u.last, u.intervals(), want[n-1])
	}
	if u.nt > 0 && u.tail[u.nt-1] != u.last {
		t.Fatalf("tail %v of %v does not end with the last interval %v", u.tail[:u.nt], u.intervals(), u.last)
	}
	for s := int64(0); s < int64(len(bits)); s += 7 {
		e := s + 9
		var ov int64
		for x := s; x < min(e, int64(len(bits))); x++ {
			if bits[x] {
				ov++
			}
		}
		if got := u.overlap(s, e); got != ov {
			t.Fatalf("overlap(%d, %d) of %v = %d; want %d", s, e, u.intervals(), got, ov)
		}
	}
}

// TestIntervalSetTailWritesArrayOncePerTail: intervals added after a set's end go to its tail,
// and the array gains them tailLen at a time; an interval overlapping the last, or one inside
// the set, leaves the set as a plain array would (TestIntervalSetAgainstBitmap checks the rest).
func TestIntervalSetTailWritesArrayOncePerTail(t *testing.T) {
	var u intervalSet
	for k := range int64(3*tailLen + 1) {
		u.add(10*k, 10*k+5)
		if got, want := len(u.ivs), int(k)/tailLen*tailLen; got != want {
			t.Fatalf("after %d intervals the array holds %d; want %d (the tail the rest)", k+1, got, want)
		}
		u.add(10*k+3, 10*k+7) // overlaps the last: the tail's, not the array's
	}
	n := u.size()
	u.add(1, 2) // inside the set: the tail joins the array first
	if u.nt != 0 || len(u.ivs) != n {
		t.Fatalf("after an add inside the set: array %d, tail %d; want %d and 0", len(u.ivs), u.nt, n)
	}
	want := []timeline.Interval{{Start: 0, End: 7}}
	for k := int64(1); k < 3*tailLen+1; k++ {
		want = append(want, timeline.Interval{Start: 10 * k, End: 10*k + 7})
	}
	if got := u.intervals(); !slices.Equal(got, want) {
		t.Fatalf("set %v; want %v", got, want)
	}
}
