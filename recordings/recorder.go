package recordings

import (
	"errors"
	"fmt"
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

// batch is events with the string table entries they introduced.
type batch struct {
	events  []timeline.Event
	first   uint32 // id of strs[0]
	strs    []string
	dropped int64
}

// Recorder is a timeline.Sink that writes a recording in the background. Emit never blocks: events
// are gathered in batches handed to a writer goroutine through a bounded queue; when the queue is
// full a batch is dropped, counted, and the count written into the file (and shown by Dropped).
//
// Emit must be called from one goroutine (the producer's); Close from any.
type Recorder struct {
	w       *Writer
	strs    *timeline.Strings
	known   uint32 // string ids below this are already recorded
	mu      sync.Mutex
	cur     *batch
	queue   chan *batch
	free    chan *batch
	dropped atomic.Int64
	done    chan struct{}
	err     atomic.Pointer[error]
	closed  bool
	size    int
}

// NewRecorder starts recording to w. strs is the session's string table: it is read only from the
// producer's goroutine, inside Emit. meta is written first.
func NewRecorder(w *Writer, strs *timeline.Strings, meta Meta) (*Recorder, error) {
	return newRecorder(w, strs, meta, DefaultBatch, DefaultQueue, DefaultFlushEvery)
}

func newRecorder(w *Writer, strs *timeline.Strings, meta Meta, size, queue int, every time.Duration) (*Recorder, error) {
	if err := w.WriteMeta(meta); err != nil {
		return nil, err
	}
	r := &Recorder{w: w, strs: strs, known: 1, queue: make(chan *batch, queue), free: make(chan *batch, queue+2),
		done: make(chan struct{}), size: size}
	r.cur = r.newBatch()
	go r.loop(every)
	return r, nil
}

func (r *Recorder) newBatch() *batch {
	select {
	case b := <-r.free:
		b.events, b.strs, b.dropped = b.events[:0], b.strs[:0], 0
		return b
	default:
		return &batch{events: make([]timeline.Event, 0, r.size)}
	}
}

// Emit records a copy of e.
func (r *Recorder) Emit(e *timeline.Event) {
	r.mu.Lock()
	b := r.cur
	if b == nil { // closed
		r.mu.Unlock()
		return
	}
	if e.Label >= r.known {
		// New strings: copy them now, on the producer's goroutine, which owns the table.
		if len(b.strs) == 0 {
			b.first = r.known
		}
		for id := r.known; id <= e.Label && int(id) < r.strs.Len(); id++ {
			b.strs = append(b.strs, r.strs.Lookup(id))
		}
		r.known = uint32(max(int(e.Label)+1, int(r.known)))
	}
	b.events = append(b.events, *e)
	full := len(b.events) >= r.size
	if full {
		r.handOff()
	}
	r.mu.Unlock()
}

// handOff passes the current batch to the writer, or drops it if the queue is full. Strings are
// never dropped: a dropped batch's new strings move to the next batch. Called with r.mu held.
func (r *Recorder) handOff() {
	b := r.cur
	select {
	case r.queue <- b:
		r.cur = r.newBatch()
	default:
		r.dropped.Add(int64(len(b.events)))
		b.dropped += int64(len(b.events))
		b.events = b.events[:0]
	}
}

func (r *Recorder) loop(every time.Duration) {
	defer close(r.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case b, ok := <-r.queue:
			if !ok {
				return
			}
			r.write(b)
		case <-tick.C:
			r.mu.Lock()
			if r.cur != nil && (len(r.cur.events) > 0 || len(r.cur.strs) > 0 || r.cur.dropped > 0) {
				r.handOff()
			}
			r.mu.Unlock()
			if err := r.w.Flush(); err != nil {
				r.fail(err)
			}
		}
	}
}

func (r *Recorder) write(b *batch) {
	if r.err.Load() == nil {
		err := r.w.WriteStrings(b.first, b.strs)
		if err == nil {
			err = r.w.WriteDropped(b.dropped)
		}
		if err == nil {
			err = r.w.WriteEvents(b.events)
		}
		if err != nil {
			r.fail(err)
		}
	}
	select {
	case r.free <- b:
	default:
	}
}

func (r *Recorder) fail(err error) { r.err.CompareAndSwap(nil, &err) }

// Dropped returns how many events were dropped because the writer fell behind.
func (r *Recorder) Dropped() int64 { return r.dropped.Load() }

// Close writes what is left, the outcome, the index and the trailer, and syncs the file. It returns
// the first write error, if any.
func (r *Recorder) Close(outcome [][2]string) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errors.New("recorder already closed")
	}
	r.closed = true
	last := r.cur
	r.cur = nil
	r.mu.Unlock()
	// The producer has stopped: block for the queue to drain instead of dropping the last batch.
	r.queue <- last
	close(r.queue)
	<-r.done
	if p := r.err.Load(); p != nil {
		_ = r.w.Close()
		return fmt.Errorf("recording: %w", *p)
	}
	if err := r.w.WriteOutcome(outcome); err != nil {
		return err
	}
	return r.w.Close()
}
