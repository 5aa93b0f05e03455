package sim

import (
	"math/bits"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// The scale-out fabric (topology key fabric). With kind rail, NIC i of every host sits on rail i's
// leaf switch; a leaf serves a rail group of hosts, and leaves are joined through spines. Each
// leaf has two links in the solver's table after the devices' own: its uplink towards the spines
// and its downlink from them, each of the group's NIC bandwidth on the rail divided by the
// oversubscription. The spine layer is taken as non-blocking between leaves, so a flow between
// hosts of different rail groups crosses its source leaf's uplink and its destination leaf's
// downlink; within a group the leaf switches it at line rate.
//
// Traffic between hosts stays on one rail, as NCCL keeps it with PXN: a flow from GPU a to GPU b
// on another host leaves by the NIC of b's rail, reaching it over NVLink from a when a is on
// another rail. So an all-to-all or a ring that enters a host at another GPU than it left the last
// one crosses NVLink once more, and never a rail-to-rail path the fabric does not have.

// fabric is the simulator's view of the topology's fabric.
type fabric struct {
	rail  bool
	base  int32 // the first leaf link in linkBW
	rails int   // leaves per rail group: one per GPU of a host (its NIC share)
	hop   int64 // ns per switch hop
	// nodeGPUs is the GPUs of what NCCL takes as a node: a host, or a larger NVLink domain.
	nodeGPUs int
}

// initFabric appends the leaf links to the link table.
func (s *Sim) initFabric() {
	t := s.topo
	if !s.setFabric(int32(len(s.linkBW))) {
		return
	}
	port := t.LeafPortBps() / 1e9
	for range t.RailGroups() * t.GPUsPerHost {
		s.linkBW = append(s.linkBW, port, port)
	}
}

// setFabric sets s.fab from the topology, its leaf links numbered from base; it reports whether
// the topology has a rail fabric (leaf links).
func (s *Sim) setFabric(base int32) bool {
	t := s.topo
	s.fab.nodeGPUs = t.DomainGPUs()
	if t.Fabric.Kind != engine.FabricRail || t.Hosts < 2 {
		return false
	}
	s.fab.rail, s.fab.base, s.fab.rails, s.fab.hop = true, base, t.GPUsPerHost, t.Fabric.HopLatencyNs
	return true
}

// leafLink returns the uplink (up) or downlink of host h's leaf on rail r.
func (s *Sim) leafLink(h, r int, up bool) int32 {
	l := s.fab.base + 2*int32(s.topo.RailGroupOf(h)*s.fab.rails+r)
	if !up {
		l++
	}
	return l
}

// nodeOf is what NCCL takes as a node: a host, or the NVLink domain holding it.
func (s *Sim) nodeOf(d engine.DeviceID) int {
	if s.fab.nodeGPUs == 0 { // a Sim not made by New (tests of the tuner)
		return s.topo.DomainOf(d)
	}
	return int(d) / s.fab.nodeGPUs
}

// netRoute routes flow fi from src to dst on another node through the network, and returns the
// hop's latency. Without a rail fabric the two GPUs' NICs are all it crosses.
func (s *Sim) netRoute(fi int32, src, dst engine.DeviceID) int64 {
	capBps := s.m.NICBps * s.m.NCCLNICEff
	if !s.fab.rail {
		s.route(fi, int32(src)*linksPerDevice+linkNICOut, int32(dst)*linksPerDevice+linkNICIn, capBps)
		return s.m.NICLatencyNs
	}
	g := s.topo.GPUsPerHost
	rail := int(dst) % g
	hs, hd := int(src)/g, int(dst)/g
	via := int32(hs*g + rail) // src's host's GPU on dst's rail
	f := &s.flows[fi]
	f.nl = 0
	add := func(l int32) { f.links[f.nl] = l; f.nl++ }
	lat := s.m.NICLatencyNs + s.fab.hop
	if via != int32(src) {
		add(int32(src)*linksPerDevice + linkNVOut)
		add(via*linksPerDevice + linkNVIn)
		lat += s.m.NVLinkLatencyNs
	}
	add(via*linksPerDevice + linkNICOut)
	if s.topo.RailGroupOf(hs) != s.topo.RailGroupOf(hd) {
		add(s.leafLink(hs, rail, true))
		add(s.leafLink(hd, rail, false))
		lat += 2 * s.fab.hop
	}
	add(int32(dst)*linksPerDevice + linkNICIn)
	f.cap = capBps / 1e9
	return lat
}

// fabricLat is the latency a rail fabric's switches add to a collective over ranks on nodes nodes:
// NCCL's network steps of the algorithm (ring: 2(nodes−1) for all-reduce, nodes−1 otherwise; tree
// and NVLS-tree: 2·log2(nodes)) each through one leaf, or through leaf, spine and leaf when the
// communicator spans rail groups (its slowest hop sets each step's pace).
func (s *Sim) fabricLat(ranks []engine.DeviceID, nodes int, op timeline.CollOp, algo timeline.NCCLAlgo) int64 {
	if !s.fab.rail || nodes < 2 {
		return 0
	}
	hops := int64(1)
	if s.spansGroups(ranks) {
		hops = 3
	}
	steps := int64(nodes - 1)
	switch {
	case algo == timeline.AlgoTree || algo == timeline.AlgoNVLSTree:
		steps = 2 * int64(bits.Len(uint(nodes-1)))
	case op == timeline.CollAllReduce:
		steps = 2 * int64(nodes-1)
	}
	return steps * hops * s.fab.hop
}

// spansGroups reports whether ranks live in more than one rail group.
func (s *Sim) spansGroups(ranks []engine.DeviceID) bool {
	if !s.fab.rail {
		return false
	}
	g0 := s.topo.RailGroupOf(s.topo.HostOf(ranks[0]))
	for _, r := range ranks {
		if s.topo.RailGroupOf(s.topo.HostOf(r)) != g0 {
			return true
		}
	}
	return false
}

// emitPortBytes reports what fabric link l (a leaf's uplink or downlink) carried, and how long it
// was busy.
func (s *Sim) emitPortBytes(l int32, from, to, bytes, busy int64) {
	i := int(l - s.fab.base)
	leaf, dir := i/2, i%2
	s.emit(timeline.Event{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(timeline.LinkFabric, dir), Start: from, End: to,
		Bytes: bytes, Op: uint64(busy), Device: timeline.NoDevice, Peer: timeline.NoDevice, Aux: timeline.PackPort(leaf/s.fab.rails, leaf%s.fab.rails)})
}
