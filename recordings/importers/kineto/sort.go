package kineto

import (
	"errors"

	"github.com/xfertop/xfertop/recordings/importers/reorder"
)

// reorderItems is how many items the reorder buffer holds: a trace nearly in start order (each
// event fewer than this many places from its place in start order) goes out through it alone;
// the survey tells. Otherwise the buffer makes the sorted runs of an external merge sort
// (replacement selection: runs of about twice its size on shuffled input, longer on nearly sorted
// input), spilled to temporary files and merged.
const reorderItems = 1 << 15

// sorter puts the items of every file in (start, seq) order. Items go into the reorder buffer; when
// it is full, the first goes out: straight to out when the survey found that the items come out in
// order through it (direct), else to the sorted run being written. What is in the buffer at the
// end goes out in order; runs, if any were written, are merged.
type sorter struct {
	heap     reorder.Heap[item]
	capacity int
	direct   bool
	out      func(it *item) error
	spill    *spill
	run      int32 // run being written
	w        *runWriter
	last     reorder.Key // the item last let out of the buffer
	popped   bool
	tmp      item
}

func newSorter(capacity int, direct bool, sp *spill, out func(it *item) error) *sorter {
	return &sorter{capacity: capacity, direct: direct, spill: sp, out: out}
}

// errOrder is returned if the survey's promise that the items come out in order is broken.
var errOrder = errors.New("internal error: an item came out of start order through the reorder buffer")

func (s *sorter) put(it *item) error {
	run := s.run
	if s.popped && (it.ev.Start < s.last.Start || it.ev.Start == s.last.Start && it.seq < s.last.Seq) {
		if s.direct {
			return errOrder
		}
		run++ // too late for the run being written: it starts the next one
	}
	s.heap.Push(reorder.Key{Run: run, Start: it.ev.Start, Seq: it.seq}, it)
	if s.heap.Len() > s.capacity {
		return s.letOut()
	}
	return nil
}

// letOut lets the first item out of the buffer: to out, or to the run it belongs to.
func (s *sorter) letOut() error {
	top := s.heap.Top()
	s.heap.Pop(&s.tmp)
	s.last, s.popped = top, true
	if s.direct {
		return s.out(&s.tmp)
	}
	if s.w == nil || top.Run != s.run {
		if err := s.closeRun(); err != nil {
			return err
		}
		w, err := s.spill.create()
		if err != nil {
			return err
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
	if s.direct || s.spill.runs() == 0 && s.w == nil {
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
