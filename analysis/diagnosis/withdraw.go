package diagnosis

import "slices"

// A look at what is in flight (Pending) calls an op a hang from how long it has lasted: past the
// threshold, nothing in the events yet says whether it will ever finish. A real hang never does;
// an op that completes after all was a long wait (a rank that reached the collective 1.6 s after
// its peer), and the stream without the look (a headless report) has no hang in it. So a hang a
// look named is withdrawn when its op completes, and the findings at the end are the report's
// however often, and whenever, a console looked.

// completed notes that op completed (an op's part ended normally): a hang a look named on it is
// withdrawn, and if the last look saw it in flight, the next look is not to count it (its
// in-flight copy may have been read before this completion was folded).
func (d *Diagnosis) completed(op uint64) {
	if d.looked[op] {
		d.ended[op] = true
	}
	if _, ok := d.links[op]; ok {
		d.unlink(op)
	}
	i, ok := d.hung[op]
	if !ok || i < 0 || !d.findings[i].look || d.findings[i].withdrawn {
		return
	}
	d.withdraw(op, i)
}

// withdraw takes back finding i, named by a look on op, which completed: every trace of it as a
// hang goes, so that the ops folded into it, its culprit rank and its communicator are looked at
// afresh (a later hang of that rank is a finding of its own, not folded into one withdrawn), and a
// watchdog's alert, should one come, is a finding again (alert: none named the hang then).
func (d *Diagnosis) withdraw(op uint64, i int) {
	f := &d.findings[i]
	f.withdrawn = true
	gone := map[uint64]bool{op: true}
	for o, j := range d.hung {
		if j == i {
			gone[o] = true
			delete(d.hung, o)
			delete(d.links, o)
		}
	}
	// The op itself completed: a part of it still seen in flight (a rank whose part ends later)
	// is no hang either.
	d.hung[op] = -1
	if j, ok := d.rankHangs[f.Rank]; ok && j == i {
		delete(d.rankHangs, f.Rank)
		delete(d.foldedOps, f.Rank)
	}
	for c, j := range d.commRoot {
		if j == i {
			delete(d.commRoot, c)
			delete(d.hungComms, c)
		}
	}
	for r, ws := range d.waitsIn {
		ws = slices.DeleteFunc(ws, func(o uint64) bool { return gone[o] })
		if len(ws) == 0 {
			delete(d.waitsIn, r)
		} else {
			d.waitsIn[r] = ws
		}
	}
}

// noteLook remembers the ops a look saw in flight, for completed, and forgets those that ended
// before it.
func (d *Diagnosis) noteLook(order []uint64) {
	clear(d.looked)
	clear(d.ended)
	for _, op := range order {
		d.looked[op] = true
	}
}

// unlink forgets op, a hung op that completed after all: its ranks wait or are stuck in it no
// more, so it neither leads to the root of another hang (rootOf) nor keeps them out of a wait
// cycle (hungElsewhere). Rare: only ops a look saw hung are linked.
func (d *Diagnosis) unlink(op uint64) {
	delete(d.links, op)
	for r, ws := range d.waitsIn {
		if !slices.Contains(ws, op) {
			continue
		}
		ws = slices.DeleteFunc(ws, func(o uint64) bool { return o == op })
		if len(ws) == 0 {
			delete(d.waitsIn, r)
		} else {
			d.waitsIn[r] = ws
		}
	}
}
