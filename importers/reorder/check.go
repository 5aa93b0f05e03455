package reorder

// Check tells whether a sequence of starts comes out in order through a reorder buffer of N (N >
// 0): it plays the buffer, starts only. It keeps the buffer sorted while the starts come nearly in
// order, each new start put in its place from the end (in order, it goes at the end), and makes it
// a heap once a start goes further back than maxShift: sorted, a nearly ordered sequence costs a
// few comparisons a start where a heap costs a descent from its root. A start that the buffer
// lets out after a larger one is the first to come out of order. Leaving starts out of the
// sequence never makes one come out of order, so the check may be played on more items than are
// finally sorted.
type Check struct {
	N      int     // the reorder buffer's size
	buf    []int64 // the buffer: buf[lo:] sorted, or (heap) buf a min-heap
	lo     int
	heap   bool
	prev   int64 // the start added last
	added  bool
	moved  bool  // some start came before the one added before it
	last   int64 // the start last let out of the buffer
	popped bool
	bad    bool
	need   int // the most starts before one that are larger than it, while the buffer is sorted
}

// maxShift is how far back in the sorted buffer a start may go before the buffer becomes a heap.
const maxShift = 128

// Reserve makes room for the starts of a sequence of n, so that the buffer does not grow by copying
// while they are added (it holds up to 2N).
func (o *Check) Reserve(n int) {
	if o.buf == nil && !o.bad {
		o.buf = make([]int64, 0, min(max(n, 0), 2*o.N)+1)
	}
}

// Add plays the next start.
func (o *Check) Add(t int64) {
	if o.bad {
		return
	}
	if o.added && t < o.prev {
		o.moved = true
	}
	o.prev, o.added = t, true
	if o.popped && t < o.last {
		o.bad = true
		o.buf = nil
		return
	}
	if o.heap {
		o.push(t)
		return
	}
	d := o.buf[o.lo:]
	k := len(d)
	for k > 0 && d[k-1] > t {
		if k--; len(d)-k > maxShift {
			// A sorted slice is a min-heap.
			n := copy(o.buf, d) // in place: d is the end of buf
			o.buf, o.lo, o.heap = o.buf[:n], 0, true
			o.push(t)
			return
		}
	}
	// The starts before t that are larger than it are those k passed: the ones let out of the
	// buffer are not larger, or t is out of order.
	o.need = max(o.need, len(d)-k)
	if k == 0 && len(d) >= o.N {
		o.last, o.popped = t, true // the buffer lets the smallest out at once
		return
	}
	o.buf = append(o.buf, 0)
	d = o.buf[o.lo:]
	copy(d[k+1:], d[k:len(d)-1])
	d[k] = t
	if len(d) > o.N {
		o.last, o.popped = d[0], true
		if o.lo++; o.lo >= o.N { // keep the buffer within 2N starts
			n := copy(o.buf, o.buf[o.lo:])
			o.buf, o.lo = o.buf[:n], 0
		}
	}
}

// push puts t in the heap, letting its smallest start out once it holds more than N.
func (o *Check) push(t int64) {
	h := append(o.buf, t)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	o.buf = h
	if len(h) > o.N {
		o.last, o.popped = o.popMin(), true
	}
}

func (o *Check) popMin() int64 {
	h := o.buf
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
	o.buf = h
	return top
}

// InOrder reports whether every start came out in order through the buffer.
func (o *Check) InOrder() bool { return !o.bad }

// Need is a reorder buffer's size that suffices for the starts played, at most N: the most starts
// that came before one and are larger than it (a buffer of K puts a sequence in order exactly when
// no start has more than K larger ones before it), or N once the check has become a heap and no
// longer counts them.
func (o *Check) Need() int {
	if o.heap || o.bad {
		return o.N
	}
	return min(o.need, o.N)
}

// Sorted reports whether the starts came in order as they were, needing no buffer.
func (o *Check) Sorted() bool { return !o.bad && !o.moved }
