package main

/*
#cgo CFLAGS: -O2 -Wall
#include <stdlib.h>
#include "ncclprof.h"
*/
import "C"

import (
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/xfertop/xfertop/probes/ncclprof/fold"
	"github.com/xfertop/xfertop/probes/ncclprof/sender"
)

// The plugin is one per process, as NCCL loads it: this is its state (set once, at the first init).
var plugin struct {
	cfg    sender.Config
	sender *sender.Sender
	clock  *tickClock
}

// processEnv reads the process's environment as it is now. Go's os.Getenv in a library NCCL loads
// reads the environment the process started with: a job that sets a variable in its own code
// before NCCL loads the plugin (PyTorch's os.environ["NCCL_HOSTID"] = …) was not seen (on an H200,
// two ranks given their own NCCL host ids were reported as one host).
func processEnv(name string) string {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	v := C.getenv(cs)
	if v == nil {
		return ""
	}
	return C.GoString(v)
}

//export xfertopSetup
func xfertopSetup(out *C.xr_setup) {
	cfg, err := sender.ConfigFromEnv(processEnv)
	tsc := false
	if err == nil {
		tsc, err = useTSC(processEnv, kernelClocksource)
	}
	if err != nil {
		msg := err.Error()
		n := min(len(msg), len(out.err)-1)
		for i := 0; i < n; i++ {
			out.err[i] = C.char(msg[i])
		}
		out.err[n] = 0
		return
	}
	plugin.cfg = cfg
	plugin.clock = startClock(tsc)
	if tsc {
		out.tsc = 1
	}
	plugin.sender = sender.New(cfg, int64(C.xr_now()), time.Now().UnixNano())
	out.mask = C.uint64_t(cfg.Mask)
	out.ring = C.uint64_t(cfg.Ring)
	out.flush_ms = C.int64_t(cfg.FlushMs)
	for i := 0; i < len(cfg.Chain); i++ { // ConfigFromEnv bounds it below the buffer
		out.chain[i] = C.char(cfg.Chain[i])
	}
	out.chain[len(cfg.Chain)] = 0
}

//export xfertopChainLoaded
func xfertopChainLoaded(name *C.char) { plugin.sender.ChainLoaded(C.GoString(name)) }

//export xfertopChainWarn
func xfertopChainWarn(msg *C.char) {
	if plugin.sender != nil {
		plugin.sender.ChainWarn(C.GoString(msg))
	}
}

//export xfertopStart
func xfertopStart() {
	go run(plugin.sender)
}

//export xfertopComm
func xfertopComm(ctx C.uint32_t, hash C.uint64_t, name *C.char, nNodes, nranks, rank C.int, t C.int64_t, version C.int) {
	n := ""
	if name != nil {
		n = C.GoString(name)
	}
	plugin.sender.Comm(uint32(ctx), fold.Comm{Hash: uint64(hash), Name: n, NNodes: int(nNodes), NRanks: int(nranks), Rank: int(rank)},
		int64(t), int(version))
}

// startClock sets the callbacks' clock and calibrates its conversion: two pairs 10 ms apart give
// the first rate (a few parts per million), which the sender refines as it runs.
func startClock(tsc bool) *tickClock {
	if tsc {
		C.xr_set_tsc(1)
	} else {
		C.xr_set_tsc(0)
	}
	a := clockPair()
	if tsc {
		time.Sleep(10 * time.Millisecond)
	}
	return newTickClock(!tsc, a, clockPair())
}

func clockPair() tickPair {
	var tick C.uint64_t
	var ns C.int64_t
	C.xr_clock_pair(&tick, &ns)
	return tickPair{tick: uint64(tick), ns: int64(ns)}
}

// ring is the C ring as Go reads it.
type ring struct {
	slots []C.xr_slot
	mask  uint64
	head  uint64
	clock *tickClock
}

func newRing(clock *tickClock) *ring {
	n := uint64(C.xr_ring_mask) + 1
	return &ring{slots: unsafe.Slice(C.xr_ring, n), mask: n - 1, clock: clock}
}

// drain hands up to max published records to add, in order, and frees their slots. It reports how
// many it read and whether the job is ending (a last finalize, or exit).
func (r *ring) drain(max int, add func(*fold.Record)) (n int, final bool) {
	var rec fold.Record
	for n < max {
		s := &r.slots[r.head&r.mask]
		seq := (*uint64)(unsafe.Pointer(&s.seq))
		if atomic.LoadUint64(seq) != r.head+1 {
			break
		}
		toRecord(&s.r, &rec, r.clock)
		atomic.StoreUint64(seq, r.head+r.mask+1)
		r.head++
		n++
		if rec.Op == fold.RecFinalize && rec.Ctx == math.MaxUint32 {
			final = true
		}
		add(&rec)
	}
	return n, final
}

func toRecord(c *C.xr_rec, r *fold.Record, clock *tickClock) {
	r.Op, r.State, r.Ctx = fold.RecOp(c.op), uint16(c.state), uint32(c.ctx)
	r.Type, r.ID, r.Parent, r.T = uint64(c._type), uint64(c.id), uint64(c.parent), clock.ns(uint64(c.t))
	r.A, r.B, r.C, r.D = uint64(c.a), uint64(c.b), uint64(c.c), uint64(c.d)
	r.Rank, r.Peer = int32(c.rank), int32(c.peer)
	if r.Op != fold.RecStart {
		return
	}
	r.Func = *(*[16]byte)(unsafe.Pointer(&c.fn))
	r.Dtype = *(*[16]byte)(unsafe.Pointer(&c.dtype))
	r.Algo = *(*[16]byte)(unsafe.Pointer(&c.algo))
	r.Proto = *(*[8]byte)(unsafe.Pointer(&c.proto))
	r.Flags, r.Tag = uint8(c.flags), uint64(c.tag)
	r.Variant = *(*[24]byte)(unsafe.Pointer(&c.variant))
}

// run is the sender goroutine: it drains the ring, folds, and sends, sleeping briefly when idle.
func run(s *sender.Sender) {
	r := newRing(plugin.clock)
	for {
		r.clock.observe(clockPair())
		n, final := r.drain(1<<14, s.Add)
		s.Pump(int64(C.xr_now()), sender.Counters{Dropped: int64(C.xr_dropped_count()), Unknown: int64(C.xr_unknown_count()),
			ChainLost: int64(C.xr_chain_lost_count()), CostNs: r.clock.duration(int64(C.xr_cost_ticks())), CostSamples: int64(C.xr_cost_samples())}, final)
		C.xr_set_flushed(C.uint64_t(r.head))
		if n == 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// benchRing is the ring's consumer side for benchmarks: it persists from one run to the next.
var benchRing *ring

const benchRingSize = 1 << 18

// benchCallbacks runs n callback sequences of kind (0: a collective's start and stop; 1: a proxy
// step's start, state and stop) through the C callbacks on this thread and returns the nanoseconds
// per callback and the events dropped. The ring is emptied between timed runs (untimed), so the
// cost is the enqueue's alone; when full, the ring is kept full and every callback takes the drop
// path.
func benchCallbacks(n, kind int, full bool) (float64, uint64) {
	C.xr_bench_setup(benchRingSize)
	if benchRing == nil {
		tsc, _ := useTSC(processEnv, kernelClocksource) // as the plugin would choose
		benchRing = newRing(startClock(tsc))
	}
	r := benchRing
	calls := 2
	if kind == 1 {
		calls = 3
	}
	discard := func(*fold.Record) {}
	before := uint64(C.xr_dropped_count())
	var ns uint64
	if full {
		C.xr_bench(benchRingSize, 0) // fill it
		before = uint64(C.xr_dropped_count())
		ns = uint64(C.xr_bench(C.uint64_t(n), C.int(kind)))
	} else {
		per := benchRingSize/calls - 1
		for done := 0; done < n; {
			for m, _ := r.drain(benchRingSize, discard); m > 0; m, _ = r.drain(benchRingSize, discard) {
			}
			k := min(per, n-done)
			ns += uint64(C.xr_bench(C.uint64_t(k), C.int(kind)))
			done += k
		}
	}
	for m, _ := r.drain(benchRingSize, discard); m > 0; m, _ = r.drain(benchRingSize, discard) {
	}
	return float64(ns) / float64(n*calls), uint64(C.xr_dropped_count()) - before
}

// bracketClock reads CLOCK_MONOTONIC, the callbacks' ticks, and CLOCK_MONOTONIC again, and
// returns the two clock reads and the ticks as c converts them (for tests of the conversion).
func bracketClock(c *tickClock) (before, conv, after int64) {
	before = int64(C.xr_now())
	tick := uint64(C.xr_ticks())
	after = int64(C.xr_now())
	return before, c.ns(tick), after
}
