package sim

import (
	"math"

	"github.com/xfertop/xfertop/engine"
)

// P2PPrediction is the engine's time for one send and its receive alone on the machine: the
// simulator's latency for the pair (NCCL's fixed kernel cost and the path's hops) and the rate
// its flow reaches with the links to itself (NCCL's share of NVLink within a node, of the NIC
// across nodes, HBM on one GPU).
type P2PPrediction struct {
	LatencyNs int64
	Bps       float64 // bytes per second
}

// TimeNs is the predicted time of bytes, ns.
func (p P2PPrediction) TimeNs(bytes int64) float64 {
	return float64(p.LatencyNs) + float64(bytes)/p.Bps*1e9
}

// PredictP2P returns the engine's latency and rate for a send from src to dst on topo under
// model m, routed as the simulator routes it (p2pRoute). Alone on the machine a send takes this
// time; sharing links it takes longer. src and dst must be devices of topo.
func PredictP2P(m Model, topo engine.Topology, src, dst engine.DeviceID) P2PPrediction {
	s := &Sim{m: m, topo: topo, flows: make([]flow, 1)}
	s.setFabric(int32(topo.Devices() * linksPerDevice))
	lat := s.p2pRoute(0, src, dst)
	f := &s.flows[0]
	rate := math.Inf(1)
	if f.cap > 0 {
		rate = f.cap * 1e9
	}
	for k := int8(0); k < f.nl; k++ {
		rate = min(rate, s.nominalBps(f.links[k]))
	}
	return P2PPrediction{LatencyNs: lat, Bps: rate}
}

// nominalBps is link l's bandwidth as New sets it, bytes per second, without building the table.
func (s *Sim) nominalBps(l int32) float64 {
	if s.fab.rail && l >= s.fab.base {
		// A switch port is many NICs' aggregate: alone, a flow's rate is its NICs' and GPUs'.
		return math.Inf(1)
	}
	switch l % linksPerDevice {
	case linkHBM:
		return s.m.HBMBps
	case linkPCIeIn, linkPCIeOut:
		return s.m.PCIeBps
	case linkNVOut, linkNVIn:
		return s.m.NVLinkBps
	default:
		return s.m.NICBps
	}
}
