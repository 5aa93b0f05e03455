package reorder

// Check tells whether a sequence of starts comes out in order through a reorder buffer of N: it
// plays the buffer, starts only. While the starts come in order, it keeps only the last N of them
// (in order, they are the buffer, and a valid heap). A start that some N of those before it exceed
// is the first to come out of order. Leaving starts out of the sequence never makes one come out
// of order, so the check may be played on more items than are finally sorted.
type Check struct {
	N      int     // the reorder buffer's size
	ring   []int64 // the last starts, while in order; then the buffer, a heap
	next   int     // where the ring's next start goes
	heap   bool    // ring is a heap: some start came out of order
	last   int64   // the start last let out of the buffer
	popped bool
	bad    bool
}

// Add plays the next start.
func (o *Check) Add(t int64) {
	switch {
	case o.bad:
		return
	case !o.heap && (len(o.ring) == 0 || t >= o.ring[(o.next+len(o.ring)-1)%len(o.ring)]):
		// in order: the buffer would let out the oldest start
		if len(o.ring) < o.N {
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
	if len(h) > o.N {
		o.last, o.popped = o.popMin(), true
	}
}

func (o *Check) popMin() int64 {
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

// InOrder reports whether every start came out in order through the buffer.
func (o *Check) InOrder() bool { return !o.bad }

// Sorted reports whether the starts came in order as they were, needing no buffer.
func (o *Check) Sorted() bool { return !o.bad && !o.heap }
