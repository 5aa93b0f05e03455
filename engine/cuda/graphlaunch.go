//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"time"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
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
	origin cu.Stream
	start  []cu.Event // per op: the events bracketing a timed op (zero for a record or a wait)
	end    []cu.Event
	marks  []cu.Event // per op: the event a record op records
	run    uint64     // the run it was last launched in
}

// graphLaunch launches the rank's part of a graph: captured through the driver the first time
// (stream capture over every stream it uses, forked from and joined back to the first), replayed
// with one cuGraphLaunch after. Each timed op is reported from the graph's own events.
func (b *Backend) graphLaunch(ctx context.Context, rank engine.DeviceID, g int, cmd engine.Command) error {
	ops := cmd.Graph
	name := b.strs.Lookup(cmd.Label)
	for _, op := range ops {
		switch op.Kind {
		case engine.OpKernel, engine.OpCopy, engine.OpRecord, engine.OpWaitEvent:
		default:
			return fmt.Errorf("cuda: rank %d: graph %q holds a %s: the cuda backend captures kernels, copies and events only so far; run with graphs=off", rank, name, engine.OpName(&op))
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
	}
	rg.run = run
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
			b.done <- inflight{op: ops[i], rank: rank, gpu: g, start: rg.start[i], end: rg.end[i], queued: t1, posted: time.Now(), owned: true}
		}
	}
	return nil
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
	rg := &rankGraph{origin: streams[ops[0].Stream], start: make([]cu.Event, len(ops)), end: make([]cu.Event, len(ops)), marks: make([]cu.Event, len(ops))}
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
			ce, err := mk(cu.DisableTiming)
			if err != nil {
				return err
			}
			if err := ce.Record(s); err != nil {
				return err
			}
			rg.marks[i], recorded[op.Event] = ce, ce
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
			if err := start.Record(s); err != nil {
				return err
			}
			if err := b.issue(ctx, rank, g, st, op); err != nil {
				return fmt.Errorf("%s: %w", engine.OpName(&op), err)
			}
			if err := end.Record(s); err != nil {
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
