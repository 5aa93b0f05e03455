package otel

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// fakeExporter is a span exporter whose answer the test chooses.
type fakeExporter struct {
	mu      sync.Mutex
	calls   int
	spans   int
	started chan struct{} // receives once per call, when given
	export  func(ctx context.Context, call int) error
}

func (f *fakeExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	f.mu.Lock()
	f.calls++
	call := f.calls
	f.mu.Unlock()
	if f.started != nil {
		f.started <- struct{}{}
	}
	err := f.export(ctx, call)
	if err == nil {
		f.mu.Lock()
		f.spans += len(spans)
		f.mu.Unlock()
	}
	return err
}

func (*fakeExporter) Shutdown(context.Context) error { return nil }

func (f *fakeExporter) count() (calls, spans int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.spans
}

var aSpan = tracetest.SpanStub{Name: "x"}.Snapshot()

func endSpans(q *spanQueue, n int) {
	for range n {
		q.OnEnd(aSpan)
	}
}

// checkTotals asserts that every span ended is counted exported or dropped, once.
func checkTotals(t *testing.T, q *spanQueue, ended int, wantExported int64) {
	t.Helper()
	if e, d := q.exported.Load(), q.dropped.Load(); e+d != int64(ended) || e != wantExported {
		t.Errorf("%d spans ended: %d exported + %d dropped; want %d exported and the sum equal", ended, e, d, wantExported)
	}
}

// A healthy collector gets every span, in batches, before Shutdown returns.
func TestSpanQueueExportsEverything(t *testing.T) {
	f := &fakeExporter{export: func(context.Context, int) error { return nil }}
	q := newSpanQueue(time.Minute)
	q.start(f)
	n := 3*spanBatchSize + 7
	endSpans(q, n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	defer q.drain(ctx)()
	if err := q.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if calls, spans := f.count(); spans != n || calls < 4 {
		t.Errorf("collector got %d spans in %d requests; want %d in at least 4", spans, calls, n)
	}
	checkTotals(t, q, n, int64(n))
}

// Once the run is over, a refused connection ends the export: the batches still queued are dropped
// without another attempt, however long the budget.
func TestSpanQueueRefusedGivesUpAtOnce(t *testing.T) {
	refusedErr := fmt.Errorf("traces export: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	release := make(chan struct{})
	f := &fakeExporter{started: make(chan struct{}, 16), export: func(_ context.Context, call int) error {
		if call == 1 {
			<-release // the first request is under way when the run ends
		}
		return refusedErr
	}}
	q := newSpanQueue(time.Minute)
	q.start(f)
	n := 3 * spanBatchSize
	endSpans(q, n)
	<-f.started
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	defer q.drain(ctx)()
	close(release)
	err := q.Shutdown(ctx)
	if calls, _ := f.count(); calls != 1 {
		t.Errorf("%d export requests; want 1: a refused port is not tried again at shutdown", calls)
	}
	if err == nil || ctx.Err() != nil {
		t.Errorf("Shutdown: %v (budget %v); want the spans left reported, the budget unspent", err, ctx.Err())
	}
	checkTotals(t, q, n, 0)
}

// A refusal seen before the run ends is enough: drain gives up without trying.
func TestSpanQueueRefusedBeforeDrain(t *testing.T) {
	f := &fakeExporter{export: func(context.Context, int) error { return nil }}
	q := newSpanQueue(time.Minute)
	q.attempt(fmt.Errorf(`rpc error: code = Unavailable desc = "dial tcp 127.0.0.1:4317: connect: %v"`, syscall.ECONNREFUSED))
	q.start(f)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	defer q.drain(ctx)()
	endSpans(q, 10)
	_ = q.Shutdown(ctx)
	if calls, _ := f.count(); calls != 0 {
		t.Errorf("%d export requests after a refusal; want none", calls)
	}
	checkTotals(t, q, 10, 0)
}

// A refusal seen during the run is tried again at its end: a collector that came back (a restart)
// is waited for, and everything queued reaches it; one still gone is given up at once.
func TestSpanQueueRefusalRetriedAtDrain(t *testing.T) {
	for _, back := range []bool{true, false} {
		t.Run(fmt.Sprintf("back=%v", back), func(t *testing.T) {
			f := &fakeExporter{export: func(context.Context, int) error { return nil }}
			q := newSpanQueue(time.Minute)
			var probes atomic.Int64
			q.probe = func() error {
				probes.Add(1)
				if back {
					return nil
				}
				return os.NewSyscallError("connect", syscall.ECONNREFUSED)
			}
			q.attempt(fmt.Errorf(`rpc error: code = Unavailable desc = "dial tcp 127.0.0.1:4317: connect: %v"`, syscall.ECONNREFUSED))
			q.start(f)
			endSpans(q, 10)
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			defer q.drain(ctx)()
			_ = q.Shutdown(ctx)
			want := int64(0)
			if back {
				want = 10
			}
			if probes.Load() == 0 {
				t.Error("the stale refusal was not tried again")
			}
			checkTotals(t, q, 10, want)
		})
	}
}

// Lossless export (DetailFull) waits for a refusing collector within the budget: a restart that
// ends before it loses nothing.
func TestSpanQueuePatientWaitsForRestart(t *testing.T) {
	refusedErr := os.NewSyscallError("connect", syscall.ECONNREFUSED)
	f := &fakeExporter{export: func(_ context.Context, call int) error {
		if call <= 3 {
			return refusedErr // down for the first three attempts
		}
		return nil
	}}
	q := newSpanQueue(time.Minute)
	q.patient = true
	q.probe = func() error { return refusedErr }
	q.attempt(refusedErr)
	n := 4 * spanBatchSize
	endSpans(q, n) // queued before the export starts: four full batches
	q.start(f)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	defer q.drain(ctx)()
	if err := q.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// The three refused batches were dropped (the exporter's own retries gave up on each); the queue
	// went on and the collector, back, took the rest.
	checkTotals(t, q, n, int64(n-3*spanBatchSize))
	// The collector is back and the last export succeeded, but why the three were dropped stays.
	if q.lastErr.Load() != nil {
		t.Errorf("the export is ok again, but its state says %q", *q.lastErr.Load())
	}
	if why := q.dropWhy.Load(); why == nil || !strings.Contains(*why, "connection refused") {
		t.Errorf("the reason for the dropped batches is %v, want the refusal", why)
	}
}

// When the budget ends, the export under way is cancelled, a producer waiting for room is let go,
// and everything not exported is dropped.
func TestSpanQueueBudgetSpent(t *testing.T) {
	f := &fakeExporter{started: make(chan struct{}, 16), export: func(ctx context.Context, _ int) error {
		<-ctx.Done() // a collector that never answers
		return ctx.Err()
	}}
	q := newSpanQueue(time.Hour)
	q.start(f)
	endSpans(q, spanBatchSize)
	<-f.started
	endSpans(q, spanQueueSize) // the queue is full
	blocked := make(chan struct{})
	go func() {
		endSpans(q, 1) // waits for room
		close(blocked)
	}()
	ctx, cancel := context.WithCancelCause(context.Background())
	release := q.drain(ctx)
	defer release()
	cancel(fmt.Errorf("budget spent"))
	<-blocked
	if err := q.Shutdown(ctx); err == nil {
		t.Error("Shutdown reported nothing dropped")
	}
	checkTotals(t, q, spanBatchSize+spanQueueSize+1, 0)
	if calls, _ := f.count(); calls != 1 {
		t.Errorf("%d export requests; want the one cancelled", calls)
	}
}

// An exporter that ignores its context cannot hold Shutdown past the grace, nor change the counts
// when it returns at last.
func TestSpanQueueStuckExporter(t *testing.T) {
	release := make(chan struct{})
	f := &fakeExporter{started: make(chan struct{}, 16), export: func(context.Context, int) error {
		<-release
		return nil
	}}
	q := newSpanQueue(time.Hour)
	q.start(f)
	endSpans(q, 10)
	<-f.started
	ctx, cancel := context.WithCancel(context.Background())
	defer q.drain(ctx)()
	cancel()
	_ = q.Shutdown(ctx)
	checkTotals(t, q, 10, 0)
	close(release) // the export "succeeds" after Shutdown gave up on it
	<-q.done
	checkTotals(t, q, 10, 0)
}
