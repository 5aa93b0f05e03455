package otel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Defaults of the span queue between the builder and the OTLP exporter.
const (
	spanQueueSize  = 8192                   // ended spans waiting for export; the builder waits for room
	spanBatchSize  = 1024                   // spans per export request
	spanBatchDelay = 200 * time.Millisecond // a partial batch waits at most this long
	// shutdownGrace is how long a shutdown whose budget is spent waits for the export it cancelled to
	// return. The OTLP exporters return at once; one that ignores its context is left behind and its
	// spans are counted as dropped.
	shutdownGrace = time.Second
)

// spanQueue is the span processor of every host's tracer provider, and the only place spans are
// counted: each span that ends is, in the end, counted exported or dropped, and nothing else.
//
// Ended spans wait in a bounded queue (the builder waits for room, so back-pressure falls on the
// event queue before it, whose drops are counted) and are exported in batches by one goroutine.
// The SDK's batch processor is not used because when its shutdown gives up, the spans still queued
// are neither exported nor reported, and its goroutine goes on exporting in the background.
//
// Shutdown has a budget: drain starts it (from then on a collector refusing connections ends the
// export at once, as retrying a refused port only spends the budget), and Shutdown, once no more
// spans can come, waits for the queue to empty until the budget ends; what is left is dropped.
type spanQueue struct {
	exp     sdktrace.SpanExporter
	timeout time.Duration // one export request, its retries included
	// probe tries the collector's port afresh (nil: no probe). A refusal seen during the run may be
	// stale: a restarted collector is back while the exporter still waits to retry.
	probe func() error
	// patient (DetailFull: lossless when asked) waits for a refusing collector until the budget ends,
	// rather than give up at once: it may be restarting.
	patient bool

	mu        sync.Mutex
	room      sync.Cond               // signalled when spans leave the queue or the export is abandoned
	spans     []sdktrace.ReadOnlySpan // ended, waiting for export, oldest first
	inflight  int                     // spans in the export under way
	draining  bool                    // the run is over: a refused connection ends the export
	abandoned bool                    // export nothing more: the budget is spent or the collector refuses
	settled   bool                    // the counts are final; a late export result is ignored

	exported atomic.Int64
	dropped  atomic.Int64
	tried    atomic.Bool
	lastErr  atomic.Pointer[string]
	dropWhy  atomic.Pointer[string] // the error of the last export whose spans were dropped
	refused  atomic.Bool            // the latest connection attempt was refused
	why      string                 // why the export was abandoned (under mu)

	gone   chan struct{} // closed when the export is abandoned (the metrics' last export gives up too)
	ready  chan struct{} // a full batch is waiting (capacity 1)
	closed chan struct{} // closed by Shutdown: no more spans will come
	stop   context.Context
	cancel context.CancelFunc // cancels the export under way
	done   chan struct{}      // closed when the export goroutine has returned
	once   sync.Once
}

func newSpanQueue(timeout time.Duration) *spanQueue {
	q := &spanQueue{timeout: timeout, ready: make(chan struct{}, 1), closed: make(chan struct{}), done: make(chan struct{}), gone: make(chan struct{})}
	q.room.L = &q.mu
	q.stop, q.cancel = context.WithCancel(context.Background())
	return q
}

// start begins exporting to exp.
func (q *spanQueue) start(exp sdktrace.SpanExporter) {
	q.exp = exp
	go q.run()
}

// OnStart does nothing: spans are queued when they end.
func (q *spanQueue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s, waiting for room; once the export is abandoned, s is counted as dropped.
func (q *spanQueue) OnEnd(s sdktrace.ReadOnlySpan) {
	q.mu.Lock()
	for len(q.spans) >= spanQueueSize && !q.abandoned {
		q.room.Wait()
	}
	if q.abandoned { // after Shutdown too
		q.mu.Unlock()
		q.dropped.Add(1)
		return
	}
	q.spans = append(q.spans, s)
	full := len(q.spans) >= spanBatchSize
	q.mu.Unlock()
	if full {
		select {
		case q.ready <- struct{}{}:
		default:
		}
	}
}

// ForceFlush does nothing: Shutdown exports what is queued.
func (q *spanQueue) ForceFlush(context.Context) error { return nil }

func (q *spanQueue) run() {
	defer close(q.done)
	tick := time.NewTicker(spanBatchDelay)
	defer tick.Stop()
	for {
		closed := false
		select {
		case <-q.ready:
		case <-tick.C:
		case <-q.closed:
			closed = true
		case <-q.stop.Done():
			return
		}
		for {
			batch := q.take()
			if batch == nil {
				break
			}
			q.export(batch)
		}
		if closed || q.stop.Err() != nil {
			return
		}
	}
}

// take moves up to a batch of spans from the queue to the export under way.
func (q *spanQueue) take() []sdktrace.ReadOnlySpan {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.abandoned || len(q.spans) == 0 {
		return nil
	}
	n := min(len(q.spans), spanBatchSize)
	batch := append([]sdktrace.ReadOnlySpan(nil), q.spans[:n]...)
	// Shift rather than reslice, so the queue's array stays the same size for the whole run.
	rest := copy(q.spans, q.spans[n:])
	clear(q.spans[rest:])
	q.spans = q.spans[:rest]
	q.inflight = n
	q.room.Broadcast()
	return batch
}

func (q *spanQueue) export(batch []sdktrace.ReadOnlySpan) {
	ctx, cancel := context.WithTimeout(q.stop, q.timeout)
	err := q.exp.ExportSpans(ctx, batch)
	cancel()
	q.attempt(err)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.settled {
		return // Shutdown has already counted these as dropped, and said why
	}
	q.inflight = 0
	q.tried.Store(true)
	switch {
	case err == nil:
		q.exported.Add(int64(len(batch)))
		q.lastErr.Store(nil)
		return
	case q.why != "" && q.stop.Err() != nil:
		msg := "gave up at shutdown: " + q.why // rather than the cancellation's own error
		q.lastErr.Store(&msg)
	default:
		msg := err.Error()
		q.lastErr.Store(&msg)
	}
	q.dropWhy.Store(q.lastErr.Load())
	q.dropped.Add(int64(len(batch)))
}

// attempt notes how one attempt to reach the collector went. It is called for each attempt inside
// the exporter's own retries where the transport lets us see them (gRPC), and for each export.
func (q *spanQueue) attempt(err error) {
	switch {
	case err == nil:
		q.refused.Store(false)
	case refused(err):
		q.refused.Store(true)
		q.mu.Lock()
		draining := q.draining
		q.mu.Unlock()
		if draining && !q.patient {
			q.abandon("the collector refuses connections (" + err.Error() + ")")
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// A cancellation or a deadline says nothing about the port: the gRPC exporter ends its retries
		// of refused connections with the deadline's error.
	default:
		q.refused.Store(false)
	}
}

// refusedErr is refused for an error that may be nil.
func refusedErr(err error) bool { return err != nil && refused(err) }

// refused reports whether err says the collector's port refused the connection. gRPC keeps only the
// message of a connection error, so the text is matched as well as the error chain.
func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), syscall.ECONNREFUSED.Error())
}

// abandon stops the export, saying why: the one under way is cancelled, and spans still queued or
// yet to end are dropped.
func (q *spanQueue) abandon(why string) {
	q.mu.Lock()
	if !q.abandoned {
		q.why = why
		close(q.gone)
	}
	q.abandoned = true
	q.room.Broadcast()
	q.mu.Unlock()
	q.cancel()
}

// drain starts the shutdown: the export is abandoned when ctx ends (saying context.Cause(ctx)), or at
// once if the collector refuses connections (the latest attempt was refused, and so is a fresh try of
// its port). The returned function releases ctx's watcher.
func (q *spanQueue) drain(ctx context.Context) (release func() bool) {
	q.mu.Lock()
	q.draining = true
	q.mu.Unlock()
	if !q.patient && q.refused.Load() && (q.probe == nil || refusedErr(q.probe())) {
		q.abandon("the collector refuses connections")
	}
	return context.AfterFunc(ctx, func() { q.abandon(context.Cause(ctx).Error()) })
}

// Shutdown is called once no more spans can end. It waits for the queue to be exported until ctx ends
// (or the export is abandoned), then counts every span not exported as dropped. It is idempotent: each
// host's tracer provider calls it again.
func (q *spanQueue) Shutdown(ctx context.Context) error {
	var err error
	q.once.Do(func() {
		close(q.closed)
		release := q.drain(ctx)
		defer release()
		select {
		case <-q.done:
		case <-ctx.Done():
			q.abandon(context.Cause(ctx).Error())
			select {
			case <-q.done:
			case <-time.After(shutdownGrace):
			}
		}
		q.cancel()
		q.mu.Lock()
		left := len(q.spans) + q.inflight
		q.spans, q.inflight, q.settled, q.abandoned = nil, 0, true, true
		why := q.why
		q.mu.Unlock()
		total := q.dropped.Add(int64(left))
		if left > 0 || why != "" && total > 0 {
			// The spans still queued are only part of what was lost: once the export was given up,
			// each span the builder finished was dropped as it ended. Say both, so the count here
			// is the one the report gives.
			err = fmt.Errorf("gave up at shutdown: %s (%d spans dropped: %d still queued, %d ended after the export stopped or were in failed exports)",
				cmp.Or(why, "the export ended"), total, left, total-int64(left))
			msg := err.Error()
			q.lastErr.Store(&msg)
			q.dropWhy.Store(&msg)
		}
	})
	return err
}
