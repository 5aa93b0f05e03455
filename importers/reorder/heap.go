package reorder

import "slices"

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
// where they were put, in slots reused as they leave, so a full buffer moves no item. Entries pushed
// in order (each after the last one in the queue) are kept in a queue beside the heap instead, and
// the first item is the first of the heap's or the queue's: input in order, as most traces nearly
// are, costs a queue's append and its head's removal instead of sifting through the heap.
type Heap[T any] struct {
	h     []entry
	slots []T
	free  []int32
	queue []entry // a ring of entries in key order
	head  int
	n     int // entries in the queue
}

type entry struct {
	key  Key
	slot int32
}

// Grow makes room for n items, so that filling the heap to n moves none of them (the heap grows
// as it fills otherwise, copying its items each time it doubles).
func (q *Heap[T]) Grow(n int) {
	if n > cap(q.slots) {
		q.slots = slices.Grow(q.slots, n-len(q.slots))
		q.h = slices.Grow(q.h, n-len(q.h))
	}
}

// Len is how many items the heap holds.
func (q *Heap[T]) Len() int { return len(q.h) + q.n }

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
	if q.n == 0 || q.queue[(q.head+q.n-1)%len(q.queue)].key.Before(k) {
		q.enqueue(entry{k, slot})
		return
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

// enqueue appends an entry to the queue, growing it when full.
func (q *Heap[T]) enqueue(e entry) {
	if q.n == len(q.queue) {
		grown := make([]entry, max(64, 2*len(q.queue)))
		for i := range q.n {
			grown[i] = q.queue[(q.head+i)%len(q.queue)]
		}
		q.queue, q.head = grown, 0
	}
	q.queue[(q.head+q.n)%len(q.queue)] = e
	q.n++
}

// queued reports whether the first item is the queue's head.
func (q *Heap[T]) queued() bool {
	return q.n > 0 && (len(q.h) == 0 || q.queue[q.head].key.Before(q.h[0].key))
}

// Top is the first item's key. The heap must not be empty.
func (q *Heap[T]) Top() Key {
	if q.queued() {
		return q.queue[q.head].key
	}
	return q.h[0].key
}

// Pop moves the first item to out. The heap must not be empty.
func (q *Heap[T]) Pop(out *T) {
	if q.queued() {
		slot := q.queue[q.head].slot
		q.head = (q.head + 1) % len(q.queue)
		q.n--
		*out = q.slots[slot]
		q.free = append(q.free, slot)
		return
	}
	// Bottom-up: the hole at the root goes down to a leaf by the smaller child (one comparison a
	// level), then the last entry rises from there; it nearly always belongs near the bottom, so
	// this takes about half the comparisons of sifting it down from the root (two a level).
	h := q.h
	top, n := h[0], len(h)-1
	last := h[n]
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		if r := l + 1; r < n && h[r].key.Before(h[l].key) {
			l = r
		}
		h[i] = h[l]
		i = l
	}
	for i > 0 {
		p := (i - 1) / 2
		if !last.key.Before(h[p].key) {
			break
		}
		h[i] = h[p]
		i = p
	}
	if n > 0 {
		h[i] = last
	}
	q.h = h
	*out = q.slots[top.slot]
	q.free = append(q.free, top.slot)
}
