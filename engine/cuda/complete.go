//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

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
	blocked := map[engine.StreamID]bool{} // streams whose oldest pending op is not done, this pass
	open := true
	lastCheck, lastRunning := time.Now(), time.Now()
	defer b.clearRunning()
	for open || len(pending) > 0 {
		if time.Since(lastRunning) >= runningPoll {
			lastRunning = time.Now()
			b.publishRunning(pending, use)
		}
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
		clear(blocked)
		for i, f := range pending {
			// A stream runs its ops in the order they were posted: once one is not done, the
			// later ones on its stream are not either, and asking the driver about each (a
			// call that takes the context's lock the issuing thread needs) would cost a query
			// per queued op per pass, thousands when small ops are queued faster than they run.
			if blocked[f.op.Stream] {
				kept = append(kept, f)
				continue
			}
			use(f.gpu)
			switch err := f.end.Query(); {
			case err == nil:
				if b.awaitsCopy(&f) {
					kept = append(kept, f)      // its send's copy is reported first: it tells where the receive began
					blocked[f.op.Stream] = true // and the ops after it on its stream after it
					continue
				}
				b.complete(f)
				if !f.owned {
					f.tl.retire(f.seq)
					if f.start != (cu.Event{}) {
						b.gpus[f.gpu].timing.give(f.start)
					}
					b.gpus[f.gpu].timing.give(f.end)
				}
				progressed = true
			case errors.Is(err, cu.NotReady):
				blocked[f.op.Stream] = true
				if time.Since(f.posted) > b.watchdog {
					return b.stuck(f, append(kept, pending[i:]...))
				}
				kept = append(kept, f)
			default:
				b.fail(f, err)
				progressed = true
			}
		}
		pending = kept
		if ctx.Err() != nil {
			return engine.Canceled(ctx, -1)
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
	end := b.gpuTime(f.gpu, f.end, f.queued)
	start := b.startTime(&f, end)
	f.tl.endNs = end
	e := b.opEvent(&f, start, end)
	if f.op.Kind == engine.OpGroup {
		for _, part := range f.op.Parts {
			pe := b.partEvent(e, f.rank, part)
			b.noteCopy(&pe)
			if pe.Kind == timeline.KindRecv && pe.Emulated() {
				// A group's parts share its times: nothing to take from the copy. It must not
				// wait for its send either (two ranks' groups may each hold the other's).
				b.forgetCopy(pairKey{pe.Comm, pe.Op, -1})
			}
			b.sink.Emit(&pe)
			b.resolve(part.Future, part, f.rank, end, nil)
		}
	}
	b.noteCopy(&e)
	if e.Kind == timeline.KindRecv && e.Emulated() {
		b.fromCopy(&e)
	}
	b.sink.Emit(&e)
	b.resolve(f.op.Future, f.op, f.rank, end, nil)
}

// copyUnknown is a copy whose start is not known: its send failed. copyUsed is a copy whose
// receive was reported before its send (a group's part): the send's note is then dropped.
const (
	copyUnknown = -1
	copyUsed    = -2
)

// forgetCopy drops pair k's note, or marks it used when its send is yet to be reported.
func (b *Backend) forgetCopy(k pairKey) {
	if _, ok := b.copies[k]; ok {
		delete(b.copies, k)
		return
	}
	b.copies[k] = copyUsed
}

// noteCopy remembers when the copy carrying emulated send e began (--fit): its receive's time is
// counted from then. A send's start event is recorded on its stream just before its copy; a send in
// a group is taken from the group's start.
func (b *Backend) noteCopy(e *timeline.Event) {
	if e.Kind != timeline.KindSend || !e.Emulated() {
		return
	}
	k := pairKey{e.Comm, e.Op, -1}
	if b.copies[k] == copyUsed {
		delete(b.copies, k) // its receive has been reported
		return
	}
	b.copies[k] = max(e.Start, 0)
}

// failCopy notes, of a failed op, what its pair's other half must know: a send's receive is
// reported as it ran (copyUnknown); a receive's send has nobody to tell.
func (b *Backend) failCopy(rank engine.DeviceID, op *engine.StreamOp) {
	if (op.Kind != engine.OpSend && op.Kind != engine.OpRecv) || !b.emulated(rank, op) {
		return
	}
	k := pairKey{op.Comm, op.ID, -1}
	switch {
	case op.Kind == engine.OpRecv:
		b.forgetCopy(k)
	case b.copies[k] == copyUsed:
		delete(b.copies, k)
	default:
		b.copies[k] = copyUnknown
	}
}

// awaitsCopy reports whether f, completed on the GPU, is a receive carried by a copy (--fit) whose
// send the poller has not reported yet. The receive's stream waited for an event recorded after the
// copy, and the send's end event is recorded after that same event, so the send is reported soon
// after, or has failed (copyUnknown).
func (b *Backend) awaitsCopy(f *inflight) bool {
	if f.op.Kind != engine.OpRecv || !b.emulated(f.rank, &f.op) {
		return false
	}
	_, ok := b.copies[pairKey{f.op.Comm, f.op.ID, -1}]
	return !ok
}

// fromCopy makes emulated receive e begin where the copy that carried it began, as a receive does
// on the simulator (its transfer alone): the time its stream waited before, for the sender's host
// to get to the send, is a peer wait, as the simulator reports it. A receive whose stream got
// there after the copy began keeps its own start.
func (b *Backend) fromCopy(e *timeline.Event) {
	k := pairKey{e.Comm, e.Op, -1}
	at, ok := b.copies[k]
	delete(b.copies, k)
	if !ok || at == copyUnknown || at <= e.Start {
		return
	}
	at = min(at, e.End)
	w := *e
	w.Kind, w.End, w.Aux, w.Sub = timeline.KindPeerWait, at, timeline.PeerWaitRecv, 0
	b.sink.Emit(&w)
	e.Start = at
}

// opEvent is the event op f is reported as, from start to end (ns since the session start).
func (b *Backend) opEvent(f *inflight, start, end int64) timeline.Event {
	op := &f.op
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
		// The scenario's ranks, not the GPUs they share: the instance is the scenario's collective,
		// row by row with the simulator's, marked emulated when ranks share a GPU.
		e.Kind, e.Sub, e.Ranks, e.Peer = timeline.KindCollective, uint8(op.Coll), uint16(len(op.Ranks)), -1
	case engine.OpBarrier:
		e.Kind, e.Ranks, e.Peer = timeline.KindBarrier, uint16(len(op.Ranks)), -1
	case engine.OpGroup:
		e.Kind, e.Aux, e.Peer = timeline.KindGroupLaunch, uint32(len(op.Parts)), -1
	}
	if op.Graph != 0 && e.Kind.IsBusy() {
		e.Aux |= timeline.AuxCaptured // replayed by a graph launch, as the simulator marks it
	}
	if b.emulated(f.rank, op) {
		e.Aux |= timeline.AuxEmulated
	}
	return e
}

// emulated reports whether rank's part of op stands in for what the topology would run (--fit
// with ranks sharing a GPU): a send or receive carried by a copy, or a collective some of whose
// ranks share a GPU (NCCL ran it over fewer GPUs than it has ranks, or not at all on one GPU).
func (b *Backend) emulated(rank engine.DeviceID, op *engine.StreamOp) bool {
	switch op.Kind {
	case engine.OpCollective:
		return b.fit.Distinct(op.Ranks) < len(op.Ranks)
	case engine.OpSend, engine.OpRecv:
		return !b.usesNCCL(rank, *op)
	}
	return false
}

// partEvent is the event of one part of the group whose event is g.
func (b *Backend) partEvent(g timeline.Event, rank engine.DeviceID, part engine.StreamOp) timeline.Event {
	pe := g
	pe.Kind, pe.Op, pe.Peer, pe.Bytes, pe.Aux = timeline.KindSend, part.ID, int32(part.Peer), part.Bytes, 0
	if part.Kind == engine.OpRecv {
		pe.Kind = timeline.KindRecv
	} else if part.Kind == engine.OpCollective {
		pe.Kind, pe.Sub, pe.Peer, pe.Ranks = timeline.KindCollective, uint8(part.Coll), -1, uint16(len(part.Ranks))
	}
	if part.Graph != 0 {
		pe.Aux |= timeline.AuxCaptured // a part of a group a graph replayed
	}
	if b.emulated(rank, &part) {
		pe.Aux |= timeline.AuxEmulated
	}
	return pe
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
	if f.tl != nil {
		f.tl.endNs = -1 // an op that follows it on its stream has no known start
	}
	b.failCopy(f.rank, &f.op)
	for i := range f.op.Parts {
		b.failCopy(f.rank, &f.op.Parts[i])
	}
	msg := fmt.Sprintf("%s on rank %d failed: %v", engine.OpName(&f.op), f.rank, err)
	now := time.Since(b.wall0).Nanoseconds()
	a := timeline.Event{Kind: timeline.KindAlert, Start: now, End: now, Device: int32(f.rank), Peer: int32(f.op.Peer), Op: f.op.ID,
		Bytes: f.op.Bytes, Status: timeline.StatusError, Label: b.strs.ID(msg)}
	b.sink.Emit(&a)
	b.resolve(f.op.Future, f.op, f.rank, now, fmt.Errorf("%s: %w", msg, err))
}

// stuck ends the run when an op has not finished within the watchdog timeout (a peer that never
// posted its half hangs an NCCL kernel for ever): its communicators are aborted so the GPU is
// released, and the alert names the op, the ranks and the bytes, and for a collective the ranks
// that never launched it (none of launched, the ops handed over and not finished, is theirs).
func (b *Backend) stuck(f inflight, launched []inflight) error {
	werr := &engine.WatchdogError{Op: engine.OpName(&f.op), OpID: f.op.ID, Rank: f.rank, Peer: f.op.Peer, Bytes: f.op.Bytes, WaitedNs: time.Since(f.posted).Nanoseconds(),
		Missing: neverLaunched(&f.op, launched)}
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

// neverLaunched lists the ranks of collective op that have no part of it among launched: their
// host threads never launched it (NCCL finishes a collective on no rank before every rank has
// launched it, so a part that finished is not missed).
func neverLaunched(op *engine.StreamOp, launched []inflight) []engine.DeviceID {
	if op.Kind != engine.OpCollective {
		return nil
	}
	in := map[engine.DeviceID]bool{}
	for i := range launched {
		f := &launched[i]
		if f.op.ID == op.ID && f.op.Kind == engine.OpCollective {
			in[f.rank] = true
		}
		for _, p := range f.op.Parts {
			if p.ID == op.ID {
				in[f.rank] = true
			}
		}
	}
	var out []engine.DeviceID
	for _, r := range op.Ranks {
		if !in[r] {
			out = append(out, r)
		}
	}
	return out
}
