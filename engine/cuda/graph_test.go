//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/nccl"
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
// synchronisation inside it (cudaErrorStreamCaptureUnsupported), a wait on an event recorded
// outside any capture (cudaErrorStreamCaptureIsolation: "a dependency would have been created which
// crosses the capture sequence boundary"), a wait on an event recorded in another capture
// (cudaErrorStreamCaptureMerge: the programming guide forbids merging two capture graphs), and, on
// the capturing thread, the "potentially unsafe" calls of thread-local capture: an allocation, a
// synchronisation of a stream not being captured (both refused so on an H200). The fake driver
// models these; scripts/device runs this test on a GPU to check them against the real driver.
// Each case's setup runs before the capture begins.
func TestCaptureRefusals(t *testing.T) {
	g := oneGPU(t)
	for _, tc := range []struct {
		name  string
		code  int
		setup func(t *testing.T) func(s cu.Stream) error
	}{
		{"synchronize", errCaptureUnsupported, func(*testing.T) func(cu.Stream) error {
			return func(s cu.Stream) error { return s.Synchronize() }
		}},
		{"outside event", errCaptureIsolation, func(t *testing.T) func(cu.Stream) error {
			o, _ := cu.MakeStream(cu.NonBlocking)
			ev, _ := cu.MakeEvent(cu.DisableTiming)
			must(t, ev.Record(o))
			must(t, o.Synchronize())
			return func(s cu.Stream) error { return s.Wait(ev, 0) }
		}},
		{"event of another capture", errCaptureMerge, func(t *testing.T) func(cu.Stream) error {
			o, _ := cu.MakeStream(cu.NonBlocking)
			ev, _ := cu.MakeEvent(cu.DisableTiming)
			return func(s cu.Stream) error {
				must(t, beginCapture(o))
				spin(t, g, o, 1000)
				must(t, ev.Record(o))
				err := s.Wait(ev, 0)
				if x, _ := endCapture(o); x != nil {
					_ = x.destroy()
				}
				return err
			}
		}},
		{"allocation", errCaptureUnsupported, func(*testing.T) func(cu.Stream) error {
			return func(cu.Stream) error {
				p, err := cu.MemAlloc(1 << 20)
				if err == nil {
					_ = cu.MemFree(p)
				}
				return err
			}
		}},
		{"synchronize another stream", errCaptureUnsupported, func(t *testing.T) func(cu.Stream) error {
			o, err := cu.MakeStream(cu.NonBlocking)
			must(t, err)
			return func(cu.Stream) error { return o.Synchronize() }
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
			body := tc.setup(t)
			must(t, beginCapture(s))
			spin(t, g, s, 1000)
			if err := body(s); err == nil || err.Error() == "" {
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

// An NCCL collective issued on a capturing stream becomes a node of the graph (NCCL >= 2.9) and
// runs again at each launch: a capture replayed N times with fresh inputs gives N fresh results.
// Each rank captures and launches from a thread of its own (thread-local capture, as NCCL's guide
// asks of one thread per GPU). All-gather is out of place, so it shows replay on one GPU too (its
// output is overwritten before each launch); the in-place all-reduce needs two GPUs to show a sum.
func TestCaptureNCCLReplays(t *testing.T) {
	n, err := cu.NumDevices()
	if err != nil || n < 1 {
		t.Skipf("needs a GPU (or the fake driver): %v", err)
	}
	for _, tc := range []struct {
		name    string
		minGPUs int
		coll    timeline.CollOp
	}{
		{"all-reduce", 2, timeline.CollAllReduce},
		{"all-gather", 1, timeline.CollAllGather},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n < tc.minGPUs {
				t.Skipf("needs %d GPUs, the driver reports %d", tc.minGPUs, n)
			}
			captureNCCL(t, min(n, 2), tc.coll)
		})
	}
}

// captureNCCL runs one collective over ranks GPUs as described by TestCaptureNCCLReplays.
func captureNCCL(t *testing.T, ranks int, coll timeline.CollOp) {
	store := timeline.NewStore(nil)
	b, err := New(Config{Topology: engine.Topology{Name: "t", Hosts: 1, GPUsPerHost: ranks}, Fit: engine.Fit{Ranks: ranks, GPUs: ranks}}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	nl, err := b.ncclLib()
	if err != nil {
		t.Skipf("no NCCL: %v", err)
	}
	gpus := make([]int, ranks)
	for i := range gpus {
		gpus[i] = i
	}
	runtime.LockOSThread()
	comms, err := b.createComm(gpus, 0)
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	const bytes, launches = 4096, 3
	// in(r, i) is rank r's byte at launch i; want(r, i) what rank r's output holds after it.
	in := func(r, i int) byte { return byte(10*(r+1) + i) }
	want := func(k, i int) byte { // the k-th block of the output
		if coll == timeline.CollAllGather {
			return in(k, i)
		}
		var s byte
		for r := range ranks {
			s += in(r, i)
		}
		return s
	}
	outBytes := int64(bytes)
	if coll == timeline.CollAllGather {
		outBytes *= int64(ranks)
	}
	var wg sync.WaitGroup
	for r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := captureNCCLRank(b, nl, comms[r], r, coll, bytes, outBytes, launches, in, want); err != nil {
				t.Errorf("rank %d: %v", r, err)
			}
		}()
	}
	wg.Wait()
}

// captureNCCLRank is one rank's part: capture the call, then launch it launches times, each with
// its own input, checking the output after each.
func captureNCCLRank(b *Backend, nl *nccl.NCCL, c nccl.Comm, r int, coll timeline.CollOp, bytes, outBytes int64, launches int,
	in func(r, i int) byte, want func(k, i int) byte) error {
	g := b.gpus[r]
	if err := cu.SetCurrentContext(g.ctx); err != nil {
		return err
	}
	s, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return err
	}
	send, err := g.scratch(bytes, 0)
	if err != nil {
		return err
	}
	out := send // all-reduce: in place
	if coll == timeline.CollAllGather {
		if out, err = g.scratch(outBytes, 1); err != nil {
			return err
		}
	}
	host, err := PinnedHost(outBytes)
	if err != nil {
		return err
	}
	defer FreePinned(host)
	buf := unsafe.Slice((*byte)(host), outBytes)
	stream := uintptr(unsafe.Pointer(s.C()))
	if err := beginCapture(s); err != nil {
		return err
	}
	if coll == timeline.CollAllGather {
		err = nl.AllGather(uintptr(send), uintptr(out), bytes, c, stream)
	} else {
		err = nl.AllReduce(uintptr(send), bytes, c, stream)
	}
	x, endErr := endCapture(s)
	if err != nil || endErr != nil {
		return fmt.Errorf("capturing the NCCL call: %v, ending the capture: %v", err, endErr)
	}
	defer x.destroy()
	for i := range launches {
		for j := range buf {
			buf[j] = in(r, i)
		}
		if err := cu.MemcpyHtoDAsync(send, host, bytes, s); err != nil {
			return err
		}
		if out != send { // the output, overwritten: only the launch can put the result there
			if err := s.Synchronize(); err != nil {
				return err
			}
			for j := range buf {
				buf[j] = 0xEE
			}
			if err := cu.MemcpyHtoDAsync(out, host, outBytes, s); err != nil {
				return err
			}
		}
		if err := x.launch(s); err != nil {
			return fmt.Errorf("launch %d: %w", i, err)
		}
		if err := cu.MemcpyDtoHAsync(host, out, outBytes, s); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return fmt.Errorf("launch %d: %w", i, err)
		}
		for j, v := range buf {
			if w := want(j/int(bytes), i); v != w {
				return fmt.Errorf("launch %d: output byte %d = %d; want %d (the launch's own result)", i, j, v, w)
			}
		}
	}
	return nil
}

// A graph's ops are timed from events recorded as event record nodes (recordExternal), stamped at
// each launch. A plain cuEventRecord inside a capture only orders the captured work: the driver
// does not record the event when the graph runs, so its time cannot be read (on an H200 every
// timed op of a replayed graph failed so, before the backend recorded its timing events as nodes).
func TestCaptureTimingEvents(t *testing.T) {
	g := oneGPU(t)
	s, err := cu.MakeStream(cu.NonBlocking)
	must(t, err)
	mk := func() cu.Event {
		e, err := cu.MakeEvent(cu.DefaultEvent)
		must(t, err)
		return e
	}
	plain0, plain1, node0, node1 := mk(), mk(), mk(), mk()
	if err := recordExternal(node0, s); err == nil {
		t.Errorf("an external record outside a capture succeeded; the driver refuses it")
	}
	const k = 2_000_000 // ns
	must(t, beginCapture(s))
	must(t, plain0.Record(s))
	must(t, recordExternal(node0, s))
	spin(t, g, s, k)
	must(t, recordExternal(node1, s))
	must(t, plain1.Record(s))
	x, err := endCapture(s)
	must(t, err)
	defer x.destroy()
	for launch := range 2 {
		must(t, x.launch(s))
		must(t, s.Synchronize())
		ms, err := node0.Elapsed(node1)
		if err != nil {
			t.Fatalf("launch %d: the event record nodes' time: %v", launch, err)
		}
		if got := time.Duration(float64(ms) * 1e6); got < k*time.Nanosecond {
			t.Errorf("launch %d: the nodes bracket %v; the kernel between them runs %v", launch, got, time.Duration(k))
		}
		if _, err := plain0.Elapsed(plain1); err == nil {
			t.Errorf("launch %d: events recorded plainly inside the capture gave a time; the driver records them only for the capture's own order", launch)
		}
	}
}
