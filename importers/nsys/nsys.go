package nsys

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/timeline"
)

// Bounds on what a row may carry, as for traces: a field outside them is named in a warning and
// never reaches a total.
const (
	maxEventBytes = 1 << 40
	maxSpan       = kineto.MaxSpan
	maxTime       = 1 << 62
	maxWarnings   = 20
	// maxVerboseWarnings bounds the warnings that Options.Verbose asks for, and their memory.
	maxVerboseWarnings = 10_000
	queuedUnknown      = kineto.QueuedUnknown
	defaultStream      = 1 << 31 // stream id 0 means "no stream" in events
)

// Options select what is imported and how progress is told.
type Options struct {
	// StepRange names the NVTX range that marks a step: a range named so, or so followed by #N (the
	// step number) or by ", " (PyTorch's emit_nvtx suffix). Empty: ProfilerStep (ProfilerStep#N).
	StepRange string
	// Progress, when set, is called every 65,536 rows and at the end with the rows read so far and
	// the rows to read: twice the rows the files hold (an estimate from the tables' largest rowids),
	// as the survey reads them before they are read into events.
	Progress func(done, total int64)
	// Context, when set, interrupts a long read when it is done.
	Context context.Context
	// Verbose names every event left out in a warning of its own; without it each file gets one
	// line saying how many and the first.
	Verbose bool

	// For the tests: sqlSurvey has the survey read every table with SQL; surveyed, when set, is
	// given the number of tables it read from their pages.
	sqlSurvey bool
	surveyed  *int
	// sqlRows has every table's events read with SQL (the survey may read pages); cursors, when
	// set, is given the number of tables whose events were read from their pages.
	sqlRows bool
	cursors *int
	// stored, when set, is given the number of tables whose events were read from the rows the
	// survey kept (rowstore.go); byRuns, of those, the tables read by their runs (runmerge.go).
	stored *int
	byRuns *int
	// sqlMeta has the schema, the small tables and the names read with SQL (the activity tables
	// as the other options say).
	sqlMeta bool
	// sqlOpened, when set, is given the number of files that SQLite was opened on.
	sqlOpened *int
	// cached has every file's pages read through caches, none whole: the memory of exports of
	// different sizes is then compared like with like.
	cached bool
}

// An export of at most wholeFile bytes is read into memory once, for every reader of its pages
// (pagescan.Source), within wholeBudget bytes for the files of an import; a larger one is read by
// each reader through a cache of its own.
const (
	wholeFile   = 16 << 20
	wholeBudget = 64 << 20
)

// Format is the name of the format in Imported.Format and in reports.
const Format = "nsys"

// batchEvents is how many events are handed on at a time.
const batchEvents = 4096

// importer turns the rows of one or more exports into timeline events, handed on in start order.
type importer struct {
	opts     Options
	im       *kineto.Imported
	warnings []string
	moreWarn int
	done     int64
	total    int64
	anyClock bool // some file had no session start: its times are not wall-clock times
	extra    map[string]string
	labels   map[string]uint32 // the names of labels, as Strings has them
	unnamed  int               // events whose name was left out, past maxLabels
	// quiet mutes warnings and the count of unnamed events, while a row converted already is
	// converted again (runmerge.go).
	quiet   bool
	devBase int32 // global id of the next file's device 0
	files   []*fileReader
	// fromPages counts the tables the survey read from their pages (the others, with SQL);
	// pageCursors, the tables whose events were read from them.
	fromPages, pageCursors int
	stored                 int // of those, the tables whose events came from the survey's rows
	byRuns                 int // of those, the tables read by their runs

	// What the events are put through on their way out.
	median, base int64
	outliers     bool // events further than maxSpan from median are left out
	far          map[*fileReader]*farEvents
	farFiles     map[*fileReader]int64 // files captured on another day: how far their nearest start lies
	begun        bool
	launches     launchTimes
	batch        []timeline.Event
	begin        func(*kineto.Imported) error
	emit         func([]timeline.Event) error
}

// Stream imports Nsight Systems SQLite exports, the ranks or hosts of one job (each a host index,
// its position, and its own devices, on one time axis), without holding their events: it calls
// begin once with the import's description (Events empty) before the first events, then emit with
// batches of events in start order (the slice is reused once emit returns). The description it
// returns is complete: its Warnings are known only at the end. Memory is bounded by the number of
// files and of distinct names, not by the rows (see the survey, the reorder buffers and the caches).
func Stream(paths []string, opts Options, begin func(*kineto.Imported) error, emit func([]timeline.Event) error) (_ *kineto.Imported, err error) {
	if opts.StepRange == "" {
		opts.StepRange = "ProfilerStep"
	}
	m := &importer{opts: opts, im: &kineto.Imported{Strings: timeline.NewStrings(), Format: Format, Source: strings.Join(paths, ",")},
		extra: map[string]string{}, labels: map[string]uint32{"": 0}, begin: begin, emit: emit, launches: newLaunchTimes(), batch: make([]timeline.Event, 0, batchEvents)}
	dbs := make([]*db, 0, len(paths))
	defer func() {
		for _, f := range m.files {
			f.close()
		}
		for _, d := range dbs {
			if d.conn != nil && opts.sqlOpened != nil {
				*opts.sqlOpened++
			}
			d.close()
		}
	}()
	// A small export is mapped into memory (pagescan.Source): a file cut short while it is read
	// faults, which this goroutine turns into an error naming it (the survey's goroutines do too).
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if err = fault(dbs, r); err == nil {
				panic(r)
			}
		}
	}()
	whole := int64(wholeBudget)
	if opts.cached {
		whole = 0
	}
	for _, p := range paths {
		d, err := open(opts.Context, p, min(whole, wholeFile), opts.sqlMeta)
		if err != nil {
			return nil, err
		}
		if d.src != nil && d.src.Whole() {
			whole -= d.src.Size()
		}
		dbs = append(dbs, d)
		if err := checkExport(d); err != nil {
			return nil, err
		}
		for _, t := range tables {
			m.total += 2 * d.rows(t.name) // read twice: by the survey, then into events
		}
	}
	cursors, err := m.prepare(dbs)
	if err != nil {
		return nil, err
	}
	if opts.surveyed != nil {
		*opts.surveyed = m.fromPages
	}
	if opts.cursors != nil {
		*opts.cursors = m.pageCursors
	}
	if opts.stored != nil {
		*opts.stored = m.stored
	}
	if opts.byRuns != nil {
		*opts.byRuns = m.byRuns
	}
	if err := m.run(cursors); err != nil {
		return nil, err
	}
	return m.finish(len(paths) > 1)
}

// ReadFiles imports Nsight Systems SQLite exports as Stream does, keeping every event.
func ReadFiles(paths []string, opts Options) (*kineto.Imported, error) {
	var all []timeline.Event
	im, err := Stream(paths, opts, func(*kineto.Imported) error { return nil }, func(evs []timeline.Event) error {
		all = append(all, evs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	im.Events = all
	return im, nil
}

// prepare surveys every file and opens a cursor on each of its tables.
func (m *importer) prepare(dbs []*db) ([]*cursor, error) {
	for i, d := range dbs {
		f := newFileReader(m, i, d)
		m.files = append(m.files, f)
		if err := f.readClock(); err != nil {
			return nil, fmt.Errorf("%s: %w", d.name, err)
		}
		if err := f.readEnums(); err != nil {
			return nil, fmt.Errorf("%s: %w", d.name, err)
		}
		if err := f.readDevices(); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", d.name, tableCUDADev, err)
		}
	}
	surveys, err := m.survey()
	if err != nil {
		return nil, err
	}
	fileDevices := make([]map[int32]bool, len(m.files))
	var cursors []*cursor
	for i, f := range m.files {
		d := f.d
		fileDevices[i] = map[int32]bool{}
		plans := f.learn(surveys[i], fileDevices[i])
		m.devBase += int32(f.maxLocal + 1)
		if err := f.readGPUNames(); err != nil {
			closeCursors(cursors)
			return nil, fmt.Errorf("%s: %s: %w", d.name, tableGPU, err)
		}
		for j, t := range tables {
			if !d.has(t.name) {
				continue
			}
			c, err := f.cursor(t, i*len(tables)+j, plans[t.name])
			if err != nil {
				closeCursors(cursors) // a connection with statements open does not close
				return nil, fmt.Errorf("%s: %w", d.name, err)
			}
			cursors = append(cursors, c)
		}
	}
	if m.median, m.outliers, err = m.medianStart(surveys); err != nil {
		closeCursors(cursors)
		return nil, err
	}
	// A file whose every start lies more than 24 h from the median was captured on another day:
	// all its events are left out, so its devices are not the capture's either.
	devices := map[int32]bool{}
	for i, f := range m.files {
		if d, ok := m.farFile(surveys[i]); ok {
			if m.farFiles == nil {
				m.farFiles = map[*fileReader]int64{}
			}
			m.farFiles[f] = d
			continue
		}
		for id := range fileDevices[i] {
			devices[id] = true
		}
	}
	m.im.Devices = len(devices)
	return cursors, nil
}

// farFile reports whether every start of a file's tables lies more than maxSpan from the median
// start, and how far its nearest start lies (negative: before it).
func (m *importer) farFile(surveys []*tableSurvey) (int64, bool) {
	if !m.outliers {
		return 0, false
	}
	var lo, hi int64
	some := false
	for _, ts := range surveys {
		if ts.starts {
			if !some {
				lo, hi, some = ts.lo, ts.hi, true
			}
			lo, hi = min(lo, ts.lo), max(hi, ts.hi)
		}
	}
	switch {
	case !some:
		return 0, false
	case hi-m.median < -maxSpan:
		return hi - m.median, true
	case lo-m.median > maxSpan:
		return lo - m.median, true
	}
	return 0, false
}

// FarApart is said, in the warning of an export captured more than 24 h away from the others, of
// the exports: they are not one job's (whatif refuses them).
const FarApart = "captured more than 24 h apart"

// cursor opens a cursor on table t of the file, read in start order as the plan says: from its
// pages when the survey read them and its rows need no sorting, else with SQL.
func (f *fileReader) cursor(t *table, order int, plan readPlan) (*cursor, error) {
	c := &cursor{f: f, t: t, order: order}
	if plan.mode == readReorder {
		c.hold = plan.hold
		if plan.store != nil && plan.store.runs != nil && plan.hold > 0 {
			c.runs = newRunMerge(plan.store)
			c.store = &c.runs.lead
			f.m.pageCursors++
			f.m.stored++
			f.m.byRuns++
			return c, nil
		}
		c.buf.Grow(int(min(int64(plan.hold)+1, plan.rows)))
	}
	if plan.store != nil {
		c.store = &storeRows{s: plan.store}
		f.m.pageCursors++
		f.m.stored++
		return c, nil
	}
	if plan.layout != nil && plan.mode != readSorted && !f.m.opts.sqlRows {
		p, err := f.openPageRows(t, plan.layout)
		if err != nil {
			return nil, wrap(t.name, err)
		}
		c.pages = p
		f.m.pageCursors++
		return c, nil
	}
	have := f.d.tables[t.name]
	exprs := make([]string, len(t.cols))
	for i, col := range t.cols {
		exprs[i] = pick(have, col)
	}
	conn, err := f.d.sql()
	if err != nil {
		return nil, err
	}
	s, _, err := conn.Prepare(f.query(t, exprs, plan.mode == readSorted))
	if err != nil {
		return nil, wrap(t.name, err)
	}
	c.stmt = s
	return c, nil
}

func closeCursors(cursors []*cursor) {
	for _, c := range cursors {
		c.close()
	}
}

// farSpan says how far apart two captures are, in hours and days.
func farSpan(d int64) string {
	h := time.Duration(d).Hours()
	return fmt.Sprintf("%.0f h (%.1f days)", h, h/24)
}

// otherNames names the files but f.
func (m *importer) otherNames(f *fileReader) []string {
	var out []string
	for _, o := range m.files {
		if o != f {
			out = append(out, o.d.name)
		}
	}
	return out
}

// farEvents are a file's events left out for starting too far from the capture's others: how
// many, and the first, for the file's summary line.
type farEvents struct {
	n     int64
	first string
}

// describe names an event in a warning: its kind and its name when it has one.
func (m *importer) describe(ev *timeline.Event) string {
	if name := m.im.Strings.Lookup(ev.Label); name != "" {
		return fmt.Sprintf("%s %q", ev.Kind, name)
	}
	return fmt.Sprintf("%s (unnamed)", ev.Kind)
}

// leaveOut counts an event of f left out for starting d from the capture's other events.
func (m *importer) leaveOut(f *fileReader, ev *timeline.Event, d int64) {
	if m.opts.Verbose {
		m.warn("%s: %s starts %s from the capture's other events (more than 24 h): left out", f.d.name, m.describe(ev), time.Duration(d))
	}
	if m.far == nil {
		m.far = map[*fileReader]*farEvents{}
	}
	fe := m.far[f]
	if fe == nil {
		fe = &farEvents{first: fmt.Sprintf("%s at %s", m.describe(ev), time.Duration(d).Round(time.Second))}
		m.far[f] = fe
	}
	fe.n++
}

// run merges the cursors' events and hands them on.
func (m *importer) run(cursors []*cursor) error {
	var mg merger
	defer closeCursors(cursors)
	for _, c := range cursors {
		more, err := c.next()
		if err != nil {
			return err
		}
		if more {
			mg.add(c)
		}
	}
	if err := mg.each(m.out); err != nil {
		return err
	}
	if !m.begun {
		m.begun = true
		if err := m.begin(m.description()); err != nil {
			return err
		}
	}
	return m.flush()
}

// out puts an event through what needs the events in start order: the outlier test, launch times,
// time 0 (the first event's start), then hands it on.
func (m *importer) out(f *fileReader, it *item) error {
	ev := it.ev
	if m.outliers {
		if d := ev.Start - m.median; d < -maxSpan || d > maxSpan {
			m.leaveOut(f, &ev, d)
			return nil
		}
	}
	switch it.role {
	case roleLaunch:
		m.launches.put(procID{ev.Host, it.proc}, ev.Op, ev.Start)
	case roleLaunched:
		if q, ok := m.launches.get(procID{ev.Host, it.proc}, ev.Op); ok {
			ev.Queued = q
		}
	}
	if !m.begun {
		m.begun, m.base = true, ev.Start
		if err := m.begin(m.description()); err != nil {
			return err
		}
	}
	if ev.Queued == queuedUnknown || ev.Queued < m.base {
		ev.Queued = -1
	} else {
		ev.Queued -= m.base
	}
	ev.Start -= m.base
	ev.End -= m.base
	m.batch = append(m.batch, ev)
	if len(m.batch) == cap(m.batch) {
		return m.flush()
	}
	return nil
}

func (m *importer) flush() error {
	if len(m.batch) == 0 {
		return nil
	}
	err := m.emit(m.batch)
	m.batch = m.batch[:0]
	return err
}

// description is the import's description as known before its first event.
func (m *importer) description() *kineto.Imported {
	if !m.anyClock {
		m.im.EpochUnixNs = m.base
	}
	m.im.Extra = m.extra
	return m.im
}

// checkExport refuses a file that is SQLite but not an Nsight Systems export with CUDA activity.
func checkExport(d *db) error {
	if err := d.need(tableStrings, "id", "value"); err != nil {
		return err
	}
	if !d.has(tableKernel) && !d.has(tableMemcpy) && !d.has(tableMemset) {
		return fmt.Errorf("%s: no table %s, %s or %s: the capture holds no CUDA activity (record it with `nsys profile --trace=cuda`)",
			d.name, tableKernel, tableMemcpy, tableMemset)
	}
	gpuCols := []string{"start", "end", "deviceId", "streamId"}
	for _, t := range []string{tableKernel, tableMemcpy, tableMemset} {
		if d.has(t) {
			if err := d.need(t, gpuCols...); err != nil {
				return err
			}
		}
	}
	checks := map[string][]string{
		tableKernel:  {"shortName"},
		tableMemcpy:  {"bytes", "copyKind"},
		tableMemset:  {"bytes"},
		tableRuntime: {"start", "end", "nameId"},
		tableSync:    {"start", "end", "deviceId", "streamId"},
		tableNVTX:    {"start", "end", "eventType"},
	}
	for t, cols := range checks {
		if d.has(t) {
			if err := d.need(t, cols...); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *importer) warn(format string, args ...any) {
	if m.quiet {
		return
	}
	limit := maxWarnings
	if m.opts.Verbose {
		limit = maxVerboseWarnings
	}
	if len(m.warnings) < limit {
		m.warnings = append(m.warnings, fmt.Sprintf(format, args...))
		return
	}
	m.moreWarn++
}

// maxLabels bounds the distinct names of an import: past it, a new name is taken as unknown, so
// that an export whose every range has a name of its own does not grow memory with its rows.
const maxLabels = 1 << 18

// label interns a name.
func (m *importer) label(s string) uint32 {
	if id, ok := m.labels[s]; ok {
		return id
	}
	return m.newLabel(s)
}

// labelBytes interns a name read in place, copying it only the first time.
func (m *importer) labelBytes(b []byte) uint32 {
	if id, ok := m.labels[string(b)]; ok {
		return id
	}
	return m.newLabel(string(b))
}

func (m *importer) newLabel(s string) uint32 {
	if m.im.Strings.Len() >= maxLabels {
		if !m.quiet {
			m.unnamed++
		}
		return 0
	}
	id := m.im.Strings.ID(s)
	m.labels[s] = id
	return id
}

// row counts one row read, telling progress now and then.
func (m *importer) row() {
	m.done++
	if m.opts.Progress != nil && m.done%progressEvery == 0 {
		m.opts.Progress(min(m.done, m.total), m.total)
	}
}

// finish completes the description: the warnings, and progress at its end.
func (m *importer) finish(multi bool) (*kineto.Imported, error) {
	im := m.im
	for _, f := range m.files {
		if d, ok := m.farFiles[f]; ok {
			when := "after"
			if d < 0 {
				when, d = "before", -d
			}
			n := int64(0)
			if fe := m.far[f]; fe != nil {
				n = fe.n
			}
			m.warn("%s: its capture starts %s %s the other exports' (%s): %s, not one job's captures: its %d events are left out; give the exports of one run",
				f.d.name, farSpan(d), when, strings.Join(m.otherNames(f), ", "), FarApart, n)
			continue
		}
		if fe := m.far[f]; fe != nil && !m.opts.Verbose {
			what := fmt.Sprintf("%d events start", fe.n)
			if fe.n == 1 {
				what = "1 event starts"
			}
			m.warn("%s: %s more than 24 h from the capture's other events: left out (the first, %s; -v lists them)", f.d.name, what, fe.first)
		}
	}
	if m.anyClock && multi {
		m.warn("some files have no %s: their times are those of their own clock, not aligned with the other files", tableStart)
	}
	if m.unnamed > 0 {
		m.warn("%d events' names were left out: the export has more than %d distinct names", m.unnamed, maxLabels)
	}
	if n := m.launches.lost; n > 0 {
		m.warn("%d GPU ops ran more than %d API calls of their process after their launch: their launch time is unknown", n, ringMax)
	}
	im.Warnings = m.warnings
	if m.moreWarn > 0 {
		im.Warnings = append(im.Warnings, fmt.Sprintf("%d more warnings like these", m.moreWarn))
	}
	if m.opts.Progress != nil {
		m.opts.Progress(max(m.total, m.done), max(m.total, m.done))
	}
	return im, nil
}

// fault is the error of a recovered panic that a fault on an export's mapped file raised (it was
// cut short while it was read), naming the file; nil for any other panic.
func fault(dbs []*db, r any) error {
	for _, d := range dbs {
		if d.src != nil {
			if err := d.src.Fault(r); err != nil {
				return err
			}
		}
	}
	return nil
}
