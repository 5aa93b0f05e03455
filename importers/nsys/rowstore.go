package nsys

import (
	"sync/atomic"
	"unsafe"

	"github.com/xfertop/xfertop/importers/nsys/pagescan"
)

// A small export held whole in memory (pagescan.Source) has each row read from its pages once: the
// survey, which reads every column the events need anyway (pageCols), keeps the values of the rows
// its WHERE clause keeps in a rowStore, and the table's events are made from it instead of from the
// pages again. Reading a row from its pages again (its cell, its record header, its values: memory
// the survey read long before) cost the sample's events pass 20 % of the import's process; keeping
// the rows and decoding them from the store, 14 %.
//
// The store is compact: each value as its difference from the same column's value in the row before
// (zigzag, a varint), which for times in start order and ids that repeat is a byte or three; a text
// is where it lies in the file and its length. It is kept in chunks (no copy as it grows), and the
// stores of a file take at most as many bytes as the file (pages.storeLeft): past that, a table's
// store is dropped and its events read from its pages again.

// A store's chunks are firstChunk bytes, then twice the one before, up to storeChunk.
const (
	firstChunk = 4 << 10
	storeChunk = 64 << 10
)

// maxStoredRow bounds the bytes of one stored row: its NULLs and a varint for each column, two for
// a text.
const maxStoredRow = 10 * (maxCols + 2)

// rowStore holds a table's rows as the survey read them, in their stored order.
type rowStore struct {
	chunks [][]byte
	cols   int // the table's columns (t.cols)
	text   int // its text column (-1: none)
	prev   [maxCols]int64
	left   *atomic.Int64 // the file's budget: what its stores may still take
	took   int64
	file   []byte // the file the texts are in
	// runs, for a table read by its runs (table.runs): where each run of rows in start order
	// begins; nil once there are more than maxRuns.
	runs      []storeRun
	trackRuns bool
	rows      int64 // rows added
	lastStart int64 // the start of the row added last
}

// maxRuns bounds the runs of rows in start order a store notes: a table stored in more is read
// through a reorder buffer.
const maxRuns = 64

// storeRun is where a run of rows in start order begins in a store: its first row's place, the
// values that row's differences are from, and how many rows come before it.
type storeRun struct {
	chunk, at int
	prev      [maxCols]int64
	seq       int64
}

// newRowStore returns a store for table t's rows, taking its room from left.
func newRowStore(t *table, file []byte, left *atomic.Int64) *rowStore {
	text := t.text
	if text == 0 { // column 0 is the rowid
		text = -1
	}
	return &rowStore{cols: len(t.cols), text: text, left: left, file: file, trackRuns: t.runs}
}

// noteRun notes where a run of rows in start order begins, if the row about to be added at
// s.chunks[chunk][at:], of start start, begins one.
func (s *rowStore) noteRun(chunk, at int, start int64) {
	if s.rows == 0 || start < s.lastStart {
		if len(s.runs) == maxRuns {
			s.runs, s.trackRuns = nil, false
			return
		}
		s.runs = append(s.runs, storeRun{chunk: chunk, at: at, prev: s.prev, seq: s.rows})
	}
	s.lastStart = start
}

// add appends a row read from the pages: its rowid, and the values of t.cols after it at slot (as
// pageRows reads them). It reports false when the budget is spent or a text is not in the file:
// the store is then to be dropped.
func (s *rowStore) add(r *pagescan.Row, slot []int) bool {
	n := len(s.chunks)
	if n == 0 || len(s.chunks[n-1])+maxStoredRow > cap(s.chunks[n-1]) {
		size := int64(firstChunk) // doubling to storeChunk: a small table takes little
		if n > 0 {
			size = min(2*int64(cap(s.chunks[n-1])), storeChunk)
		}
		if s.left.Add(-size) < 0 {
			s.left.Add(size)
			return false
		}
		s.took += size
		s.chunks = append(s.chunks, make([]byte, 0, size))
		n++
	}
	c := s.chunks[n-1]
	b := c[len(c):cap(c)]
	var nulls uint64
	for i, sl := range slot {
		if sl < 0 || r.Null[sl] {
			nulls |= 1 << (i + 1)
		}
	}
	if s.trackRuns {
		var start int64 // column 1, as the store gives it back: 0 when NULL
		if nulls&(1<<1) == 0 {
			start = r.Ints[slot[0]]
		}
		s.noteRun(n-1, len(c), start)
	}
	s.rows++
	at := putUvarint(b, 0, nulls)
	at = putUvarint(b, at, s.delta(0, r.Rowid))
	for i, sl := range slot {
		col := i + 1
		switch {
		case nulls&(1<<col) != 0:
		case col == s.text:
			off, ok := offsetIn(s.file, r.Text[sl])
			if !ok {
				return false
			}
			at = putUvarint(b, at, uint64(off))
			at = putUvarint(b, at, uint64(len(r.Text[sl])))
		default:
			at = putUvarint(b, at, s.delta(col, r.Ints[sl]))
		}
	}
	s.chunks[n-1] = c[:len(c)+at]
	return true
}

// delta is v as its difference from column col's last value, zigzag.
func (s *rowStore) delta(col int, v int64) uint64 {
	d := v - s.prev[col]
	s.prev[col] = v
	return uint64(d<<1) ^ uint64(d>>63)
}

// putUvarint writes v at b[at:] as a varint, returning where it ends.
func putUvarint(b []byte, at int, v uint64) int {
	for v >= 0x80 {
		b[at] = byte(v) | 0x80
		v >>= 7
		at++
	}
	b[at] = byte(v)
	return at + 1
}

// uvarint reads a varint at b[at:] (written by putUvarint), returning it and where it ends.
func uvarint(b []byte, at int) (uint64, int) {
	var v uint64
	for s := uint(0); ; s += 7 {
		x := b[at]
		at++
		if x < 0x80 {
			return v | uint64(x)<<s, at
		}
		v |= uint64(x&0x7F) << s
	}
}

// release gives the store's room back to the budget.
func (s *rowStore) release() {
	s.left.Add(s.took)
	s.chunks, s.took = nil, 0
}

// offsetIn is where b lies in file.
func offsetIn(file, b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, true
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(file)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < lo || p-lo > uintptr(len(file)) || uintptr(len(b)) > uintptr(len(file))-(p-lo) {
		return 0, false
	}
	return int(p - lo), true
}

// storeRows reads a rowStore's rows back, as the cursor's rows.
type storeRows struct {
	s     *rowStore
	chunk int // the chunk read, and where in it
	at    int
	prev  [maxCols]int64
	// end, when set, is where the rows read end: the first row of the next run.
	end             bool
	endChunk, endAt int
}

// runRows reads run k of a store: its rows up to the next run's first.
func (s *rowStore) runRows(k int) storeRows {
	run := &s.runs[k]
	p := storeRows{s: s, chunk: run.chunk, at: run.at, prev: run.prev}
	if k+1 < len(s.runs) {
		p.end, p.endChunk, p.endAt = true, s.runs[k+1].chunk, s.runs[k+1].at
	}
	return p
}

// next reads the next row into r, reporting false at the end.
func (p *storeRows) next(r *rowVals) bool {
	s := p.s
	for p.chunk < len(s.chunks) && p.at >= len(s.chunks[p.chunk]) {
		p.chunk, p.at = p.chunk+1, 0
	}
	if p.chunk >= len(s.chunks) || p.end && p.chunk == p.endChunk && p.at == p.endAt {
		return false
	}
	b := s.chunks[p.chunk]
	nulls, at := uvarint(b, p.at)
	for col := range s.cols {
		switch {
		case nulls&(1<<col) != 0:
			r.v[col], r.null[col] = 0, true
			if col == s.text {
				r.text = nil
			}
		case col == s.text:
			var off, size uint64
			off, at = uvarint(b, at)
			size, at = uvarint(b, at)
			r.v[col], r.null[col], r.text = 0, false, s.file[off:off+size:off+size]
		default:
			var u uint64
			u, at = uvarint(b, at)
			v := p.prev[col] + (int64(u>>1) ^ -int64(u&1))
			p.prev[col] = v
			r.v[col], r.null[col] = v, false
		}
	}
	p.at = at
	return true
}
