//go:build cuda

package cuda

/*
#include <cuda.h>
#include <stdint.h>
static CUresult xfer_host_alloc2(void** p, size_t n) { return cuMemHostAlloc(p, n, 0); }
static CUresult xfer_host_free2(void* p) { return cuMemFreeHost(p); }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/nccl"
	"github.com/xfertop/xfertop/timeline"
)

func sizeClass(n int64) int64 {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len64(uint64(n-1))
}

// scratch returns the k-th device buffer of at least n bytes on g (allocated once, reused).
func (g *gpu) scratch(n int64, k int) (cu.DevicePtr, error) {
	c := sizeClass(n)
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.dev[c]) <= k {
		p, err := cu.MemAlloc(c)
		if err != nil {
			return 0, fmt.Errorf("device buffer of %d bytes: %w", c, err)
		}
		g.dev[c] = append(g.dev[c], p)
	}
	return g.dev[c][k], nil
}

// host returns a pinned host buffer of at least n bytes on g.
func (g *gpu) host(n int64) (unsafe.Pointer, error) {
	c := sizeClass(n)
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := g.pinned[c]; ok {
		return p, nil
	}
	var p unsafe.Pointer
	if r := C.xfer_host_alloc2(&p, C.size_t(c)); r != 0 {
		return nil, fmt.Errorf("pinned host buffer of %d bytes: CUDA error %d", c, int(r))
	}
	g.pinned[c] = p
	return p, nil
}

// PinnedHost allocates n bytes of page-locked host memory in the current context (for baselines that
// must copy exactly as the engine does).
func PinnedHost(n int64) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	if r := C.xfer_host_alloc2(&p, C.size_t(n)); r != 0 {
		return nil, fmt.Errorf("pinned host buffer of %d bytes: CUDA error %d", n, int(r))
	}
	return p, nil
}

// FreePinned frees memory from PinnedHost.
func FreePinned(p unsafe.Pointer) { C.xfer_host_free2(p) }

// host runs one rank's commands in order on an OS thread with the rank's GPU context current.
func (b *Backend) host(ctx context.Context, rank engine.DeviceID, cmds []engine.Command) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g := b.fit.GPU(rank)
	if err := cu.SetCurrentContext(b.gpus[g].ctx); err != nil {
		return fmt.Errorf("cuda: rank %d: %w", rank, err)
	}
	var batch []engine.StreamOp
	for _, cmd := range cmds {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %v", engine.ErrCanceled, ctx.Err())
		}
		var err error
		switch cmd.Kind {
		case engine.CmdLaunch:
			err = b.launch(ctx, rank, g, cmd.Op)
		case engine.CmdHostWait:
			err = b.hostWait(ctx, cmd.Event)
		case engine.CmdCommInit:
			err = b.commInit(rank, cmd)
		case engine.CmdSleep:
			err = sleep(ctx, time.Duration(cmd.Duration))
		case engine.CmdBatch:
			batch = append(batch, cmd.Op)
		case engine.CmdFlush:
			if len(batch) > 0 {
				err = b.launch(ctx, rank, g, engine.StreamOp{Kind: engine.OpGroup, Stream: batch[0].Stream, Device: rank, Peer: -1, Parts: batch})
				batch = nil
			}
		}
		if err != nil {
			return err
		}
	}
	if len(batch) > 0 {
		return b.launch(ctx, rank, g, engine.StreamOp{Kind: engine.OpGroup, Stream: batch[0].Stream, Device: rank, Peer: -1, Parts: batch})
	}
	return nil
}

// sleep keeps the host thread busy for d, or until the run is cancelled or ends early.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", engine.ErrCanceled, ctx.Err())
	}
}

// event returns id's state, or nil for an event recorded so long ago that its id was retired.
func (b *Backend) event(id engine.EventID) *eventState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.events.Get(uint32(id)); p != nil {
		return *p
	}
	return nil
}

// hostWait blocks until the event has been recorded and the work before it has finished.
func (b *Backend) hostWait(ctx context.Context, id engine.EventID) error {
	ev := b.event(id)
	if ev == nil {
		return nil
	}
	if err := b.awaitRecord(ctx, ev, id); err != nil {
		return err
	}
	return ev.ev.Synchronize()
}

// awaitRecord waits, within the watchdog's time, for another host thread to record the event.
func (b *Backend) awaitRecord(ctx context.Context, ev *eventState, id engine.EventID) error {
	select {
	case <-ev.recorded:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", engine.ErrCanceled, ctx.Err())
	case <-time.After(b.watchdog):
		return &engine.DeadlockError{Pending: 1, First: fmt.Sprintf("a wait for event %d, which nothing recorded within %v", id, b.watchdog)}
	}
}

// launch enqueues one op on its stream between a start and an end event, and hands it to the poller.
func (b *Backend) launch(ctx context.Context, rank engine.DeviceID, g int, op engine.StreamOp) error {
	b.mu.Lock()
	st := b.streams[op.Stream]
	b.mu.Unlock()
	queued := time.Since(b.wall0)
	switch op.Kind {
	case engine.OpRecord:
		ev := b.event(op.Event)
		if ev == nil {
			return nil // retired: recorded long ago, and a second record does not count
		}
		var err error
		recorded := false
		ev.once.Do(func() {
			var ce cu.Event
			if ce, err = b.gpus[g].marks.take(); err != nil {
				return
			}
			if err = ce.Record(st.s); err != nil {
				b.gpus[g].marks.give(ce)
				return
			}
			ev.ev, ev.gpu, recorded = ce, g, true
			close(ev.recorded)
		})
		if err != nil || !recorded {
			return err // a failed record, or a second one (the first stands, as in the simulator)
		}
		b.mu.Lock()
		b.events.Done(uint32(op.Event))
		b.mu.Unlock()
		b.instant <- timeline.Event{Kind: timeline.KindEventRecord, Start: queued.Nanoseconds(), End: queued.Nanoseconds(), Queued: queued.Nanoseconds(),
			Device: int32(rank), Peer: -1, Stream: uint32(op.Stream), Aux: uint32(op.Event)}
		return nil
	case engine.OpWaitEvent:
		ev := b.event(op.Event)
		if ev == nil {
			return nil // retired: recorded long ago
		}
		// A wait on an event not yet recorded would be a no-op in CUDA: wait for the record first.
		if err := b.awaitRecord(ctx, ev, op.Event); err != nil {
			return err
		}
		return st.s.Wait(ev.ev, 0)
	}
	gp := b.gpus[g]
	start, err := gp.timing.take()
	if err != nil {
		return err
	}
	end, err := gp.timing.take()
	if err != nil {
		return err
	}
	if err := start.Record(st.s); err != nil {
		return err
	}
	if op.Kind == engine.OpBarrier {
		if err := b.barrier(ctx, st, op); err != nil {
			return fmt.Errorf("cuda: rank %d: barrier: %w", rank, err)
		}
		if err := end.Record(st.s); err != nil {
			return err
		}
		b.done <- inflight{op: op, rank: rank, gpu: g, start: start, end: end, queued: queued, posted: time.Now()}
		return nil
	}
	gid := uint32(0)
	if op.Kind == engine.OpGroup {
		gid = b.nextGroup.Add(1)
	}
	if err := b.issue(ctx, rank, g, st, op); err != nil {
		return fmt.Errorf("cuda: rank %d: %s: %w", rank, engine.OpName(&op), err)
	}
	if err := end.Record(st.s); err != nil {
		return err
	}
	b.done <- inflight{op: op, rank: rank, gpu: g, start: start, end: end, queued: queued, group: gid, posted: time.Now()}
	return nil
}

// issue puts the op's work on the stream.
func (b *Backend) issue(ctx context.Context, rank engine.DeviceID, g int, st streamState, op engine.StreamOp) error {
	gp := b.gpus[g]
	switch op.Kind {
	case engine.OpKernel:
		ns := uint64(max(op.Duration, 0))
		args := []unsafe.Pointer{unsafe.Pointer(&ns)}
		return gp.spin.Launch(gp.sms*2, 1, 1, 128, 1, 1, 0, st.s, args)
	case engine.OpCopy:
		return b.copy(rank, g, st, op)
	case engine.OpSend, engine.OpRecv:
		return b.p2p(ctx, rank, g, st, op)
	case engine.OpGroup:
		return b.group(ctx, rank, g, st, op)
	case engine.OpCollective:
		return b.collective(ctx, rank, g, st, op)
	}
	return nil
}

// group launches a group's parts as one NCCL group. Sends go first: within a group order does not
// matter to NCCL, and a receive carried by a copy (--fit) waits for its send, which may be in a
// peer's group waiting for this one.
func (b *Backend) group(ctx context.Context, rank engine.DeviceID, g int, st streamState, op engine.StreamOp) error {
	var n *nccl.NCCL // nil when every part is a copy (--fit on shared GPUs)
	if slices.ContainsFunc(op.Parts, func(p engine.StreamOp) bool { return b.usesNCCL(rank, p) }) {
		var err error
		if n, err = b.ncclLib(); err != nil {
			return err
		}
		if err := n.GroupStart(); err != nil {
			return err
		}
	}
	var err error
	for _, sends := range []bool{true, false} {
		for _, part := range op.Parts {
			if (part.Kind == engine.OpSend) != sends || err != nil {
				continue
			}
			if part.Kind == engine.OpCollective {
				err = b.collective(ctx, rank, g, st, part)
			} else {
				err = b.p2p(ctx, rank, g, st, part)
			}
		}
	}
	if n == nil {
		return err
	}
	if gerr := n.GroupEnd(); err == nil {
		err = gerr
	}
	return err
}

// barrier makes the stream wait, on the device, until every rank's stream has reached the barrier:
// each rank records an event where it arrives; once all have, each stream waits for all of them.
func (b *Backend) barrier(ctx context.Context, st streamState, op engine.StreamOp) error {
	ev, err := cu.MakeEvent(cu.DisableTiming)
	if err != nil {
		return err
	}
	if err := ev.Record(st.s); err != nil {
		return err
	}
	b.mu.Lock()
	br := b.barriers[op.ID]
	if br == nil {
		br = &barrier{n: len(op.Ranks), arrived: make(chan struct{})}
		b.barriers[op.ID] = br
	}
	b.mu.Unlock()
	br.mu.Lock()
	br.events = append(br.events, ev)
	if len(br.events) == br.n {
		close(br.arrived)
		b.mu.Lock()
		delete(b.barriers, op.ID)
		b.mu.Unlock()
	}
	br.mu.Unlock()
	select {
	case <-br.arrived:
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", engine.ErrCanceled, ctx.Err())
	case <-time.After(b.watchdog):
		return &engine.WatchdogError{Op: "barrier", OpID: op.ID, Rank: op.Device, Peer: -1, WaitedNs: b.watchdog.Nanoseconds()}
	}
	for _, e := range br.events {
		if err := st.s.Wait(e, 0); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) copy(rank engine.DeviceID, g int, st streamState, op engine.StreamOp) error {
	gp := b.gpus[g]
	dst, err := gp.scratch(op.Bytes, 0)
	if err != nil {
		return err
	}
	switch op.Dir {
	case timeline.CopyH2D, timeline.CopyD2H:
		var h unsafe.Pointer
		if op.Pageable {
			buf := make([]byte, op.Bytes) // pageable: Go memory, staged by the driver
			h = unsafe.Pointer(&buf[0])
			defer runtime.KeepAlive(buf)
		} else if h, err = gp.host(op.Bytes); err != nil {
			return err
		}
		if op.Dir == timeline.CopyH2D {
			return cu.MemcpyHtoDAsync(dst, h, op.Bytes, st.s)
		}
		return cu.MemcpyDtoHAsync(h, dst, op.Bytes, st.s)
	case timeline.CopyP2P:
		pg := b.fit.GPU(op.Peer)
		if pg != g { // a real peer copy; with --fit on one GPU it is a device-to-device copy
			pdst, err := b.gpus[pg].scratch(op.Bytes, 1)
			if err != nil {
				return err
			}
			return cu.MemcpyPeerAsync(pdst, b.gpus[pg].ctx, dst, gp.ctx, op.Bytes, st.s)
		}
		fallthrough
	default:
		src, err := gp.scratch(op.Bytes, 1)
		if err != nil {
			return err
		}
		return cu.MemcpyDtoDAsync(dst, src, op.Bytes, st.s)
	}
}

func (b *Backend) ncclLib() (*nccl.NCCL, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.nccl == nil {
		n, err := nccl.LoadNCCL(b.cfg.NCCLPath)
		if err != nil {
			return nil, err
		}
		b.nccl = n
	}
	return b.nccl, nil
}

// comm returns the NCCL communicator that carries rank's part of communicator id, and its NCCL
// rank (the index of rank's GPU among the communicator's GPUs).
func (b *Backend) comm(id uint32, rank engine.DeviceID) (nccl.Comm, int, error) {
	b.mu.Lock()
	cs := b.comms[id]
	var err error
	switch {
	case cs == nil:
		err = fmt.Errorf("communicator %d was not created", id)
	case cs.err != nil:
		err = cs.err
	case !cs.ready:
		err = fmt.Errorf("communicator %d is not ready", id)
	}
	b.mu.Unlock()
	if err != nil {
		return nccl.Comm{}, 0, err
	}
	i := cs.ncclRank(b.fit, rank)
	if i < 0 {
		return nccl.Comm{}, 0, fmt.Errorf("rank %d is not in communicator %d", rank, id)
	}
	return cs.comms[i], i, nil
}

// ncclRank returns the NCCL rank carrying rank's part, or -1 when rank is not a member.
func (cs *commState) ncclRank(fit engine.Fit, rank engine.DeviceID) int {
	if !slices.Contains(cs.ranks, rank) {
		return -1
	}
	return slices.Index(cs.gpus, fit.GPU(rank))
}

// oneToOne reports whether each of the communicator's ranks has a GPU of its own: only then can
// NCCL carry its point-to-point transfers (NCCL allows one rank per GPU).
func (cs *commState) oneToOne() bool { return len(cs.gpus) == len(cs.ranks) }

// commInit creates a communicator over its ranks' GPUs (once, by the first rank to get there) and
// records how long it took. As NCCL does for several GPUs driven by one thread, the ranks are
// created with ncclGetUniqueId, then ncclCommInitRank per GPU (that GPU current) inside one group.
// With --fit, ranks sharing a GPU share one NCCL rank: NCCL allows one rank per GPU.
func (b *Backend) commInit(rank engine.DeviceID, cmd engine.Command) error {
	b.mu.Lock()
	cs := b.comms[cmd.Comm]
	if cs == nil {
		gpus := make([]int, len(cmd.Devices))
		for i, r := range cmd.Devices {
			gpus[i] = b.fit.GPU(r)
		}
		cs = &commState{ranks: cmd.Devices, gpus: distinct(gpus)}
		b.comms[cmd.Comm] = cs
	}
	b.mu.Unlock()
	begin := time.Since(b.wall0)
	cs.once.Do(func() {
		comms, err := b.createComm(cs.gpus, b.fit.GPU(rank))
		b.mu.Lock()
		cs.comms, cs.err, cs.ready = comms, err, err == nil
		b.mu.Unlock()
	})
	end := time.Since(b.wall0)
	b.instant <- timeline.Event{Kind: timeline.KindCommInit, Start: begin.Nanoseconds(), End: end.Nanoseconds(), Queued: begin.Nanoseconds(),
		Device: int32(rank), Peer: -1, Comm: cmd.Comm, Ranks: uint16(len(cmd.Devices)), Label: cmd.Label}
	b.mu.Lock()
	defer b.mu.Unlock()
	return cs.err
}

// createComm makes one NCCL rank per GPU of gpus, from the calling thread, whose context is
// restored to home's afterwards.
func (b *Backend) createComm(gpus []int, home int) ([]nccl.Comm, error) {
	n, err := b.ncclLib()
	if err != nil {
		return nil, err
	}
	defer func() { _ = cu.SetCurrentContext(b.gpus[home].ctx) }()
	id, err := n.NewUniqueID()
	if err != nil {
		return nil, err
	}
	if err := n.GroupStart(); err != nil {
		return nil, err
	}
	comms := make([]nccl.Comm, len(gpus))
	for i, g := range gpus {
		if err := cu.SetCurrentContext(b.gpus[g].ctx); err != nil {
			_ = n.GroupEnd()
			return nil, fmt.Errorf("GPU %d: %w", g, err)
		}
		if comms[i], err = n.InitRank(id, len(gpus), i); err != nil {
			_ = n.GroupEnd()
			return nil, err
		}
	}
	if err := n.GroupEnd(); err != nil {
		return nil, err
	}
	return comms, nil
}

// asyncErrors asks NCCL about each ready communicator's background work (ncclCommGetAsyncError,
// as PyTorch's watchdog does). A communicator with an error is marked failed, so no new op is
// issued on it, then aborted, so kernels waiting on a dead peer stop; it is handed to the client
// to evict (TakeCommFaults). The returned set lets the poller fail the ops in flight on it.
func (b *Backend) asyncErrors() map[uint32]error {
	type live struct {
		id uint32
		cs *commState
	}
	b.mu.Lock()
	n := b.nccl
	var check []live
	for id, cs := range b.comms {
		if cs.ready && cs.err == nil {
			check = append(check, live{id, cs})
		}
	}
	b.mu.Unlock()
	if n == nil {
		return nil
	}
	var bad map[uint32]error
	for _, l := range check {
		for _, c := range l.cs.comms {
			err := n.AsyncError(c)
			if err == nil {
				continue
			}
			ferr := fmt.Errorf("communicator %d: %w", l.id, err)
			b.mu.Lock()
			l.cs.err = ferr
			b.faults = append(b.faults, engine.CommFault{Comm: l.id, Err: ferr})
			b.mu.Unlock()
			for _, rc := range l.cs.comms {
				_ = n.Abort(rc)
			}
			if bad == nil {
				bad = map[uint32]error{}
			}
			bad[l.id] = ferr
			break
		}
	}
	return bad
}

// faultOf returns the fault of the communicator op (or, for a group, one of its parts) runs on,
// or nil when none of them is in faults.
func faultOf(op *engine.StreamOp, faults map[uint32]error) error {
	if err := faults[op.Comm]; err != nil && op.Comm != 0 {
		return err
	}
	for i := range op.Parts {
		if err := faults[op.Parts[i].Comm]; err != nil && op.Parts[i].Comm != 0 {
			return err
		}
	}
	return nil
}

func sum(xs []int64) int64 {
	var t int64
	for _, x := range xs {
		t += x
	}
	return t
}

func distinct(xs []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// p2p puts one half of a send/receive pair on the stream. NCCL carries it when the communicator has
// a GPU per rank; otherwise (--fit put ranks on one GPU) the send copies into the receiver's buffer
// (a peer copy, or a device-to-device one on a shared GPU) and the receive waits on the device for
// that copy, so each half still takes the time it does.
func (b *Backend) p2p(ctx context.Context, rank engine.DeviceID, g int, st streamState, op engine.StreamOp) error {
	if !b.usesNCCL(rank, op) {
		return b.p2pCopy(ctx, g, st, op)
	}
	buf, err := b.gpus[g].scratch(max(op.Bytes, 1), 2)
	if err != nil {
		return err
	}
	n, err := b.ncclLib()
	if err != nil {
		return err
	}
	c, _, err := b.comm(op.Comm, rank)
	if err != nil {
		return err
	}
	b.mu.Lock()
	peer := b.comms[op.Comm].ncclRank(b.fit, op.Peer) // there: b.comm found it
	b.mu.Unlock()
	if peer < 0 {
		return fmt.Errorf("peer %d is not in communicator %d", op.Peer, op.Comm)
	}
	stream := uintptr(unsafe.Pointer(st.s.C()))
	if op.Kind == engine.OpSend {
		return n.Send(uintptr(buf), op.Bytes, peer, c, stream)
	}
	return n.Recv(uintptr(buf), op.Bytes, peer, c, stream)
}

// usesNCCL reports whether rank's part of op goes through NCCL. A send or receive on a communicator
// not (yet) created does, so that it fails with comm's error rather than quietly becoming a copy.
func (b *Backend) usesNCCL(rank engine.DeviceID, op engine.StreamOp) bool {
	if op.Kind == engine.OpCollective {
		return b.fit.Distinct(op.Ranks) > 1 && b.fit.GPU(rank) == rank0GPU(b, rank, op.Ranks)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	cs := b.comms[op.Comm]
	return cs == nil || cs.oneToOne()
}

// pairKey names the halves of a transfer that meet on the device: a send and its receive (gpu -1),
// or the ranks of a collective sharing a GPU; they carry the same op id.
type pairKey struct {
	comm uint32
	id   uint64
	gpu  int
}

// pair is such a meeting point: the side that does the work records ev after it, and each of the
// waiters makes its stream wait for ev.
type pair struct {
	ev       cu.Event
	gpu      int
	waiters  int
	recorded chan struct{}
}

func (b *Backend) pairFor(k pairKey) *pair {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pairs[k]
	if p == nil {
		p = &pair{recorded: make(chan struct{})}
		b.pairs[k] = p
	}
	return p
}

// publish records, on st, the event that waiters other streams will wait for.
func (b *Backend) publish(k pairKey, g int, st streamState, waiters int) error {
	ev, err := b.gpus[g].marks.take()
	if err != nil {
		return err
	}
	if err := ev.Record(st.s); err != nil {
		b.gpus[g].marks.give(ev)
		return err
	}
	p := b.pairFor(k)
	b.mu.Lock()
	p.ev, p.gpu, p.waiters = ev, g, waiters
	b.mu.Unlock()
	close(p.recorded)
	return nil
}

// await makes st wait on the device for k's published event, once the host has seen it published
// (within the watchdog's time, as a receive with no sender would hang).
func (b *Backend) await(ctx context.Context, k pairKey, st streamState, op engine.StreamOp) error {
	p := b.pairFor(k)
	select {
	case <-p.recorded:
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", engine.ErrCanceled, ctx.Err())
	case <-time.After(b.watchdog):
		return &engine.WatchdogError{Op: engine.OpName(&op), OpID: op.ID, Rank: op.Device, Peer: op.Peer, Bytes: op.Bytes, WaitedNs: b.watchdog.Nanoseconds()}
	}
	err := st.s.Wait(p.ev, 0)
	b.mu.Lock()
	p.waiters--
	last := p.waiters == 0
	if last {
		delete(b.pairs, k)
	}
	b.mu.Unlock()
	if last {
		// Every wait has taken the record it needs; the event may be recorded again.
		b.gpus[p.gpu].marks.give(p.ev)
	}
	return err
}

func (b *Backend) p2pCopy(ctx context.Context, g int, st streamState, op engine.StreamOp) error {
	k := pairKey{op.Comm, op.ID, -1}
	if op.Kind != engine.OpSend {
		return b.await(ctx, k, st, op)
	}
	bytes := max(op.Bytes, 1)
	src, err := b.gpus[g].scratch(bytes, 2)
	if err != nil {
		return err
	}
	pg := b.fit.GPU(op.Peer)
	dst, err := b.gpus[pg].scratch(bytes, 3)
	if err != nil {
		return err
	}
	if pg == g {
		err = cu.MemcpyDtoDAsync(dst, src, op.Bytes, st.s)
	} else {
		err = cu.MemcpyPeerAsync(dst, b.gpus[pg].ctx, src, b.gpus[g].ctx, op.Bytes, st.s)
	}
	if err != nil {
		return err
	}
	return b.publish(k, g, st, 1)
}

// collective runs a collective's part on rank's GPU. With --fit, the first of the ranks sharing a
// GPU carries the GPU's part through NCCL and the others' streams wait for it on the device; a
// collective whose ranks all share one GPU moves no data (reported as a 1-rank collective).
func (b *Backend) collective(ctx context.Context, rank engine.DeviceID, g int, st streamState, op engine.StreamOp) error {
	if b.fit.Distinct(op.Ranks) <= 1 {
		return nil
	}
	k := pairKey{op.Comm, op.ID, g}
	if b.fit.GPU(rank) != rank0GPU(b, rank, op.Ranks) {
		return b.await(ctx, k, st, op)
	}
	if err := b.ncclCollective(rank, g, st, op); err != nil {
		return err
	}
	sharing := 0
	for _, r := range op.Ranks {
		if r != rank && b.fit.GPU(r) == g {
			sharing++
		}
	}
	if sharing == 0 {
		return nil
	}
	return b.publish(k, g, st, sharing)
}

func (b *Backend) ncclCollective(rank engine.DeviceID, g int, st streamState, op engine.StreamOp) error {
	n, err := b.ncclLib()
	if err != nil {
		return err
	}
	bytes := max(op.Bytes, 1)
	buf, err := b.gpus[g].scratch(bytes, 2)
	if err != nil {
		return err
	}
	c, idx, err := b.comm(op.Comm, rank)
	if err != nil {
		return err
	}
	stream := uintptr(unsafe.Pointer(st.s.C()))
	ranks := int64(b.fit.Distinct(op.Ranks))
	switch op.Coll {
	case timeline.CollBroadcast:
		return n.Broadcast(uintptr(buf), bytes, 0, c, stream)
	case timeline.CollAllGather:
		out, err := b.gpus[g].scratch(bytes, 3)
		if err != nil {
			return err
		}
		return n.AllGather(uintptr(buf), uintptr(out), bytes/ranks, c, stream)
	case timeline.CollReduceScatter:
		out, err := b.gpus[g].scratch(bytes, 3)
		if err != nil {
			return err
		}
		return n.ReduceScatter(uintptr(buf), uintptr(out), bytes/ranks, c, stream)
	case timeline.CollAllToAll, timeline.CollRaggedAllToAll:
		// All-to-all is a group of sends and receives (as NCCL itself builds it). Each receive must
		// be the size of its peer's send: a ragged one takes its sizes from both the rank's row
		// and its column of the size matrix. With --fit sharing GPUs, each GPU pair exchanges an
		// even share.
		ragged := len(op.Sizes) == int(ranks) && len(op.RecvSizes) == int(ranks)
		in, err := b.gpus[g].scratch(max(bytes, sum(op.RecvSizes)), 3)
		if err != nil {
			return err
		}
		if err := n.GroupStart(); err != nil {
			return err
		}
		var off int64 // receives land one after another
		for peer := range int(ranks) {
			send, recv := bytes/ranks, bytes/ranks
			if ragged {
				send, recv = op.Sizes[peer], op.RecvSizes[peer]
			}
			if peer == idx {
				continue
			}
			if send > 0 {
				if err := n.Send(uintptr(buf), send, peer, c, stream); err != nil {
					_ = n.GroupEnd()
					return err
				}
			}
			if recv > 0 {
				if err := n.Recv(uintptr(in)+uintptr(off), recv, peer, c, stream); err != nil {
					_ = n.GroupEnd()
					return err
				}
				off += recv
			}
		}
		return n.GroupEnd()
	default:
		return n.AllReduce(uintptr(buf), bytes, c, stream)
	}
}

// rank0GPU returns the GPU of the first rank in ranks that shares rank's GPU: with --fit, that rank
// speaks for the GPU in collectives.
func rank0GPU(b *Backend, rank engine.DeviceID, ranks []engine.DeviceID) int {
	g := b.fit.GPU(rank)
	for _, r := range ranks {
		if b.fit.GPU(r) == g {
			if r == rank {
				return g
			}
			return -1
		}
	}
	return -1
}

// asyncErrorPoll is how often the poller asks NCCL for communicators' asynchronous errors.
const asyncErrorPoll = 10 * time.Millisecond

// poll reports ops as the GPU finishes them, in order of completion, enforces the watchdog and
// checks communicators for asynchronous errors. It is the only goroutine that emits events.
func (b *Backend) poll(ctx context.Context) error {
	// Event queries and timings are made with the event's context current; switch as needed.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	current := -1
	use := func(g int) {
		if g != current {
			_ = cu.SetCurrentContext(b.gpus[g].ctx)
			current = g
		}
	}
	var pending []inflight
	open := true
	lastCheck := time.Now()
	for open || len(pending) > 0 {
		if time.Since(lastCheck) >= asyncErrorPoll {
			lastCheck = time.Now()
			for g := range b.gpus {
				use(g)
				b.tick(g, time.Since(b.wall0))
			}
			if bad := b.asyncErrors(); len(bad) > 0 {
				kept := pending[:0]
				for _, f := range pending {
					// Their timing events are not reused: the aborted work may never complete them.
					if err := faultOf(&f.op, bad); err != nil {
						b.fail(f, err)
						continue
					}
					kept = append(kept, f)
				}
				pending = kept
			}
		}
		select {
		case e := <-b.instant:
			b.sink.Emit(&e)
			continue
		default:
		}
		if open {
			select {
			case f, ok := <-b.done:
				if !ok {
					open = false
				} else {
					pending = append(pending, f)
				}
				continue
			default:
			}
		}
		progressed := false
		kept := pending[:0]
		for _, f := range pending {
			use(f.gpu)
			switch err := f.end.Query(); {
			case err == nil:
				b.complete(f)
				b.gpus[f.gpu].timing.give(f.start)
				b.gpus[f.gpu].timing.give(f.end)
				progressed = true
			case errors.Is(err, cu.NotReady):
				if time.Since(f.posted) > b.watchdog {
					return b.stuck(f)
				}
				kept = append(kept, f)
			default:
				b.fail(f, err)
				progressed = true
			}
		}
		pending = kept
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %v", engine.ErrCanceled, ctx.Err())
		}
		if !progressed {
			time.Sleep(20 * time.Microsecond)
		}
	}
	for {
		select {
		case e := <-b.instant:
			b.sink.Emit(&e)
		default:
			return nil
		}
	}
}

func (b *Backend) complete(f inflight) {
	start, end := b.gpuTime(f.gpu, f.start, f.queued), b.gpuTime(f.gpu, f.end, f.queued)
	op := f.op
	e := timeline.Event{Start: start, End: end, Queued: f.queued.Nanoseconds(), Bytes: op.Bytes, Op: op.ID, Device: int32(f.rank),
		Peer: int32(op.Peer), Stream: uint32(op.Stream), Group: f.group, Comm: op.Comm, Barrier: op.Barrier, Label: op.Label,
		Host: uint16(b.topo.HostOf(f.rank))}
	b.mu.Lock()
	e.Priority = int8(b.streams[op.Stream].prio)
	b.mu.Unlock()
	switch op.Kind {
	case engine.OpKernel:
		e.Kind, e.Peer = timeline.KindKernel, -1
	case engine.OpCopy:
		e.Kind, e.Sub = timeline.KindMemcpy, uint8(op.Dir)
	case engine.OpSend:
		e.Kind = timeline.KindSend
	case engine.OpRecv:
		e.Kind = timeline.KindRecv
	case engine.OpCollective:
		e.Kind, e.Sub, e.Ranks, e.Peer = timeline.KindCollective, uint8(op.Coll), uint16(b.fit.Distinct(op.Ranks)), -1
	case engine.OpBarrier:
		e.Kind, e.Ranks, e.Peer = timeline.KindBarrier, uint16(len(op.Ranks)), -1
	case engine.OpGroup:
		e.Kind, e.Aux, e.Peer = timeline.KindGroupLaunch, uint32(len(op.Parts)), -1
		for _, part := range op.Parts {
			pe := e
			pe.Kind, pe.Op, pe.Peer, pe.Bytes, pe.Aux = timeline.KindSend, part.ID, int32(part.Peer), part.Bytes, 0
			if part.Kind == engine.OpRecv {
				pe.Kind = timeline.KindRecv
			} else if part.Kind == engine.OpCollective {
				pe.Kind, pe.Sub, pe.Peer = timeline.KindCollective, uint8(part.Coll), -1
			}
			b.sink.Emit(&pe)
			b.resolve(part.Future, part, f.rank, end, nil)
		}
	}
	b.sink.Emit(&e)
	b.resolve(op.Future, op, f.rank, end, nil)
}

func (b *Backend) resolve(fut *engine.Future, op engine.StreamOp, rank engine.DeviceID, at int64, err error) {
	if fut == nil {
		return
	}
	k, st := timeline.KindPromiseFulfilled, timeline.StatusOK
	if err != nil {
		k, st = timeline.KindPromiseFailed, timeline.StatusError
	}
	e := timeline.Event{Kind: k, Start: at, End: at, Device: int32(rank), Peer: int32(op.Peer), Op: op.ID, Bytes: op.Bytes,
		Stream: uint32(op.Stream), Status: st, Host: uint16(b.topo.HostOf(rank))}
	b.sink.Emit(&e)
	fut.Complete(at, err)
}

func (b *Backend) fail(f inflight, err error) {
	msg := fmt.Sprintf("%s on rank %d failed: %v", engine.OpName(&f.op), f.rank, err)
	now := time.Since(b.wall0).Nanoseconds()
	a := timeline.Event{Kind: timeline.KindAlert, Start: now, End: now, Device: int32(f.rank), Peer: int32(f.op.Peer), Op: f.op.ID,
		Bytes: f.op.Bytes, Status: timeline.StatusError, Label: b.strs.ID(msg)}
	b.sink.Emit(&a)
	b.resolve(f.op.Future, f.op, f.rank, now, fmt.Errorf("%s: %w", msg, err))
}

// stuck ends the run when an op has not finished within the watchdog timeout (a peer that never
// posted its half hangs an NCCL kernel for ever): its communicators are aborted so the GPU is
// released, and the alert names the op, the ranks and the bytes.
func (b *Backend) stuck(f inflight) error {
	werr := &engine.WatchdogError{Op: engine.OpName(&f.op), OpID: f.op.ID, Rank: f.rank, Peer: f.op.Peer, Bytes: f.op.Bytes, WaitedNs: time.Since(f.posted).Nanoseconds()}
	b.mu.Lock()
	for id, cs := range b.comms {
		for _, c := range cs.comms {
			if b.nccl != nil {
				_ = b.nccl.Abort(c)
			}
		}
		delete(b.comms, id)
	}
	b.mu.Unlock()
	now := time.Since(b.wall0).Nanoseconds()
	a := timeline.Event{Kind: timeline.KindAlert, Start: now, End: now, Device: int32(f.rank), Peer: int32(f.op.Peer), Op: f.op.ID,
		Bytes: f.op.Bytes, Status: timeline.StatusTimeout, Label: b.strs.ID(werr.Error())}
	b.sink.Emit(&a)
	b.resolve(f.op.Future, f.op, f.rank, now, werr)
	b.err = werr
	return werr
}
