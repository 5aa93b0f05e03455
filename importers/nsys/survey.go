package nsys

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/xfertop/xfertop/importers/nsys/pagescan"
	"github.com/xfertop/xfertop/importers/reorder"
)

// The survey reads each table once in its stored order, a few columns only, before any event is
// made: what must be known before the first event (the devices, for the description; whether any
// two starts lie more than 24 h apart, for the outlier test) and how each table is to be read in
// start order (straight, through a reorder buffer, or sorted by SQLite when its rows are too far
// out of order). Tables are read from their pages (pages.go) where they can be, side by side on as
// many goroutines as there are processors, else with SQL, one after another. Only when two starts
// lie more than 24 h apart is the median start needed: a second pass then reads the starts again,
// in the order of the files and tables, for a sample. It holds the devices and a buffer of starts
// per table (and the sample), whatever the size of the export.

// sampleCap bounds the starts kept to estimate the median start, whatever the size of the export.
const sampleCap = 1 << 14

// sampler keeps an evenly spaced sample of starts.
type sampler struct {
	reorder.Sample
}

func newSampler() *sampler { return &sampler{Sample: reorder.Sample{Cap: sampleCap}} }

// median is the sample's median start.
func (s *sampler) median() int64 {
	if s.Len() == 0 {
		return 0
	}
	k := slices.Clone(s.Kept())
	slices.Sort(k)
	return k[len(k)/2]
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

// tableSurvey is what the survey learns from one table: how far its rows are out of start order,
// its devices (the file's ids), the largest device id at the other end of its peer copies, and its
// smallest and largest start (on the Unix clock).
type tableSurvey struct {
	f      *fileReader
	t      *table
	layout *layout // where its columns are in its pages; nil: read with SQL
	check  reorder.Check
	local  [(maxDevice + 1) / 64]uint64 // a bit per device id: a map costs more, row by row
	peer   int64
	lo, hi int64
	starts bool // some start was taken: lo and hi hold
	copies bool // the table is the copies'
	// runtime: the table is the runtime calls', whose correlation ids are spanned by process in
	// corrs (the size of each process's ring of launch times).
	runtime bool
	corrs   corrSpans
	sample  *sampler // the second pass's: the starts are added to it
	rows    int64    // rows read
	told    int64    // of those, rows counted in the progress
	err     error    // from the pages; the table is then read with SQL
	devs    devCache
	store   *rowStore // the rows read from the pages, for the events (rowstore.go); nil: none kept
}

func newTableSurvey(f *fileReader, t *table) *tableSurvey {
	ts := &tableSurvey{f: f, t: t, check: reorder.Check{N: reorderRows}, peer: -1, copies: t.name == tableMemcpy, runtime: t.name == tableRuntime}
	ts.check.Reserve(int(min(f.d.rows(t.name), 1<<31))) // the largest rowid: the rows, unless some were deleted
	return ts
}

// devCache holds the file's ids of the last processes' devices met, looked up without hashing: a
// capture has a few of them, and its rows go from one to another. Each goroutine has its own.
type devCache struct {
	seen []seenDevice
}

// seenDevice is a process's CUDA device and the file's id for it.
type seenDevice struct {
	proc  procKey
	cuda  int64
	local int64
}

// maxSeen bounds devCache.seen: past it, devices are looked up in the file's map.
const maxSeen = 16

// localOf is fileReader.localOf through the list of devices met.
func (c *devCache) localOf(f *fileReader, p procKey, cuda int64) int64 {
	for _, d := range c.seen {
		if d.proc == p && d.cuda == cuda {
			return d.local
		}
	}
	l := f.localOf(p, cuda)
	if len(c.seen) < maxSeen {
		c.seen = append(c.seen, seenDevice{p, cuda, l})
	}
	return l
}

// surveyRow is what the survey reads of one row: start, end (an NVTX mark's or open range's is its
// start) and the table's survey columns, NULL as 0 with null set.
type surveyRow struct {
	start, end int64
	v          [5]int64
	null       [5]bool
}

// add takes one row into the survey of its table; the devices at the other end of peer copies
// count in the file's device ids (maxLocal) without being devices of events.
func (ts *tableSurvey) add(r *surveyRow, progress *atomic.Int64) {
	if ts.rows++; ts.rows%progressEvery == 0 && progress != nil {
		progress.Add(ts.rows - ts.told)
		ts.told = ts.rows
	}
	if _, ok := span(r.start, r.end); !ok {
		return
	}
	ts.check.Add(r.start)
	if t := r.start + ts.f.offset; !ts.starts {
		ts.lo, ts.hi, ts.starts = t, t, true
	} else {
		ts.lo, ts.hi = min(ts.lo, t), max(ts.hi, t)
	}
	if ts.sample != nil {
		ts.sample.Add(r.start + ts.f.offset)
	}
	if ts.runtime {
		if corr := r.v[1]; !r.null[1] && corr > 0 && corr <= math.MaxUint32 {
			ts.corrs.add(proc(r.v[0]), uint32(corr))
		}
		return
	}
	if len(ts.t.survey) == 0 {
		return
	}
	p := proc(r.v[1]) // globalPid: its NULL reads as 0, as nullInt's does
	l := ts.devs.localOf(ts.f, p, r.v[0])
	if l < 0 || l > maxDevice {
		return
	}
	ts.local[l/64] |= 1 << (l % 64)
	if ts.copies {
		if other, ok := ts.f.peer(p, l, ts.f.copyDir(r.v[2]), r.v[3], r.v[4], !r.null[3], !r.null[4]); ok {
			ts.peer = max(ts.peer, other)
		}
	}
}

// maxDevice is the largest device id of a file.
const maxDevice = 1<<15 - 1

// survey surveys every table of every file: by file, the surveys of its tables.
func (m *importer) survey() ([][]*tableSurvey, error) {
	all := make([][]*tableSurvey, len(m.files))
	var pages []*tableSurvey
	for i, f := range m.files {
		for _, t := range tables {
			if !f.d.has(t.name) {
				continue
			}
			ts := newTableSurvey(f, t)
			if !m.opts.sqlSurvey {
				names, _ := pageCols(t, f.d.tables[t.name])
				ts.layout, ts.err = f.d.readLayout(t.name, names)
				if ts.err == nil {
					pages = append(pages, ts)
				}
			}
			all[i] = append(all[i], ts)
		}
	}
	var progress atomic.Int64
	if err := m.surveyPages(pages, &progress); err != nil {
		return nil, err
	}
	m.done += progress.Load()
	for _, tss := range all {
		for _, ts := range tss {
			if ts.layout != nil && ts.err == nil {
				m.fromPages++
				continue
			}
			m.done -= ts.told // read again, from the start
			fresh := newTableSurvey(ts.f, ts.t)
			if err := fresh.readSQL(true); err != nil {
				var ce *pagescan.CorruptError
				if errors.As(ts.err, &ce) { // SQL failed where the pages did: say where the pages did
					return nil, fmt.Errorf("%s: %s: %w (its pages: %v)", ts.f.d.name, ts.t.name, err, ts.err)
				}
				return nil, fmt.Errorf("%s: %w", ts.f.d.name, wrap(ts.t.name, err))
			}
			*ts = *fresh
		}
	}
	m.tell(0) // before the first event, however quick the survey was
	return all, nil
}

// surveyPages surveys tables from their pages, as many at a time as there are processors, telling
// progress meanwhile. A table whose pages cannot be read keeps the error (and is read with SQL);
// the import's interruption is returned.
func (m *importer) surveyPages(surveys []*tableSurvey, progress *atomic.Int64) error {
	if len(surveys) == 0 {
		return nil
	}
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	done := make(chan *tableSurvey)
	for _, ts := range surveys {
		go func() {
			slots <- struct{}{}
			ts.err = ts.readPages(progress)
			<-slots
			done <- ts
		}()
	}
	tick := time.NewTicker(progressTick)
	defer tick.Stop()
	for left := len(surveys); left > 0; {
		select {
		case <-done:
			left--
		case <-tick.C:
			m.tell(progress.Load())
		}
	}
	return m.interrupted()
}

// progressTick is how often the survey tells its progress while tables are read side by side.
const progressTick = 100 * time.Millisecond

// tell tells progress with extra rows read besides those counted.
func (m *importer) tell(extra int64) {
	if m.opts.Progress != nil {
		m.opts.Progress(min(m.done+extra, m.total), m.total)
	}
}

// readSQL surveys the table with SQL, counting its rows in the import's progress when count is set.
func (ts *tableSurvey) readSQL(count bool) error {
	f, t := ts.f, ts.t
	have := f.d.tables[t.name]
	cols := []string{`"start"`, `"end"`}
	if t.name == tableNVTX {
		cols[1] = f.instantEnd()
	}
	for _, c := range t.survey {
		cols = append(cols, pick(have, c))
	}
	var r surveyRow
	return f.d.each(f.query(t, cols, false), func(s *sqlite3.Stmt) error {
		r.start, r.end = s.ColumnInt64(0), s.ColumnInt64(1)
		if notInteger(s, 0) || notInteger(s, 1) {
			r.start = notATime // left out of the survey, as the row is of the events (times)
		}
		for i := range t.survey {
			r.v[i], r.null[i] = s.ColumnInt64(2+i), s.ColumnType(2+i) == sqlite3.NULL
		}
		ts.add(&r, nil)
		if count {
			f.m.row()
		}
		return nil
	})
}

// readPlan is how a table is read in start order: straight, through a reorder buffer of hold rows,
// or sorted by SQLite; from its pages where the survey read them (layout), else with SQL.
type readPlan struct {
	mode   int
	hold   int
	rows   int64 // the rows the survey read
	layout *layout
	store  *rowStore // the rows the survey kept; nil: read from the layout's pages, or with SQL
}

// learn takes what the survey learned of the file's tables: its devices (added to devices, global
// ids) and largest device id; it returns, by table name, how each is to be read in start order.
func (f *fileReader) learn(surveys []*tableSurvey, devices map[int32]bool) map[string]readPlan {
	plans := map[string]readPlan{}
	f.devBase = f.m.devBase
	for _, ts := range surveys {
		plan := readPlan{mode: readMode(&ts.check), hold: ts.check.Need(), rows: ts.rows}
		if ts.layout != nil && ts.err == nil {
			plan.layout = ts.layout
			if plan.mode != readSorted {
				plan.store = ts.store
			}
		}
		if plan.store == nil && ts.store != nil {
			ts.store.release()
		}
		ts.store = nil
		plans[ts.t.name] = plan
		for _, s := range ts.corrs.spans {
			f.m.launches.sizes[procID{f.host, s.proc}] = int(min(uint64(s.hi-s.lo)+1, ringMax))
			f.m.launches.spans[procID{f.host, s.proc}] = s
		}
		f.maxLocal = max(f.maxLocal, ts.peer)
		for w, bits := range ts.local {
			for b := range 64 {
				if bits&(1<<b) != 0 {
					l := int64(w*64 + b)
					f.maxLocal = max(f.maxLocal, l)
					devices[int32(l)+f.devBase] = true
				}
			}
		}
	}
	return plans
}

// medianStart is the median start of every file's rows, and whether events far from it are left out:
// only when two starts lie more than 24 h apart, and then the starts are read again for a sample,
// in the order of the files and tables.
func (m *importer) medianStart(surveys [][]*tableSurvey) (int64, bool, error) {
	var lo, hi int64
	some := false
	for _, tss := range surveys {
		for _, ts := range tss {
			if ts.starts {
				if !some {
					lo, hi, some = ts.lo, ts.hi, true
				}
				lo, hi = min(lo, ts.lo), max(hi, ts.hi)
			}
		}
	}
	if !some || hi-lo <= maxSpan {
		return 0, false, nil
	}
	sample := newSampler()
	for _, tss := range surveys {
		for _, first := range tss {
			ts := newTableSurvey(first.f, first.t)
			ts.sample = sample
			err := pagescan.ErrUnsupported
			kept := sample.Clone()
			if first.layout != nil && first.err == nil {
				ts.layout = first.layout
				err = ts.readPages(nil)
			}
			if err != nil && m.interrupted() == nil {
				// Read with SQL, from the first row: the sample as it was before the table.
				sample.Sample = kept
				ts = newTableSurvey(first.f, first.t)
				ts.sample = sample
				err = ts.readSQL(false)
			}
			if err != nil {
				return 0, false, fmt.Errorf("%s: %w", first.f.d.name, wrap(first.t.name, err))
			}
		}
	}
	return sample.median(), true, nil
}

// corrSpans are the smallest and largest correlation ids of each process's runtime calls, for
// the first maxProcs processes (the others' rings start small and grow).
type corrSpans struct {
	spans []corrSpan
	index map[procKey]int // where each process's span is
	last  int             // the span added to last: rows come in runs of one thread
}

type corrSpan struct {
	proc   procKey
	lo, hi uint32
	calls  int // the calls with an id
}

func (c *corrSpans) add(p procKey, corr uint32) {
	i := c.last
	if i >= len(c.spans) || c.spans[i].proc != p {
		var ok bool
		if i, ok = c.index[p]; !ok {
			if len(c.spans) >= maxProcs {
				return
			}
			if c.index == nil {
				c.index = map[procKey]int{}
			}
			i = len(c.spans)
			c.index[p] = i
			c.spans = append(c.spans, corrSpan{proc: p, lo: corr, hi: corr})
		}
		c.last = i
	}
	s := &c.spans[i]
	s.lo, s.hi = min(s.lo, corr), max(s.hi, corr)
	s.calls++
}
