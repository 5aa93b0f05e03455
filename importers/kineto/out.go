package kineto

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// The output stage takes the items in start order from the sorter and puts each through what needs
// them in that order, then hands the events on in batches. Correlations are resolved in a window:
// a runtime call (or, for --like-hta, a CPU op) is noted as it enters, its GPU ops are looked up as
// they leave, lookWindow items later, so that a launch timestamped a little after its kernel (the
// CPU and GPU clocks of a trace are aligned only so well) is still found.

// lookWindow is how many items pass between an item's entry and its exit.
const lookWindow = 1 << 12

// batchEvents is how many events are handed on at a time: as many as a recording is read in.
const batchEvents = recordings.DefaultBatch

// output is the last stage of an import.
type output struct {
	m        *importer
	window   []item // a ring of lookWindow items
	head, n  int
	corr     corrTable
	median   int64
	outliers bool // events further than maxSpan from median are left out
	rebase   bool // put times on the import's axis (not for xfertop's own exports)
	begun    bool
	base     int64
	batch    []timeline.Event
	devices  map[int32]bool
	lastDev  int32 // the device last put in devices (-1: none)
	begin    func(*Imported) error
	emit     func([]timeline.Event) error
}

func newOutput(m *importer, begin func(*Imported) error, emit func([]timeline.Event) error) *output {
	return &output{m: m, corr: newCorrTable(m.opts.corrKeep), devices: map[int32]bool{}, lastDev: -1, begin: begin, emit: emit}
}

// admit applies to an item what the survey learnt once every file was read, and reports whether
// it goes on: it is of the class its file turned out to be (a generic trace's slices get their
// names; a GPU op or runtime call of a rank, its device), and --like-hta's selection keeps it.
func (o *output) admit(it *item) bool {
	fi := o.m.files[it.org.file()]
	if int(it.flags&classMask>>classShift) != fi.class {
		return false
	}
	it.flags &^= classMask
	switch fi.class {
	case classGeneric:
		it.ev.Label = fi.genIDs[it.ev.Label]
	case classKineto:
		if it.ev.Device == devicePending {
			it.ev.Device = fi.rank
		}
	}
	switch {
	case !o.m.htaActive:
		it.flags &^= flagCPUOp | flagSelect
	case !fi.hta.hasCPU:
		it.flags &^= flagSelect
	case it.flags&flagSelect != 0: // a GPU op: selected by its correlation's CPU op as it goes out
	case it.ev.Start >= fi.cut():
		if it.flags&flagLaunch == 0 {
			return false
		}
		it.flags = flagLaunch | flagPhantom | it.flags&flagGraph // left out, but its GPU ops' launch time is its start
	}
	return it.flags&flagPhantom == 0 || it.flags&(flagLaunch|flagCPUOp) != 0
}

// in takes the next item in start order.
func (o *output) in(it *item) error {
	if o.window == nil { // made with the first item: an import that fails while reading needs none
		o.window, o.batch = make([]item, lookWindow), make([]timeline.Event, 0, batchEvents)
	}
	if it.flags&(flagLaunch|flagCPUOp) != 0 && !o.outlier(it.ev.Start) {
		o.corr.put(it.org.file(), it.ev.Op, it.ev.Start, it.seq, it.flags)
	}
	if o.n == len(o.window) {
		if err := o.exit(&o.window[o.head]); err != nil {
			return err
		}
		o.window[o.head] = *it
		o.head = (o.head + 1) % len(o.window)
		return nil
	}
	o.window[(o.head+o.n)%len(o.window)] = *it
	o.n++
	return nil
}

func (o *output) outlier(t int64) bool {
	d := t - o.median
	return o.outliers && (d < -maxSpan || d > maxSpan)
}

// exit puts an item through the selection, the outlier check, its launch time and time 0, and
// hands its event on.
func (o *output) exit(it *item) error {
	if it.flags&flagPhantom != 0 {
		return nil
	}
	ev := it.ev
	file := it.org.file()
	if it.flags&flagSelect != 0 {
		t, ok := o.corr.cpu(file, ev.Op)
		if !ok || t >= o.m.files[file].cut() {
			return nil
		}
	}
	if o.outlier(ev.Start) {
		o.m.warn("%s: traceEvents[%d] %s: ts lies %s from the trace's other events (more than 24 h): event left out",
			o.m.names[file], it.org.index(), shortName([]byte(o.m.im.Strings.Lookup(ev.Label))), span(ev.Start-o.median))
		return nil
	}
	if it.flags&flagPending != 0 {
		ev.Queued = queuedUnknown
		if q, graph, ok := o.corr.launch(file, ev.Op); ok {
			ev.Queued = q
			if graph && ev.Kind.IsBusy() {
				ev.Aux |= timeline.AuxCaptured // replayed by a graph: the same mark the engine gives
			}
		}
	}
	if !o.begun {
		o.begun, o.base = true, ev.Start
		if err := o.begin(o.m.description(o.base)); err != nil {
			return err
		}
	}
	if o.rebase {
		if ev.Queued == queuedUnknown || ev.Queued < o.base {
			ev.Queued = -1
		} else {
			ev.Queued -= o.base
		}
		ev.Start -= o.base
		ev.End -= o.base
	}
	if ev.Device >= 0 && ev.Device != o.lastDev && ev.Kind != timeline.KindRuntime && ev.Kind != timeline.KindGraphLaunch && ev.Kind != timeline.KindStep && len(o.devices) < maxTracks {
		o.devices[ev.Device], o.lastDev = true, ev.Device
	}
	o.batch = append(o.batch, ev)
	if len(o.batch) == cap(o.batch) {
		return o.flush()
	}
	return nil
}

func (o *output) flush() error {
	if len(o.batch) == 0 {
		return nil
	}
	err := o.emit(o.batch)
	o.batch = o.batch[:0]
	return err
}

// finish lets the window's items out and hands on the last batch.
func (o *output) finish() error {
	for ; o.n > 0; o.n-- {
		if err := o.exit(&o.window[o.head]); err != nil {
			return err
		}
		o.head = (o.head + 1) % len(o.window)
	}
	if !o.begun {
		o.begun = true
		if err := o.begin(o.m.description(0)); err != nil {
			return err
		}
	}
	return o.flush()
}

// corrKeep bounds the correlations kept: those of the last corrKeep runtime calls (and, for
// --like-hta, CPU ops) to enter the window, of every file. A GPU op leaves the window after its
// call entered it, so only one that starts more than that many calls after its launch (a host far
// ahead of its GPUs) finds it forgotten; the import says how many did.
const corrKeep = 1 << 16

// corrEntry is what is known of one correlation id of one file.
type corrEntry struct {
	corr      uint64
	file      int32
	used      bool
	hasLaunch bool
	hasCPU    bool
	graph     bool  // its launch is a graph launch
	launch    int64 // the start of its runtime call (the last the file holds)
	launchSeq int64
	minCPU    int64 // the earliest start of a CPU op carrying it (--like-hta)
}

// corrKey names a correlation: its id and its file.
type corrKey struct {
	corr uint64
	file int32
}

// corrTable maps each file's correlation ids to their launch time and earliest CPU op, keeping
// the last capacity ones (the keys in the order they came, a ring).
//
// A key is kept in one of two tables. The direct table holds it in slot corr mod its size (after
// an offset by file), found without hashing or probing: a trace's ids mostly come in sequence
// (CUPTI numbers every runtime call), and an import in start order meets them nearly in order, so
// that its lookups, insertions and evictions walk the direct table in order. It has twice capacity
// slots (grown to it), so the ids of a capacity's worth of calls in sequence never share a slot;
// the ranks of a job, whose ids run through the same numbers at the same time, each start at
// another place in it. A key whose direct slot is taken (ids far apart: a PyTorch trace samples
// CUPTI's, or two files' ids that meet) goes to the hashed table, with linear probing (deletion
// by shifting back, so that no tombstone is left), grown while it is more than half full. A
// lookup tries the direct slot, then the hashed table.
type corrTable struct {
	direct   []corrEntry
	shift    uint        // 64 less the bits of a direct slot's index
	slots    []corrEntry // the hashed table
	hashed   int         // the keys in slots
	fifo     []corrKey   // a ring of capacity
	head, n  int
	evicted  []evicted // by file
	lost     int       // GPU ops whose correlation was forgotten
	capacity int
}

// evicted is the largest correlation id a file had forgotten, if any: a slice by file, not a map,
// since every call past the table's capacity forgets one.
type evicted struct {
	corr uint64
	was  bool
}

func newCorrTable(capacity int) corrTable {
	return corrTable{capacity: capacity}
}

// home is a key's first slot in the hashed table. A file's correlation ids come in sequence, so
// runs of 16 ids keep to 16 neighbouring slots, and a run goes out by Fibonacci hashing of the
// rest (the high bits of the product, masked by find): lookups then walk the table nearly in order
// instead of missing the cache at each, and ids chosen to collide still collide in runs of at most
// 16.
func (t *corrTable) home(file int32, corr uint64) int {
	h := ((corr >> 4) ^ uint64(file)<<44) * 0x9E3779B97F4A7C15 >> 32
	return int(h<<4 | corr&15)
}

// find returns the slot of a key in the hashed table, or of the empty slot where it would go.
func (t *corrTable) find(file int32, corr uint64) int {
	mask := len(t.slots) - 1
	for i := t.home(file, corr) & mask; ; i = (i + 1) & mask {
		if e := &t.slots[i]; !e.used || e.corr == corr && e.file == file {
			return i
		}
	}
}

// remove empties slot i of the hashed table, shifting back the entries after it that probed past
// it.
func (t *corrTable) remove(i int) {
	mask := len(t.slots) - 1
	for j := (i + 1) & mask; t.slots[j].used; j = (j + 1) & mask {
		h := t.home(t.slots[j].file, t.slots[j].corr) & mask
		// the entry at j may move to i if its home is not in (i, j], cyclically
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = corrEntry{}
	t.hashed--
}

func (t *corrTable) grow() {
	old := t.slots
	t.slots = make([]corrEntry, max(64, 2*len(old)))
	for _, e := range old {
		if e.used {
			t.slots[t.find(e.file, e.corr)] = e
		}
	}
}

// directSlot is the slot of the direct table where a file's id would be: the id modulo the
// table's size, after an offset by file (Fibonacci hashing of its index; none for the first).
func (t *corrTable) directSlot(file int32, corr uint64) *corrEntry {
	off := uint64(file) * 0x9E3779B97F4A7C15 >> t.shift
	return &t.direct[(corr+off)&uint64(len(t.direct)-1)]
}

// growDirect doubles the direct table. Its keys are placed again (a file's offset depends on the
// size); one whose new slot another took goes to the hashed table, whose keys stay there.
func (t *corrTable) growDirect() {
	old := t.direct
	t.direct = make([]corrEntry, max(64, 2*len(old)))
	t.shift = uint(64 - bits.Len(uint(len(t.direct)-1)))
	for _, e := range old {
		if !e.used {
			continue
		}
		if d := t.directSlot(e.file, e.corr); !d.used {
			*d = e
		} else {
			*t.hashSlot(e.file, e.corr) = e
		}
	}
}

// hashSlot makes room in the hashed table for a key it does not hold, and returns its slot.
func (t *corrTable) hashSlot(file int32, corr uint64) *corrEntry {
	if t.slots == nil || 2*(t.hashed+1) > len(t.slots) {
		t.grow()
	}
	t.hashed++
	return &t.slots[t.find(file, corr)]
}

// lookup returns the entry of a key, or nil.
func (t *corrTable) lookup(file int32, corr uint64) *corrEntry {
	if t.direct == nil {
		return nil
	}
	if e := t.directSlot(file, corr); e.used && e.corr == corr && e.file == file {
		return e
	}
	if t.hashed > 0 {
		if e := &t.slots[t.find(file, corr)]; e.used {
			return e
		}
	}
	return nil
}

// insert adds a key the table does not hold, forgetting the oldest when it holds capacity.
func (t *corrTable) insert(file int32, corr uint64) *corrEntry {
	if t.n == t.capacity {
		t.evictOldest()
	}
	if 2*(t.n+1) > len(t.direct) && len(t.direct) < 2*t.capacity {
		t.growDirect()
	}
	if len(t.fifo) < t.capacity {
		t.fifo = append(t.fifo, corrKey{})
	}
	tail := t.head + t.n
	if tail >= len(t.fifo) {
		tail -= len(t.fifo)
	}
	t.fifo[tail] = corrKey{corr, file}
	t.n++
	e := t.directSlot(file, corr)
	if e.used {
		e = t.hashSlot(file, corr)
	}
	*e = corrEntry{corr: corr, file: file, used: true}
	return e
}

// evictOldest forgets the key that came first, noting it as its file's forgotten.
func (t *corrTable) evictOldest() {
	old := t.fifo[t.head]
	if e := t.directSlot(old.file, old.corr); e.used && e.corr == old.corr && e.file == old.file {
		*e = corrEntry{}
	} else {
		t.remove(t.find(old.file, old.corr))
	}
	if int(old.file) >= len(t.evicted) {
		t.evicted = append(t.evicted, make([]evicted, int(old.file)+1-len(t.evicted))...)
	}
	ev := &t.evicted[old.file]
	ev.corr, ev.was = max(ev.corr, old.corr), true
	if t.head++; t.head == len(t.fifo) {
		t.head = 0
	}
	t.n--
}

func (t *corrTable) put(file int, corr uint64, start, seq int64, flags uint8) {
	f := int32(file)
	e := t.lookup(f, corr)
	if e == nil {
		e = t.insert(f, corr)
	}
	if flags&flagLaunch != 0 && (!e.hasLaunch || seq > e.launchSeq) {
		e.hasLaunch, e.launch, e.launchSeq, e.graph = true, start, seq, flags&flagGraph != 0
	}
	if flags&flagCPUOp != 0 && (!e.hasCPU || start < e.minCPU) {
		e.hasCPU, e.minCPU = true, start
	}
}

// get returns the entry of a correlation, counting it as forgotten when it may have been.
func (t *corrTable) get(file int, corr uint64) *corrEntry {
	f := int32(file)
	if e := t.lookup(f, corr); e != nil {
		return e
	}
	if int(f) < len(t.evicted) && t.evicted[f].was && corr <= t.evicted[f].corr {
		t.lost++
	}
	return nil
}

// launch returns the launch time of a correlation, and whether that launch was a graph's.
func (t *corrTable) launch(file int, corr uint64) (int64, bool, bool) {
	if e := t.get(file, corr); e != nil && e.hasLaunch {
		return e.launch, e.graph, true
	}
	return 0, false, false
}

func (t *corrTable) cpu(file int, corr uint64) (int64, bool) {
	if e := t.get(file, corr); e != nil && e.hasCPU {
		return e.minCPU, true
	}
	return 0, false
}

// span writes a time difference for a person: days or years when it is that long.
func span(d int64) string {
	if d < 0 {
		d = -d
	}
	const day = int64(24 * time.Hour)
	if d >= 365*day {
		return fmt.Sprintf("%.1f years", float64(d)/float64(365.25*float64(day)))
	}
	return fmt.Sprintf("%.1f days", float64(d)/float64(day))
}

// QueuedUnknown marks, while importing, an event whose launch time is not known yet.
const QueuedUnknown = queuedUnknown

// MaxSpan is how far apart in time the events of one import may lie: a trace spans seconds to
// hours, so an event further than this from the others has a damaged timestamp.
const MaxSpan = maxSpan
