package timeline

import (
	"slices"
	"sync"
	"sync/atomic"
)

// DefaultWindow is how many events a Window keeps when a caller gives no limit, and the least the
// console's automatic window keeps (AutoWindow): about ten minutes of the default scenario at real
// speed (~700 events per simulated second), with room to spare.
const DefaultWindow = 1 << 20

// The console's automatic window (AutoWindow) keeps a minute of the busiest built-in workload for
// the job's GPUs, within a memory budget. Events arrive in proportion to the GPUs: llm-train's
// steady steps emit about EventsPerGPUSecond events per GPU per simulated second (3.5 M/s at
// 1,024 GPUs, 52,000/s at 32), so a fixed count holds ever less time as the job grows (1 M events
// held 0.3 s at 1,024 GPUs, trimming a finding's evidence a second after it was found).
const (
	// EventsPerGPUSecond is llm-train's event rate per GPU per simulated second in its steps.
	EventsPerGPUSecond = 3400
	// AutoWindowSeconds is the simulated time the automatic window is sized to hold.
	AutoWindowSeconds = 60
	// HeldEventBytes is the console's resident memory per event it holds: the event (80 bytes), the
	// console's state over it and the garbage collector's headroom (the heap may grow to twice
	// what is live before a collection). Measured as the peak resident set of a 1,024-GPU console
	// after 40 unpaced llm-train steps with a 14.9 M-event window less that with a 1 M-event one,
	// over the 13.9 M events the first held more: 218 bytes (docs/performance.md).
	HeldEventBytes = 218
	// WindowBudget is the most memory the automatic window's events may take: 2 GiB, and no more
	// than a quarter of the machine's memory where that is known.
	WindowBudget = 2 << 30
)

// AutoWindow is the console's window when --window is not given: AutoWindowSeconds of
// EventsPerGPUSecond for each of devices GPUs, at least DefaultWindow, and at most the events of
// HeldEventBytes that fit in WindowBudget or a quarter of ram (bytes; 0 when unknown). A job of
// unknown size (devices <= 0: an attach before the first event) gets DefaultWindow. The limit
// costs nothing until events fill it: a short run holds what it made.
func AutoWindow(devices int, ram uint64) int {
	if devices <= 0 {
		return DefaultWindow
	}
	budget := uint64(WindowBudget)
	if ram > 0 {
		budget = min(budget, ram/4)
	}
	most := max(int(budget/HeldEventBytes), DefaultWindow)
	want := min(int64(devices), 1<<20) * EventsPerGPUSecond * AutoWindowSeconds
	return int(min(max(want, DefaultWindow), int64(most)))
}

// windowChunk is the number of events per chunk; trimming drops whole chunks.
const windowChunk = 1 << 14

// Window is a bounded, concurrent event store: one producer appends (Emit) while any number of
// readers take snapshots. Appends never wait for readers: events go into fixed-size chunks and the
// length of the newest chunk is published atomically, so a snapshot copies only chunk headers under
// a short lock. When more than the limit are held, the oldest chunks are dropped and counted.
//
// Labels are copied from the producer's string table on its goroutine, so readers never touch it.
type Window struct {
	src *Strings // the producer's table; read only inside Emit

	mu      sync.Mutex
	limit   int       // guarded by mu: a listener sets it when its sender's job is known
	chunks  [][]Event // full chunks have len == cap; the last one's length is lastLen
	strs    []string
	base    int64 // global index of chunks[0][0]
	trimmed int64

	last    []Event // the producer's view of the newest chunk
	lastLen atomic.Int64
	known   uint32
	total   atomic.Int64
	maxEnd  atomic.Int64
	gen     atomic.Uint64
	from    atomic.Int64
}

// SetGeneration numbers the window's contents: a reader that sees the generation change knows
// the events it folded before are gone (a replay seeking back) and starts over.
func (w *Window) SetGeneration(g uint64) { w.gen.Store(g) }

// SetFrom says the window's contents start at time t (a replay started or sought there, which
// emits every event that ends at or after t), so that a reader analyses them from t on.
func (w *Window) SetFrom(t int64) { w.from.Store(t) }

// NewWindow returns a window keeping at most limit events (DefaultWindow when limit <= 0). src is
// the producer's string table.
func NewWindow(limit int, src *Strings) *Window {
	if limit <= 0 {
		limit = DefaultWindow
	}
	if src == nil {
		src = NewStrings()
	}
	return &Window{limit: max(limit, windowChunk), src: src, strs: []string{""}, known: 1}
}

// Emit appends a copy of e. It must be called from one goroutine.
func (w *Window) Emit(e *Event) {
	if e.Label >= w.known {
		w.mu.Lock()
		for id := w.known; id <= e.Label && int(id) < w.src.Len(); id++ {
			w.strs = append(w.strs, w.src.Lookup(id))
		}
		w.known = uint32(len(w.strs))
		w.mu.Unlock()
	}
	n := int(w.lastLen.Load())
	if w.last == nil || n == len(w.last) {
		w.newChunk()
		n = 0
	}
	w.last[n] = *e
	w.lastLen.Store(int64(n + 1))
	w.total.Add(1)
	if e.End > w.maxEnd.Load() {
		w.maxEnd.Store(e.End)
	}
}

func (w *Window) newChunk() {
	c := make([]Event, windowChunk)
	w.mu.Lock()
	if w.last != nil {
		w.chunks[len(w.chunks)-1] = w.last // now full
	}
	w.chunks = append(w.chunks, c[:0])
	w.last = c
	w.lastLen.Store(0)
	for len(w.chunks) > 1 && (len(w.chunks)-1)*windowChunk > w.limit {
		n := int64(len(w.chunks[0]))
		w.chunks[0] = nil
		w.chunks = w.chunks[1:]
		w.base += n
		w.trimmed += n
	}
	w.mu.Unlock()
}

// Snapshot is a consistent view of a Window at one moment. Its slices are never written again and
// can be read without locks.
type Snapshot struct {
	Chunks  [][]Event
	Strings []string
	Base    int64 // global index of the first event held
	Total   int64 // events emitted since the start (Base + held)
	Trimmed int64 // events dropped to keep the window bounded
	Now     int64 // the latest event end: how far the session has got
	// Generation changes when the window's contents start over (Reset, a replay's seek).
	Generation uint64
	// From is the time the contents start at (Window.SetFrom): 0 unless a replay started later.
	From int64
}

// Snapshot returns the window's current contents.
func (w *Window) Snapshot() Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := Snapshot{Chunks: make([][]Event, len(w.chunks)), Strings: w.strs[:len(w.strs):len(w.strs)], Base: w.base, Trimmed: w.trimmed}
	copy(s.Chunks, w.chunks)
	held := int64(0)
	if n := len(s.Chunks); n > 0 {
		last := w.chunks[n-1]
		s.Chunks[n-1] = last[:w.lastLen.Load()]
		for _, c := range s.Chunks {
			held += int64(len(c))
		}
	}
	s.Total = s.Base + held
	s.Now = w.maxEnd.Load()
	s.Generation = w.gen.Load()
	s.From = w.from.Load()
	return s
}

// Reset empties the window (a replay seeking backwards). Like Emit, it must be called from the
// producer's goroutine.
func (w *Window) Reset() {
	w.mu.Lock()
	w.trimmed += w.total.Load() - w.base
	w.base = w.total.Load()
	w.chunks, w.last = nil, nil
	w.lastLen.Store(0)
	w.maxEnd.Store(0)
	w.gen.Add(1)
	w.mu.Unlock()
}

// HeldBy returns s with only the events that live, a later snapshot of the same window, still
// holds: the chunks the window has trimmed since s are let go, and the rest are the window's own
// arrays. A frame kept on screen (a paused console) then holds no events beyond the window's: it
// held a second window's worth once the window had moved past it. Events of s no longer held read
// as trimmed (At returns nil). A live of another generation leaves s as it is. s's own list of
// chunks is not written.
func (s Snapshot) HeldBy(live *Snapshot) Snapshot {
	if live.Generation != s.Generation {
		return s
	}
	k := 0
	for k < len(s.Chunks) && s.Base+int64(len(s.Chunks[k])) <= live.Base {
		n := int64(len(s.Chunks[k]))
		s.Base += n
		s.Trimmed += n
		k++
	}
	if k > 0 {
		// A new list of chunks: re-slicing would keep the trimmed ones reachable, and the old list
		// is shared with other copies of s.
		s.Chunks = slices.Clone(s.Chunks[k:])
	}
	return s
}

// Len returns the number of events held.
func (s *Snapshot) Len() int { return int(s.Total - s.Base) }

// At returns the event with global index i (Base <= i < Total).
func (s *Snapshot) At(i int64) *Event {
	off := i - s.Base
	if off < 0 || off >= s.Total-s.Base {
		return nil
	}
	// Every chunk but the last is full, so the index divides straight into chunk and offset — except
	// after a Reset, when the first chunk may be partial: fall back to a walk then.
	if len(s.Chunks) > 0 && len(s.Chunks[0]) == windowChunk {
		c, k := off/windowChunk, off%windowChunk
		if int(c) < len(s.Chunks) && int(k) < len(s.Chunks[c]) {
			return &s.Chunks[c][k]
		}
	}
	for _, c := range s.Chunks {
		if off < int64(len(c)) {
			return &c[off]
		}
		off -= int64(len(c))
	}
	return nil
}

// Lookup returns the text of a label id (as Strings.Lookup does).
func (s *Snapshot) Lookup(id uint32) string { return s.Label(id) }

// Label returns the text of a label id.
func (s *Snapshot) Label(id uint32) string {
	if int(id) < len(s.Strings) {
		return s.Strings[id]
	}
	return ""
}

// Events copies the held events into one slice (for analyses that want a flat slice).
func (s *Snapshot) Events() []Event {
	out := make([]Event, 0, s.Len())
	for _, c := range s.Chunks {
		out = append(out, c...)
	}
	return out
}

// SetLimit changes the most events the window keeps (DefaultWindow when limit <= 0): a listener
// sizes its window once a sender has said how many GPUs its job has. A smaller limit trims at the
// next chunk.
func (w *Window) SetLimit(limit int) {
	if limit <= 0 {
		limit = DefaultWindow
	}
	w.mu.Lock()
	w.limit = max(limit, windowChunk)
	w.mu.Unlock()
}

// Limit returns the most events the window keeps.
func (w *Window) Limit() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.limit
}
