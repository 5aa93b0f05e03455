//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// graphKey names one rank's part of a captured graph.
type graphKey struct {
	key  uint32
	rank engine.DeviceID
}

// rankGraph is a rank's part of a graph, captured at its first launch and instantiated once: later
// launches are one cuGraphLaunch. The graph records the same CUDA events at every launch (its ops'
// start and end, and the events the workload records in it), so they belong to it.
type rankGraph struct {
	exec   *graphExec
	gpu    int
	origin cu.Stream
	start  []cu.Event // per op: the events bracketing a timed op (zero for a record or a wait)
	end    []cu.Event
	marks  []cu.Event // per op: the event a record op records
	comms  []uint32   // the communicators its NCCL calls use: they must outlive it
	run    uint64     // the run it was last launched in
}

// graphLaunch launches the rank's part of a graph: captured through the driver the first time
// (stream capture over every stream it uses, forked from and joined back to the first), replayed
// with one cuGraphLaunch after. NCCL calls are issued on the capturing streams, so they become
// nodes of the graph (NCCL >= 2.9) and run again at each launch. Each timed op is reported from the
// graph's own events.
func (b *Backend) graphLaunch(ctx context.Context, rank engine.DeviceID, g int, cmd engine.Command) error {
	ops := cmd.Graph
	name := b.strs.Lookup(cmd.Label)
	for i := range ops {
		if err := b.capturable(rank, &ops[i]); err != nil {
			return fmt.Errorf("cuda: rank %d: graph %q holds a %s: %w; run with graphs=off", rank, name, engine.OpName(&ops[i]), err)
		}
	}
	if len(ops) == 0 {
		return nil
	}
	k := graphKey{cmd.GraphKey, rank}
	b.mu.Lock()
	rg := b.graphs[k]
	b.mu.Unlock()
	run := b.runs.Load()
	if rg == nil {
		var err error
		if rg, err = b.captureGraph(ctx, rank, g, ops); err != nil {
			return fmt.Errorf("cuda: rank %d: graph %q: %w", rank, name, err)
		}
		b.mu.Lock()
		b.graphs[k] = rg
		b.mu.Unlock()
	} else if rg.run == run {
		return fmt.Errorf("cuda: rank %d: graph %q launched twice in one run: its ops' timing events serve one launch per run", rank, name)
	} else if err := b.commsLive(rg); err != nil {
		return fmt.Errorf("cuda: rank %d: graph %q: %w", rank, name, err)
	}
	rg.run = run
	// The graph's work goes on its streams between ops the backend times: an op after it there
	// records its own start (it may start later than the op before it ended).
	tls := make([]*streamTiming, len(ops))
	b.mu.Lock()
	for i := range ops {
		tls[i] = b.streams[ops[i].Stream].tl
	}
	b.mu.Unlock()
	for _, tl := range tls {
		tl.wait()
	}
	t0 := time.Since(b.wall0)
	if err := rg.exec.launch(rg.origin); err != nil {
		return fmt.Errorf("cuda: rank %d: graph %q: %w", rank, name, err)
	}
	t1 := time.Since(b.wall0)
	// Only now are this launch's events recorded (queued): a stream elsewhere may wait on them.
	for i := range ops {
		if ops[i].Kind == engine.OpRecord {
			b.graphRecords(ops[i].Event, rg.marks[i], g)
		}
	}
	b.instant <- engine.GraphLaunchEvent(rank, uint16(b.topo.HostOf(rank)), t0.Nanoseconds(), t1.Nanoseconds(), len(ops), ops[0].Graph, cmd.Label)
	for i := range ops {
		if rg.start[i] != (cu.Event{}) {
			gid := uint32(0)
			if ops[i].Kind == engine.OpGroup {
				gid = b.nextGroup.Add(1) // each launch is a group launch of its own
			}
			b.done <- inflight{op: ops[i], rank: rank, gpu: g, start: rg.start[i], end: rg.end[i], queued: t1, group: gid, posted: time.Now(), owned: true, tl: tls[i]}
		}
	}
	return nil
}

// capturable says why rank's part of op cannot be captured, or returns nil. Kernels, copies, events
// and NCCL's collectives, sends and receives can (NCCL >= 2.9 captures what is issued on a
// capturing stream). What the backend carries by meeting on the host cannot: a barrier, and, with
// --fit, the copies and events that stand in for NCCL between ranks sharing a GPU: each rank's part
// is a graph of its own, and CUDA lets no capture wait on an event recorded in another
// (cudaErrorStreamCaptureMerge) or outside it (cudaErrorStreamCaptureIsolation).
func (b *Backend) capturable(rank engine.DeviceID, op *engine.StreamOp) error {
	switch op.Kind {
	case engine.OpKernel, engine.OpCopy, engine.OpRecord, engine.OpWaitEvent:
		return nil
	case engine.OpSend, engine.OpRecv:
		if !b.usesNCCL(rank, *op) {
			return fmt.Errorf("rank %d and peer %d share a GPU (--fit), and the copy and event that carry it between their graphs cannot be captured (with a GPU per rank NCCL carries it, and is captured)", rank, op.Peer)
		}
		return nil
	case engine.OpCollective:
		if b.fit.Distinct(op.Ranks) <= 1 {
			return nil // no data moves: nothing is issued
		}
		g := b.fit.GPU(rank)
		for _, r := range op.Ranks {
			if r != rank && b.fit.GPU(r) == g {
				return fmt.Errorf("ranks %d and %d share GPU %d (--fit), and the events that make one wait for the other's NCCL call cannot be captured (with a GPU per rank each makes its own NCCL call, and is captured)", rank, r, g)
			}
		}
		return nil
	case engine.OpGroup:
		for i := range op.Parts {
			if err := b.capturable(rank, &op.Parts[i]); err != nil {
				return err
			}
		}
		return nil
	case engine.OpBarrier:
		return errors.New("the cuda backend's barrier meets on the host, which a graph cannot replay")
	}
	return errors.New("the cuda backend does not capture it")
}

// ncclComms returns the communicators rank's part of op issues NCCL calls on.
func (b *Backend) ncclComms(rank engine.DeviceID, op *engine.StreamOp) []uint32 {
	switch op.Kind {
	case engine.OpSend, engine.OpRecv, engine.OpCollective:
		if b.usesNCCL(rank, *op) {
			return []uint32{op.Comm}
		}
	case engine.OpGroup:
		var out []uint32
		for i := range op.Parts {
			out = append(out, b.ncclComms(rank, &op.Parts[i])...)
		}
		return out
	}
	return nil
}

// commsLive says which communicator a graph's NCCL calls use is gone (destroyed, or aborted after a
// fault or a watchdog alert) since the graph was captured: launching it would run NCCL's kernels on
// a communicator that no longer exists.
func (b *Backend) commsLive(rg *rankGraph) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range rg.comms {
		cs := b.comms[id]
		switch {
		case cs == nil:
			return fmt.Errorf("its NCCL calls use communicator %d, destroyed since the graph was captured", id)
		case cs.err != nil:
			return fmt.Errorf("its NCCL calls use communicator %d, which failed since the graph was captured: %w", id, cs.err)
		}
	}
	return nil
}

// dropGraphs destroys the captured graphs whose NCCL calls use one of the communicators in ids,
// before those are destroyed: since NCCL 2.26, ncclCommDestroy waits until no graph refers to the
// communicator, so a graph left alive would hang it.
func (b *Backend) dropGraphs(ids []uint32) {
	b.mu.Lock()
	var drop []*rankGraph
	for k, rg := range b.graphs {
		if slices.ContainsFunc(rg.comms, func(c uint32) bool { return slices.Contains(ids, c) }) {
			drop = append(drop, rg)
			delete(b.graphs, k)
		}
	}
	b.mu.Unlock()
	if len(drop) == 0 {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, rg := range drop {
		_ = cu.SetCurrentContext(b.gpus[rg.gpu].ctx)
		if err := rg.exec.destroy(); err != nil {
			now := b.Now()
			a := timeline.Event{Kind: timeline.KindAlert, Start: now, End: now, Device: -1, Peer: -1, Status: timeline.StatusError,
				Label: b.strs.ID(fmt.Sprintf("destroying a captured graph on GPU %d: %v", rg.gpu, err))}
			b.sink.Emit(&a)
		}
	}
}

// graphRecords makes the workload's event id stand for ce, the CUDA event a graph records.
func (b *Backend) graphRecords(id engine.EventID, ce cu.Event, g int) {
	ev := b.event(id)
	if ev == nil {
		return
	}
	ev.once.Do(func() {
		ev.ev, ev.gpu, ev.owned = ce, g, true
		close(ev.recorded)
		b.mu.Lock()
		b.events.Done(uint32(id))
		b.mu.Unlock()
	})
}

// captureGraph captures ops (a rank's part of a graph, at its first launch) and instantiates it.
func (b *Backend) captureGraph(ctx context.Context, rank engine.DeviceID, g int, ops []engine.StreamOp) (*rankGraph, error) {
	b.mu.Lock()
	streams := map[engine.StreamID]cu.Stream{}
	for _, op := range ops {
		streams[op.Stream] = b.streams[op.Stream].s
	}
	b.mu.Unlock()
	rg := &rankGraph{gpu: g, origin: streams[ops[0].Stream], start: make([]cu.Event, len(ops)), end: make([]cu.Event, len(ops)), marks: make([]cu.Event, len(ops))}
	for i := range ops {
		for _, c := range b.ncclComms(rank, &ops[i]) {
			if !slices.Contains(rg.comms, c) {
				rg.comms = append(rg.comms, c)
			}
		}
	}
	// Buffers first: an allocation inside the capture is refused by the driver and ends it.
	for i := range ops {
		if err := b.prepare(rank, g, &ops[i]); err != nil {
			return nil, fmt.Errorf("%s: %w", engine.OpName(&ops[i]), err)
		}
	}
	if err := beginCapture(rg.origin); err != nil {
		return nil, err
	}
	err := b.captureOps(ctx, rank, g, rg, ops, streams)
	exec, endErr := endCapture(rg.origin) // ended whatever happened: the stream must leave capture
	if err != nil {
		if exec != nil {
			_ = exec.destroy()
		}
		return nil, err
	}
	if endErr != nil {
		return nil, endErr
	}
	rg.exec = exec
	return rg, nil
}

// captureOps queues ops on their streams while they are captured: the other streams fork from the
// first (a wait on an event it recorded) and join it back at the end, as stream capture requires.
func (b *Backend) captureOps(ctx context.Context, rank engine.DeviceID, g int, rg *rankGraph, ops []engine.StreamOp, streams map[engine.StreamID]cu.Stream) error {
	mk := func(f cu.EventFlags) (cu.Event, error) { return cu.MakeEvent(f) }
	for id, s := range streams {
		if id == ops[0].Stream {
			continue
		}
		fork, err := mk(cu.DisableTiming)
		if err != nil {
			return err
		}
		if err := fork.Record(rg.origin); err != nil {
			return err
		}
		if err := s.Wait(fork, 0); err != nil {
			return err
		}
	}
	recorded := map[engine.EventID]cu.Event{}
	for i, op := range ops {
		s := streams[op.Stream]
		switch op.Kind {
		case engine.OpRecord:
			// Two events: a plain record inside a capture only orders the graph's own work (a
			// wait later in the capture); it is not recorded when the graph runs. What streams
			// outside the graph wait on is an event record node (recordExternal), recorded at
			// each launch.
			inner, err := mk(cu.DisableTiming)
			if err != nil {
				return err
			}
			if err := inner.Record(s); err != nil {
				return err
			}
			mark, err := mk(cu.DisableTiming)
			if err != nil {
				return err
			}
			if err := recordExternal(mark, s); err != nil {
				return err
			}
			rg.marks[i], recorded[op.Event] = mark, inner
		case engine.OpWaitEvent:
			ce, ok := recorded[op.Event]
			if !ok {
				return fmt.Errorf("a wait for event %d, not recorded before it in the graph", op.Event)
			}
			if err := s.Wait(ce, 0); err != nil {
				return err
			}
		default:
			start, err := mk(cu.DefaultEvent)
			if err != nil {
				return err
			}
			end, err := mk(cu.DefaultEvent)
			if err != nil {
				return err
			}
			b.mu.Lock()
			st := b.streams[op.Stream]
			b.mu.Unlock()
			// Event record nodes, stamped at each launch: a plain record would only order
			// the capture, and the op's time would be read from events never recorded.
			if err := recordExternal(start, s); err != nil {
				return err
			}
			if err := b.issue(ctx, rank, g, st, op); err != nil {
				return fmt.Errorf("%s: %w", engine.OpName(&op), err)
			}
			if err := recordExternal(end, s); err != nil {
				return err
			}
			rg.start[i], rg.end[i] = start, end
		}
	}
	for id, s := range streams {
		if id == ops[0].Stream {
			continue
		}
		join, err := mk(cu.DisableTiming)
		if err != nil {
			return err
		}
		if err := join.Record(s); err != nil {
			return err
		}
		if err := rg.origin.Wait(join, 0); err != nil {
			return err
		}
	}
	return nil
}
