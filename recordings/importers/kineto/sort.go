package kineto

import "errors"

// reorderItems is how many items the reorder buffer holds: a trace nearly in start order (each
// event fewer than this many places from its place in start order) goes out through it alone;
// the survey tells. Otherwise the buffer makes the sorted runs of an external merge sort
// (replacement selection: runs of about twice its size on shuffled input, longer on nearly sorted
// input), spilled to temporary files and merged.
const reorderItems = 1 << 15

// itemHeap is a min-heap of items by (run, start, seq). The heap orders small entries; the items
// stay where they were put, in slots reused as they leave.
type itemHeap struct {
	h     []heapEntry
	slots []item
	free  []int32
}

type heapEntry struct {
	run        int32
	slot       int32
	start, seq int64
}

func (a heapEntry) before(b heapEntry) bool {
	if a.run != b.run {
		return a.run < b.run
	}
	return a.start < b.start || a.start == b.start && a.seq < b.seq
}

func (q *itemHeap) len() int { return len(q.h) }

func (q *itemHeap) push(it *item, run int32) {
	var slot int32
	if n := len(q.free); n > 0 {
		slot, q.free = q.free[n-1], q.free[:n-1]
		q.slots[slot] = *it
	} else {
		slot = int32(len(q.slots))
		q.slots = append(q.slots, *it)
	}
	q.h = append(q.h, heapEntry{run, slot, it.ev.Start, it.seq})
	h := q.h
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

// top is the first entry.
func (q *itemHeap) top() heapEntry { return q.h[0] }

// pop moves the first item to out.
func (q *itemHeap) pop(out *item) {
	h := q.h
	top, n := h[0], len(h)-1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < n && h[l].before(h[small]) {
			small = l
		}
		if r := l + 1; r < n && h[r].before(h[small]) {
			small = r
		}
		if small == i {
			break
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
	q.h = h
	*out = q.slots[top.slot]
	q.free = append(q.free, top.slot)
}

// sorter puts the items of every file in (start, seq) order. Items go into the reorder buffer; when
// it is full, the first goes out: straight to out when the survey found that the items come out in
// order through it (direct), else to the sorted run being written. What is in the buffer at the
// end goes out in order; runs, if any were written, are merged.
type sorter struct {
	heap     itemHeap
	capacity int
	direct   bool
	out      func(it *item) error
	spill    *spill
	run      int32 // run being written
	w        *runWriter
	last     heapEntry // the item last let out of the buffer
	popped   bool
	tmp      item
}

func newSorter(capacity int, direct bool, sp *spill, out func(it *item) error) *sorter {
	return &sorter{capacity: capacity, direct: direct, spill: sp, out: out}
}

// errOrder is returned if the survey's promise that the items come out in order is broken.
var errOrder = errors.New("internal error: an item came out of start order through the reorder buffer")

func (s *sorter) put(it *item) error {
	run := s.run
	if s.popped && (it.ev.Start < s.last.start || it.ev.Start == s.last.start && it.seq < s.last.seq) {
		if s.direct {
			return errOrder
		}
		run++ // too late for the run being written: it starts the next one
	}
	s.heap.push(it, run)
	if s.heap.len() > s.capacity {
		return s.letOut()
	}
	return nil
}

// letOut lets the first item out of the buffer: to out, or to the run it belongs to.
func (s *sorter) letOut() error {
	top := s.heap.top()
	s.heap.pop(&s.tmp)
	s.last, s.popped = top, true
	if s.direct {
		return s.out(&s.tmp)
	}
	if s.w == nil || top.run != s.run {
		if err := s.closeRun(); err != nil {
			return err
		}
		w, err := s.spill.create()
		if err != nil {
			return err
		}
		s.w, s.run = w, top.run
	}
	return s.w.write(&s.tmp)
}

func (s *sorter) closeRun() error {
	if s.w == nil {
		return nil
	}
	err := s.w.close()
	s.w = nil
	return err
}

// finish lets every item out, in order, to out.
func (s *sorter) finish() error {
	if s.direct || s.spill.runs() == 0 && s.w == nil {
		for s.heap.len() > 0 {
			s.heap.pop(&s.tmp)
			if err := s.out(&s.tmp); err != nil {
				return err
			}
		}
		return nil
	}
	for s.heap.len() > 0 {
		if err := s.letOut(); err != nil {
			return err
		}
	}
	if err := s.closeRun(); err != nil {
		return err
	}
	return s.spill.merge(s.out)
}

// orderCheck tells whether a sequence of starts comes out in order through a reorder buffer of n:
// it plays the buffer, starts only. While the starts come in order, it keeps only the last n of them
// (in order, they are the buffer, and a valid heap). A start that some n of those before it exceed
// is the first to come out of order. Leaving starts out of the sequence never makes one come out
// of order, so the check may be played on more items than are finally sorted.
type orderCheck struct {
	n      int
	ring   []int64 // the last starts, while in order; then the buffer, a heap
	next   int     // where the ring's next start goes
	heap   bool    // ring is a heap: some start came out of order
	last   int64   // the start last let out of the buffer
	popped bool
	bad    bool
}

func (o *orderCheck) add(t int64) {
	switch {
	case o.bad:
		return
	case !o.heap && (len(o.ring) == 0 || t >= o.ring[(o.next+len(o.ring)-1)%len(o.ring)]):
		// in order: the buffer would let out the oldest start
		if len(o.ring) < o.n {
			o.ring = append(o.ring, t)
			return
		}
		o.last, o.popped = o.ring[o.next], true
		o.ring[o.next] = t
		o.next = (o.next + 1) % len(o.ring)
		return
	case !o.heap:
		// the first start out of order: the buffer, oldest first, is sorted, which is a heap
		o.ring = append(o.ring[o.next:], o.ring[:o.next]...)
		o.heap = true
	}
	if o.popped && t < o.last {
		o.bad = true
		o.ring = nil
		return
	}
	h := append(o.ring, t)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	o.ring = h
	if len(h) > o.n {
		o.last, o.popped = o.popMin(), true
	}
}

func (o *orderCheck) popMin() int64 {
	h := o.ring
	top, n := h[0], len(h)-1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < n && h[l] < h[small] {
			small = l
		}
		if r := l + 1; r < n && h[r] < h[small] {
			small = r
		}
		if small == i {
			break
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
	o.ring = h
	return top
}

// inOrder reports whether every start came out in order.
func (o *orderCheck) inOrder() bool { return !o.bad }
