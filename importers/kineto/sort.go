package kineto

import (
	"github.com/xfertop/xfertop/importers/reorder"
)

// reorderItems is how many items the reorder buffer holds: an import of fewer items is sorted in
// it alone. Otherwise the buffer makes the sorted runs of an external merge sort (replacement
// selection: runs of about twice its size on shuffled input, one run of the whole input when it is
// in start order), spilled to temporary files and merged.
const reorderItems = 1 << 15

// sorter puts the items of every file in (start, seq) order. Items go into the reorder buffer; when
// it is full, the first goes out to the sorted run being written. Nothing goes out to out before
// finish: the items wait there until every file is read and surveyed. Then what is in the buffer
// goes out in order, or, if runs were written, to the last run, and the runs are merged.
//
// While the first run is written and the buffer, full, holds only items of it, it is emptied into
// the run and the items that follow go straight to the run (direct) as
// long as each comes after the one before it: an in-order trace costs no copy into the buffer and
// out of it. One that comes late waits in the buffer for the next run; once the buffer is full
// again the sort goes on as replacement selection. A trace nearly in order so costs a run more,
// the late items'; the runs are merged by (start, seq), so the events come out the same whichever
// run an item went to.
type sorter struct {
	heap     reorder.Heap[item]
	capacity int
	out      func(it *item) error
	spill    *spill
	run      int32 // run being written
	w        *runWriter
	last     reorder.Key // the item last let out of the buffer, or written directly
	popped   bool
	direct   bool
	ahead    int // items in the buffer of the next run
	tmp      item
}

func newSorter(capacity int, sp *spill, out func(it *item) error) *sorter {
	return &sorter{capacity: capacity, spill: sp, out: out}
}

func (s *sorter) put(it *item) error {
	late := s.popped && (it.ev.Start < s.last.Start || it.ev.Start == s.last.Start && it.seq < s.last.Seq)
	if s.direct && !late {
		s.last = reorder.Key{Run: s.run, Start: it.ev.Start, Seq: it.seq}
		return s.w.write(it)
	}
	run := s.run
	if late {
		run++ // too late for the run being written: it starts the next one
		s.ahead++
	}
	s.heap.Push(reorder.Key{Run: run, Start: it.ev.Start, Seq: it.seq}, it)
	if s.heap.Len() > s.capacity {
		s.direct = false
		if err := s.letOut(); err != nil {
			return err
		}
		return s.goDirect()
	}
	return nil
}

// goDirect empties the buffer into the first run and has the items that follow written directly,
// when every item in it belongs to that run.
func (s *sorter) goDirect() error {
	if s.run != 0 || s.ahead > 0 {
		return nil
	}
	for s.heap.Len() > 0 {
		if err := s.letOut(); err != nil {
			return err
		}
	}
	s.direct = true
	return nil
}

// letOut lets the first item out of the buffer, to the run it belongs to.
func (s *sorter) letOut() error {
	top := s.heap.Top()
	s.heap.Pop(&s.tmp)
	s.last, s.popped = top, true
	if s.w == nil || top.Run != s.run {
		if err := s.closeRun(); err != nil {
			return err
		}
		w, err := s.spill.create()
		if err != nil {
			return err
		}
		if top.Run != s.run {
			s.ahead = 0 // the run's items are all out: those left are of the next
		}
		s.w, s.run = w, top.Run
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
	if s.spill.runs() == 0 && s.w == nil {
		for s.heap.Len() > 0 {
			s.heap.Pop(&s.tmp)
			if err := s.out(&s.tmp); err != nil {
				return err
			}
		}
		return nil
	}
	for s.heap.Len() > 0 {
		if err := s.letOut(); err != nil {
			return err
		}
	}
	if err := s.closeRun(); err != nil {
		return err
	}
	return s.spill.merge(s.out)
}
