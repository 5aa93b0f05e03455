package nsys

// A table the survey kept whole (rowstore.go) whose rows are stored as a few runs in start order
// (the runtime calls: each thread's in a run of its own, in the 2-GPU sample 6 runs of 6,682 calls)
// is read by merging its runs, each read from the store where it begins, instead of through a
// reorder buffer: the buffer held nearly every row of such a table (104 bytes each, and the
// heap's entries: 220 page faults of the sample's 1,088, and its pushes and pops 5 % of the import).
//
// The events come out as the reorder buffer let them out (by start, then stored position). The
// conversion of a row also interns its name and gives its warnings, and the buffer converted rows
// in stored order, as far ahead as it held: a lead reader still converts them so, for those alone,
// and the merge converts each again with warnings muted (table.runs says which tables' conversions
// allow that), so that names get the same labels and warnings come in the same order as before.

// runMerge is a cursor's merge of its store's runs.
type runMerge struct {
	lead     storeRows // the rows in stored order, converted ahead for names and warnings
	leadVals rowVals
	leadItem item  // the lead's conversions' (an item of leadTo's own would be allocated for each)
	leadSeq  int64 // rows the lead read
	kept     int64 // of those, rows that made an event
	out      int64 // events let out
	leadDone bool
	runs     []runReader
	heap     []int // the runs that have a row, first the one whose row comes first
}

// runReader is one run of a store, and its row next in start order.
type runReader struct {
	rows storeRows
	vals rowVals
	seq  int64 // the row's stored position, counted from 1 as a cursor counts its rows
}

// newRunMerge returns the merge of a store's runs; the store must have noted them.
func newRunMerge(s *rowStore) *runMerge {
	r := &runMerge{lead: storeRows{s: s}, runs: make([]runReader, len(s.runs)), heap: make([]int, 0, len(s.runs))}
	for k := range s.runs {
		rr := &r.runs[k]
		rr.rows, rr.seq = s.runRows(k), s.runs[k].seq
		if r.step(k) {
			r.push(k)
		}
	}
	return r
}

// step reads run k's next row, reporting false at the run's end.
func (r *runMerge) step(k int) bool {
	rr := &r.runs[k]
	if !rr.rows.next(&rr.vals) {
		return false
	}
	rr.seq++
	return true
}

// before reports whether run a's row comes before run b's: by start (column 1, as a row's
// conversion reads it), then stored position.
func (r *runMerge) before(a, b int) bool {
	x, y := &r.runs[a], &r.runs[b]
	return x.vals.v[1] < y.vals.v[1] || x.vals.v[1] == y.vals.v[1] && x.seq < y.seq
}

func (r *runMerge) push(k int) {
	h := append(r.heap, k)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !r.before(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	r.heap = h
}

// fix restores the heap after the first run's row changed, dropping the run when it has none.
func (r *runMerge) fix(more bool) {
	h := r.heap
	if !more {
		n := len(h) - 1
		h[0] = h[n]
		h = h[:n]
		r.heap = h
	}
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < len(h) && r.before(h[l], h[small]) {
			small = l
		}
		if rt := l + 1; rt < len(h) && r.before(h[rt], h[small]) {
			small = rt
		}
		if small == i {
			return
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
}

// leadTo converts rows in stored order, for their names and warnings alone, until the lead has
// read seq rows and holds more than hold events not yet let out (as the reorder buffer read them),
// or the rows end.
func (c *cursor) leadTo(seq int64) {
	r := c.runs
	it := &r.leadItem
	for !r.leadDone && (r.leadSeq < seq || r.kept-r.out <= int64(c.hold)) {
		if !r.lead.next(&r.leadVals) {
			r.leadDone = true
			return
		}
		r.leadSeq++
		c.rows++
		c.f.m.row()
		*it = item{seq: r.leadSeq}
		if c.t.conv(c.f, &r.leadVals, it) {
			r.kept++
		}
	}
}

// advanceRuns makes head the next event of the merged runs, reporting false at the end.
func (c *cursor) advanceRuns() bool {
	r := c.runs
	c.leadTo(0)
	m := c.f.m
	for len(r.heap) > 0 {
		k := r.heap[0]
		rr := &r.runs[k]
		c.leadTo(rr.seq) // the row's name and warnings first, in stored order
		c.head = item{seq: rr.seq}
		m.quiet = true
		ok := c.t.conv(c.f, &rr.vals, &c.head)
		m.quiet = false
		r.fix(r.step(k))
		if ok {
			r.out++
			return true
		}
	}
	return false
}
