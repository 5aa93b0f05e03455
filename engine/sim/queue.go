package sim

// item is one scheduled simulation event. Items are values in a binary heap, ordered by time then
// by the order they were scheduled, which makes the simulation deterministic.
type item struct {
	t   int64
	seq uint64
	typ uint8
	a   int32
	ver uint32
}

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
)

// queue is a 4-ary min-heap: shallower than a binary heap, so fewer cache misses per operation.
type queue []item

func (q queue) less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	return q[i].seq < q[j].seq
}

func (q *queue) push(it item) {
	*q = append(*q, it)
	h := *q
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *queue) pop() item {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	i := 0
	for {
		first := 4*i + 1
		if first >= n {
			break
		}
		m := first
		for c := first + 1; c < first+4 && c < n; c++ {
			if h.less(c, m) {
				m = c
			}
		}
		if !h.less(m, i) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}
