package sim

import (
	"fmt"
	"math"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/timeline"
)

// LinkFaults are a run's link faults (nic_slow, nic_flap, nvlink_slow, pcie_gen, fabric_slow) on
// its topology, as the simulator applies them: the same links, the same share of their rate at
// each instant. With them, Collective and P2P time a collective or a send alone on the machine
// as PredictNCCL and PredictP2P do on a healthy one: what a replay of a recording made with
// faults needs to reproduce it, or to heal one of them. Faults of other kinds (a GPU's, a host
// thread's, a hang) are not links' and are left out (LinkKind says which are).
type LinkFaults struct {
	s     *Sim
	list  []fault.Fault
	links [][]int32
	on    map[int32]bool // every link a fault changes
	// hosts are the hosts whose GPUs' links a fault changes: a collective with no rank on one
	// crosses none of them (its flows leave and enter by its ranks' hosts' links), and is not
	// expanded into flows to find that out. fabric true: a leaf switch's ports are slowed, which
	// flows between any hosts may cross.
	hosts  map[int]bool
	fabric bool
}

// LinkKind reports whether the simulator models fault kind k as a change of links' rates.
func LinkKind(k fault.Kind) bool {
	switch k {
	case fault.NICSlow, fault.NICFlap, fault.NVLinkSlow, fault.PCIeGen, fault.FabricSlow:
		return true
	}
	return false
}

// NewLinkFaults binds the link faults of fs to topo under model m (the others are skipped).
func NewLinkFaults(m Model, topo engine.Topology, fs []fault.Fault) (*LinkFaults, error) {
	s := &Sim{m: m, topo: topo}
	s.setFabric(int32(topo.Devices() * linksPerDevice))
	lf := &LinkFaults{s: s, on: map[int32]bool{}, hosts: map[int]bool{}}
	for i, f := range fs {
		if !LinkKind(f.Kind) {
			continue
		}
		if err := f.Bind(topo); err != nil {
			return nil, fmt.Errorf("fault %d (%s): %w", i+1, f, err)
		}
		ls := s.faultLinks(&f)
		lf.list, lf.links = append(lf.list, f), append(lf.links, ls)
		if f.Kind == fault.FabricSlow {
			lf.fabric = true
		}
		for _, d := range f.Devices(topo) {
			lf.hosts[topo.HostOf(d)] = true
		}
		for _, l := range ls {
			lf.on[l] = true
		}
	}
	return lf, nil
}

// Empty reports whether no link fault is bound.
func (lf *LinkFaults) Empty() bool { return lf == nil || len(lf.list) == 0 }

// line is link l's healthy line rate, bytes per ns.
func (lf *LinkFaults) line(l int32) float64 {
	s := lf.s
	if s.fab.rail && l >= s.fab.base {
		return s.topo.LeafPortBps() / 1e9
	}
	return s.nominalBps(l) / 1e9
}

// nextChange is the first instant after t at which a fault's factor on any link changes (its
// onset, its end, a flap's turn), or MaxInt64.
func (lf *LinkFaults) nextChange(t int64) int64 {
	next := int64(math.MaxInt64)
	for i := range lf.list {
		f := &lf.list[i]
		if t < f.At {
			next = min(next, f.At)
			continue
		}
		if f.For > 0 {
			if end := f.At + f.For; t < end {
				next = min(next, end)
			} else {
				continue
			}
		}
		if f.Kind == fault.NICFlap {
			half := max(f.Period/2, 1)
			next = min(next, f.At+((t-f.At)/half+1)*half)
		}
	}
	return next
}

// predFlow is one flow of a collective or send, as the simulator puts it on the wire (onWire):
// its wire bytes, its rate cap on the wire and its links.
type predFlow struct {
	wire, cap float64 // bytes; bytes per ns
	links     []int32
}

// wireFlow turns scratch flow fi into a predFlow as onWire does: a flow capped below its links'
// line rate moves its payload inflated by the protocol's overhead at up to the line rate.
func (lf *LinkFaults) wireFlow(fi int32) predFlow {
	s := lf.s
	f := &s.flows[fi]
	p := predFlow{wire: f.rem, cap: f.cap, links: append([]int32(nil), f.links[:f.nl]...)}
	line := math.Inf(1)
	for _, l := range p.links {
		if !s.fab.rail || l < s.fab.base {
			line = min(line, lf.line(l))
		}
	}
	if p.cap > 0 && p.cap < line {
		eff := min(p.cap*float64(max(f.thin, 1))/line, 1)
		p.wire /= eff
		p.cap /= eff
	}
	if f.ways > 1 {
		p.cap /= float64(f.ways)
	}
	if p.cap <= 0 {
		p.cap = math.Inf(1)
	}
	return p
}

// finish is when flows, all starting at t, would end alone on the machine: each at the lesser of
// its cap and its links' rate shared evenly among the flows crossing them, that rate healthy or
// (faulty) with the faults in effect, which change only at nextChange. A link a fault takes down
// (factor 0) holds its flows until it comes back; one down for ever gives MaxInt64.
func (lf *LinkFaults) finish(flows []predFlow, t int64, faulty bool) int64 {
	load := map[int32]int{}
	for _, f := range flows {
		for _, l := range f.links {
			load[l]++
		}
	}
	end := t
	for _, f := range flows {
		rem, now := f.wire, t
		for rem > 0 {
			rate := f.cap
			for _, l := range f.links {
				bw := lf.line(l)
				if faulty && lf.on[l] {
					bw *= factorAt(lf.list, lf.links, l, now)
				}
				rate = min(rate, bw/float64(load[l]))
			}
			next := int64(math.MaxInt64)
			if faulty {
				next = lf.nextChange(now)
			}
			if rate > 0 && (next == math.MaxInt64 || rem <= rate*float64(next-now)) {
				now += int64(math.Ceil(rem / rate))
				break
			}
			if next == math.MaxInt64 {
				return math.MaxInt64
			}
			rem -= rate * float64(next-now)
			now = next
		}
		end = max(end, now)
	}
	return end
}

// touches reports whether a flow of flows crosses a faulted link.
func (lf *LinkFaults) touches(flows []predFlow) bool {
	for _, f := range flows {
		for _, l := range f.links {
			if lf.on[l] {
				return true
			}
		}
	}
	return false
}

// extra is how much longer than healthy flows starting at t take with the faults (0 when no
// flow crosses a faulted link), and whether they ever end.
func (lf *LinkFaults) extra(flows []predFlow, t int64) (int64, bool) {
	if !lf.touches(flows) {
		return 0, true
	}
	f := lf.finish(flows, t, true)
	if f == math.MaxInt64 {
		return 0, false
	}
	return max(0, f-lf.finish(flows, t, false)), true
}

// Collective is how much longer than PredictNCCL's p (asked of the same op, ranks and bytes) the
// collective takes alone on the machine when it starts at t with the faults: its flows, routed
// as the simulator routes them (rings through NVLink and the NICs, NVLS through the switch and
// the NICs), slowed where they cross a faulted link. touched is false when none does (or op is
// one the NCCL model does not time: all-to-all); ends is false when a link stays down for ever.
func (lf *LinkFaults) Collective(op timeline.CollOp, ranks []engine.DeviceID, bytes int64, p NCCLPrediction, t int64) (extra int64, touched, ends bool) {
	if lf.Empty() || len(ranks) < 2 || bytes <= 0 || !ncclTuned(op) {
		return 0, false, true
	}
	if !lf.fabric {
		near := false
		for _, d := range ranks {
			if lf.hosts[lf.s.topo.HostOf(d)] {
				near = true
				break
			}
		}
		if !near {
			return 0, false, true
		}
	}
	flows := lf.collFlows(op, ranks, bytes, p)
	if !lf.touches(flows) {
		return 0, false, true
	}
	x, ends := lf.extra(flows, t)
	return x, true, ends
}

// collFlows are the flows startCollective gives collective op of bytes over ranks under p's
// choice, each edge of each ring its own flow.
func (lf *LinkFaults) collFlows(op timeline.CollOp, ranks []engine.DeviceID, bytes int64, p NCCLPrediction) []predFlow {
	s := lf.s
	s.flows = s.flows[:0]
	var out []predFlow
	add := func(fi int32) { out = append(out, lf.wireFlow(fi)) }
	t := s.ncclTopo(ranks)
	switch {
	case p.Algo == timeline.AlgoNVLS && (op == timeline.CollAllGather || op == timeline.CollReduceScatter):
		n := len(ranks)
		for _, d := range ranks {
			b := int32(d) * linksPerDevice
			heavy, light := b+linkNVIn, b+linkNVOut
			if op == timeline.CollReduceScatter {
				heavy, light = light, heavy
			}
			fi := s.newFlow(ownerInst, 0, bytes)
			s.route(fi, heavy, -1, p.AlgBwGBps*1e9)
			add(fi)
			fi = s.newFlow(ownerInst, 0, bytes/int64(n))
			s.route(fi, light, -1, p.AlgBwGBps*1e9/float64(n))
			s.flows[fi].thin = uint8(min(n, 255))
			add(fi)
		}
		return out
	case p.Algo == timeline.AlgoNVLS || p.Algo == timeline.AlgoNVLSTree:
		ppn := int64(t.Ranks / t.Nodes)
		hops := int64(1)
		if t.Nodes > 2 {
			hops = 2
		}
		spine := s.spansGroups(ranks)
		for _, d := range ranks {
			b := int32(d) * linksPerDevice
			fi := s.newFlow(ownerInst, 0, bytes)
			s.route(fi, b+linkNVOut, b+linkNVIn, p.TunerBwGBps*1e9)
			add(fi)
			if t.Nodes > 1 {
				fi := s.newFlow(ownerInst, 0, hops*bytes/ppn)
				s.route(fi, b+linkNICOut, b+linkNICIn, s.m.NICBps*s.m.NCCLNICEff)
				if spine {
					h, r := s.topo.HostOf(d), int(d)%s.topo.GPUsPerHost
					f := &s.flows[fi]
					f.links[1], f.links[2], f.links[3], f.nl = s.leafLink(h, r, true), s.leafLink(h, r, false), b+linkNICIn, 4
				}
				add(fi)
			}
		}
		return out
	}
	_, ringBw, _ := t.model(op, timeline.AlgoRing, timeline.ProtoSimple)
	scale := p.TunerBwGBps / ringBw
	rings, chain, share := s.ringEdges(op, ranks, bytes)
	for _, ring := range rings {
		for i := range ring {
			if chain && i == len(ring)-1 {
				break
			}
			src, dst := ring[i], ring[(i+1)%len(ring)]
			fi := s.newFlow(ownerInst, 0, share)
			s.edge(fi, src, dst)
			// Each ring's edge is a flow of its own, where the simulator merges the rings' edges
			// between one pair of GPUs into one flow with each its share of the port (ways):
			// finish shares the port evenly among them, to the same rate.
			s.flows[fi].cap *= scale
			add(fi)
		}
	}
	return out
}

// P2P is how much longer than PredictP2P's time a send of bytes from src to dst starting at t
// takes alone on the machine with the faults; touched is false when its path crosses no faulted
// link, ends false when a link on it stays down for ever.
func (lf *LinkFaults) P2P(src, dst engine.DeviceID, bytes int64, t int64) (extra int64, touched, ends bool) {
	if lf.Empty() || bytes <= 0 {
		return 0, false, true
	}
	s := lf.s
	s.flows = s.flows[:0]
	fi := s.newFlow(ownerP2P, 0, bytes)
	s.p2pRoute(fi, src, dst)
	flows := []predFlow{lf.wireFlow(fi)}
	if !lf.touches(flows) {
		return 0, false, true
	}
	x, ends := lf.extra(flows, t)
	return x, true, ends
}
