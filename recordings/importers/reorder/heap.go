package reorder

// Key orders a heap's items: by run (the sorted run of an external sort it belongs to; 0 when
// there is one), then start, then seq (an item's position in its input, so ties keep input order).
type Key struct {
	Run        int32
	Start, Seq int64
}

// Before reports whether a comes before b.
func (a Key) Before(b Key) bool {
	if a.Run != b.Run {
		return a.Run < b.Run
	}
	return a.Start < b.Start || a.Start == b.Start && a.Seq < b.Seq
}

// Heap is a min-heap of items by Key. The heap orders small entries (key and slot); the items stay
// where they were put, in slots reused as they leave, so a full buffer moves no item.
type Heap[T any] struct {
	h     []entry
	slots []T
	free  []int32
}

type entry struct {
	key  Key
	slot int32
}

// Len is how many items the heap holds.
func (q *Heap[T]) Len() int { return len(q.h) }

// Push copies *it into the heap under k.
func (q *Heap[T]) Push(k Key, it *T) {
	var slot int32
	if n := len(q.free); n > 0 {
		slot, q.free = q.free[n-1], q.free[:n-1]
		q.slots[slot] = *it
	} else {
		slot = int32(len(q.slots))
		q.slots = append(q.slots, *it)
	}
	q.h = append(q.h, entry{k, slot})
	h := q.h
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].key.Before(h[p].key) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

// Top is the first item's key. The heap must not be empty.
func (q *Heap[T]) Top() Key { return q.h[0].key }

// Pop moves the first item to out. The heap must not be empty.
func (q *Heap[T]) Pop(out *T) {
	h := q.h
	top, n := h[0], len(h)-1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < n && h[l].key.Before(h[small].key) {
			small = l
		}
		if r := l + 1; r < n && h[r].key.Before(h[small].key) {
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
