package nsys

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRingSizedFromSurvey: a process whose runtime calls' correlation ids the survey spanned gets
// a ring that holds them all from the start (no smaller rings allocated and copied on the way),
// and finds every launch; one the survey did not see starts small and grows as before.
func TestRingSizedFromSurvey(t *testing.T) {
	var spans corrSpans
	const lo, n, step = 2_622_630, 3_300, 10 // sparse ids, as a process's driver calls take ids too
	p, q := procKey(148), procKey(149)
	for i := range n {
		spans.add(p, uint32(lo+i*step))
		spans.add(q, 7) // interleaved with another process
	}
	if len(spans.spans) != 2 || spans.spans[0] != (corrSpan{p, lo, lo + (n-1)*step, n}) || spans.spans[1] != (corrSpan{q, 7, 7, n}) {
		t.Fatalf("spans %+v", spans.spans)
	}
	l := newLaunchTimes()
	l.sizes[procID{0, p}] = int(spans.spans[0].hi-spans.spans[0].lo) + 1
	for i := range n {
		l.put(procID{0, p}, uint64(lo+i*step), int64(i))
		l.put(procID{0, 9}, uint64(lo+i*step), int64(i))
	}
	if got := len(l.rings[procID{0, p}].corr); got != 1<<16 {
		t.Errorf("the surveyed process's ring: %d slots, want %d (its span, %d ids, rounded up)", got, 1<<16, (n-1)*step+1)
	}
	// Without a span, the ring grows from ringMin while two of its ids share a slot: 8192 slots
	// for ids 10 apart over 32,991 (no two then 8192 apart).
	other := len(l.rings[procID{0, 9}].corr)
	if other != 8192 {
		t.Errorf("the other process's ring grew to %d slots, want 8192", other)
	}
	if want := ringBudget - 1<<16 - other; l.budget != want {
		t.Errorf("budget left %d, want %d: a ring sized at once costs what growing to it did", l.budget, want)
	}
	for i := range n {
		if s, ok := l.get(procID{0, p}, uint64(lo+i*step)); !ok || s != int64(i) {
			t.Fatalf("launch %d: %d, %v", i, s, ok)
		}
	}
}

// TestHashedRingAgreesWithRing: a process whose calls the survey counted gets a table of its
// launches by hash, smaller than the ring of its span, that finds the same launches and counts the
// same lost ones as that ring, for ids in the span put or not, below it (the ring's slot then
// holds a later id: lost) and above it; the budget is charged the ring's size.
func TestHashedRingAgreesWithRing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name           string
		lo, calls, gap uint32
	}{
		{"sparse", 2_622_630, 3_300, 10},
		{"dense", 100_000, 3_000, 3},
		{"near the top", math.MaxUint32 - 40_000, 3_000, 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := procID{0, 148}
			ids := make([]uint32, tc.calls)
			for i := range ids {
				ids[i] = tc.lo + uint32(i)*tc.gap + uint32(rng.IntN(int(tc.gap)))
			}
			span := corrSpan{proc: p.proc, lo: ids[0], hi: ids[0], calls: len(ids)}
			for _, c := range ids {
				span.lo, span.hi = min(span.lo, c), max(span.hi, c)
			}
			ring, table := newLaunchTimes(), newLaunchTimes()
			ring.sizes[p] = int(span.hi-span.lo) + 1
			table.sizes[p], table.spans[p] = ring.sizes[p], span
			var lookups []uint32
			for i, c := range ids {
				for _, l := range []*launchTimes{&ring, &table} {
					l.put(p, uint64(c), int64(i))
					l.put(p, uint64(c), -1) // the first launch of an id is kept
				}
				// c less a power of two shares its slot in the ring (a lost launch where it was put).
				lookups = append(lookups, c, c+1, c-1<<(10+rng.IntN(7)), span.lo-1-uint32(rng.IntN(5000)), span.hi+1+uint32(rng.IntN(5000)),
					uint32(rng.Uint32()))
				if i%97 == 0 { // look up while the calls are put, as the merge does
					for _, c := range lookups {
						s1, ok1 := ring.get(p, uint64(c))
						s2, ok2 := table.get(p, uint64(c))
						if s1 != s2 || ok1 != ok2 {
							t.Fatalf("id %d: the table finds %d, %v; the ring %d, %v", c, s2, ok2, s1, ok1)
						}
					}
					lookups = lookups[:0]
				}
			}
			if !table.rings[p].hashed || len(table.rings[p].corr) >= len(ring.rings[p].corr) {
				t.Errorf("the table has %d slots (hashed %v), the ring %d: want a smaller hashed table",
					len(table.rings[p].corr), table.rings[p].hashed, len(ring.rings[p].corr))
			}
			if ring.lost != table.lost || table.budget != ring.budget {
				t.Errorf("lost %d, budget %d; the ring's: %d, %d", table.lost, table.budget, ring.lost, ring.budget)
			}
			if ring.lost == 0 {
				t.Error("no lookup counted as lost: the test does not check the lost count")
			}
		})
	}
}

// TestHashedRingGrows: a table that receives more calls than the survey counted (the file changed
// since) grows rather than fill, and keeps every launch.
func TestHashedRingGrows(t *testing.T) {
	p := procID{0, 7}
	l := newLaunchTimes()
	l.sizes[p], l.spans[p] = 20_000, corrSpan{proc: 7, lo: 1, hi: 20_000, calls: 40}
	for c := uint64(1); c <= 20_000; c += 2 {
		l.put(p, c, int64(c))
	}
	for c := uint64(1); c <= 20_000; c += 2 {
		if s, ok := l.get(p, c); !ok || s != int64(c) {
			t.Fatalf("launch %d: %d, %v", c, s, ok)
		}
	}
}
