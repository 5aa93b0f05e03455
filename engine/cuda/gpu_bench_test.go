//go:build cuda

package cuda_test

// The H100 measurements of docs/performance.md. They need a GPU (gorgonia.org/cu exits the process
// at start-up without one), so they are run on a GPU machine from a prebuilt test binary, which
// scripts/device/build.sh packs and `scripts/device/run.sh bench` runs there:
//
//	eval "$(../shared/scripts/cuda-sdk.sh)"
//	go test -c -tags cuda -o cuda.test ./engine/cuda
//	./cuda.test -test.run '^$' -test.bench . -test.benchtime 3x   # on the GPU machine

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/cuda"
	"github.com/xfertop/xfertop/engine/nccl"
	"github.com/xfertop/xfertop/probes/nvml"
	"github.com/xfertop/xfertop/timeline"
)

func oneGPU(b *testing.B, opts engine.Options) (*engine.Client, *timeline.Store) {
	b.Helper()
	if n, err := cu.NumDevices(); err != nil || n == 0 {
		b.Skipf("no GPU: %v", err)
	}
	topo := engine.Topology{Name: "h100x1", Hosts: 1, GPUsPerHost: 1}
	store := timeline.NewStore(nil)
	be, err := cuda.New(cuda.Config{Topology: topo, Fit: engine.Fit{Ranks: 1, GPUs: 1}}, store, store.Strings)
	if err != nil {
		b.Fatal(err)
	}
	return engine.NewClient(be, store, opts), store
}

var dirs = map[string]timeline.CopyDir{"h2d": timeline.CopyH2D, "d2h": timeline.CopyD2H, "d2d": timeline.CopyD2D}

// primaryStream makes GPU 0's primary context current on this (locked) thread and returns a new
// stream in it.
func primaryStream(b *testing.B) cu.Stream {
	b.Helper()
	dev, _ := cu.GetDevice(0)
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		b.Fatal(err)
	}
	_ = cu.SetCurrentContext(ctx)
	s, _ := cu.MakeStream(cu.NonBlocking)
	return s
}

// rawGBps times iters copies with plain gorgonia.org/cu calls between two events on one stream.
func rawGBps(b *testing.B, dir timeline.CopyDir, size int64, iters int) float64 {
	return rawCopies(b, dir, size, iters, false)
}

// rawCopies is rawGBps; with bracket, each copy is also bracketed by two events of its own as the
// engine brackets each op, so that what per-op timing costs the GPU shows apart from the engine.
func rawCopies(b *testing.B, dir timeline.CopyDir, size int64, iters int, bracket bool) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := primaryStream(b)
	d1, _ := cu.MemAlloc(size)
	d2, _ := cu.MemAlloc(size)
	defer cu.MemFree(d1)
	defer cu.MemFree(d2)
	var h unsafe.Pointer
	if dir != timeline.CopyD2D {
		// Pinned host memory, as the engine uses for its copies.
		var err error
		if h, err = cuda.PinnedHost(size); err != nil {
			b.Fatal(err)
		}
		defer cuda.FreePinned(h)
	}
	e0, _ := cu.MakeEvent(cu.DefaultEvent)
	e1, _ := cu.MakeEvent(cu.DefaultEvent)
	var marks []cu.Event
	if bracket {
		for range 2 * iters {
			ev, _ := cu.MakeEvent(cu.DefaultEvent)
			marks = append(marks, ev)
		}
		defer func() {
			for i := range marks {
				_ = cu.DestroyEvent(&marks[i])
			}
		}()
	}
	_ = e0.Record(s)
	for i := range iters {
		if bracket {
			_ = marks[2*i].Record(s)
		}
		switch dir {
		case timeline.CopyH2D:
			_ = cu.MemcpyHtoDAsync(d1, h, size, s)
		case timeline.CopyD2H:
			_ = cu.MemcpyDtoHAsync(h, d1, size, s)
		default:
			_ = cu.MemcpyDtoDAsync(d2, d1, size, s)
		}
		if bracket {
			_ = marks[2*i+1].Record(s)
		}
	}
	_ = e1.Record(s)
	_ = e1.Synchronize()
	ms, _ := e0.Elapsed(e1)
	return float64(size) * float64(iters) / (ms * 1e6)
}

// engineGBps issues the same copies through the engine and measures them from its GPU timestamps.
func engineGBps(b *testing.B, dir timeline.CopyDir, size int64, iters int) float64 {
	c, store := oneGPU(b, engine.DefaultOptions())
	s := c.ComputeStream(0)
	for range iters {
		if _, err := c.Copy(s, dir, size, -1, false); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	lo, hi := int64(1<<62), int64(0)
	for _, e := range store.Events() {
		if e.Kind == timeline.KindMemcpy {
			lo, hi = min(lo, e.Start), max(hi, e.End)
		}
	}
	return float64(size) * float64(iters) / float64(hi-lo)
}

// BenchmarkCopySweep: achieved GB/s per direction and size, engine against raw cu in the same run
// (goal: engine/raw ≥ 0.95 from 64 MiB up).
func BenchmarkCopySweep(b *testing.B) {
	for _, name := range []string{"h2d", "d2h", "d2d"} {
		for size := int64(4 << 10); size <= 1<<30; size *= 4 {
			b.Run(fmt.Sprintf("%s/%d", name, size), func(b *testing.B) {
				iters := int(max(8, min(1000, (1<<32)/size)))
				var raw, bracketed, eng float64
				for b.Loop() {
					raw += rawGBps(b, dirs[name], size, iters)
					bracketed += rawCopies(b, dirs[name], size, iters, true)
					eng += engineGBps(b, dirs[name], size, iters)
				}
				b.ReportMetric(raw/float64(b.N), "GB/s-raw")
				b.ReportMetric(bracketed/float64(b.N), "GB/s-raw-bracketed")
				b.ReportMetric(eng/float64(b.N), "GB/s-engine")
				b.ReportMetric(eng/raw, "engine/raw")
				b.ReportMetric(eng/bracketed, "engine/raw-bracketed")
			})
		}
	}
}

// BenchmarkSmallCopyOverhead: the engine's CPU cost per op (goal ≤ 2 µs): many 8-byte copies issued
// through the engine, against the same copies issued with cu directly.
func BenchmarkSmallCopyOverhead(b *testing.B) {
	const n = 20_000
	c, _ := oneGPU(b, engine.DefaultOptions())
	s := c.ComputeStream(0)
	var engT, rawT time.Duration
	for b.Loop() {
		t0 := time.Now()
		for range n {
			_, _ = c.Copy(s, timeline.CopyD2D, 8, -1, false)
		}
		if err := c.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		engT += time.Since(t0)
		t0 = time.Now()
		_ = rawGBps(b, timeline.CopyD2D, 8, n)
		rawT += time.Since(t0)
	}
	b.ReportMetric(float64(engT-rawT)/float64(b.N*n)/1e3, "µs/op-overhead")
}

// BenchmarkNCCLGroups: 64 small send/recv pairs in one group against 64 groups, with raw NCCL on one
// GPU (self send/receive).
func BenchmarkNCCLGroups(b *testing.B) {
	if n, err := cu.NumDevices(); err != nil || n == 0 {
		b.Skip("no GPU")
	}
	lib, err := nccl.LoadNCCL("")
	if err != nil {
		b.Skip(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev, _ := cu.GetDevice(0)
	ctx, _ := dev.RetainPrimaryCtx()
	_ = cu.SetCurrentContext(ctx)
	comms, err := lib.InitAll([]int{0})
	if err != nil {
		b.Fatal(err)
	}
	s, _ := cu.MakeStream(cu.NonBlocking)
	buf, _ := cu.MemAlloc(2 << 20)
	stream := uintptr(unsafe.Pointer(s.C()))
	pairs := func(grouped bool) time.Duration {
		t0 := time.Now()
		if grouped {
			_ = lib.GroupStart()
		}
		for range 64 {
			if !grouped {
				_ = lib.GroupStart()
			}
			_ = lib.Send(uintptr(buf), 1024, 0, comms[0], stream)
			_ = lib.Recv(uintptr(buf)+1<<20, 1024, 0, comms[0], stream)
			if !grouped {
				_ = lib.GroupEnd()
			}
		}
		if grouped {
			_ = lib.GroupEnd()
		}
		_ = s.Synchronize()
		return time.Since(t0)
	}
	var one, many time.Duration
	for b.Loop() {
		one += pairs(true)
		many += pairs(false)
	}
	b.ReportMetric(float64(one.Microseconds())/float64(b.N), "µs-one-group")
	b.ReportMetric(float64(many.Microseconds())/float64(b.N), "µs-64-groups")
	b.ReportMetric(float64(many)/float64(one), "64groups/one")
}

// BenchmarkCommCache: creating a communicator (the first in the process, then each later one) against
// a cache hit.
func BenchmarkCommCache(b *testing.B) {
	c, store := oneGPU(b, engine.DefaultOptions())
	for b.Loop() {
		t0 := time.Now()
		if _, err := c.Communicator([]engine.DeviceID{0}); err != nil {
			b.Fatal(err)
		}
		if err := c.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(t0).Microseconds()), "µs-lookup")
	}
	for _, e := range store.Events() {
		if e.Kind == timeline.KindCommInit {
			b.ReportMetric(float64(e.Dur())/1e6, "ms-create")
		}
	}
	b.ReportMetric(float64(c.Stats().CommCache.Hits), "hits")
}

// BenchmarkNVMLvsEngine: during a long H2D stream, NVML's PCIe RX against the engine's own bytes/s
// (goal: within 20%).
func BenchmarkNVMLvsEngine(b *testing.B) {
	c, store := oneGPU(b, engine.DefaultOptions())
	lib := nvml.NewLibrary("")
	var samples []int64
	probe := nvml.New(lib, 50*time.Millisecond, func(e *timeline.Event, _ string) {
		if e.Kind == timeline.KindDeviceSample && timeline.SampleMetric(e.Sub) == timeline.SamplePCIeRx {
			samples = append(samples, e.Bytes)
		}
	}, func() int64 { return 0 })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- probe.Run(ctx) }()
	for range 60 {
		_, _ = c.Copy(c.ComputeStream(0), timeline.CopyH2D, 1<<30, -1, false)
	}
	if err := c.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		b.Skip(err)
	}
	var bytes, lo, hi int64 = 0, 1 << 62, 0
	for _, e := range store.Events() {
		if e.Kind == timeline.KindMemcpy {
			bytes += e.Bytes
			lo, hi = min(lo, e.Start), max(hi, e.End)
		}
	}
	engine := float64(bytes) / float64(hi-lo) * 1e9
	var sum int64
	for _, v := range samples[len(samples)/4 : len(samples)*3/4] { // the steady middle
		sum += v
	}
	nv := float64(sum) / float64(len(samples)/2)
	b.ReportMetric(engine/1e9, "GB/s-engine")
	b.ReportMetric(nv/1e9, "GB/s-nvml")
	b.ReportMetric(nv/engine, "nvml/engine")
}

// BenchmarkDriverCalls: the driver's own CPU cost of the calls the engine makes per op (an event
// record, an event query, an 8-byte device copy), each timed over many calls: the floor under the
// engine's per-op overhead (BenchmarkSmallCopyOverhead), which records two events and queries one
// per op.
func BenchmarkDriverCalls(b *testing.B) {
	if n, err := cu.NumDevices(); err != nil || n == 0 {
		b.Skipf("no GPU: %v", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := primaryStream(b)
	buf, _ := cu.MemAlloc(64)
	defer cu.MemFree(buf)
	ev, _ := cu.MakeEvent(cu.DefaultEvent)
	const n = 20_000
	per := func(f func()) float64 {
		t0 := time.Now()
		for range n {
			f()
		}
		d := time.Since(t0)
		_ = s.Synchronize()
		return float64(d.Nanoseconds()) / n / 1e3
	}
	var rec, query, cp float64
	for b.Loop() {
		rec += per(func() { _ = ev.Record(s) })
		query += per(func() { _ = ev.Query() })
		cp += per(func() { _ = cu.MemcpyDtoDAsync(buf+32, buf, 8, s) })
	}
	b.ReportMetric(rec/float64(b.N), "µs/event-record")
	b.ReportMetric(query/float64(b.N), "µs/event-query")
	b.ReportMetric(cp/float64(b.N), "µs/copy-8B")
}
