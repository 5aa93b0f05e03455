//go:build cuda

package cuda_test

// These tests drive the cuda backend through the engine's API and check the timeline it reports.
// They run against whatever libcuda.so.1 and NCCL the process finds: the GPU and NCCL of a GPU
// machine, or in CI the fake driver of testdata/fakedriver, which runs the driver API on the host:
//
//	eval "$(../shared/scripts/cuda-sdk.sh)"
//	eval "$(engine/cuda/testdata/fakedriver/build.sh)"
//	go test -tags cuda ./engine/cuda
//
// Tests that inject faults into NCCL need the fake (XFER_FAKE_DRIVER set) and skip elsewhere.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/cuda"
	"github.com/xfertop/xfertop/engine/eventslot"
	"github.com/xfertop/xfertop/engine/nccl"
	"github.com/xfertop/xfertop/timeline"
)

type rig struct {
	c     *engine.Client
	be    *cuda.Backend
	store *timeline.Store
}

// newRig opens ranks ranks on gpus GPUs (rank r on GPU r mod gpus), skipping when the machine has
// fewer GPUs.
func newRig(t *testing.T, ranks, gpus int, opts engine.Options) *rig {
	t.Helper()
	n, err := cu.NumDevices()
	if err != nil || n < gpus {
		t.Skipf("needs %d GPUs, the driver reports %d (%v)", gpus, n, err)
	}
	topo := engine.Topology{Name: "test", Hosts: 1, GPUsPerHost: ranks}
	store := timeline.NewStore(nil)
	be, err := cuda.New(cuda.Config{Topology: topo, Fit: engine.Fit{Ranks: ranks, GPUs: gpus}, NCCLAlgo: opts.NCCLAlgo, NCCLProto: opts.NCCLProto}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	be.SetWatchdog(int64(5 * time.Second))
	return &rig{c: engine.NewClient(be, store, opts), be: be, store: store}
}

func needNCCL(t *testing.T) {
	t.Helper()
	if _, err := nccl.LoadNCCL(""); err != nil {
		t.Skipf("no NCCL: %v", err)
	}
}

// needFake skips unless the fake driver and NCCL of testdata/fakedriver are in use: only they
// take injected faults.
func needFake(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("XFER_FAKE_DRIVER")
	if dir == "" {
		t.Skip("fault injection needs the fake driver (XFER_FAKE_DRIVER, see testdata/fakedriver/build.sh)")
	}
	return dir
}

func (r *rig) run(t *testing.T) {
	t.Helper()
	if err := r.c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, e := range r.store.Events() {
		if e.Kind == timeline.KindAlert {
			t.Errorf("alert: %s", r.store.Strings.Lookup(e.Label))
		}
	}
}

func (r *rig) events(kind timeline.Kind) []timeline.Event {
	var out []timeline.Event
	for _, e := range r.store.Events() {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func (r *rig) byOp(id uint64, kind timeline.Kind, dev int32) timeline.Event {
	for _, e := range r.store.Events() {
		if e.Op == id && e.Kind == kind && e.Device == dev {
			return e
		}
	}
	return timeline.Event{}
}

func waitAll(t *testing.T, futs ...*engine.Future) {
	t.Helper()
	for i, f := range futs {
		if !f.Done() {
			t.Errorf("future %d not resolved after the run", i)
		} else if f.Err() != nil {
			t.Errorf("future %d: %v", i, f.Err())
		}
	}
}

// One stream runs its ops in order, each timed on the GPU; the compute kernel occupies the GPU
// for the time asked; copies report their direction and size.
func TestStreamOrderAndTiming(t *testing.T) {
	r := newRig(t, 1, 1, engine.DefaultOptions())
	s := r.c.ComputeStream(0)
	h2d, _ := r.c.Copy(s, timeline.CopyH2D, 1<<20, -1, false)
	if err := r.c.Kernel(s, int64(3*time.Millisecond), "step"); err != nil {
		t.Fatal(err)
	}
	d2h, _ := r.c.Copy(s, timeline.CopyD2H, 1<<20, -1, true) // pageable: staged by the driver
	d2d, _ := r.c.Copy(s, timeline.CopyD2D, 4<<20, -1, false)
	r.run(t)
	waitAll(t, h2d, d2h, d2d)

	var ops []timeline.Event
	for _, e := range r.store.Events() {
		if e.Kind == timeline.KindMemcpy || e.Kind == timeline.KindKernel {
			ops = append(ops, e)
		}
	}
	want := []struct {
		kind  timeline.Kind
		dir   timeline.CopyDir
		bytes int64
	}{{timeline.KindMemcpy, timeline.CopyH2D, 1 << 20}, {timeline.KindKernel, 0, 0},
		{timeline.KindMemcpy, timeline.CopyD2H, 1 << 20}, {timeline.KindMemcpy, timeline.CopyD2D, 4 << 20}}
	if len(ops) != len(want) {
		t.Fatalf("%d ops reported, want %d", len(ops), len(want))
	}
	for i, w := range want {
		e := ops[i]
		if e.Kind != w.kind || e.Bytes != w.bytes || (w.kind == timeline.KindMemcpy && timeline.CopyDir(e.Sub) != w.dir) {
			t.Errorf("op %d = kind %v dir %d bytes %d, want %v %d %d", i, e.Kind, e.Sub, e.Bytes, w.kind, w.dir, w.bytes)
		}
		if e.End < e.Start || e.Start < 0 {
			t.Errorf("op %d spans %d..%d", i, e.Start, e.End)
		}
		if i > 0 && e.Start < ops[i-1].End {
			t.Errorf("op %d starts at %d, before op %d ended (%d): a stream runs in order", i, e.Start, i-1, ops[i-1].End)
		}
	}
	if k := ops[1]; k.Dur() < int64(3*time.Millisecond) {
		t.Errorf("kernel took %v on the GPU, asked for 3ms", time.Duration(k.Dur()))
	}
}

// A stream waiting on another's event starts only after the work before the record; a host wait
// holds the rank's thread until then.
func TestEventWaits(t *testing.T) {
	r := newRig(t, 1, 1, engine.DefaultOptions())
	s1 := r.c.ComputeStream(0)
	s2, _ := r.c.NewStream(0, engine.PriorityHigh)
	s3, _ := r.c.NewStream(0, engine.PriorityNormal)
	_ = r.c.Kernel(s1, int64(50*time.Millisecond), "producer") // long enough that the host issues the rest before it ends, under -race and load
	ev, _ := r.c.Record(s1)
	_ = r.c.WaitEvent(s2, ev)
	after, _ := r.c.Copy(s2, timeline.CopyD2D, 1<<16, -1, false)
	r.c.HostWait(0, ev)
	hosted, _ := r.c.Copy(s3, timeline.CopyD2D, 1<<16, -1, false)
	r.run(t)
	waitAll(t, after, hosted)

	kernel := r.events(timeline.KindKernel)[0]
	for name, id := range map[string]uint64{"device wait": after.Op(), "host wait": hosted.Op()} {
		c := r.byOp(id, timeline.KindMemcpy, 0)
		if c.Start < kernel.End {
			t.Errorf("%s: copy started at %d, before the kernel it waits for ended at %d", name, c.Start, kernel.End)
		}
	}
	if rec := r.events(timeline.KindEventRecord); len(rec) != 1 || rec[0].Aux != uint32(ev) {
		t.Errorf("event records = %+v, want one for event %d", rec, ev)
	}
	if p := r.byOp(after.Op(), timeline.KindMemcpy, 0).Priority; p != int8(engine.PriorityHigh) {
		t.Errorf("copy on the high-priority stream reports priority %d", p)
	}
}

// Event ids are recycled (eventslot) in an endless run. An old id whose slot now holds a new event
// is retired: a wait on it returns at once rather than waiting for the slot's new event.
func TestEventRecycling(t *testing.T) {
	r := newRig(t, 1, 1, engine.DefaultOptions())
	s1 := r.c.ComputeStream(0)
	s2, _ := r.c.NewStream(0, engine.PriorityHigh)
	first, _ := r.c.Record(s1) // slot 1
	r.run(t)
	for range eventslot.ReuseFrom - 2 { // slots 2 .. ReuseFrom-1: the table is full enough now
		_, _ = r.c.Record(s1)
	}
	r.run(t)
	_ = r.c.Kernel(s1, int64(50*time.Millisecond), "producer") // long enough that the host issues the rest before it ends, under -race and load
	reused, _ := r.c.Record(s1)                                // reuses slot 1, the oldest done
	_ = r.c.WaitEvent(s2, first)
	early, _ := r.c.Copy(s2, timeline.CopyD2D, 1<<16, -1, false)
	_ = r.c.WaitEvent(s2, reused)
	late, _ := r.c.Copy(s2, timeline.CopyD2D, 1<<16, -1, false)
	r.run(t)
	waitAll(t, early, late)
	const slotMask = 1<<20 - 1
	if reused == first || uint32(reused)&slotMask != uint32(first)&slotMask {
		t.Errorf("event %#x does not reuse the slot of event %#x", reused, first)
	}
	kernel := r.events(timeline.KindKernel)[0]
	if c := r.byOp(early.Op(), timeline.KindMemcpy, 0); c.Start >= kernel.End {
		t.Errorf("copy after a wait on retired event %#x started at %d, after the kernel before the slot's new event (%#x) ended at %d",
			first, c.Start, reused, kernel.End)
	}
	if c := r.byOp(late.Op(), timeline.KindMemcpy, 0); c.Start < kernel.End {
		t.Errorf("copy waiting on event %#x started at %d, before the kernel recorded before it ended at %d", reused, c.Start, kernel.End)
	}
}

// No rank's stream passes a barrier before every rank has reached it.
func TestBarrier(t *testing.T) {
	for _, gpus := range []int{2, 1} {
		t.Run(map[int]string{1: "fit-one-gpu", 2: "two-gpus"}[gpus], func(t *testing.T) {
			r := newRig(t, 2, gpus, engine.DefaultOptions())
			_ = r.c.Kernel(r.c.ComputeStream(0), int64(8*time.Millisecond), "slow rank")
			if _, err := r.c.Barrier([]engine.DeviceID{0, 1}, "sync"); err != nil {
				t.Fatal(err)
			}
			after, _ := r.c.Copy(r.c.ComputeStream(1), timeline.CopyD2D, 1<<16, -1, false)
			r.run(t)
			waitAll(t, after)
			// GPUs' clocks are aligned to within the latency of a cross-GPU wait, so the check
			// allows 1ms: without the barrier the copy would start some 8ms earlier.
			kernel := r.events(timeline.KindKernel)[0]
			if c := r.byOp(after.Op(), timeline.KindMemcpy, 1); c.Start < kernel.End-int64(time.Millisecond) {
				t.Errorf("rank 1 copied at %d, before rank 0 reached the barrier at %d", c.Start, kernel.End)
			}
			if n := len(r.events(timeline.KindBarrier)); n != 2 {
				t.Errorf("%d barrier events, want one per rank", n)
			}
		})
	}
}

// Each collective runs through NCCL over two GPUs; the communicator is created once (with
// ncclCommInitRank) and then taken from the cache.
func TestCollectives(t *testing.T) {
	needNCCL(t)
	r := newRig(t, 2, 2, engine.DefaultOptions())
	devs := []engine.DeviceID{0, 1}
	var futs []*engine.Future
	for _, op := range []timeline.CollOp{timeline.CollAllReduce, timeline.CollAllGather, timeline.CollReduceScatter,
		timeline.CollBroadcast, timeline.CollAllToAll} {
		f, err := r.c.Collective(op, devs, 1<<20, op.String())
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, f...)
	}
	// Ragged: rank 0 sends 3 KiB to rank 1, rank 1 sends 5 KiB to rank 0; each receive must be
	// sized as its peer's send.
	f, err := r.c.RaggedAllToAll(devs, [][]int64{{0, 3 << 10}, {5 << 10, 0}}, "moe")
	if err != nil {
		t.Fatal(err)
	}
	futs = append(futs, f...)
	r.run(t)
	waitAll(t, futs...)
	if n := len(r.events(timeline.KindCollective)); n != 12 {
		t.Errorf("%d collective events, want 6 collectives × 2 ranks", n)
	}
	for _, e := range r.events(timeline.KindCollective) {
		if e.Ranks != 2 || e.End < e.Start {
			t.Errorf("collective %+v: want 2 ranks and a span", e)
		}
	}
	if n := len(r.events(timeline.KindCommInit)); n != 2 {
		t.Errorf("%d communicator creations, want one per rank of one communicator", n)
	}
	if st := r.c.Stats().CommCache; st.Misses != 1 || st.Hits != 5 {
		t.Errorf("cache: %+v, want 1 miss then 5 hits", st)
	}
}

// Send/receive pairs issued in one group complete whatever order each rank posts them in, and
// the group is reported as one launch.
func TestSendRecvGroup(t *testing.T) {
	needNCCL(t)
	r := newRig(t, 2, 2, engine.DefaultOptions())
	var futs []*engine.Future
	r.c.GroupStart()
	for i := range 8 {
		id := uint64(100 + i)
		// Rank 0 posts its receives first and rank 1 its sends: outside a group this would
		// depend on NCCL's buffering; inside one it cannot deadlock.
		rf, _ := r.c.Recv(r.c.TransferStream(0), 1, 4<<10, id+50)
		sf, _ := r.c.Send(r.c.TransferStream(0), 1, 4<<10, id)
		sf1, _ := r.c.Send(r.c.TransferStream(1), 0, 4<<10, id+50)
		rf1, _ := r.c.Recv(r.c.TransferStream(1), 0, 4<<10, id)
		futs = append(futs, rf, sf, sf1, rf1)
	}
	r.c.GroupEnd()
	r.run(t)
	waitAll(t, futs...)
	if n := len(r.events(timeline.KindGroupLaunch)); n != 2 {
		t.Errorf("%d group launches, want one per rank", n)
	}
	if s, rv := len(r.events(timeline.KindSend)), len(r.events(timeline.KindRecv)); s != 16 || rv != 16 {
		t.Errorf("%d sends and %d receives, want 16 each", s, rv)
	}
}

// With --fit, ranks sharing a GPU exchange data by copies and a receive ends no earlier than the
// copy that feeds it; collectives over ranks on fewer GPUs run over those GPUs alone. Each such op
// is reported as emulated (timeline.AuxEmulated); a pair on GPUs of their own is not. An emulated
// receive begins with the copy that carries it, its wait for the sender a peer wait.
func TestFitSharedGPUs(t *testing.T) {
	for _, gpus := range []int{1, 2} {
		t.Run(map[int]string{1: "4-ranks-on-1", 2: "4-ranks-on-2"}[gpus], func(t *testing.T) {
			if gpus > 1 {
				needNCCL(t)
			}
			r := newRig(t, 4, gpus, engine.DefaultOptions())
			// 0→2 share GPU 0 in both mappings; 0→1 cross GPUs when there are two.
			var futs []*engine.Future
			for i, peer := range []engine.DeviceID{2, 1} {
				id := uint64(10 + i)
				_ = r.c.Kernel(r.c.TransferStream(0), int64(4*time.Millisecond), "produce")
				sf, err := r.c.Send(r.c.TransferStream(0), peer, 1<<20, id)
				if err != nil {
					t.Fatal(err)
				}
				rf, err := r.c.Recv(r.c.TransferStream(peer), 0, 1<<20, id)
				if err != nil {
					t.Fatal(err)
				}
				futs = append(futs, sf, rf)
			}
			all, err := r.c.Collective(timeline.CollAllReduce, []engine.DeviceID{0, 1, 2, 3}, 1<<20, "grads")
			if err != nil {
				t.Fatal(err)
			}
			futs = append(futs, all...)
			r.run(t)
			waitAll(t, futs...)
			for _, pair := range []struct {
				id   uint64
				peer int32
			}{{10, 2}, {11, 1}} {
				// A receive cannot end before its send started (after the 4ms producer kernel);
				// across GPUs, clocks agree to within a cross-GPU wait's latency (see TestBarrier).
				send, recv := r.byOp(pair.id, timeline.KindSend, 0), r.byOp(pair.id, timeline.KindRecv, pair.peer)
				if recv.End < send.Start-int64(time.Millisecond) || send.Start < int64(4*time.Millisecond) {
					t.Errorf("pair %d: receive ended at %d, send started at %d", pair.id, recv.End, send.Start)
				}
			}
			// What stood in for the topology's transfers and collectives is marked so: the copies
			// between ranks sharing a GPU, and the collective (reported with its own 4 ranks, not
			// the GPUs they share, so that its rows compare with the simulator's).
			for _, pair := range []struct {
				id       uint64
				peer     int32
				emulated bool
			}{{10, 2, true}, {11, 1, gpus == 1}} {
				send, recv := r.byOp(pair.id, timeline.KindSend, 0), r.byOp(pair.id, timeline.KindRecv, pair.peer)
				for _, e := range []timeline.Event{send, recv} {
					if e.Emulated() != pair.emulated {
						t.Errorf("pair %d: %s emulated %v; want %v", pair.id, e.Kind, e.Emulated(), pair.emulated)
					}
				}
				if !pair.emulated {
					continue
				}
				// The receive was posted at once and its send after a 4 ms kernel, on one GPU: as
				// on the simulator, the receive is the transfer from the copy's start, and the
				// wait before it for the sender is a peer wait.
				wait := r.byOp(pair.id, timeline.KindPeerWait, pair.peer)
				if recv.Start != send.Start || wait.Kind != timeline.KindPeerWait || wait.Aux != timeline.PeerWaitRecv || wait.End != recv.Start ||
					wait.Start >= wait.End {
					t.Errorf("pair %d: send from %d, receive %d..%d, peer wait %v %d..%d; want the receive from the send's start, a receive's peer wait before it",
						pair.id, send.Start, recv.Start, recv.End, wait.Kind, wait.Start, wait.End)
				}
			}
			for _, e := range r.events(timeline.KindCollective) {
				if int(e.Ranks) != 4 || !e.Emulated() {
					t.Errorf("all-reduce over 4 ranks on %d GPUs reports %d ranks, emulated %v; want 4, emulated", gpus, e.Ranks, e.Emulated())
				}
			}
		})
	}
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// A communicator whose peer dies (NCCL reports ncclRemoteError asynchronously) is aborted, its
// ops fail with NCCL's error instead of hanging, and the client evicts it: the next use of the
// ranks gets a fresh communicator that works.
func TestAsyncErrorAbortsAndEvicts(t *testing.T) {
	dir := needFake(t)
	log := filepath.Join(t.TempDir(), "nccl.log")
	t.Setenv("XFER_FAKE_NCCL_LOG", log)
	t.Setenv("XFER_FAKE_NCCL_FAULT", "remote")
	_ = dir
	r := newRig(t, 2, 2, engine.DefaultOptions())
	devs := []engine.DeviceID{0, 1}
	bad, _ := r.c.Collective(timeline.CollAllReduce, devs, 1<<16, "doomed")
	if err := r.c.Run(context.Background()); err != nil {
		t.Fatalf("a faulted communicator must not end the run: %v", err)
	}
	for _, f := range bad {
		var ne *nccl.NCCLError
		if !f.Done() || !errors.As(f.Err(), &ne) || ne.Code != 6 {
			t.Errorf("future: done %v err %v, want NCCL's remote error (6)", f.Done(), f.Err())
		}
	}
	var evicted, alerted bool
	for _, e := range r.store.Events() {
		evicted = evicted || (e.Kind == timeline.KindCommEvict && e.Status == timeline.StatusFaulted)
		alerted = alerted || (e.Kind == timeline.KindAlert && strings.Contains(r.store.Strings.Lookup(e.Label), "remote process exited"))
	}
	if !evicted || !alerted {
		t.Errorf("evicted %v, alerted %v: want both", evicted, alerted)
	}
	if l := readLog(t, log); strings.Count(l, "abort comm=") != 2 {
		t.Errorf("NCCL log:\n%s\nwant both ranks aborted", l)
	}

	os.Unsetenv("XFER_FAKE_NCCL_FAULT")
	good, _ := r.c.Collective(timeline.CollAllReduce, devs, 1<<16, "retry")
	if err := r.c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitAll(t, good...)
	if st := r.c.Stats().CommCache; st.Misses != 2 {
		t.Errorf("cache %+v: want a second miss, for the fresh communicator", st)
	}
}

// A send whose receiver never posts hangs on the GPU; the watchdog ends the run with an error
// naming the op and aborts the communicator so the GPU is released.
func TestWatchdogAbortsStuckSend(t *testing.T) {
	dir := needFake(t)
	_ = dir
	log := filepath.Join(t.TempDir(), "nccl.log")
	t.Setenv("XFER_FAKE_NCCL_LOG", log)
	r := newRig(t, 2, 2, engine.DefaultOptions())
	r.be.SetWatchdog(int64(300 * time.Millisecond))
	f, _ := r.c.Send(r.c.TransferStream(0), 1, 1<<16, 7)
	err := r.c.Run(context.Background())
	var we *engine.WatchdogError
	if !errors.As(err, &we) || we.Op != "send" || we.Rank != 0 || we.Peer != 1 {
		t.Fatalf("err = %v, want the watchdog naming the send from 0 to 1", err)
	}
	if !f.Done() || f.Err() == nil {
		t.Errorf("the stuck send's future: done %v err %v", f.Done(), f.Err())
	}
	if l := readLog(t, log); !strings.Contains(l, "abort comm=") {
		t.Errorf("NCCL log:\n%s\nwant the communicator aborted", l)
	}
}

// A run that ends early (the watchdog, a cancel) ends every rank's host thread before it returns:
// none is left sleeping or waiting, to hand ops to the next run's poller or outlive the backend.
func TestRunEndsHostThreads(t *testing.T) {
	needNCCL(t)
	for _, how := range []string{"watchdog", "cancel"} {
		t.Run(how, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			r := newRig(t, 2, 2, engine.DefaultOptions())
			r.be.SetWatchdog(int64(300 * time.Millisecond))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if how == "watchdog" {
				_, _ = r.c.Send(r.c.TransferStream(0), 1, 1<<16, 7) // never received
				// Rank 0's host thread waits for the stream past the stuck send: aborting the
				// communicator releases it.
				ev, _ := r.c.Record(r.c.TransferStream(0))
				r.c.HostWait(0, ev)
			} else {
				time.AfterFunc(100*time.Millisecond, cancel)
			}
			r.c.HostSleep(1, int64(time.Minute), "slow input")
			_ = r.c.Kernel(r.c.ComputeStream(1), 1000, "after")
			start := time.Now()
			err := r.c.Run(ctx)
			var we *engine.WatchdogError
			if (how == "watchdog" && !errors.As(err, &we)) || (how == "cancel" && !errors.Is(err, engine.ErrCanceled)) {
				t.Fatalf("err = %v; want the run ended by the %s", err, how)
			}
			if wall := time.Since(start); wall > 20*time.Second {
				t.Errorf("the run took %v to end: it waited for the sleeping host thread", wall)
			}
		})
	}
}

// A communicator the cache drops is destroyed (ncclCommDestroy) once the ops on it have run.
func TestEvictedCommunicatorDestroyed(t *testing.T) {
	needFake(t)
	log := filepath.Join(t.TempDir(), "nccl.log")
	t.Setenv("XFER_FAKE_NCCL_LOG", log)
	opts := engine.DefaultOptions()
	opts.CommCacheSize = 1
	r := newRig(t, 2, 2, opts)
	first, _ := r.c.Collective(timeline.CollAllReduce, []engine.DeviceID{0, 1}, 1<<12, "a")
	if _, err := r.c.Communicator([]engine.DeviceID{1}); err != nil { // evicts {0,1}
		t.Fatal(err)
	}
	r.run(t)
	waitAll(t, first...)
	l := readLog(t, log)
	if strings.Count(l, "destroy comm=") != 2 {
		t.Errorf("NCCL log:\n%s\nwant the evicted communicator's 2 ranks destroyed", l)
	}
}

// NCCL failing to create a communicator is a typed error from the run, not a crash or a hang.
func TestInitFailureIsNCCLError(t *testing.T) {
	needFake(t)
	t.Setenv("XFER_FAKE_NCCL_FAULT", "init")
	r := newRig(t, 2, 2, engine.DefaultOptions())
	_, _ = r.c.Collective(timeline.CollAllReduce, []engine.DeviceID{0, 1}, 1<<12, "x")
	err := r.c.Run(context.Background())
	var ne *nccl.NCCLError
	if !errors.As(err, &ne) || ne.Call != "ncclCommInitRank" || !errors.Is(err, nccl.ErrNCCL) {
		t.Fatalf("err = %v, want a typed NCCL error from ncclCommInitRank", err)
	}
}

// A graph over two streams of one GPU (a kernel, an event, a copy waiting on it) is captured
// through the driver at its first launch and replayed with one cuGraphLaunch at each later run:
// every launch reports both ops, marked captured, the copy after the kernel, and one graph launch.
func TestGraphLaunchReplays(t *testing.T) {
	r := newRig(t, 1, 1, engine.DefaultOptions())
	comp, x := r.c.ComputeStream(0), r.c.TransferStream(0)
	if err := r.c.BeginCapture("step"); err != nil {
		t.Fatal(err)
	}
	if err := r.c.Kernel(comp, 2_000_000, "k"); err != nil {
		t.Fatal(err)
	}
	ev, _ := r.c.Record(comp)
	_ = r.c.WaitEvent(x, ev)
	if _, err := r.c.Copy(x, timeline.CopyD2D, 1<<20, -1, false); err != nil {
		t.Fatal(err)
	}
	g, err := r.c.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	for launch := range 3 {
		from := len(r.store.Events())
		if err := r.c.LaunchGraph(g); err != nil {
			t.Fatal(err)
		}
		r.run(t)
		var k, c, gl []timeline.Event
		for _, e := range r.store.Events()[from:] {
			switch e.Kind {
			case timeline.KindKernel:
				k = append(k, e)
			case timeline.KindMemcpy:
				c = append(c, e)
			case timeline.KindGraphLaunch:
				gl = append(gl, e)
			}
		}
		if len(k) != 1 || len(c) != 1 || len(gl) != 1 || gl[0].Aux != 4 {
			t.Fatalf("launch %d: %d kernels, %d copies, graph launches %+v; want one each, of 4 ops", launch, len(k), len(c), gl)
		}
		if !k[0].Captured() || !c[0].Captured() || c[0].Start < k[0].End {
			t.Errorf("launch %d: kernel %+v, copy %+v: want both captured, the copy after the kernel", launch, k[0], c[0])
		}
		if k[0].Dur() < 2_000_000 {
			t.Errorf("launch %d: the kernel ran %d ns, want its 2 ms", launch, k[0].Dur())
		}
	}
}

// NCCL calls captured with the rest of a step (NCCL >= 2.9 captures what is issued on a capturing
// stream) replay with the graph: a graph holding an all-reduce, a send/receive pair and a group of
// them, launched N times, reports N graph launches on each rank and, at each, every NCCL op again,
// marked captured, with group ids of its own. The communicator is created, and NCCL's
// point-to-point connections are made, before the capture, as NCCL's guide asks.
func TestGraphLaunchReplaysNCCL(t *testing.T) {
	r := newRig(t, 2, 2, engine.DefaultOptions())
	needNCCL(t)
	ranks := []engine.DeviceID{0, 1}
	step := func() {
		if _, err := r.c.Collective(timeline.CollAllReduce, ranks, 1<<16, "ar"); err != nil {
			t.Fatal(err)
		}
		id := r.c.NewOpID()
		_, _ = r.c.Send(r.c.TransferStream(0), 1, 1<<12, id)
		_, _ = r.c.Recv(r.c.TransferStream(1), 0, 1<<12, id)
		r.c.GroupStart()
		a, b := r.c.NewOpID(), r.c.NewOpID()
		_, _ = r.c.Send(r.c.TransferStream(0), 1, 1<<10, a)
		_, _ = r.c.Recv(r.c.TransferStream(0), 1, 1<<10, b)
		_, _ = r.c.Send(r.c.TransferStream(1), 0, 1<<10, b)
		_, _ = r.c.Recv(r.c.TransferStream(1), 0, 1<<10, a)
		r.c.GroupEnd()
	}
	step() // uncaptured: creates the communicator and NCCL's connections
	r.run(t)
	if err := r.c.BeginCapture("step"); err != nil {
		t.Fatal(err)
	}
	step()
	g, err := r.c.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	const launches = 3
	groups := map[uint32]bool{}
	for launch := range launches {
		from := len(r.store.Events())
		if err := r.c.LaunchGraph(g); err != nil {
			t.Fatal(err)
		}
		r.run(t)
		count := map[[2]int32]int{} // [device, kind]
		for _, e := range r.store.Events()[from:] {
			count[[2]int32{e.Device, int32(e.Kind)}]++
			switch {
			case e.Kind == timeline.KindGraphLaunch:
			case e.Kind == timeline.KindGroupLaunch:
				if groups[e.Group] {
					t.Errorf("launch %d: group id %d seen at an earlier launch", launch, e.Group)
				}
				groups[e.Group] = true
			case e.Kind.IsBusy() && !e.Captured():
				t.Errorf("launch %d: %v on device %d not marked captured", launch, e.Kind, e.Device)
			}
		}
		for d, sends := range []int{2, 1} { // device 0 sends alone and in the group; device 1 sends in the group
			for kind, want := range map[timeline.Kind]int{timeline.KindGraphLaunch: 1, timeline.KindCollective: 1, timeline.KindSend: sends, timeline.KindRecv: 3 - sends, timeline.KindGroupLaunch: 1} {
				if got := count[[2]int32{int32(d), int32(kind)}]; got != want {
					t.Errorf("launch %d, device %d: %d %v events; want %d", launch, d, got, kind, want)
				}
			}
		}
	}
	if got := len(r.events(timeline.KindGraphLaunch)); got != 2*launches {
		t.Errorf("%d graph launches in all; want %d (one per rank per launch)", got, 2*launches)
	}
}

// With --fit, ranks sharing a GPU exchange through a copy and an event the peer's stream waits on;
// each rank's part is a graph of its own and CUDA lets no capture wait on another's events, so
// such a graph is refused, naming why and graphs=off.
func TestGraphLaunchRefusesSharedGPU(t *testing.T) {
	r := newRig(t, 2, 1, engine.DefaultOptions())
	needNCCL(t)
	if _, err := r.c.Communicator([]engine.DeviceID{0, 1}); err != nil {
		t.Fatal(err)
	}
	r.run(t)
	if err := r.c.BeginCapture("step"); err != nil {
		t.Fatal(err)
	}
	_, _ = r.c.Send(r.c.TransferStream(0), 1, 1<<20, 9)
	_, _ = r.c.Recv(r.c.TransferStream(1), 0, 1<<20, 9)
	g, err := r.c.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.c.LaunchGraph(g); err != nil {
		t.Fatal(err)
	}
	err = r.c.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "share a GPU (--fit)") || !strings.Contains(err.Error(), "graphs=off") {
		t.Fatalf("Run = %v; want the shared-GPU transfer refused, naming --fit and graphs=off", err)
	}
}

// A communicator the cache drops is destroyed only after the graphs whose NCCL calls use it: since
// NCCL 2.26 ncclCommDestroy waits for them (the fake refuses, which the run reports as an alert).
// A later launch of such a graph is an error naming the communicator, not a launch on a dead one.
func TestGraphDroppedWithItsCommunicator(t *testing.T) {
	opts := engine.DefaultOptions()
	opts.CommCacheSize = 1
	r := newRig(t, 2, 2, opts)
	needNCCL(t)
	ranks := []engine.DeviceID{0, 1}
	if _, err := r.c.Collective(timeline.CollAllReduce, ranks, 1<<12, "warm"); err != nil {
		t.Fatal(err)
	}
	r.run(t)
	if err := r.c.BeginCapture("step"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.Collective(timeline.CollAllReduce, ranks, 1<<12, "ar"); err != nil {
		t.Fatal(err)
	}
	g, err := r.c.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.c.LaunchGraph(g); err != nil {
		t.Fatal(err)
	}
	r.run(t)
	// A communicator over another set evicts the graph's (the cache holds one).
	if _, err := r.c.Communicator([]engine.DeviceID{0}); err != nil {
		t.Fatal(err)
	}
	r.run(t) // destroys the evicted communicator: no alert
	if err := r.c.LaunchGraph(g); err != nil {
		t.Fatal(err)
	}
	err = r.c.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "communicator") {
		t.Fatalf("Run = %v; want the launch of a graph over a destroyed communicator refused, naming it", err)
	}
}

// An op's buffers are allocated before its start event is recorded: an allocation is slow (a 1 GiB
// pinned buffer takes hundreds of milliseconds), and counted inside the op it made the first
// 1 GiB host-to-device copy on an H200 measure 13 GB/s where the link moves 55. The fake driver
// makes each allocation take 100 ms here; every op kind that takes buffers (copies each way, a
// send/receive pair by NCCL and by copy under --fit, collectives) must still take its own time.
func TestAllocationIsNotTheOpsTime(t *testing.T) {
	needFake(t)
	const slow = 100 * time.Millisecond
	t.Setenv("XFER_FAKE_ALLOC_NS", fmt.Sprint(slow.Nanoseconds()))
	for _, tc := range []struct {
		name        string
		ranks, gpus int
	}{{"a-GPU-per-rank", 2, 2}, {"fit-one-GPU", 2, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.gpus > 1 {
				needNCCL(t)
			}
			r := newRig(t, tc.ranks, tc.gpus, engine.DefaultOptions())
			var futs []*engine.Future
			for _, dir := range []timeline.CopyDir{timeline.CopyH2D, timeline.CopyD2H, timeline.CopyD2D} {
				f, err := r.c.Copy(r.c.ComputeStream(0), dir, 1<<20, -1, false)
				if err != nil {
					t.Fatal(err)
				}
				futs = append(futs, f)
			}
			sf, _ := r.c.Send(r.c.TransferStream(0), 1, 2<<20, 7)
			rf, _ := r.c.Recv(r.c.TransferStream(1), 0, 2<<20, 7)
			futs = append(futs, sf, rf)
			for _, op := range []timeline.CollOp{timeline.CollAllReduce, timeline.CollAllGather} {
				f, err := r.c.Collective(op, []engine.DeviceID{0, 1}, 4<<20, op.String())
				if err != nil {
					t.Fatal(err)
				}
				futs = append(futs, f...)
			}
			r.run(t)
			waitAll(t, futs...)
			// A rank's part of a send/receive pair or a collective also waits for its peer, whose
			// host thread was held by its own allocations: of each op, the rank that arrived last
			// waited for no one, so its time is the op's own.
			type opKey struct {
				kind timeline.Kind
				op   uint64
			}
			fastest := map[opKey]time.Duration{}
			for _, e := range r.store.Events() {
				if !e.Kind.IsBusy() {
					continue
				}
				k, d := opKey{e.Kind, e.Op}, time.Duration(e.Dur())
				switch e.Kind {
				case timeline.KindMemcpy:
					k.op = uint64(len(fastest)) // each copy on its own
				case timeline.KindRecv:
					k.kind = timeline.KindSend // a pair is one op
				}
				if old, ok := fastest[k]; !ok || d < old {
					fastest[k] = d
				}
			}
			for k, d := range fastest {
				if d >= slow {
					t.Errorf("%v op %d took %v on its fastest rank: an allocation (%v each) was counted in it", k.kind, k.op, d, slow)
				}
			}
			if len(fastest) < 6 {
				t.Errorf("%d busy ops; want the copies, the pair and the collectives", len(fastest))
			}
		})
	}
}
