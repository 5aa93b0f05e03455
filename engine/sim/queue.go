package sim

// item is one scheduled simulation event. Items are values in a heap, ordered by time then by
// the order they were scheduled, which makes the simulation deterministic. The order and the type
// share a word (seq<<8 | type; sequence numbers stay below 2^56), so an item is 24 bytes, not 32:
// the heap moves items on every push and pop.
type item struct {
	t   int64
	key uint64 // the sequence number << 8 | the item's type
	a   int32
	ver uint32
}

// typ returns the item's type.
func (it item) typ() uint8 { return uint8(it.key) }

// Item types.
const (
	evHostReady uint8 = iota + 1
	evHostDone
	evOpDone
	evFlowStart
	evFlowDone
	evWave
	evWatchdog
	evBatchTimer
	evRecompute
	evStreamWake
	evCollStart
	evFault
	evCollFlows // a collective's flows start (its inst's starts), in the order it made them
)

// queue is a 4-ary min-heap: shallower than a binary heap, so fewer cache misses per operation.
// Push and pop move a hole rather than swap items, writing each item moved once.
type queue []item

// before reports whether a comes out of the queue before b.
func before(a, b *item) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.key < b.key
}

func (q *queue) push(it item) {
	*q = append(*q, it)
	h := *q
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !before(&it, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = it
}

func (q *queue) pop() item {
	h := *q
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	*q = h
	if n == 0 {
		return top
	}
	i := 0
	for {
		first := 4*i + 1
		if first >= n {
			break
		}
		m := first
		for c := first + 1; c < first+4 && c < n; c++ {
			if before(&h[c], &h[m]) {
				m = c
			}
		}
		if !before(&h[m], &last) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = last
	return top
}
