package nsys

import "testing"

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
	if len(spans.spans) != 2 || spans.spans[0] != (corrSpan{p, lo, lo + (n-1)*step}) || spans.spans[1] != (corrSpan{q, 7, 7}) {
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
