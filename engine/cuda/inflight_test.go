//go:build cuda

package cuda_test

import (
	"context"
	"testing"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// While a run goes on, InFlight reports the op the GPU is running, from the start it is reported
// with when it ends, and not the op queued behind it on its stream; once the run has ended it
// reports nothing.
func TestInFlight(t *testing.T) {
	r := newRig(t, 1, 1, engine.DefaultOptions())
	s := r.c.ComputeStream(0)
	const dur = 400 * time.Millisecond
	for _, label := range []string{"running", "queued behind"} {
		if err := r.c.Kernel(s, int64(dur), label); err != nil {
			t.Fatal(err)
		}
	}
	ran := make(chan error, 1)
	go func() { ran <- r.c.Run(context.Background()) }()
	var seen []timeline.Event
	for deadline := time.Now().Add(dur / 2); len(seen) == 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		seen = r.be.InFlight(seen[:0])
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 {
		t.Fatalf("in flight during the first kernel: %+v; want that kernel alone", seen)
	}
	got := seen[0]
	if got.Kind != timeline.KindKernel || got.Stream != uint32(s) || got.Device != 0 || got.Start < 0 || got.End < got.Start {
		t.Errorf("in flight: %+v; want the kernel on stream %d, from its start to when it was seen", got, s)
	}
	if left := r.be.InFlight(nil); len(left) != 0 {
		t.Errorf("after the run: %+v still running", left)
	}
	kernels := r.events(timeline.KindKernel)
	if len(kernels) != 2 {
		t.Fatalf("%d kernels reported; want 2", len(kernels))
	}
	first := kernels[0]
	if d := got.Start - first.Start; d < -1000 || d > 1000 {
		t.Errorf("seen running from %d; the kernel was reported from %d", got.Start, first.Start)
	}
	if got.End > first.End {
		t.Errorf("seen running at %d, after it ended at %d", got.End, first.End)
	}
}
