//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
)

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
			return engine.Canceled(ctx, -1)
		}
		var err error
		switch cmd.Kind {
		case engine.CmdLaunch:
			if b.hangs(rank, &cmd.Op) {
				return b.hold(ctx, rank, &cmd.Op)
			}
			if err = b.delayLaunch(ctx, rank); err == nil {
				err = b.launch(ctx, rank, g, cmd.Op)
			}
		case engine.CmdHostWait:
			err = b.hostWait(ctx, cmd.Event)
		case engine.CmdCommInit:
			err = b.commInit(rank, cmd)
		case engine.CmdSleep:
			err = sleep(ctx, time.Duration(cmd.Duration))
		case engine.CmdGraphLaunch:
			err = b.graphLaunch(ctx, rank, g, cmd)
		case engine.CmdBatch:
			if b.hangs(rank, &cmd.Op) {
				return b.hold(ctx, rank, &cmd.Op)
			}
			batch = append(batch, cmd.Op)
		case engine.CmdFlush:
			if len(batch) > 0 {
				if err = b.delayLaunch(ctx, rank); err == nil {
					err = b.launch(ctx, rank, g, engine.StreamOp{Kind: engine.OpGroup, Stream: batch[0].Stream, Device: rank, Peer: -1, Parts: batch})
				}
				batch = nil
			}
		}
		if err != nil {
			return err
		}
	}
	if len(batch) > 0 {
		if err := b.delayLaunch(ctx, rank); err != nil {
			return err
		}
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
		return engine.Canceled(ctx, -1)
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
		return engine.Canceled(ctx, -1)
	case <-time.After(b.watchdog):
		return &engine.DeadlockError{Pending: 1, First: fmt.Sprintf("a wait for event %d, which nothing recorded within %v", id, b.watchdog)}
	}
}
