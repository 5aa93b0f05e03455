package reorder

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCheckPlaysTheBuffer: the check tells exactly whether a reorder buffer of N (a Heap that lets
// its first item out once it holds N+1) puts a sequence of starts in order, for sequences in order,
// a little out of it, and far out of it.
func TestCheckPlaysTheBuffer(t *testing.T) {
	const n = 1 << 10
	r := rand.New(rand.NewPCG(1, 2))
	type verdict struct{ sorted, inOrder bool }
	for _, tc := range []struct {
		name string
		len  int
		jump int // how far a start may be moved back
		one  int // one start in this many is moved
		want verdict
	}{
		{"in order", 3 * n, 0, 1, verdict{true, true}},
		{"a little out of it", 3 * n, 20, 3, verdict{false, true}},
		{"within the buffer", 3 * n, n / 2, 50, verdict{false, true}},
		{"at the edge", 3 * n, n, 50, verdict{false, true}},
		{"beyond it", 3 * n, 3 * n, 50, verdict{false, false}},
		{"short", 100, 50, 3, verdict{false, true}},
		{"in order but one, far back", 3 * n, 0, 1, verdict{false, false}},
		{"within it, in blocks stored backwards", 3 * n, 0, 1, verdict{false, true}},
	} {
		starts := make([]int64, tc.len)
		for i := range starts {
			starts[i] = int64(i)
			if tc.jump > 0 && r.IntN(tc.one) == 0 {
				starts[i] -= int64(r.IntN(tc.jump + 1))
			}
		}
		switch tc.name {
		case "in order but one, far back":
			starts[2*n] = 3
		case "within it, in blocks stored backwards": // as Nsight stores its rows, in blocks of 64
			for i := range starts {
				starts[i] = int64(i - i%64 + 63 - i%64)
			}
		}
		check := Check{N: n}
		for _, s := range starts {
			check.Add(s)
		}
		var q Heap[int64]
		last, inOrder := int64(-1<<62), true
		out := func() {
			var s int64
			q.Pop(&s)
			inOrder = inOrder && s >= last
			last = s
		}
		for i, s := range starts {
			q.Push(Key{Start: s, Seq: int64(i)}, &s)
			if q.Len() > n {
				out()
			}
		}
		for q.Len() > 0 {
			out()
		}
		buffer := verdict{slices.IsSorted(starts) && inOrder, inOrder}
		got := verdict{check.Sorted(), check.InOrder()}
		if got != buffer || got != tc.want {
			t.Errorf("%s: check %+v, the buffer %+v, want %+v", tc.name, got, buffer, tc.want)
		}
		// Need is a buffer that suffices, and while the check counts (within maxShift), the
		// smallest one: a buffer of one less lets a start out of order.
		need := check.Need()
		if _, ok := playBuffer(starts, need); inOrder && !ok {
			t.Errorf("%s: Need %d, but a buffer of %d lets a start out of order", tc.name, need, need)
		}
		if _, ok := playBuffer(starts, need-1); inOrder && need > 0 && need < maxShift && ok {
			t.Errorf("%s: Need %d, but a buffer of %d suffices", tc.name, need, need-1)
		}
		if !inOrder && need != n {
			t.Errorf("%s: Need %d for starts no buffer of %d puts in order; want %d", tc.name, need, n, n)
		}
	}
}

// TestHeapOrder: items come out by (run, start, seq), against a sort of the same keys, with slots
// reused as items leave and arrive: keys at random, nearly in order (most go to the queue of
// entries pushed in order, some to the heap) and in order (all to the queue).
func TestHeapOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  func(r *rand.Rand, i int) Key
	}{
		{"random", func(r *rand.Rand, i int) Key {
			return Key{Run: int32(r.IntN(3)), Start: int64(r.IntN(100)), Seq: int64(i)}
		}},
		{"nearly in order", func(r *rand.Rand, i int) Key { return Key{Start: int64(i - r.IntN(2)*r.IntN(50)), Seq: int64(i)} }},
		{"in order", func(r *rand.Rand, i int) Key { return Key{Start: int64(i / 3), Seq: int64(i)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if heaped := testHeapOrder(t, tc.key); tc.name == "in order" && heaped > 0 {
				t.Errorf("up to %d of the keys pushed in order were in the heap; want none (all in the queue)", heaped)
			}
		})
	}
}

// testHeapOrder checks the order of 5,000 keys and returns how many the heap held at most (not
// counting those in the queue).
func testHeapOrder(t *testing.T, key func(r *rand.Rand, i int) Key) (heaped int) {
	r := rand.New(rand.NewPCG(3, 4))
	var q Heap[Key]
	var want []Key
	most := 0
	for i := range 5000 {
		k := key(r, i)
		q.Push(k, &k)
		want = append(want, k)
		most, heaped = max(most, q.Len()), max(heaped, len(q.h))
		if r.IntN(3) == 0 { // interleave pops so slots are reused
			var top Key
			peek := q.Top()
			q.Pop(&top)
			if top != peek {
				t.Fatalf("Top %+v, Pop %+v", peek, top)
			}
			want = slices.DeleteFunc(want, func(x Key) bool { return x == top })
			for _, g := range want {
				if g.Before(top) {
					t.Fatalf("popped %+v while %+v, which comes before it, was held", top, g)
				}
			}
		}
	}
	slices.SortFunc(want, func(a, b Key) int {
		if a.Before(b) {
			return -1
		}
		return 1
	})
	for i := 0; q.Len() > 0; i++ {
		var k Key
		q.Pop(&k)
		if k != want[i] {
			t.Fatalf("item %d: %+v, want %+v", i, k, want[i])
		}
	}
	if len(q.slots) != most {
		t.Errorf("%d slots for at most %d items held: slots are not reused", len(q.slots), most)
	}
	return heaped
}

// TestSample: while the starts fit, every one is kept; past the cap, the kept ones are those at
// multiples of the stride (evenly spaced over everything added), each standing for Weight starts.
func TestSample(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cap, added int
		weight     int64
	}{
		{"fits", 8, 8, 1},
		{"twice the cap", 8, 16, 2},
		{"past it", 8, 100, 16},
		{"the default cap", 0, DefaultSampleCap + 1, 2},
	} {
		s := Sample{Cap: tc.cap}
		for i := range tc.added {
			s.Add(int64(i))
		}
		if s.Len() != int64(tc.added) || s.Weight() != tc.weight {
			t.Errorf("%s: %d added, weight %d; want %d, %d", tc.name, s.Len(), s.Weight(), tc.added, tc.weight)
		}
		for i, v := range s.Kept() {
			if v != int64(i)*tc.weight {
				t.Errorf("%s: kept[%d] = %d, want %d", tc.name, i, v, int64(i)*tc.weight)
				break
			}
		}
		if want := (tc.added + int(tc.weight) - 1) / int(tc.weight); len(s.Kept()) != want {
			t.Errorf("%s: %d kept, want %d", tc.name, len(s.Kept()), want)
		}
	}
}

// TestSampleClone: a clone goes on as the sample would have, and adding to either leaves the other
// as it was.
func TestSampleClone(t *testing.T) {
	s := Sample{Cap: 8}
	for i := range 12 {
		s.Add(int64(i))
	}
	c := s.Clone()
	kept := slices.Clone(s.Kept())
	for i := range 20 {
		c.Add(int64(100 + i))
	}
	if !slices.Equal(s.Kept(), kept) || s.Len() != 12 {
		t.Fatalf("the sample changed with its clone: %v, %d added", s.Kept(), s.Len())
	}
	for i := range 20 {
		s.Add(int64(100 + i))
	}
	if !slices.Equal(s.Kept(), c.Kept()) || s.Weight() != c.Weight() || s.Len() != c.Len() {
		t.Fatalf("sample %v, clone %v: want the same", s.Kept(), c.Kept())
	}
}

// TestCheckRandom: on random sequences, short and long, nearly sorted and not, with buffers from 1
// start up, the check's verdict is the buffer's.
func TestCheckRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 2000 {
		n := 1 + r.IntN(300)
		size := []int{1, 2, 3, 7, 64, 200, 1000}[r.IntN(7)]
		jump := []int{0, 1, 5, 100, 300, 5000}[r.IntN(6)]
		one := 1 + r.IntN(20)
		starts := make([]int64, n)
		for i := range starts {
			starts[i] = int64(i * (1 + r.IntN(2)))
			if jump > 0 && r.IntN(one) == 0 {
				starts[i] -= int64(r.IntN(jump + 1))
			}
		}
		check := Check{N: size}
		for _, s := range starts {
			check.Add(s)
		}
		sorted, inOrder := playBuffer(starts, size)
		if check.Sorted() != sorted || check.InOrder() != inOrder {
			t.Fatalf("round %d (buffer %d, %v): check sorted %v, in order %v; the buffer %v, %v",
				round, size, starts, check.Sorted(), check.InOrder(), sorted, inOrder)
		}
		// Need suffices, and is the smallest buffer that does while the check counts.
		need := check.Need()
		if _, ok := playBuffer(starts, need); inOrder && !ok {
			t.Fatalf("round %d (buffer %d, %v): Need %d does not suffice", round, size, starts, need)
		}
		if _, ok := playBuffer(starts, need-1); inOrder && need > 0 && need < min(size, maxShift) && ok {
			t.Fatalf("round %d (buffer %d, %v): Need %d, but %d suffices", round, size, starts, need, need-1)
		}
	}
}

// playBuffer plays a reorder buffer of n (a Heap that lets its first item out once it holds n+1)
// on starts: whether they were sorted, and whether they came out in order.
func playBuffer(starts []int64, n int) (sorted, inOrder bool) {
	var q Heap[int64]
	last, inOrder := int64(-1<<62), true
	out := func() {
		var s int64
		q.Pop(&s)
		inOrder = inOrder && s >= last
		last = s
	}
	for i, s := range starts {
		q.Push(Key{Start: s, Seq: int64(i)}, &s)
		if q.Len() > n {
			out()
		}
	}
	for q.Len() > 0 {
		out()
	}
	return slices.IsSorted(starts) && inOrder, inOrder
}

// BenchmarkHeapFull: a full buffer of 32,768 items (as the Kineto import's) letting one out for
// each one in, keys far out of order: the cost of the heap on shuffled input.
//
//	go test -run '^$' -bench HeapFull -cpu 1 ./importers/reorder
func BenchmarkHeapFull(b *testing.B) {
	type item [13]int64 // an import's item is about this size
	const n = 1 << 15
	r := rand.New(rand.NewPCG(3, 4))
	var q Heap[item]
	var it, out item
	seq := int64(0)
	for range n {
		seq++
		q.Push(Key{Start: r.Int64N(1 << 40), Seq: seq}, &it)
	}
	for b.Loop() {
		seq++
		q.Push(Key{Start: r.Int64N(1 << 40), Seq: seq}, &it)
		q.Pop(&out)
	}
}

// TestCheckReserve: a check given room for its sequence plays it as one without (the same verdict
// and Need) and never grows its buffer, going from sorted to a heap in place too.
func TestCheckReserve(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct {
		name string
		n    int
		jump int
	}{{"in order", 5000, 0}, {"a little out of it", 5000, 30}, {"far out of it: a heap", 5000, 600}, {"longer than 2N", 3000, 10}} {
		starts := make([]int64, tc.n)
		for i := range starts {
			starts[i] = int64(i)
			if tc.jump > 0 && r.IntN(4) == 0 {
				starts[i] -= int64(r.IntN(tc.jump))
			}
		}
		plain, reserved := Check{N: 1000}, Check{N: 1000}
		reserved.Reserve(len(starts))
		room := cap(reserved.buf)
		for _, s := range starts {
			plain.Add(s)
			reserved.Add(s)
			if cap(reserved.buf) != room && !reserved.bad {
				t.Fatalf("%s: the reserved buffer grew from %d to %d", tc.name, room, cap(reserved.buf))
			}
		}
		if plain.InOrder() != reserved.InOrder() || plain.Sorted() != reserved.Sorted() || plain.Need() != reserved.Need() {
			t.Errorf("%s: reserved %v %v %d, plain %v %v %d", tc.name, reserved.InOrder(), reserved.Sorted(), reserved.Need(),
				plain.InOrder(), plain.Sorted(), plain.Need())
		}
	}
}
