package nsys

import (
	"math/rand/v2"
	"testing"
)

// TestOrderCheck: the survey's check tells exactly whether the cursor's reorder buffer would put
// a sequence of starts in order, for sequences in order, a little out of it, and far out of it.
func TestOrderCheck(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		n    int
		jump int // how far a start may be moved back
		one  int // one start in this many is moved
		want int
	}{
		{"in order", 3 * reorderRows, 0, 1, readStraight},
		{"within the buffer", 3 * reorderRows, reorderRows / 2, 50, readReorder},
		{"at the edge", 3 * reorderRows, reorderRows, 50, readReorder},
		{"beyond it", 3 * reorderRows, 3 * reorderRows, 50, readSorted},
		{"short", 100, 50, 3, readReorder},
	} {
		starts := make([]int64, tc.n)
		for i := range starts {
			starts[i] = int64(i)
			if tc.jump > 0 && r.IntN(tc.one) == 0 {
				starts[i] -= int64(r.IntN(tc.jump + 1))
			}
		}
		var check orderCheck
		for _, s := range starts {
			check.add(s)
		}
		// what the cursor does: push, and let the smallest out once it holds reorderRows+1
		var q itemHeap
		last, inOrder := int64(-1<<62), true
		out := func() {
			var it item
			q.pop(&it)
			inOrder = inOrder && it.ev.Start >= last
			last = it.ev.Start
		}
		for i, s := range starts {
			it := item{seq: int64(i)}
			it.ev.Start = s
			q.push(&it)
			if q.len() > reorderRows {
				out()
			}
		}
		for q.len() > 0 {
			out()
		}
		want := readSorted
		if inOrder {
			want = readReorder
			sorted := true
			for i := 1; i < len(starts); i++ {
				sorted = sorted && starts[i] >= starts[i-1]
			}
			if sorted {
				want = readStraight
			}
		}
		if got := check.mode(); got != want || got != tc.want {
			t.Errorf("%s: mode %d, the buffer's %d, want %d", tc.name, got, want, tc.want)
		}
	}
}
