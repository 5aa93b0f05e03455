//go:build cuda

package cuda

import (
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// prepare allocates, before the op is timed or captured, every buffer its issue will take: the
// scratch device buffers and the pinned host buffer. Allocating is slow (a 1 GiB pinned buffer
// takes hundreds of milliseconds) and a synchronising call: done between an op's start event and
// its work, it was counted as the op's own time (a first 1 GiB host-to-device copy measured 13 GB/s
// on an H200 whose link moves 55); done inside a stream capture, the driver refuses it
// (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) and invalidates the capture. The buffers are the ones
// copy, p2p, p2pCopy and ncclCollective ask for (the same size class and index): once prepared,
// their own calls find them (TestPrepareCoversIssue).
func (b *Backend) prepare(rank engine.DeviceID, g int, op *engine.StreamOp) error {
	gp := b.gpus[g]
	need := func(gpu int, n int64, k int) error {
		_, err := b.gpus[gpu].scratch(n, k)
		return err
	}
	switch op.Kind {
	case engine.OpCopy:
		if err := need(g, op.Bytes, 0); err != nil {
			return err
		}
		switch op.Dir {
		case timeline.CopyH2D, timeline.CopyD2H:
			if op.Pageable {
				return nil // Go memory, made by the copy itself
			}
			_, err := gp.host(op.Bytes)
			return err
		case timeline.CopyP2P:
			if pg := b.fit.GPU(op.Peer); pg != g {
				return need(pg, op.Bytes, 1)
			}
		}
		return need(g, op.Bytes, 1)
	case engine.OpSend, engine.OpRecv:
		bytes := max(op.Bytes, 1)
		if b.usesNCCL(rank, *op) {
			return need(g, bytes, 2)
		}
		if op.Kind != engine.OpSend {
			return nil // the receive of a copy waits for it: the send's buffers
		}
		if err := need(g, bytes, 2); err != nil {
			return err
		}
		return need(b.fit.GPU(op.Peer), bytes, 3)
	case engine.OpCollective:
		if !b.usesNCCL(rank, *op) {
			return nil
		}
		bytes := max(op.Bytes, 1)
		if err := need(g, bytes, 2); err != nil {
			return err
		}
		switch op.Coll {
		case timeline.CollAllGather, timeline.CollReduceScatter:
			return need(g, bytes, 3)
		case timeline.CollAllToAll, timeline.CollRaggedAllToAll:
			return need(g, max(bytes, sum(op.RecvSizes)), 3)
		}
		return nil
	case engine.OpGroup:
		for i := range op.Parts {
			if err := b.prepare(rank, g, &op.Parts[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
