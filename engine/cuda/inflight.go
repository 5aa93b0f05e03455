//go:build cuda

package cuda

import (
	"sync"
	"time"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// runningPoll is how often the poller publishes the ops running on the GPUs: a few times per frame
// of the console (60 ms), at one event query per op enqueued and not yet completed.
const runningPoll = 10 * time.Millisecond

// running is the backend's ops running on the GPUs as last published by the poller, for readers
// on other goroutines (the console).
type running struct {
	mu      sync.Mutex
	evs     []timeline.Event // published: read under mu
	spare   []timeline.Event // the poller's own buffer, swapped with evs on publish
	blocked []bool           // by stream id: an op of it has not started, so none after it has
}

// InFlight appends to dst the ops that were running on the GPUs when the poller last looked
// (every 10 ms while a run goes on, and once more when it ends), and returns it. An op enqueued
// and not yet completed is running once the GPU has reached the timing event recorded before
// it: it is reported from that event's time (the start it is reported with when it ends) to the
// session time it was seen running (End). Ops still queued behind earlier work on their stream
// (the GPU has not reached their start) are left out: a stream's time since its last op ended is
// then idle or queued work. A group's parts are reported as their kinds. Safe to call from any
// goroutine while Run runs; appends without allocating once dst has room.
func (b *Backend) InFlight(dst []timeline.Event) []timeline.Event {
	b.running.mu.Lock()
	defer b.running.mu.Unlock()
	return append(dst, b.running.evs...)
}

// publishRunning makes the started ops of pending what InFlight returns; use makes a GPU's context
// current. It runs on the poller's goroutine.
func (b *Backend) publishRunning(pending []inflight, use func(int)) {
	r := &b.running
	r.spare = r.spare[:0]
	now := time.Since(b.wall0).Nanoseconds()
	b.mu.Lock()
	n := len(b.streams)
	b.mu.Unlock()
	if cap(r.blocked) < n {
		r.blocked = make([]bool, n)
	}
	r.blocked = r.blocked[:n]
	clear(r.blocked)
	for i := range pending {
		f := &pending[i]
		sid := int(f.op.Stream)
		if sid < n && r.blocked[sid] {
			continue // a stream runs in order: pending ops are in the order they were enqueued
		}
		use(f.gpu)
		if f.start == (cu.Event{}) {
			// It follows the op before it on its stream, and that one is done: it runs, since
			// the end the poller last saw on the stream.
			if sid < n {
				r.blocked[sid] = true
			}
			if f.tl.endNs < 0 {
				continue
			}
		} else if f.start.Query() != nil {
			// Queued behind earlier work on its stream (or failed: the poller reports it).
			if sid < n {
				r.blocked[sid] = true
			}
			continue
		}
		start := b.startTime(f, max(now, f.tl.endNs))
		e := b.opEvent(f, start, max(now, start))
		if f.op.Kind == engine.OpGroup {
			for _, part := range f.op.Parts {
				r.spare = append(r.spare, b.partEvent(e, f.rank, part))
			}
			continue
		}
		r.spare = append(r.spare, e)
	}
	r.mu.Lock()
	r.evs, r.spare = r.spare, r.evs
	r.mu.Unlock()
}

// clearRunning publishes that nothing runs: the run has ended.
func (b *Backend) clearRunning() {
	b.running.mu.Lock()
	b.running.evs = b.running.evs[:0]
	b.running.mu.Unlock()
}
