package kineto

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
// A key is kept in one of two tables. The direct table holds it in slot corr mod its size, found
// without hashing or probing: a trace's ids mostly come in sequence (CUPTI numbers every runtime
// call), and an import in start order meets them nearly in order, so that its lookups, insertions
// and evictions walk the direct table in order. It has twice capacity slots (grown to it), so the
// ids of a capacity's worth of calls in sequence never share a slot. A key whose direct slot is
// taken (ids of another file, or far apart: a PyTorch trace samples CUPTI's) goes to the hashed
// table, with linear probing (deletion by shifting back, so that no tombstone is left), grown
// while it is more than half full. A lookup tries the direct slot, then the hashed table.
type corrTable struct {
	direct   []corrEntry
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

// directSlot is the slot of the direct table where corr would be.
func (t *corrTable) directSlot(corr uint64) *corrEntry {
	return &t.direct[corr&uint64(len(t.direct)-1)]
}

// growDirect doubles the direct table: its keys keep a slot each (ids apart in the smaller table
// are apart in the larger one); the hashed table's stay there.
func (t *corrTable) growDirect() {
	old := t.direct
	t.direct = make([]corrEntry, max(64, 2*len(old)))
	for _, e := range old {
		if e.used {
			*t.directSlot(e.corr) = e
		}
	}
}

// lookup returns the entry of a key, or nil.
func (t *corrTable) lookup(file int32, corr uint64) *corrEntry {
	if t.direct == nil {
		return nil
	}
	if e := t.directSlot(corr); e.used && e.corr == corr && e.file == file {
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
	if e := t.directSlot(corr); !e.used {
		*e = corrEntry{corr: corr, file: file, used: true}
		return e
	}
	if t.slots == nil || 2*(t.hashed+1) > len(t.slots) {
		t.grow()
	}
	i := t.find(file, corr)
	t.slots[i] = corrEntry{corr: corr, file: file, used: true}
	t.hashed++
	return &t.slots[i]
}

// evictOldest forgets the key that came first, noting it as its file's forgotten.
func (t *corrTable) evictOldest() {
	old := t.fifo[t.head]
	if e := t.directSlot(old.corr); e.used && e.corr == old.corr && e.file == old.file {
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
