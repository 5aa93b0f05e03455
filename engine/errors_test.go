package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A cancelled run says why in the words of its context's cause, never Go's "context canceled",
// and where the simulator stopped; it is ErrCanceled and its cause to errors.Is.
func TestCanceledError(t *testing.T) {
	signal := errors.New("interrupted by SIGINT (Ctrl-C)")
	tests := []struct {
		name   string
		cancel func() context.Context
		atNs   int64
		want   string
	}{
		{"a cause", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(signal)
			return ctx
		}, 1_961_345_000, "interrupted by SIGINT (Ctrl-C) at 1961.345 ms simulated"},
		{"no cause", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, 2_000_000, "run canceled at 2.000 ms simulated"},
		{"a deadline, no simulated clock", func() context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
			t.Cleanup(cancel)
			<-ctx.Done()
			return ctx
		}, -1, "run canceled: its time limit passed"},
		{"a cause inherited by the run's own context", func() context.Context {
			parent, cancel := context.WithCancelCause(context.Background())
			ctx, stop := context.WithCancel(parent)
			t.Cleanup(stop)
			cancel(signal)
			return ctx
		}, -1, "interrupted by SIGINT (Ctrl-C)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Canceled(tc.cancel(), tc.atNs)
			if err.Error() != tc.want || !errors.Is(err, ErrCanceled) {
				t.Errorf("Canceled = %q (ErrCanceled: %v); want %q", err, errors.Is(err, ErrCanceled), tc.want)
			}
			if cause := context.Cause(tc.cancel()); !errors.Is(err, cause) {
				t.Errorf("Canceled = %v; not its cause %v to errors.Is", err, cause)
			}
		})
	}
}
