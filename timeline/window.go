package timeline

import (
	"sync"
	"sync/atomic"
)

// DefaultWindow is how many events a Window keeps by default: about ten minutes of the default
// scenario at real speed (~700 events per simulated second), with room to spare.
const DefaultWindow = 1 << 20

// windowChunk is the number of events per chunk; trimming drops whole chunks.
const windowChunk = 1 << 14

// Window is a bounded, concurrent event store: one producer appends (Emit) while any number of
// readers take snapshots. Appends never wait for readers: events go into fixed-size chunks and the
// length of the newest chunk is published atomically, so a snapshot copies only chunk headers under
// a short lock. When more than the limit are held, the oldest chunks are dropped and counted.
//
// Labels are copied from the producer's string table on its goroutine, so readers never touch it.
type Window struct {
	limit int
	src   *Strings // the producer's table; read only inside Emit

	mu      sync.Mutex
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

// Limit returns the most events the window keeps.
func (w *Window) Limit() int { return w.limit }
