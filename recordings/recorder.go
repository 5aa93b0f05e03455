package recordings

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// Recorder defaults.
const (
	DefaultBatch      = 8192                   // events per chunk
	DefaultQueue      = 64                     // batches waiting to be written
	DefaultFlushEvery = 250 * time.Millisecond // the most a killed process can lose
)

// Recorder is a timeline.Sink that writes a recording in the background. Emit never blocks: events
// travel in batches through a bounded queue (timeline.Batches) to a writer goroutine; when the
// queue is full a batch is dropped, counted, and the count written into the file (and shown by
// Dropped). Every batch, full or not, reaches the file within DefaultFlushEvery. A Lossless
// recorder instead makes Emit wait for the writer when the queue is full, and drops nothing.
//
// The first write error (a full disk, say) stops writing: later batches are dropped, Failed is
// closed so the session can stop the run, and what was written before stays readable.
//
// Emit must be called from one goroutine (the producer's); Close, Failed and Err from any.
type Recorder struct {
	w        *Writer
	batches  *timeline.Batches
	done     chan struct{}
	failed   chan struct{}
	err      atomic.Pointer[error]
	closed   atomic.Bool
	lossless bool
	known    uint32    // string ids written so far (the loop's; Close reads it once the loop ended)
	flight   *InFlight // SetInFlight's, written by Close
	namesMu  sync.Mutex
	names    []HostName // NameHost's, not yet written (the loop writes them before the next events)
}

// RecorderOption changes a Recorder's defaults.
type RecorderOption func(*recorderConfig)

type recorderConfig struct {
	every    time.Duration
	lossless bool
}

// FlushEvery sets how often a partial batch goes to the file (default DefaultFlushEvery; values
// ≤ 0 keep the default). A period longer than the run makes the chunk boundaries depend on the
// events alone, not on how fast the run went: what byte-identical sample recordings need.
func FlushEvery(d time.Duration) RecorderOption {
	return func(c *recorderConfig) {
		if d > 0 {
			c.every = d
		}
	}
}

// Lossless makes Emit wait for the writer when its queue is full instead of dropping a batch. For
// a producer that is not tied to the wall clock (an unpaced simulation): whether a batch would be
// dropped depends on how fast the disk and the scheduler let the writer go, so a dropping recorder
// can record the same run differently from one time to the next. Waiting slows such a producer
// down, and costs it nothing else.
func Lossless() RecorderOption { return func(c *recorderConfig) { c.lossless = true } }

// NewRecorder starts recording to w. strs is the session's string table: it is read only from the
// producer's goroutine, inside Emit. meta is written first.
func NewRecorder(w *Writer, strs *timeline.Strings, meta Meta, opts ...RecorderOption) (*Recorder, error) {
	c := recorderConfig{every: DefaultFlushEvery}
	for _, o := range opts {
		o(&c)
	}
	return newRecorder(w, strs, meta, DefaultBatch, DefaultQueue, c)
}

func newRecorder(w *Writer, strs *timeline.Strings, meta Meta, size, queue int, c recorderConfig) (*Recorder, error) {
	if err := w.WriteMeta(meta); err != nil {
		return nil, err
	}
	r := &Recorder{w: w, batches: timeline.NewBatches(strs, size, queue, c.every, nil), done: make(chan struct{}), failed: make(chan struct{}), lossless: c.lossless}
	r.batches.SetBlocking(c.lossless) // before the first Emit
	go r.loop()
	return r, nil
}

// Emit records a copy of e.
func (r *Recorder) Emit(e *timeline.Event) { r.batches.Emit(e) }

func (r *Recorder) loop() {
	defer close(r.done)
	for b := range r.batches.C() {
		if r.err.Load() == nil {
			// A name comes before the events of its host: NameHost took it before the first of them
			// was emitted, so before this batch was handed over.
			err := r.w.WriteHostNames(r.takeNames())
			if err == nil {
				err = r.w.WriteStrings(b.First, b.Strings)
			}
			if err == nil && len(b.Strings) > 0 {
				r.known = max(r.known, b.First+uint32(len(b.Strings)))
			}
			if err == nil {
				err = r.w.WriteDropped(b.Dropped)
			}
			if err == nil {
				err = r.w.WriteEvents(b.Events)
			}
			if err == nil {
				err = r.w.Flush() // into the operating system: a killed process loses none of it
			}
			if err != nil && r.err.CompareAndSwap(nil, &err) {
				close(r.failed)
			}
		}
		r.batches.Release(b)
	}
}

// NameHost records the name a live source learned for host h (timeline.HostNamer): a HostNames
// chunk written before the next events, so that a replay of the recording names the host as the
// live run did, though the Meta chunk was written before the source learned it. An empty name, a
// negative host, or a name over 1,024 bytes (which a reader would take for damage) is not
// recorded. It may be called from any goroutine.
func (r *Recorder) NameHost(h int32, name string) {
	if h < 0 || name == "" || len(name) > maxHostName {
		return
	}
	r.namesMu.Lock()
	r.names = append(r.names, HostName{Host: h, Name: name})
	r.namesMu.Unlock()
}

// takeNames returns the names NameHost took since the last call.
func (r *Recorder) takeNames() []HostName {
	r.namesMu.Lock()
	defer r.namesMu.Unlock()
	names := r.names
	r.names = nil
	return names
}

// Failed is closed when a write fails; Err then says why.
func (r *Recorder) Failed() <-chan struct{} { return r.failed }

// Err returns the first write error, or nil while every write has succeeded.
func (r *Recorder) Err() error {
	if p := r.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Dropped returns how many events were dropped because the writer fell behind.
func (r *Recorder) Dropped() int64 { return r.batches.Dropped() }

// Lossless reports whether Emit waits for the writer rather than drop (the Lossless option).
func (r *Recorder) Lossless() bool { return r.lossless }

// Waits returns how many times a Lossless recorder's Emit waited for the writer to catch up.
func (r *Recorder) Waits() int64 { return r.batches.Waits() }

// Close writes what is left, the outcome, the index and the trailer, and syncs the file. It returns
// the first write error, if any.
func (r *Recorder) Close(outcome [][2]string) error {
	if r.closed.Swap(true) {
		return errors.New("recorder already closed")
	}
	r.batches.Close()
	<-r.done
	if p := r.err.Load(); p != nil {
		_ = r.w.Close()
		return fmt.Errorf("recording: %w", *p)
	}
	// Names learned after the last events (a rank that named its host and sent nothing).
	if err := r.w.WriteHostNames(r.takeNames()); err != nil {
		return err
	}
	if f := r.flight; f != nil {
		// A label the recording never wrote (an op that never ended, of a kernel that never
		// ran before) would name no string: it is left out rather than name the wrong one.
		for i := range f.Events {
			if f.Events[i].Label >= r.known {
				f.Events[i].Label = 0
			}
		}
		if err := r.w.WriteInFlight(*f); err != nil {
			return err
		}
	}
	if err := r.w.WriteOutcome(outcome); err != nil {
		return err
	}
	return r.w.Close()
}

// SetInFlight keeps what the run had in flight when it stopped early, at time now (what the
// diagnosis was given), for Close to write (an InFlight chunk, before the outcome): a replay then
// gives the diagnosis the same. Call it before Close, from the goroutine that calls Close.
func (r *Recorder) SetInFlight(now int64, inflight []timeline.Event) {
	r.flight = &InFlight{Now: now, Events: slices.Clone(inflight)}
}
