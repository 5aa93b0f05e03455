//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
)

// On real GPUs the backend injects the faults it can make honestly by holding back a rank's host
// thread (fault.OnRealGPUs): a host slow to launch waits its delay before each launch, and a rank
// that hangs before an NCCL op (a collective, a send or a receive: fault.HangTarget) never
// launches it. New refuses the others, naming each and why.

// bindFaults checks fs against the topology and what real GPUs allow, and lists each rank's.
func bindFaults(fs []fault.Fault, topo engine.Topology) ([][]fault.Fault, error) {
	if len(fs) == 0 {
		return nil, nil
	}
	byRank := make([][]fault.Fault, topo.Devices())
	for i, f := range fs {
		if err := f.OnRealGPUs(); err != nil {
			return nil, fmt.Errorf("cuda: fault %d (%s): %w", i+1, f, err)
		}
		if err := f.Bind(topo); err != nil {
			return nil, fmt.Errorf("cuda: fault %d: %w", i+1, err)
		}
		for _, d := range f.Devices(topo) {
			byRank[d] = append(byRank[d], f)
		}
	}
	return byRank, nil
}

// faultsOf is the faults acting on rank's host thread.
func (b *Backend) faultsOf(rank engine.DeviceID) []fault.Fault {
	if int(rank) >= len(b.rankFaults) {
		return nil
	}
	return b.rankFaults[rank]
}

// launchDelay is what a slow host adds to a launch of rank's now.
func (b *Backend) launchDelay(rank engine.DeviceID) time.Duration {
	var d int64
	now := b.Now()
	for i := range b.faultsOf(rank) {
		if f := &b.rankFaults[rank][i]; f.Kind == fault.HostSlow && f.Active(now) {
			d += f.Delay
		}
	}
	return time.Duration(d)
}

// delayLaunch keeps rank's host thread for its slow host's delay before a launch.
func (b *Backend) delayLaunch(ctx context.Context, rank engine.DeviceID) error {
	if d := b.launchDelay(rank); d > 0 {
		return sleep(ctx, d)
	}
	return nil
}

// hangs reports whether rank's host thread hangs, now, before op. Called on rank's host thread
// only (it notes there whether the rank has posted a collective: fault.HangNext).
func (b *Backend) hangs(rank engine.DeviceID, op *engine.StreamOp) bool {
	now := b.Now()
	fs := b.faultsOf(rank)
	for i := range fs {
		if f := &fs[i]; f.Kind == fault.Hang && f.Active(now) && f.HangsAt(op, b.collPosted[rank]) {
			return true
		}
	}
	if len(fs) > 0 && !b.collPosted[rank] {
		b.collPosted[rank] = fault.PostsCollective(op)
	}
	return false
}

// hold keeps a hung rank's host thread from launching op: it launches nothing more. The others
// wait for it on their GPUs until the watchdog ends the run (which cancels ctx); when nothing
// waits for it, the run ends after the watchdog's time as a deadlock, as the simulator's does when
// nothing can move.
func (b *Backend) hold(ctx context.Context, rank engine.DeviceID, op *engine.StreamOp) error {
	select {
	case <-ctx.Done():
		return engine.Canceled(ctx, -1)
	case <-time.After(b.watchdog):
		return &engine.DeadlockError{Pending: 1, First: fmt.Sprintf("%s on rank %d, which a hang fault keeps its host thread from launching", engine.OpName(op), rank)}
	}
}
