package sim_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

func run(t *testing.T, c *engine.Client) {
	t.Helper()
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// h100x8 returns a simulated 8-GPU host and the store it emits to, for tests that wrap the backend.
func h100x8(t *testing.T) (*sim.Sim, *timeline.Store) {
	t.Helper()
	tp, err := sim.TopologyByName("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	store := timeline.NewStore(nil)
	s, err := sim.New(sim.Config{Topology: tp, Seed: 1, Model: sim.DefaultModel()}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	return s, store
}

func count(events []timeline.Event, k timeline.Kind) int {
	n := 0
	for i := range events {
		if events[i].Kind == k {
			n++
		}
	}
	return n
}

// A send's future resolves only after the send completed, even when the receiver posts late.
func TestSendFutureAfterCompletion(t *testing.T) {
	c, store := newClient(t, "h100x8", engine.DefaultOptions())
	warm(t, c, []engine.DeviceID{0, 1})
	t0 := c.Backend().Now()
	s0, s1 := c.TransferStream(0), c.TransferStream(1)
	if err := c.Kernel(c.ComputeStream(1), 2_000_000, "late"); err != nil {
		t.Fatal(err)
	}
	ev, _ := c.Record(c.ComputeStream(1))
	_ = c.WaitEvent(s1, ev)
	sf, err := c.Send(s0, 1, 64<<20, 42)
	if err != nil {
		t.Fatal(err)
	}
	rf, _ := c.Recv(s1, 0, 64<<20, 42)
	run(t, c)
	send := lastOf(store.Events(), timeline.KindSend)
	if !sf.Done() || !rf.Done() || sf.Err() != nil {
		t.Fatalf("futures: send done=%v err=%v, recv done=%v", sf.Done(), sf.Err(), rf.Done())
	}
	if sf.At() < send.End {
		t.Errorf("send future resolved at %d before the send completed at %d", sf.At(), send.End)
	}
	if send.Start-t0 < 2_000_000 {
		t.Errorf("send started at %d, before the receiver posted (after 2 ms)", send.Start)
	}
	if pw := lastOf(store.Events(), timeline.KindPeerWait); pw.Device != 0 || pw.Dur() < 1_900_000 {
		t.Errorf("peer wait of the sender = %+v; want ~2 ms on device 0", pw)
	}
}

// Posting send-then-recv on both ranks deadlocks without a group (the watchdog reports it) and
// completes inside one.
func TestGroupsPreventOrderDeadlock(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		opts := engine.DefaultOptions()
		opts.WatchdogNs = 5_000_000
		c, store := newClient(t, "h100x8", opts)
		s0, s1 := c.TransferStream(0), c.TransferStream(1)
		if grouped {
			c.GroupStart()
		}
		_, _ = c.Send(s0, 1, 1<<20, 1)
		_, _ = c.Recv(s0, 1, 1<<20, 2)
		_, _ = c.Send(s1, 0, 1<<20, 2)
		_, _ = c.Recv(s1, 0, 1<<20, 1)
		if grouped {
			c.GroupEnd()
		}
		err := c.Run(context.Background())
		var wd *engine.WatchdogError
		if grouped {
			if err != nil {
				t.Fatalf("grouped exchange: %v", err)
			}
			if n := count(store.Events(), timeline.KindGroupLaunch); n != 2 {
				t.Errorf("grouped exchange: %d group launches; want 2", n)
			}
		} else if !errors.As(err, &wd) {
			t.Fatalf("ungrouped exchange: err = %v; want a watchdog error", err)
		} else if count(store.Events(), timeline.KindAlert) != 1 {
			t.Errorf("ungrouped exchange: want one alert")
		}
	}
}

// The watchdog names the op, both ranks and the bytes when a peer never posts its half.
func TestWatchdogNamesOpRanksBytes(t *testing.T) {
	opts := engine.DefaultOptions()
	opts.WatchdogNs = 3_000_000
	c, store := newClient(t, "h100x8", opts)
	f, _ := c.Send(c.TransferStream(2), 5, 12345, 7)
	err := c.Run(context.Background())
	var wd *engine.WatchdogError
	if !errors.As(err, &wd) || !errors.Is(err, engine.ErrPeerTimeout) {
		t.Fatalf("err = %v; want *WatchdogError", err)
	}
	if wd.Rank != 2 || wd.Peer != 5 || wd.Bytes != 12345 || wd.OpID != 7 || wd.Op != "send" {
		t.Errorf("watchdog error %+v; want send op 7 from 2 to 5 of 12345 bytes", wd)
	}
	if !f.Done() || !errors.Is(f.Err(), engine.ErrPeerTimeout) {
		t.Errorf("future: done=%v err=%v; want failed with ErrPeerTimeout", f.Done(), f.Err())
	}
	a := lastOf(store.Events(), timeline.KindAlert)
	if a.Device != 2 || a.Peer != 5 || a.Bytes != 12345 || a.Status != timeline.StatusTimeout {
		t.Errorf("alert event %+v", a)
	}
}

func TestGuards(t *testing.T) {
	c, _ := newClient(t, "h100x8", engine.DefaultOptions())
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"empty set", func() error { _, err := c.Collective(timeline.CollAllReduce, nil, 8, ""); return err }, engine.ErrEmptyDevices},
		{"duplicate", func() error {
			_, err := c.Collective(timeline.CollAllReduce, []engine.DeviceID{1, 2, 1}, 8, "")
			return err
		}, engine.ErrDuplicateDevice},
		{"unknown peer", func() error { _, err := c.Send(c.TransferStream(0), 99, 8, 1); return err }, engine.ErrUnknownPeer},
		{"size mismatch", func() error {
			_, err := c.RaggedAllToAll([]engine.DeviceID{0, 1}, [][]int64{{1, 2}}, "")
			return err
		}, engine.ErrSizeMismatch},
		{"send buffers mismatch", func() error {
			_, err := c.SendBuffers(1, []*engine.Buffer{c.NewBuffer(0, 8, 0)}, nil)
			return err
		}, engine.ErrSizeMismatch},
		{"prepare to self", func() error { _, err := c.Prepare([]engine.Pair{{Src: 3, Dst: 3, Bytes: 1}}, ""); return err }, engine.ErrDuplicateDevice},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var ge *engine.GuardError
			if !errors.Is(err, tc.want) || !errors.As(err, &ge) {
				t.Errorf("err = %v; want a GuardError wrapping %v", err, tc.want)
			}
		})
	}
}

// A mismatched send/recv pair fails both futures with a size-mismatch alert instead of hanging.
func TestMismatchedHalves(t *testing.T) {
	c, store := newClient(t, "h100x8", engine.DefaultOptions())
	warm(t, c, []engine.DeviceID{0, 1})
	sf, _ := c.Send(c.TransferStream(0), 1, 100, 9)
	rf, _ := c.Recv(c.TransferStream(1), 0, 200, 9)
	_ = c.Run(context.Background())
	if !errors.Is(sf.Err(), engine.ErrSizeMismatch) || !errors.Is(rf.Err(), engine.ErrSizeMismatch) {
		t.Errorf("send err %v, recv err %v; want size mismatch", sf.Err(), rf.Err())
	}
	if count(store.Events(), timeline.KindAlert) != 1 {
		t.Errorf("want one alert")
	}
}

// A high-priority NCCL kernel gets SMs at the next wave of a running compute kernel; a normal one
// waits for the compute kernel queued before it.
func TestStreamPriorityGetsTheDevice(t *testing.T) {
	start := func(prio engine.Priority) int64 {
		opts := engine.DefaultOptions()
		opts.D2DPriority = prio
		c, store := newClient(t, "h100x8", opts)
		warm(t, c, []engine.DeviceID{0, 1})
		t0 := c.Backend().Now()
		comp := c.ComputeStream(0)
		_ = c.Kernel(comp, 1_000_000, "a")
		ev, _ := c.Record(comp)
		_ = c.Kernel(comp, 10_000_000, "b")
		x0, x1 := c.TransferStream(0), c.TransferStream(1)
		_ = c.WaitEvent(x0, ev)
		_, _ = c.Send(x0, 1, 1<<20, 5)
		_, _ = c.Recv(x1, 0, 1<<20, 5)
		run(t, c)
		return lastOf(store.Events(), timeline.KindSend).Start - t0
	}
	high, normal := start(engine.PriorityHigh), start(engine.PriorityNormal)
	if high > 1_200_000 {
		t.Errorf("high-priority send started at %d ns; want within a wave of the 1 ms producer", high)
	}
	if normal < 11_000_000 {
		t.Errorf("normal-priority send started at %d ns; want after the 10 ms kernel queued before it", normal)
	}
}

// Early enqueue makes the stream wait on the device (event_wait); without it the host thread
// waits and every later launch of that host is delayed.
func TestEarlyEnqueue(t *testing.T) {
	for _, early := range []bool{true, false} {
		opts := engine.DefaultOptions()
		opts.EarlyEnqueue = early
		c, store := newClient(t, "h100x8", opts)
		warm(t, c, []engine.DeviceID{0, 1})
		t0 := c.Backend().Now()
		comp := c.ComputeStream(0)
		_ = c.Kernel(comp, 5_000_000, "producer")
		ev, _ := c.Record(comp)
		buf := c.NewBuffer(0, 1<<20, ev)
		_, _ = c.ReceiveBuffers(77, 1, []int64{1 << 20}, []engine.DeviceID{0})
		if _, err := c.SendBuffers(77, []*engine.Buffer{buf}, []engine.DeviceID{1}); err != nil {
			t.Fatal(err)
		}
		_ = c.Kernel(comp, 1_000_000, "next")
		run(t, c)
		var next timeline.Event
		for _, e := range store.Events() {
			if e.Kind == timeline.KindKernel && store.Strings.Lookup(e.Label) == "next" {
				next = e
			}
		}
		waits := count(store.Events(), timeline.KindEventWait)
		if early {
			if waits == 0 {
				t.Errorf("early enqueue: no event wait on the transfer stream")
			}
			if next.Queued-t0 > 1_000_000 {
				t.Errorf("early enqueue: next kernel queued at %d; the host should not wait for the producer", next.Queued)
			}
		} else if next.Queued-t0 < 5_000_000 {
			t.Errorf("host wait: next kernel queued at %d; want after the producer (5 ms)", next.Queued)
		}
	}
}

// Barriers emit each rank's arrival and release; the late rank is the last to arrive.
func TestBarrierArrivals(t *testing.T) {
	c, store := newClient(t, "h100x8", engine.DefaultOptions())
	devs := []engine.DeviceID{0, 1, 2, 3}
	for _, d := range devs {
		dur := int64(1_000_000)
		if d == 2 {
			dur = 4_000_000
		}
		_ = c.Kernel(c.ComputeStream(d), dur, "work")
	}
	if _, err := c.Barrier(devs, "b"); err != nil {
		t.Fatal(err)
	}
	run(t, c)
	var bars []timeline.Event
	for _, e := range store.Events() {
		if e.Kind == timeline.KindBarrier {
			bars = append(bars, e)
		}
	}
	if len(bars) != 4 {
		t.Fatalf("%d barrier events; want 4", len(bars))
	}
	for _, b := range bars {
		if b.End != bars[0].End {
			t.Errorf("ranks released at different times: %d vs %d", b.End, bars[0].End)
		}
		if b.Device == 2 && b.Dur() > 10_000 {
			t.Errorf("the straggler waited %d ns; want ~0", b.Dur())
		}
		if b.Device != 2 && b.Dur() < 2_900_000 {
			t.Errorf("rank %d waited %d ns; want ~3 ms", b.Device, b.Dur())
		}
	}
}

// Ragged all-to-all moves each rank's own byte counts; a rank sending more finishes later.
func TestRaggedAllToAll(t *testing.T) {
	c, store := newClient(t, "h100x8", engine.DefaultOptions())
	devs := []engine.DeviceID{0, 1, 2}
	sizes := [][]int64{{0, 300 << 20, 300 << 20}, {1 << 20, 0, 1 << 20}, {1 << 20, 1 << 20, 0}}
	futs, err := c.RaggedAllToAll(devs, sizes, "moe")
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	for i, f := range futs {
		if !f.Done() || f.Err() != nil {
			t.Errorf("rank %d future done=%v err=%v", i, f.Done(), f.Err())
		}
	}
	got := map[int32]int64{}
	for _, e := range store.Events() {
		if e.Kind == timeline.KindCollective {
			got[e.Device] = e.Bytes
		}
	}
	if got[0] != 600<<20 || got[1] != 2<<20 {
		t.Errorf("per-rank bytes %v; want rank 0: %d, rank 1: %d", got, 600<<20, 2<<20)
	}
}

// The communicator cache reuses by device set, evicts least recently used past its capacity, and
// without a cache every use creates a communicator.
func TestCommCacheInEngine(t *testing.T) {
	opts := engine.DefaultOptions()
	opts.CommCacheSize = 2
	c, store := newClient(t, "h100x8", opts)
	sets := [][]engine.DeviceID{{0, 1}, {1, 0}, {2, 3}, {4, 5}, {0, 1}}
	for _, s := range sets {
		if _, err := c.Collective(timeline.CollAllReduce, s, 1<<20, ""); err != nil {
			t.Fatal(err)
		}
		run(t, c)
	}
	st := c.Stats().CommCache
	// {0,1} miss, {1,0} hit (same set), {2,3} miss, {4,5} miss evicts {0,1}, {0,1} miss evicts {2,3}.
	if st.Hits != 1 || st.Misses != 4 || st.Evictions != 2 {
		t.Errorf("cache stats %+v; want 1 hit, 4 misses, 2 evictions", st)
	}
	var first, later int64
	for _, e := range store.Events() {
		if e.Kind == timeline.KindCommInit {
			if first == 0 {
				first = e.Dur()
			} else {
				later = e.Dur()
			}
		}
	}
	if first != 920_000_000 || later != 20_000_000 {
		t.Errorf("comm init costs first %d later %d; want 0.92 s then 20 ms", first, later)
	}
}

// The receive pool serves receives without allocating; released buffers come back.
func TestReceivePool(t *testing.T) {
	opts := engine.DefaultOptions()
	opts.RecvPoolSlots = 2
	c, _ := newClient(t, "h100x8", opts)
	futs, err := c.ReceiveBuffers(5, 1, []int64{1 << 20, 1 << 20, 1 << 20}, []engine.DeviceID{0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	bufs := []*engine.Buffer{c.NewBuffer(0, 1<<20, 0), c.NewBuffer(0, 1<<20, 0), c.NewBuffer(0, 1<<20, 0)}
	if _, err := c.SendBuffers(5, bufs, []engine.DeviceID{1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	run(t, c)
	st := c.Stats().RecvPool
	if st.Hits != 2 || st.Misses != 1 {
		t.Errorf("pool %+v; want 2 hits and 1 miss", st)
	}
	for _, f := range futs {
		if f.Buffer() == nil || !f.Done() {
			t.Fatalf("receive future without buffer or unresolved")
		}
		c.ReleaseBuffer(f.Buffer())
	}
	if st := c.Stats().RecvPool; st.InUse != 0 {
		t.Errorf("after release %d buffers in use", st.InUse)
	}
}

// Prepared transfers execute many times with fresh ids; a second Execute before the first completed
// is refused.
func TestPreparedTransfer(t *testing.T) {
	c, store := newClient(t, "h100x8x2", engine.DefaultOptions())
	p, err := c.Prepare([]engine.Pair{{Src: 0, Dst: 8, Bytes: 8 << 20}, {Src: 8, Dst: 0, Bytes: 8 << 20}}, "x")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := p.Execute(0); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := p.Execute(0); !errors.Is(err, engine.ErrInFlight) {
				t.Errorf("second Execute before Run: %v; want ErrInFlight", err)
			}
		}
		run(t, c)
		for _, f := range append(p.Sends(), p.Recvs()...) {
			if !f.Done() || f.Err() != nil {
				t.Fatalf("execution %d: future done=%v err=%v", i, f.Done(), f.Err())
			}
		}
	}
	if n := count(store.Events(), timeline.KindSend); n != 6 {
		t.Errorf("%d sends; want 6", n)
	}
	if st := c.Stats().CommCache; st.Misses != 1 {
		t.Errorf("comm cache misses %d; want 1 (planning happens once)", st.Misses)
	}
}

// Link bandwidth is shared: two H2D copies on one GPU's PCIe take twice as long as one.
func TestLinkSharing(t *testing.T) {
	dur := func(n int) int64 {
		c, store := newClient(t, "h100x8", engine.DefaultOptions())
		for i := range n {
			s, _ := c.NewStream(0, engine.PriorityNormal)
			_ = i
			_, _ = c.Copy(s, timeline.CopyH2D, 256<<20, -1, false)
		}
		run(t, c)
		return lastOf(store.Events(), timeline.KindMemcpy).Dur()
	}
	one, two := dur(1), dur(2)
	if r := float64(two) / float64(one); r < 1.9 || r > 2.1 {
		t.Errorf("two concurrent copies took %.2f× one; want ~2×", r)
	}
}

// The batching window launches a group once it holds BatchOps ops, or when the window expires.
func TestBatchingWindow(t *testing.T) {
	opts := engine.DefaultOptions()
	opts.BatchOps = 4
	opts.BatchWindowNs = 100_000
	c, store := newClient(t, "h100x8", opts)
	for i := range 6 {
		_, _ = c.Batch(engine.OpSend, c.TransferStream(0), 1, 1<<10, uint64(100+i))
		_, _ = c.Batch(engine.OpRecv, c.TransferStream(1), 0, 1<<10, uint64(100+i))
	}
	run(t, c)
	var sizes []uint32
	for _, e := range store.Events() {
		if e.Kind == timeline.KindGroupLaunch && e.Device == 0 {
			sizes = append(sizes, e.Aux)
		}
	}
	if len(sizes) != 2 || sizes[0]+sizes[1] != 6 {
		t.Errorf("group sizes on device 0: %v; want a full group of 4 and the rest by the window", sizes)
	}
}

// Event slots are recycled in an endless run; waiting on an event whose slot was reused (recorded
// long ago) returns at once instead of hanging.
func TestEventRecycling(t *testing.T) {
	c, _ := newClient(t, "h100x1", engine.DefaultOptions())
	s := c.ComputeStream(0)
	first, _ := c.Record(s)
	run(t, c)
	for range 70_000 {
		_, _ = c.Record(s)
	}
	run(t, c)
	_ = c.WaitEvent(s, first)
	c.HostWait(0, first)
	_ = c.Kernel(s, 1000, "after")
	run(t, c) // would be a deadlock if the old id were taken for a new, unrecorded event
}

// faultyBackend is the sim with what a real NCCL backend adds: communicators the client releases,
// and asynchronous communicator errors reported after a run (as ncclCommGetAsyncError does).
type faultyBackend struct {
	engine.Backend
	released []uint32
	faults   []engine.CommFault
}

func (f *faultyBackend) ReleaseComm(id uint32) { f.released = append(f.released, id) }

func (f *faultyBackend) TakeCommFaults() []engine.CommFault {
	out := f.faults
	f.faults = nil
	return out
}

// A communicator that reports an asynchronous error is evicted with an alert and released; the
// next use of its devices creates a fresh one. LRU evictions are released too.
func TestCommFaultEvictsAndReleases(t *testing.T) {
	s, store := h100x8(t)
	fb := &faultyBackend{Backend: s}
	opts := engine.DefaultOptions()
	opts.CommCacheSize = 2
	c := engine.NewClient(fb, store, opts)
	devs := []engine.DeviceID{0, 1}
	first, err := c.Communicator(devs)
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	fb.faults = []engine.CommFault{{Comm: first.ID, Err: errors.New("NCCL async: remote process exited or there was a network error (code 6)")}}
	run(t, c)
	if st := c.Stats().CommCache; st.Faults != 1 || st.Entries != 0 {
		t.Fatalf("after the fault: cache %+v; want 1 fault and nothing cached", st)
	}
	var evict, alert bool
	for _, e := range store.Events() {
		evict = evict || (e.Kind == timeline.KindCommEvict && e.Comm == first.ID && e.Status == timeline.StatusFaulted)
		alert = alert || (e.Kind == timeline.KindAlert && e.Comm == first.ID &&
			strings.Contains(store.Strings.Lookup(e.Label), "evicted: NCCL async: remote process exited"))
	}
	if !evict || !alert || !slices.Equal(fb.released, []uint32{first.ID}) {
		t.Fatalf("faulted eviction event %v, alert %v, released %v; want all, releasing %d", evict, alert, fb.released, first.ID)
	}
	second, err := c.Communicator(devs)
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	if second.ID == first.ID || count(store.Events(), timeline.KindCommInit) != 4 {
		t.Fatalf("after the fault: communicator %d (was %d), %d inits; want a fresh one, created on both ranks", second.ID, first.ID, count(store.Events(), timeline.KindCommInit))
	}
	// A fault for a communicator no longer cached changes nothing.
	fb.faults = []engine.CommFault{{Comm: first.ID, Err: errors.New("late")}}
	run(t, c)
	// Two more device sets push {0,1} out by LRU: it is released as well.
	for _, d := range [][]engine.DeviceID{{2, 3}, {4, 5}} {
		if _, err := c.Communicator(d); err != nil {
			t.Fatal(err)
		}
	}
	if st := c.Stats().CommCache; st.Faults != 1 || !slices.Equal(fb.released, []uint32{first.ID, second.ID}) {
		t.Errorf("cache %+v, released %v; want one fault and %d then %d released", st, fb.released, first.ID, second.ID)
	}
}

// submitLog is the sim, keeping the ops submitted to it.
type submitLog struct {
	engine.Backend
	ops []engine.StreamOp
}

func (l *submitLog) Submit(rank engine.DeviceID, cmd engine.Command) {
	if cmd.Kind == engine.CmdLaunch {
		l.ops = append(l.ops, cmd.Op)
	}
	l.Backend.Submit(rank, cmd)
}

// Each rank of a ragged all-to-all is told what it sends (its row of the size matrix) and what it
// receives (its column): NCCL needs every receive sized as its peer's send.
func TestRaggedAllToAllRowsAndColumns(t *testing.T) {
	s, store := h100x8(t)
	l := &submitLog{Backend: s}
	c := engine.NewClient(l, store, engine.DefaultOptions())
	sizes := [][]int64{{0, 1, 2}, {10, 0, 12}, {20, 21, 0}}
	if _, err := c.RaggedAllToAll([]engine.DeviceID{0, 1, 2}, sizes, "moe"); err != nil {
		t.Fatal(err)
	}
	run(t, c)
	want := map[engine.DeviceID][2][]int64{0: {{0, 1, 2}, {0, 10, 20}}, 1: {{10, 0, 12}, {1, 0, 21}}, 2: {{20, 21, 0}, {2, 12, 0}}}
	for _, op := range l.ops {
		if op.Kind != engine.OpCollective {
			continue
		}
		w := want[op.Device]
		if !slices.Equal(op.Sizes, w[0]) || !slices.Equal(op.RecvSizes, w[1]) {
			t.Errorf("rank %d: sends %v receives %v, want %v and %v", op.Device, op.Sizes, op.RecvSizes, w[0], w[1])
		}
		delete(want, op.Device)
	}
	if len(want) > 0 {
		t.Errorf("no collective op for ranks %v", want)
	}
}
