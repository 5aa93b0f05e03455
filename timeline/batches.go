package timeline

import (
	"sync"
	"sync/atomic"
	"time"
)

// Batch is a run of events handed from a producer to a consumer, with the string table entries
// they introduced (ids First, First+1, …) and how many events were dropped before it.
type Batch struct {
	Events  []Event
	First   uint32
	Strings []string
	Dropped int64
}

// Batches carries events from a producer to a slower consumer (a file writer, an exporter) without
// ever making the producer wait. Emit appends to the current batch; full batches, and every
// partial one at least every flush interval, go through a bounded queue. When the queue is full the
// batch's events are dropped and counted (its strings are kept for the next batch, so labels never
// go missing), and the count travels with the next batch that gets through.
//
// Emit must be called from the producer's goroutine (it reads the producer's string table);
// C, Release and Dropped from the consumer's; Close once, after the producer has stopped.
type Batches struct {
	src     *Strings
	keep    func(*Event) bool
	block   bool // Emit waits for room instead of dropping (SetBlocking)
	size    int
	known   uint32
	mu      sync.Mutex
	cur     *Batch
	pending int64 // drops not yet carried by a batch
	queue   chan *Batch
	free    chan *Batch
	dropped atomic.Int64
	waits   atomic.Int64 // handOffs that found the queue full and waited (SetBlocking)
	stop    chan struct{}
	done    chan struct{}
}

// NewBatches starts carrying events of src's producer: batches of size events, queue batches
// waiting, partial batches sent every flush. keep, when set, selects the events carried.
func NewBatches(src *Strings, size, queue int, flush time.Duration, keep func(*Event) bool) *Batches {
	if src == nil {
		src = NewStrings()
	}
	b := &Batches{src: src, keep: keep, size: size, known: 1, queue: make(chan *Batch, queue), free: make(chan *Batch, queue+2),
		stop: make(chan struct{}), done: make(chan struct{})}
	b.cur = b.newBatch()
	go b.ticker(flush)
	return b
}

func (b *Batches) newBatch() *Batch {
	select {
	case x := <-b.free:
		x.Events, x.Strings, x.Dropped = x.Events[:0], x.Strings[:0], 0
		return x
	default:
		return &Batch{Events: make([]Event, 0, b.size)}
	}
}

// SetBlocking makes Emit wait for room in the queue instead of dropping a batch: for a consumer
// that must see every event (a lossless export), at the cost of slowing the producer down to its
// pace. Call it before the first Emit.
func (b *Batches) SetBlocking(block bool) { b.block = block }

// Emit carries a copy of e (when keep selects it).
func (b *Batches) Emit(e *Event) {
	if b.keep != nil && !b.keep(e) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.cur
	if c == nil {
		return // closed
	}
	if e.Label >= b.known {
		if len(c.Strings) == 0 {
			c.First = b.known
		}
		for id := b.known; id <= e.Label && int(id) < b.src.Len(); id++ {
			c.Strings = append(c.Strings, b.src.Lookup(id))
		}
		b.known = max(e.Label+1, b.known)
	}
	c.Events = append(c.Events, *e)
	if len(c.Events) >= b.size {
		b.handOff()
	}
}

// handOff sends the current batch, or drops its events when the queue is full (unless blocking:
// then it waits). Called with b.mu.
func (b *Batches) handOff() {
	c := b.cur
	c.Dropped = b.pending
	if b.block {
		select {
		case b.queue <- c:
		default:
			b.waits.Add(1)
			b.queue <- c
		}
		b.pending = 0
		b.cur = b.newBatch()
		return
	}
	select {
	case b.queue <- c:
		b.pending = 0
		b.cur = b.newBatch()
	default:
		n := int64(len(c.Events))
		b.dropped.Add(n)
		b.pending += n
		c.Events = c.Events[:0]
	}
}

func (b *Batches) ticker(every time.Duration) {
	defer close(b.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.mu.Lock()
			if c := b.cur; c != nil && (len(c.Events) > 0 || len(c.Strings) > 0 || b.pending > 0) {
				b.handOff()
			}
			b.mu.Unlock()
		}
	}
}

// C delivers the batches; it is closed after Close.
func (b *Batches) C() <-chan *Batch { return b.queue }

// Release gives a consumed batch back for reuse.
func (b *Batches) Release(x *Batch) {
	select {
	case b.free <- x:
	default:
	}
}

// Dropped returns how many events were dropped because the consumer fell behind.
func (b *Batches) Dropped() int64 { return b.dropped.Load() }

// Waits returns how many times a blocking Emit (SetBlocking) found the queue full and waited for
// the consumer: each is a time a dropping Batches would have dropped a batch. Safe from any
// goroutine.
func (b *Batches) Waits() int64 { return b.waits.Load() }

// Close sends what is left — waiting for room, since the producer has stopped and nothing more is
// coming — and closes C. It reports false when already closed.
func (b *Batches) Close() bool {
	b.mu.Lock()
	last := b.cur
	b.cur = nil
	b.mu.Unlock()
	if last == nil {
		return false
	}
	close(b.stop)
	<-b.done
	last.Dropped = b.pending
	b.queue <- last
	close(b.queue)
	return true
}
