package sim

import (
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// ---- copies ----

func (s *Sim) startCopy(oi int32) {
	o := s.op(oi)
	d := int32(o.op.Device)
	b := d * linksPerDevice
	if o.op.Bytes <= 0 {
		s.atOp(s.now+s.m.CopyLatencyNs, evOpDone, s.ref(oi))
		return
	}
	fi := s.newFlow(ownerCopy, oi, o.op.Bytes)
	switch o.op.Dir {
	case timeline.CopyH2D:
		c := s.m.PCIeBps
		if o.op.Pageable {
			c = s.m.PageableBps
		}
		s.route(fi, b+linkPCIeIn, -1, c)
	case timeline.CopyD2H:
		c := s.m.PCIeBps
		if o.op.Pageable {
			c = s.m.PageableBps
		}
		s.route(fi, b+linkPCIeOut, -1, c)
	case timeline.CopyP2P:
		if o.op.Peer == o.op.Device || o.op.Peer < 0 {
			s.route(fi, b+linkHBM, -1, s.m.HBMBps)
		} else {
			s.gpuRoute(fi, o.op.Device, o.op.Peer, s.m.P2PCopyEff)
			if s.m.Interconnect == engine.NVLinkMesh {
				s.flows[fi].cap /= float64(max(s.topo.GPUsPerHost-1, 1))
			}
		}
	default:
		s.route(fi, b+linkHBM, -1, s.m.HBMBps)
	}
	s.at(s.now+s.m.CopyLatencyNs, evFlowStart, fi, 0)
}
