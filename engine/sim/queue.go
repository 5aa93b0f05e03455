package sim

// item is one scheduled simulation event, ordered by time then by the order it was scheduled,
// which makes the simulation deterministic. The order and the type share a word (seq<<8 | type;
// sequence numbers stay below 2^56).
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
	evClassDone // the members of a block's classes end (classes.go)
)

// queue holds the scheduled items in buckets of equal time: a 4-ary min-heap of buckets, each a
// first-in, first-out list of items. Most items are scheduled at the time of the one scheduled
// just before them (a solve reschedules a component's flows, which share a rate and so an end; a
// step's ops end together): a 1,024-GPU all-reduce's thousands of flow completions sit in a few
// buckets, so pushing one appends to a list and popping one takes a list's head, where a heap of
// items cost a walk through a dozen levels each. Items must be pushed in increasing key order (the
// simulation's sequence numbers), which is what makes the order of buckets exact: a push joins the
// bucket made last if it has the item's time, else starts a bucket; two buckets of one time come
// out in the order they were made (by their first key), and every item of the older one was pushed
// before the newer one began.
type queue struct {
	h     []qbucket
	nodes []qnode // the items' list cells; free ones are chained from free
	free  int32   // the first free cell + 1 (0: none)
	n     int     // items queued
	// The bucket made last, while it is in the heap: the one a push at its time joins.
	lastOn   bool
	lastT    int64
	lastKey  uint64 // its first item's key, which names it
	lastTail int32  // its last cell
}

// qbucket is a bucket in the heap: its time, the key of its first item (its order among buckets
// of one time) and the cell at the head of its list.
type qbucket struct {
	t    int64
	key  uint64
	head int32
}

// qnode is a queued item's cell; next is the next cell of its bucket + 1 (0: the last).
type qnode struct {
	key  uint64
	a    int32
	ver  uint32
	next int32
}

// len returns how many items are queued.
func (q *queue) len() int { return q.n }

// minT returns the time of the next item to come out; the queue must not be empty.
func (q *queue) minT() int64 { return q.h[0].t }

// push queues it; its key must be greater than every key pushed before.
func (q *queue) push(it item) {
	var c int32
	if q.free > 0 {
		c = q.free - 1
		q.free = q.nodes[c].next
		q.nodes[c] = qnode{key: it.key, a: it.a, ver: it.ver}
	} else {
		c = int32(len(q.nodes))
		q.nodes = append(q.nodes, qnode{key: it.key, a: it.a, ver: it.ver})
	}
	q.n++
	if q.lastOn && q.lastT == it.t {
		q.nodes[q.lastTail].next = c + 1
		q.lastTail = c
		return
	}
	q.lastOn, q.lastT, q.lastKey, q.lastTail = true, it.t, it.key, c
	q.pushBucket(qbucket{t: it.t, key: it.key, head: c})
}

// pop takes out the first item: the earliest, and of those the first pushed.
func (q *queue) pop() item {
	b := &q.h[0]
	c := b.head
	nd := &q.nodes[c]
	it := item{t: b.t, key: nd.key, a: nd.a, ver: nd.ver}
	next := nd.next
	nd.next = q.free
	q.free = c + 1
	q.n--
	if next > 0 {
		b.head = next - 1
		return it
	}
	if q.lastOn && b.key == q.lastKey {
		q.lastOn = false // the bucket a push would join is gone
	}
	q.popBucket()
	return it
}

// bucketBefore reports whether bucket a comes out of the queue before bucket b.
func bucketBefore(a, b *qbucket) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.key < b.key
}

// pushBucket adds b to the heap, moving a hole up rather than swapping.
func (q *queue) pushBucket(b qbucket) {
	q.h = append(q.h, b)
	h := q.h
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !bucketBefore(&b, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = b
}

// popBucket drops the heap's first bucket, moving a hole down rather than swapping.
func (q *queue) popBucket() {
	h := q.h
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	q.h = h
	if n == 0 {
		return
	}
	i := 0
	for {
		first := 4*i + 1
		if first >= n {
			break
		}
		m := first
		for c := first + 1; c < first+4 && c < n; c++ {
			if bucketBefore(&h[c], &h[m]) {
				m = c
			}
		}
		if !bucketBefore(&h[m], &last) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = last
}
