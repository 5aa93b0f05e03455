package sim

import (
	"math/rand"
	"sort"
	"testing"
)

// The queue pops items in (time, sequence) order whatever times they were pushed at: times all
// different, runs of one time (the buckets), pushes at the time being popped (into the bucket at
// the head), at times before it, and buckets of one time made again after others.
func TestQueueOrder(t *testing.T) {
	tests := []struct {
		name string
		next func(rng *rand.Rand, prev, head int64) int64 // the next push's time
		pops int                                          // a pop after every pops pushes
	}{
		{"random times", func(rng *rand.Rand, _, _ int64) int64 { return int64(rng.Intn(50)) }, 7},
		{"runs of one time", func(rng *rand.Rand, prev, _ int64) int64 {
			if rng.Intn(8) > 0 {
				return prev
			}
			return int64(rng.Intn(20))
		}, 3},
		{"at the head's time", func(rng *rand.Rand, _, head int64) int64 { return head + int64(rng.Intn(2)) }, 2},
		{"two times alternating", func(_ *rand.Rand, prev, _ int64) int64 { return 1 - prev }, 5},
		{"before the head", func(rng *rand.Rand, _, head int64) int64 { return head - int64(rng.Intn(3)) }, 2},
		{"one time", func(*rand.Rand, int64, int64) int64 { return 9 }, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(3))
			var q queue
			var want []item
			sortWant := func() {
				sort.Slice(want, func(a, b int) bool {
					return want[a].t < want[b].t || (want[a].t == want[b].t && want[a].key < want[b].key)
				})
			}
			var prev int64
			for i := range 5000 {
				head := int64(0)
				if q.len() > 0 {
					head = q.minT()
				}
				it := item{t: tt.next(rng, prev, head), key: uint64(i+1)<<8 | uint64(i%12+1), a: int32(i), ver: uint32(i * 3)}
				prev = it.t
				q.push(it)
				want = append(want, it)
				if i%tt.pops == 0 { // interleave pops with pushes
					sortWant()
					if q.minT() != want[0].t {
						t.Fatalf("push %d: minT = %d; want %d", i, q.minT(), want[0].t)
					}
					if got := q.pop(); got != want[0] {
						t.Fatalf("pop after push %d = %+v; want %+v", i, got, want[0])
					}
					want = want[1:]
				}
				if q.len() != len(want) {
					t.Fatalf("after push %d len = %d; want %d", i, q.len(), len(want))
				}
			}
			sortWant()
			for _, w := range want {
				if got := q.pop(); got != w {
					t.Fatalf("pop = %+v; want %+v", got, w)
				}
			}
			if q.len() != 0 || len(q.h) != 0 {
				t.Fatalf("queue not empty: %d items, %d buckets", q.len(), len(q.h))
			}
		})
	}
}

// A queue that drains and fills again reuses its cells: its memory is what the most items queued
// at once took, not every item ever pushed.
func TestQueueReusesCells(t *testing.T) {
	var q queue
	key := uint64(0)
	for round := range 100 {
		for i := range 64 {
			key++
			q.push(item{t: int64(round*10 + i%3), key: key << 8})
		}
		for range 64 {
			q.pop()
		}
	}
	if len(q.nodes) != 64 {
		t.Errorf("the queue holds %d cells after 100 rounds of 64 items; want 64", len(q.nodes))
	}
}
