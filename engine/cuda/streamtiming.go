//go:build cuda

package cuda

import (
	"errors"
	"sync"

	"gorgonia.org/cu"
)

// streamTiming lets an op queued behind unfinished work on its stream go without a start event: a
// stream runs its ops in order, so such an op starts when the one before it ends, which that op's
// end event already stamps. On an H200 each cuEventRecord cost 1.34 µs of the issuing thread and
// each cuEventElapsedTime 3.5 µs of the poller's (docs/performance.md, "On the GPU"); an op on a
// busy stream now costs one of each instead of two. An op after a wait (on an event, or a graph
// launched on the stream) or on an idle stream still records its start: it may start later than
// the previous op's end.
type streamTiming struct {
	mu      sync.Mutex
	posted  uint64   // timed ops posted on the stream; op n has sequence number n
	retired uint64   // the highest sequence number whose events the poller has given back
	lastEnd cu.Event // op posted's end event: not given back while posted > retired
	waited  bool     // the stream was made to wait since op posted was queued

	endNs int64 // the poller's alone: when the stream's last completed timed op ended (GPU ns); -1 unknown
}

func newStreamTiming() *streamTiming { return &streamTiming{endNs: -1} }

// startFollows reports whether an op queued now starts when the stream's last timed op ends:
// that op has not ended on the GPU, and nothing that could hold the stream was queued after it.
// It is called on the issuing thread, with the stream's GPU context current.
func (t *streamTiming) startFollows() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waited || t.posted <= t.retired {
		return false
	}
	return errors.Is(t.lastEnd.Query(), cu.NotReady)
}

// post counts an op posted with end as its end event, and returns its sequence number.
func (t *streamTiming) post(end cu.Event) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.posted++
	t.lastEnd, t.waited = end, false
	return t.posted
}

// wait notes that the stream was made to wait for work elsewhere (an event, a graph's launch).
func (t *streamTiming) wait() {
	t.mu.Lock()
	t.waited = true
	t.mu.Unlock()
}

// retire notes, before the poller gives op seq's events back to the pool, that they are done with.
func (t *streamTiming) retire(seq uint64) {
	t.mu.Lock()
	t.retired = max(t.retired, seq)
	t.mu.Unlock()
}

// startTime is when op f started on its GPU (ns since the session start), end being when it ended
// or a bound on it: from its start event, or, without one, the end of the op before it on its
// stream. It runs on the poller's goroutine.
func (b *Backend) startTime(f *inflight, end int64) int64 {
	if f.start != (cu.Event{}) {
		return b.gpuTime(f.gpu, f.start, f.queued)
	}
	if s := f.tl.endNs; s >= 0 && s <= end {
		return s
	}
	// The op before it failed or was aborted: when it started is not known; its host queue time
	// is the nearest bound (rare: the run ends with that failure's alert).
	return min(f.queued.Nanoseconds(), end)
}
