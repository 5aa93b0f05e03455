//go:build cuda

package cuda

import (
	"runtime"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

func (b *Backend) copy(rank engine.DeviceID, g int, st streamState, op engine.StreamOp) error {
	gp := b.gpus[g]
	dst, err := gp.scratch(op.Bytes, 0)
	if err != nil {
		return err
	}
	switch op.Dir {
	case timeline.CopyH2D, timeline.CopyD2H:
		var h unsafe.Pointer
		if op.Pageable {
			buf := make([]byte, op.Bytes) // pageable: Go memory, staged by the driver
			h = unsafe.Pointer(&buf[0])
			defer runtime.KeepAlive(buf)
		} else if h, err = gp.host(op.Bytes); err != nil {
			return err
		}
		if op.Dir == timeline.CopyH2D {
			return cu.MemcpyHtoDAsync(dst, h, op.Bytes, st.s)
		}
		return cu.MemcpyDtoHAsync(h, dst, op.Bytes, st.s)
	case timeline.CopyP2P:
		pg := b.fit.GPU(op.Peer)
		if pg != g { // a real peer copy; with --fit on one GPU it is a device-to-device copy
			pdst, err := b.gpus[pg].scratch(op.Bytes, 1)
			if err != nil {
				return err
			}
			return cu.MemcpyPeerAsync(pdst, b.gpus[pg].ctx, dst, gp.ctx, op.Bytes, st.s)
		}
		fallthrough
	default:
		src, err := gp.scratch(op.Bytes, 1)
		if err != nil {
			return err
		}
		return cu.MemcpyDtoDAsync(dst, src, op.Bytes, st.s)
	}
}
