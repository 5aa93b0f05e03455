//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/nccl"
	"github.com/xfertop/xfertop/timeline"
)

// launch enqueues one op on its stream before an end event, after a start event unless the op
// follows unfinished work on its stream (streamTiming), and hands it to the poller.
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
		st.tl.wait()
		return st.s.Wait(ev.ev, 0)
	}
	gp := b.gpus[g]
	if err := b.prepare(rank, g, &op); err != nil {
		return fmt.Errorf("cuda: rank %d: %s: %w", rank, engine.OpName(&op), err)
	}
	var start cu.Event // none: the op starts when the one before it on its stream ends
	if st.tl.startFollows() {
		b.followed.Add(1)
	} else {
		var err error
		if start, err = gp.timing.take(); err != nil {
			return err
		}
		if err := start.Record(st.s); err != nil {
			return err
		}
	}
	end, err := gp.timing.take()
	if err != nil {
		return err
	}
	if op.Kind == engine.OpBarrier {
		if err := b.barrier(ctx, st, op); err != nil {
			return fmt.Errorf("cuda: rank %d: barrier: %w", rank, err)
		}
		if err := end.Record(st.s); err != nil {
			return err
		}
		b.done <- inflight{op: op, rank: rank, gpu: g, start: start, end: end, queued: queued, posted: time.Now(), tl: st.tl, seq: st.tl.post(end)}
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
	b.done <- inflight{op: op, rank: rank, gpu: g, start: start, end: end, queued: queued, group: gid, posted: time.Now(), tl: st.tl, seq: st.tl.post(end)}
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
		return engine.Canceled(ctx, -1)
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
