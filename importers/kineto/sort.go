package kineto

import "slices"

// reorderItems is how many items the reorder buffer holds: an import of fewer items is sorted in
// it alone. Otherwise each buffer full is sorted and spilled as a sorted run of an external merge
// sort (a temporary file), and the runs are merged.
const reorderItems = 1 << 15

// sorter puts the items of every file in (start, seq) order. Items go into the reorder buffer in
// the order they come; nothing goes out to out before finish: the items wait until every file is
// read and surveyed. An import whose items fit the buffer is sorted there and goes out from it.
//
// The first time the buffer overflows, its items are sorted and written as the first run, which is
// kept open (direct): from then on an item that comes after the last one written to it goes
// straight to it, and only one that comes late waits in the buffer; each time the buffer
// overflows again, its items are sorted and written as a run of their own. An in-order trace so
// costs no copy into the buffer and out of it (one run), a trace nearly in order a run more for
// its late items, a shuffled one a run per buffer full. The buffer is sorted all at once, by its
// keys, rather than kept as a heap: a heap pops each item through fifteen levels of a 1 MB array,
// a cache miss at each, where a sort of the keys walks them in order (docs/performance.md,
// "Fourth round"). The runs are merged by (start, seq), so the events come out the same whichever
// run an item went to.
type sorter struct {
	items    []item    // the buffer, in the order the items came
	keys     []sortKey // their keys, sorted when the buffer is let out
	capacity int
	out      func(it *item) error
	spill    *spill
	direct   *runWriter // the first run, open for the items that come in order
	last     sortKey    // the item last written to it
}

// sortKey is an item's place in the order, and its slot in the buffer.
type sortKey struct {
	start, seq int64
	slot       int
}

func cmpKey(a, b sortKey) int {
	switch {
	case a.start < b.start:
		return -1
	case a.start > b.start:
		return 1
	case a.seq < b.seq:
		return -1
	case a.seq > b.seq:
		return 1
	}
	return 0
}

func newSorter(capacity int, sp *spill, out func(it *item) error) *sorter {
	return &sorter{capacity: capacity, spill: sp, out: out}
}

func (s *sorter) put(it *item) error {
	if s.direct != nil && (it.ev.Start > s.last.start || it.ev.Start == s.last.start && it.seq > s.last.seq) {
		s.last.start, s.last.seq = it.ev.Start, it.seq
		return s.direct.write(it)
	}
	if s.items == nil {
		s.items, s.keys = make([]item, 0, s.capacity+1), make([]sortKey, 0, s.capacity+1)
	}
	s.keys = append(s.keys, sortKey{it.ev.Start, it.seq, len(s.items)})
	s.items = append(s.items, *it)
	if len(s.items) > s.capacity {
		return s.spillBuffer()
	}
	return nil
}

// spillBuffer sorts the buffer and writes it as a run: the first one, kept open for the items
// that follow in order, or one of its own.
func (s *sorter) spillBuffer() error {
	slices.SortFunc(s.keys, cmpKey)
	w, err := s.spill.create()
	if err != nil {
		return err
	}
	for _, k := range s.keys {
		if err := w.write(&s.items[k.slot]); err != nil {
			w.f.Close()
			return err
		}
	}
	if s.direct == nil {
		s.direct, s.last = w, s.keys[len(s.keys)-1]
	} else if err := w.close(); err != nil {
		return err
	}
	s.items, s.keys = s.items[:0], s.keys[:0]
	return nil
}

// finish lets every item out, in order, to out.
func (s *sorter) finish() error {
	if s.direct == nil {
		slices.SortFunc(s.keys, cmpKey)
		for _, k := range s.keys {
			if err := s.out(&s.items[k.slot]); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.items) > 0 {
		if err := s.spillBuffer(); err != nil {
			return err
		}
	}
	w := s.direct
	s.direct = nil
	if err := w.close(); err != nil {
		return err
	}
	return s.spill.merge(s.out)
}
