package kineto

import (
	"math/bits"
	"slices"
)

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
	tmp      []sortKey // sortKeys's other half
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
		s.tmp = make([]sortKey, s.capacity+1)
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
	s.sort()
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

// sort sorts the buffer's keys.
func (s *sorter) sort() {
	keys, other := sortKeys(s.keys, s.tmp[:len(s.keys)])
	s.keys, s.tmp = keys, other[:cap(other)]
}

// Radix sort: radixBits of the start at a time, radixPasses at most (beyond, the comparison sort).
const (
	radixBits   = 11
	radixPasses = 5
)

// sortKeys sorts keys by (start, seq), using tmp (as long) as scratch, and returns the sorted
// keys and the other slice. The starts, less the least of them, are sorted by a least significant
// digit radix sort, radixBits at a time, which is stable; the items of one start are then put
// in seq order (held slices of a generic trace join the buffer after items that came after
// them). Spans that need more than radixPasses passes (starts days apart) take the comparison
// sort. On a buffer of 32,768 items a few passes over the keys cost a fifth of pdqsort's
// comparisons.
func sortKeys(keys, tmp []sortKey) (sorted, other []sortKey) {
	if len(keys) < 2 {
		return keys, tmp
	}
	lo, hi := keys[0].start, keys[0].start
	for _, k := range keys[1:] {
		lo, hi = min(lo, k.start), max(hi, k.start)
	}
	span := uint64(hi - lo) // starts are within ±maxTime: the difference fits
	if bits.Len64(span) > radixBits*radixPasses {
		slices.SortFunc(keys, cmpKey)
		return keys, tmp
	}
	var count [1 << radixBits]int
	for shift := 0; span>>shift != 0; shift += radixBits {
		clear(count[:])
		for _, k := range keys {
			count[uint64(k.start-lo)>>shift&(1<<radixBits-1)]++
		}
		at := 0
		for d, c := range count {
			count[d], at = at, at+c
		}
		for _, k := range keys {
			d := uint64(k.start-lo) >> shift & (1<<radixBits - 1)
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	for i := 1; i < len(keys); i++ {
		if keys[i].start == keys[i-1].start && keys[i].seq < keys[i-1].seq {
			j := i - 1
			for j > 0 && keys[j-1].start == keys[i].start {
				j--
			}
			k := i + 1
			for k < len(keys) && keys[k].start == keys[i].start {
				k++
			}
			slices.SortFunc(keys[j:k], cmpKey)
			i = k - 1
		}
	}
	return keys, tmp
}

// finish lets every item out, in order, to out.
func (s *sorter) finish() error {
	if s.direct == nil {
		s.sort()
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
