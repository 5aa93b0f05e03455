//go:build cuda

package cuda

import (
	"errors"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// oneGPU opens a backend on GPU 0 and makes its context current on this (locked) thread.
func oneGPU(t *testing.T) *gpu {
	t.Helper()
	n, err := cu.NumDevices()
	if err != nil || n < 1 {
		t.Skipf("needs a GPU (or the fake driver): %v", err)
	}
	store := timeline.NewStore(nil)
	b, err := New(Config{Topology: engine.Topology{Name: "t", Hosts: 1, GPUsPerHost: 1}, Fit: engine.Fit{Ranks: 1, GPUs: 1}}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	if err := cu.SetCurrentContext(b.gpus[0].ctx); err != nil {
		t.Fatal(err)
	}
	return b.gpus[0]
}

func spin(t *testing.T, g *gpu, s cu.Stream, ns uint64) {
	t.Helper()
	if err := g.spin.Launch(1, 1, 1, 32, 1, 1, 0, s, []unsafe.Pointer{unsafe.Pointer(&ns)}); err != nil {
		t.Fatal(err)
	}
}

// A region captured across two streams (the second joins by waiting on an event recorded in the
// capture, and rejoins the first the same way) replays with one cuGraphLaunch per run: each launch
// runs both kernels again, the second after the first, as captured.
func TestCaptureAndLaunch(t *testing.T) {
	g := oneGPU(t)
	a, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	fork, _ := cu.MakeEvent(cu.DisableTiming)
	join, _ := cu.MakeEvent(cu.DisableTiming)
	start, _ := cu.MakeEvent(cu.DefaultEvent)
	end, _ := cu.MakeEvent(cu.DefaultEvent)
	const k1, k2 = 3_000_000, 2_000_000 // ns
	if err := beginCapture(a); err != nil {
		t.Fatal(err)
	}
	spin(t, g, a, k1)
	must(t, fork.Record(a))
	must(t, b.Wait(fork, 0)) // b joins the capture
	spin(t, g, b, k2)
	must(t, join.Record(b))
	must(t, a.Wait(join, 0)) // and rejoins a
	x, err := endCapture(a)
	if err != nil {
		t.Fatal(err)
	}
	defer x.destroy()
	for launch := range 2 {
		must(t, start.Record(a))
		must(t, x.launch(a))
		must(t, end.Record(a))
		must(t, a.Synchronize())
		ms, err := start.Elapsed(end)
		if err != nil {
			t.Fatal(err)
		}
		// The kernels sleep (fake) or spin (GPU) for their time: the launch took at least both,
		// one after the other (a lower bound, never a timing race).
		if got := time.Duration(float64(ms) * 1e6); got < (k1+k2)*time.Nanosecond {
			t.Errorf("launch %d took %v; the captured kernels run %v one after the other", launch, got, time.Duration(k1+k2))
		}
	}
}

// What the driver cannot capture invalidates the capture, and ending it says so: a
// synchronisation inside it (cudaErrorStreamCaptureUnsupported), a wait on work recorded outside
// it (cudaErrorStreamCaptureIsolation).
func TestCaptureRefusals(t *testing.T) {
	g := oneGPU(t)
	for _, tc := range []struct {
		name string
		code int
		body func(s cu.Stream) error
	}{
		{"synchronize", errCaptureUnsupported, func(s cu.Stream) error { return s.Synchronize() }},
		{"outside event", errCaptureIsolation, func(s cu.Stream) error {
			o, _ := cu.MakeStream(cu.NonBlocking)
			ev, _ := cu.MakeEvent(cu.DisableTiming)
			must(t, ev.Record(o))
			must(t, o.Synchronize())
			return s.Wait(ev, 0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.LockOSThread() // a subtest runs on its own goroutine: the context is made current here
			defer runtime.UnlockOSThread()
			must(t, cu.SetCurrentContext(g.ctx))
			s, err := cu.MakeStream(cu.NonBlocking)
			if err != nil {
				t.Fatal(err)
			}
			must(t, beginCapture(s))
			spin(t, g, s, 1000)
			if err := tc.body(s); err == nil || err.Error() == "" {
				t.Errorf("the call inside the capture succeeded")
			} else if code := driverCode(err); code != tc.code {
				t.Errorf("the call inside the capture failed with %v (%d); want %d", err, code, tc.code)
			}
			x, err := endCapture(s)
			var de *DriverError
			if x != nil || !errors.As(err, &de) || de.Code != errCaptureInvalidated {
				t.Fatalf("endCapture = %v, %v; want CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", x, err)
			}
		})
	}
}

// driverCode is the CUDA result of an error from gorgonia.org/cu or from this package.
func driverCode(err error) int {
	var de *DriverError
	if errors.As(err, &de) {
		return de.Code
	}
	if v := reflect.ValueOf(err); v.Kind() == reflect.Int { // cu's result type is an unexported int
		return int(v.Int())
	}
	return -1
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
