//go:build cuda

package cuda

import (
	"fmt"
	"os"
	"slices"
	"time"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/nccl"
	"github.com/xfertop/xfertop/timeline"
)

// ncclEnv puts a forced algorithm and protocol in the process environment as NCCL_ALGO and
// NCCL_PROTO, in NCCL's spelling. NCCL reads both when it tunes a communicator, at its creation
// (ncclTopoTuneModel), so this must happen before the first ncclCommInitRank; knobs left at auto
// leave the environment as the user set it.
func ncclEnv(algo timeline.NCCLAlgo, proto timeline.NCCLProto) error {
	for _, kv := range [...][2]string{{"NCCL_ALGO", algoEnv(algo)}, {"NCCL_PROTO", protoEnv(proto)}} {
		if kv[1] == "" {
			continue
		}
		if err := os.Setenv(kv[0], kv[1]); err != nil {
			return fmt.Errorf("cuda: set %s=%s: %w", kv[0], kv[1], err)
		}
	}
	return nil
}

func algoEnv(a timeline.NCCLAlgo) string {
	if a == 0 {
		return ""
	}
	return a.String()
}

func protoEnv(p timeline.NCCLProto) string {
	if p == 0 {
		return ""
	}
	return p.String()
}

// ncclLib loads NCCL on first use, with the run's NCCL_ALGO and NCCL_PROTO set first.
func (b *Backend) ncclLib() (*nccl.NCCL, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.nccl == nil {
		if err := ncclEnv(b.cfg.NCCLAlgo, b.cfg.NCCLProto); err != nil {
			return nil, err
		}
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
