//go:build cuda

package cuda

import (
	"context"
	"unsafe"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

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
