package sim

import (
	"math/rand"
	"sort"
	"testing"
)

// The heap pops items in (time, sequence) order whatever order they were pushed in.
func TestQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var q queue
	var want []item
	for i := range 2000 {
		it := item{t: int64(rng.Intn(50)), key: uint64(i)<<8 | uint64(i%12+1)}
		q.push(it)
		want = append(want, it)
		if i%7 == 0 { // interleave pops with pushes
			got := q.pop()
			sort.Slice(want, func(a, b int) bool {
				return want[a].t < want[b].t || (want[a].t == want[b].t && want[a].key < want[b].key)
			})
			if got != want[0] {
				t.Fatalf("pop %d = %+v; want %+v", i, got, want[0])
			}
			want = want[1:]
		}
	}
	sort.Slice(want, func(a, b int) bool {
		return want[a].t < want[b].t || (want[a].t == want[b].t && want[a].key < want[b].key)
	})
	for _, w := range want {
		if got := q.pop(); got != w {
			t.Fatalf("pop = %+v; want %+v", got, w)
		}
	}
	if len(q) != 0 {
		t.Fatal("queue not empty")
	}
}
