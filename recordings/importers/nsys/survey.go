package nsys

import (
	"slices"

	"github.com/ncruces/go-sqlite3"
	"github.com/xfertop/xfertop/recordings/importers/reorder"
)

// The survey reads each table once in its stored order, a few columns only, before any event is
// made: what must be known before the first event (the devices, for the description; the median
// start, to leave out events with a damaged timestamp; time 0) and how each table is to be read in
// start order (through a reorder buffer, or sorted by SQLite when its rows are too far out of
// order). It holds the devices, a bounded sample of starts and a reorder buffer of starts per
// table, whatever the size of the export.

// sampleCap bounds the starts kept to estimate the median start, whatever the size of the export.
const sampleCap = 1 << 14

// sampler keeps an evenly spaced sample of starts, and the smallest and largest.
type sampler struct {
	reorder.Sample
	lo, hi int64
}

func newSampler() *sampler { return &sampler{Sample: reorder.Sample{Cap: sampleCap}} }

func (s *sampler) add(t int64) {
	if s.Len() == 0 || t < s.lo {
		s.lo = t
	}
	if s.Len() == 0 || t > s.hi {
		s.hi = t
	}
	s.Add(t)
}

// median is the sample's median start, and whether any two starts lie more than maxSpan apart
// (when not, no event is left out).
func (s *sampler) median() (int64, bool) {
	if s.Len() == 0 || s.hi-s.lo <= maxSpan {
		return 0, false
	}
	k := slices.Clone(s.Kept())
	slices.Sort(k)
	return k[len(k)/2], true
}

// Ways of reading a table in start order.
const (
	readStraight = iota // its rows are stored in start order
	readReorder         // through a reorder buffer
	readSorted          // sorted by SQLite
)

// readMode tells how rows whose starts check has seen are to be read in start order.
func readMode(check *reorder.Check) int {
	switch {
	case !check.InOrder():
		return readSorted
	case !check.Sorted():
		return readReorder
	}
	return readStraight
}

// survey reads the export's tables as the survey does, adding the file's devices (global ids) to
// devices; modes tells, by table name, how each is to be read in start order.
func (f *fileReader) survey(sample *sampler, devices map[int32]bool) (modes map[string]int, err error) {
	modes = map[string]int{}
	local := map[int64]bool{}
	for _, t := range tables {
		if !f.d.has(t.name) {
			continue
		}
		mode, err := f.surveyTable(t, sample, local)
		if err != nil {
			return nil, wrap(t.name, err)
		}
		modes[t.name] = mode
	}
	f.devBase = f.m.devBase
	for l := range local {
		f.maxLocal = max(f.maxLocal, l)
		devices[int32(l)+f.devBase] = true
	}
	return modes, nil
}

// surveyTable surveys one table, adding the devices of its rows to local; the devices at the other
// end of peer copies count in the file's device ids (maxLocal) without being devices of events.
func (f *fileReader) surveyTable(t *table, sample *sampler, local map[int64]bool) (int, error) {
	have := f.d.tables[t.name]
	cols := []string{`"start"`, `"end"`}
	if t.name == tableNVTX {
		cols[1] = f.instantEnd()
	}
	for _, c := range t.survey {
		cols = append(cols, pick(have, c))
	}
	check := reorder.Check{N: reorderRows}
	copies := t.name == tableMemcpy
	err := f.d.each(f.query(t, cols, false), func(s *sqlite3.Stmt) error {
		f.m.row()
		start := s.ColumnInt64(0)
		if _, ok := span(start, s.ColumnInt64(1)); !ok {
			return nil
		}
		check.Add(start)
		sample.add(start + f.offset)
		if len(t.survey) == 0 {
			return nil
		}
		gp, _ := nullInt(s, 3)
		p := proc(gp)
		l := f.localOf(p, s.ColumnInt64(2))
		if l < 0 || l > maxDevice {
			return nil
		}
		local[l] = true
		if copies {
			src, okS := nullInt(s, 5)
			dst, okD := nullInt(s, 6)
			if other, ok := f.peer(p, l, f.copyDir(s.ColumnInt64(4)), src, dst, okS, okD); ok {
				f.maxLocal = max(f.maxLocal, other)
			}
		}
		return nil
	})
	return readMode(&check), err
}

// maxDevice is the largest device id of a file.
const maxDevice = 1<<15 - 1
