//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
)

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
		return engine.Canceled(ctx, -1)
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
