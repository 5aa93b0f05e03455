package sim

import (
	"math"
	"slices"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// Link indices within a device's block of links.
const (
	linkHBM = iota
	linkPCIeIn
	linkPCIeOut
	linkNVOut
	linkNVIn
	linkNICOut
	linkNICIn
	linksPerDevice
)

const (
	ownerCopy = iota
	ownerP2P
	ownerInst
)

// maxHops is the most links one flow crosses: a NIC out, the fabric's switch ports, a NIC in.
const maxHops = 6

type flow struct {
	owner int32
	peer  int32 // p2p: the recv op
	kind  uint8
	nl    int8
	links [maxHops]int32
	// lpos[k] is the flow's index in the list of flows on links[k], while it is active.
	lpos [maxHops]int32
	// ways is how many rings of one collective share the flow's port (0 or 1: it is alone).
	ways uint8
	// thin is how many times below its protocol's cap the flow is paced (0 or 1: it is not): the
	// light direction of an NVLS all-gather or reduce-scatter, which moves 1/n of the heavy one's
	// bytes in the same time. Its wire bytes are its payload at the protocol's efficiency; the
	// link is idle the rest of the time, not carrying the protocol's overhead.
	thin uint8
	// mult is how many identical flows this one stands for (1 but for a collective's ring edges,
	// see startCollective): flows of one owner with the same links, bytes and cap always get the
	// same rate, so the solver counts and loads the links for each of them but keeps one state.
	mult uint16
	// rem is the bytes left at time last; the flow moves at rate (bytes/ns) since then. Progress is
	// settled lazily, when the rate changes, so that an event costs what it touches, not every flow.
	rem  float64
	rate float64
	cap  float64
	// payload is the share of the flow's wire bytes that is payload (onWire's protocol overhead).
	payload float64
	last    int64
	ver     uint32
	on      bool // active: started and not done
	// mark is the solver's epoch in which the flow joined the component being solved.
	mark uint32
	// scheduled is true once a completion for the current rate is in the heap.
	scheduled bool
}

func (s *Sim) newFlow(kind uint8, owner int32, bytes int64) int32 {
	var fi int32
	if n := len(s.freeFlows); n > 0 {
		fi = s.freeFlows[n-1]
		s.freeFlows = s.freeFlows[:n-1]
	} else {
		s.flows = append(s.flows, flow{})
		fi = int32(len(s.flows) - 1)
	}
	ver := s.flows[fi].ver + 1
	s.flows[fi] = flow{kind: kind, owner: owner, peer: -1, rem: float64(bytes), ver: ver, payload: 1, mult: 1}
	return fi
}

// route sets the links a flow crosses (l1 < 0: one link) and its rate cap (bytes per second).
func (s *Sim) route(fi, l0, l1 int32, capBps float64) {
	f := &s.flows[fi]
	f.links[0], f.nl = l0, 1
	if l1 >= 0 {
		f.links[1], f.nl = l1, 2
	}
	f.cap = capBps / 1e9
}

// settle moves a flow's remaining bytes on to s.now at its current rate.
func (s *Sim) settle(f *flow) {
	if dt := s.now - f.last; dt > 0 && f.rate > 0 {
		f.rem = max(f.rem-f.rate*float64(dt), 0)
	}
	f.last = s.now
}

func (s *Sim) dirty() {
	if !s.armed {
		s.armed = true
		s.at(s.now, evRecompute, 0, 0)
	}
}

// markDirty notes that the flows on link l changed: the next solve starts from it.
func (s *Sim) markDirty(l int32) {
	if !s.isDirty[l] {
		s.isDirty[l] = true
		s.dirtyLinks = append(s.dirtyLinks, l)
	}
}

func (s *Sim) flowStart(fi int32) {
	if len(s.blocks) > 0 {
		// A block's flows are alone on their links no more: they go first in the links' lists.
		f := &s.flows[fi]
		for k := range f.nl {
			s.splitAt(f.links[k])
		}
	}
	if s.flows[fi].kind != ownerCopy {
		s.onWire(&s.flows[fi])
	}
	f := &s.flows[fi]
	f.last, f.rate, f.scheduled, f.on = s.now, 0, false, true
	for k := range f.nl {
		l := f.links[k]
		f.lpos[k] = int32(len(s.linkFlows[l]))
		s.linkFlows[l] = append(s.linkFlows[l], fi)
		s.markDirty(l)
	}
	s.dirty()
}

// onWire turns an NCCL flow's payload into the bytes it puts on the wire. NCCL's cap on a flow
// (82% of NVLink for Simple, less for LL and LL128, the NVLS algorithm bandwidth) is what its
// protocol and algorithm make of a link it has to itself: the rest of the line rate carries
// their flags, headers and synchronisation, not another flow's data. So a flow capped at C on a
// link of line rate L moves rem·L/C wire bytes at up to L: alone it takes the time it did (its
// payload still arrives at C), and two collectives on one link each get half of what one gets
// alone, as they do on real NVLink, instead of splitting the idle 18% between them.
func (s *Sim) onWire(f *flow) {
	line := math.Inf(1)
	for k := int8(0); k < f.nl; k++ {
		if l := f.links[k]; !s.fab.rail || l < s.fab.base {
			// A switch port is many NICs' aggregate: a flow's line rate is its NICs' and GPUs'.
			line = min(line, s.lineBW(l))
		}
	}
	if f.cap > 0 && f.cap < line {
		proto := f.cap * float64(max(f.thin, 1)) // the protocol's own cap on the link
		eff := min(proto/line, 1)
		f.rem /= eff
		f.payload = eff
		f.cap /= eff // the line rate, unless thin
	}
	if f.ways > 1 {
		// A ring's share of its port: its payload reaches cap/ways when the port is otherwise idle.
		f.cap /= float64(f.ways)
	}
}

// unlink takes an active flow off the lists of its links.
func (s *Sim) unlink(fi int32) {
	f := &s.flows[fi]
	for k := range f.nl {
		l, p := f.links[k], f.lpos[k]
		list := s.linkFlows[l]
		last := list[len(list)-1]
		list[p] = last
		if last != fi {
			g := &s.flows[last]
			for j := range g.nl {
				if g.links[j] == l {
					g.lpos[j] = p
					break
				}
			}
		}
		s.linkFlows[l] = list[:len(list)-1]
		s.markDirty(l)
	}
	f.on = false
}

func (s *Sim) flowDone(fi int32) {
	s.unlink(fi)
	f := s.flows[fi]
	s.flows[fi].ver++
	s.freeFlows = append(s.freeFlows, fi)
	s.dirty()
	switch f.kind {
	case ownerCopy:
		s.finish(f.owner, true)
	case ownerP2P:
		s.finish(f.owner, true)
		s.finish(f.peer, true)
	case ownerInst:
		if len(s.a2aRuns) > 0 {
			s.a2aFlowDone(f.owner, &f)
		}
		in := &s.instPool[f.owner]
		in.flows--
		if in.flows == 0 {
			s.instDone(f.owner)
		}
	}
}

// recompute shares link bandwidth max-min fairly (progressive filling) among the flows whose
// rates a change since the last solve can affect, each flow also capped by its own protocol
// limit, and reschedules the completions of those whose rate changed. Max-min fair rates of flows
// that share no link, directly or through other flows, do not depend on each other, so only the
// connected component of the changed links is solved: a collective on one host does not re-solve
// every flow of a 4,096-GPU cluster.
func (s *Sim) recompute() {
	if s.allEnded() {
		return
	}
	s.solves++
	s.epoch++
	links, comp := s.component()
	// Each level looks only at the flows not yet frozen and the links that still have some, in
	// the order of comp and links: the same flows freeze in the same order, so the rates and
	// every residual are the same floats. An all-to-all's solve has many levels (its flows'
	// links carry different counts once some have ended): looking at the whole component at
	// each was most of a 64-rank all-to-all's CPU.
	open := append(s.open[:0], comp...)
	openLinks := append(s.openLinks[:0], links...)
	for len(open) > 0 {
		x := math.Inf(1)
		s.visits += uint64(len(openLinks) + len(open))
		still := 0
		for _, l := range openLinks {
			if l < 0 {
				var more bool
				if x, more = s.blockShares(l, x); more {
					openLinks[still] = l
					still++
				}
				continue
			}
			if s.count[l] > 0 {
				s.share[l] = s.residual[l] / float64(s.count[l])
				x = min(x, s.share[l])
				openLinks[still] = l
				still++
			}
		}
		openLinks = openLinks[:still]
		for _, fi := range open {
			if fi < 0 {
				x = s.blockCap(fi, x)
				continue
			}
			x = min(x, s.flows[fi].cap)
		}
		lim := x * (1 + 1e-9)
		// The pace of publications and cancel checks stays what a whole component a level gave.
		s.work += uint64(len(comp)+len(links)) + s.blockWork
		s.spans += uint64(len(comp)+len(links)) + s.blockWork
		kept := 0
		for _, fi := range open {
			if fi < 0 {
				if s.freezeBlock(fi, x, lim) {
					open[kept] = fi
					kept++
				}
				continue
			}
			f := &s.flows[fi]
			bottleneck := f.cap <= lim
			for k := int8(0); k < f.nl && !bottleneck; k++ {
				l := f.links[k]
				bottleneck = s.count[l] > 0 && s.share[l] <= lim
			}
			if !bottleneck {
				open[kept] = fi
				kept++
				continue
			}
			for k := int8(0); k < f.nl; k++ {
				l := f.links[k]
				if s.count[l] == int32(f.mult) {
					// The last flow on the link to be frozen: nothing reads its residual again in
					// this solve (a link's share is taken only while it has flows to fill) and the
					// next solve starts it over (visitLink). A collective alone on its links is the
					// last on each: its merged edges' seven subtractions a link were a chain of
					// dependent operations.
					s.count[l] = 0
					continue
				}
				// One subtraction per flow stood for, as for that many flows: the same floats. The
				// running value stays in a register: through memory each subtraction waited for the
				// store of the one before.
				r := s.residual[l]
				for range f.mult {
					r -= x
				}
				s.residual[l] = r
				s.count[l] -= int32(f.mult)
			}
			if f.rate == x && f.scheduled {
				continue // same rate: the completion already in the heap still holds
			}
			s.settle(f)
			if x <= 0 {
				// A link that is down (a flapping NIC): the flow stalls until it comes back.
				f.rate, f.scheduled = 0, false
				f.ver++
				continue
			}
			f.rate, f.scheduled = x, true
			f.ver++
			dt := int64(math.Ceil(f.rem / x))
			s.at(s.now+dt, evFlowDone, fi, f.ver)
		}
		open = open[:kept]
	}
	s.open, s.openLinks = open, openLinks
	s.reload(links, comp)
	s.touched, s.comp = links, comp
}

// allEnded handles the solve after completions that left every changed link without flows (a
// collective alone on its links, once a batch of its flows ends; at 1,024 GPUs two solves in
// three): there is nothing to fill, only each link's bytes so far to bank and its load to clear,
// as reload would, without visiting the links as a component first. It reports whether that was
// the case.
func (s *Sim) allEnded() bool {
	for _, l := range s.dirtyLinks {
		if l < 0 || len(s.linkFlows[l]) > 0 {
			return false // a block just started has flows
		}
	}
	// A link that had a load is in use (reload) until a window ends with its load gone and its
	// bytes reported (linkWindow), so these links are in use already, or have nothing to bank.
	lb := &s.lb
	for _, l := range s.dirtyLinks {
		s.isDirty[l] = false
		s.bank(l, s.now)
		lb.load[l], lb.util[l] = 0, 0
	}
	s.dirtyLinks = s.dirtyLinks[:0]
	return true
}

// component returns the links and active flows connected to the links marked dirty since the last
// solve (flows on a shared link, and the other links of those flows, transitively), with each
// link's residual bandwidth and flow count set for the solve.
func (s *Sim) component() (links, comp []int32) {
	links, comp = s.touched[:0], s.comp[:0]
	s.blockWork = 0
	for _, l := range s.dirtyLinks {
		if l < 0 {
			links = s.visitBlock(links, l)
			continue
		}
		s.isDirty[l] = false
		links = s.visitLink(links, l)
	}
	s.dirtyLinks = s.dirtyLinks[:0]
	for i := 0; i < len(links); i++ {
		if links[i] < 0 {
			// A block: its members, found together where their links are.
			comp = append(comp, links[i])
			continue
		}
		for _, fi := range s.linkFlows[links[i]] {
			f := &s.flows[fi]
			if f.mark == s.epoch {
				continue
			}
			f.mark = s.epoch
			comp = append(comp, fi)
			for k := range f.nl {
				links = s.visitLink(links, f.links[k])
				s.count[f.links[k]] += int32(f.mult)
			}
		}
	}
	return links, comp
}

// visitLink adds link l to the component's links the first time the solve meets it.
func (s *Sim) visitLink(links []int32, l int32) []int32 {
	if s.mark[l] != s.epoch {
		s.mark[l] = s.epoch
		s.residual[l] = s.linkBW[l]
		s.count[l] = 0
		links = append(links, l)
	}
	return links
}

// ---- collective algorithms ----

// rings returns NCCL-style rings over ranks: inside one host a single ring; across hosts one ring per
// NIC (the fewest GPUs any host contributes), ring r entering each host at a different GPU so every
// GPU's NIC carries one ring. The rings are the Sim's scratch, valid until the next call: every
// collective of a run asks for its rings, and a map and a slice per host each time were most of
// what the simulator allocated.
func (s *Sim) rings(ranks []engine.DeviceID) [][]engine.DeviceID {
	r := &s.ringScratch
	r.epoch++
	if r.epoch == 0 {
		clear(r.seen)
		r.epoch = 1
	}
	// Group the ranks by node, nodes in the order they first appear, ranks in their order.
	r.order, r.count = r.order[:0], r.count[:0]
	for _, d := range ranks {
		h := s.nodeOf(d)
		if h >= len(r.seen) {
			r.seen = append(r.seen, make([]uint32, h+1-len(r.seen))...)
			r.index = append(r.index, make([]int32, h+1-len(r.index))...)
		}
		if r.seen[h] != r.epoch {
			r.seen[h], r.index[h] = r.epoch, int32(len(r.order))
			r.order, r.count = append(r.order, h), append(r.count, 0)
		}
		r.count[r.index[h]]++
	}
	if len(r.order) == 1 {
		return append(r.out[:0], ranks)
	}
	r.pos = r.pos[:0]
	nr, at := len(ranks), int32(0)
	for _, c := range r.count {
		r.pos = append(r.pos, at)
		at += c
		nr = min(nr, int(c))
	}
	r.grouped = slices.Grow(r.grouped[:0], len(ranks))[:len(ranks)]
	for _, d := range ranks {
		k := r.index[s.nodeOf(d)]
		r.grouped[r.pos[k]] = d
		r.pos[k]++
	}
	r.flat = slices.Grow(r.flat[:0], nr*len(ranks))
	r.out = r.out[:0]
	for ring := range nr {
		from := len(r.flat)
		at := 0
		for _, c := range r.count {
			g := r.grouped[at : at+int(c)]
			at += int(c)
			for i := range g {
				r.flat = append(r.flat, g[(i+ring+1)%len(g)])
			}
		}
		r.out = append(r.out, r.flat[from:len(r.flat):len(r.flat)])
	}
	return r.out
}

// ringScratch is what rings builds its answer in, kept between calls.
type ringScratch struct {
	seen    []uint32 // seen[node] == epoch: the node has a rank in the current call
	epoch   uint32
	index   []int32 // a seen node's place in order
	order   []int   // the nodes, in the order their first rank appears
	count   []int32 // ranks per node of order
	pos     []int32
	grouped []engine.DeviceID // the ranks grouped by node, in order's order
	flat    []engine.DeviceID
	out     [][]engine.DeviceID
}

// gpuRoute routes flow fi between two GPUs of one host at eff of their link: NVLink, or without it
// the source's PCIe link out and the destination's in.
func (s *Sim) gpuRoute(fi int32, src, dst engine.DeviceID, eff float64) {
	if s.m.Interconnect == engine.PCIeOnly {
		s.route(fi, int32(src)*linksPerDevice+linkPCIeOut, int32(dst)*linksPerDevice+linkPCIeIn, s.m.PCIeBps*eff)
		return
	}
	s.route(fi, int32(src)*linksPerDevice+linkNVOut, int32(dst)*linksPerDevice+linkNVIn, s.m.NVLinkBps*eff)
}

// edge routes flow fi from src to dst as NCCL moves data (inside a GPU, between GPUs of a host,
// of an NVLink domain, through the NICs and the fabric) and returns the hop's latency.
func (s *Sim) edge(fi int32, src, dst engine.DeviceID) int64 {
	switch {
	case src == dst:
		s.route(fi, int32(src)*linksPerDevice+linkHBM, -1, s.m.HBMBps)
		return 0
	case s.nodeOf(src) == s.nodeOf(dst):
		s.gpuRoute(fi, src, dst, s.m.NCCLNVLinkEff)
		return s.m.NVLinkLatencyNs
	default:
		return s.netRoute(fi, src, dst)
	}
}

// ringEdges is how a ring collective of op over ranks moves its bytes: its rings, whether they are
// chains (broadcast and reduce: a ring's last edge carries nothing), and the bytes each ring moves
// over one edge (the ring's bytes per edge, all-reduce's 2(n−1)/n of the buffer, split among the
// rings). The simulator and the what-if's fault prediction (LinkFaults.Collective) both take it from here.
func (s *Sim) ringEdges(op timeline.CollOp, ranks []engine.DeviceID, bytes int64) (rings [][]engine.DeviceID, chain bool, share int64) {
	fn := float64(len(ranks))
	perEdge := float64(bytes)
	switch op {
	case timeline.CollAllReduce:
		perEdge = 2 * (fn - 1) / fn * float64(bytes)
	case timeline.CollAllGather, timeline.CollReduceScatter:
		perEdge = (fn - 1) / fn * float64(bytes)
	}
	rings = s.rings(ranks)
	chain = op == timeline.CollBroadcast || op == timeline.CollReduce
	share = int64(math.Ceil(perEdge / float64(len(rings))))
	return rings, chain, share
}

// startCollective expands a collective whose ranks have all arrived into flows. NCCL's cost model
// (nccl.go) chooses the algorithm, protocol and channels and gives the latency; the flows carry the
// algorithm's traffic through the links they share with everything else, each capped at the
// bandwidth the chosen (algorithm, protocol) reaches: ring and tree move the ring's bytes per edge
// at the chosen bandwidth's share of ring/Simple's, NVLS all-reduce moves each rank's buffer to and
// from the switch (and, across hosts, each rank's share over its NIC), NVLS all-gather and
// reduce-scatter a rank's share one way and the whole buffer the other.
func (s *Sim) startCollective(ii int32) {
	in := &s.instPool[ii]
	o := s.op(in.ops[0])
	op, ranks, bytes := o.op.Coll, o.op.Ranks, o.op.Bytes
	n := len(ranks)
	if n <= 1 || (bytes == 0 && op != timeline.CollRaggedAllToAll) {
		s.at(s.now+s.m.NCCLBaseNs, evCollStart, ii, in.gen)
		return
	}
	if !ncclTuned(op) {
		s.startAllToAll(ii)
		return
	}
	t := s.ncclTopo(ranks)
	c := t.choose(op, bytes, o.op.NCCLAlgo, o.op.NCCLProto)
	aux := timeline.PackNCCL(c.Algo, c.Proto, c.Channels)
	for _, x := range in.ops {
		s.op(x).aux = aux
	}
	lat := int64(math.Round(c.LatUs*1e3)) + s.fabricLat(ranks, t.Nodes, op, c.Algo)
	s.pending = s.pending[:0]
	switch {
	case c.Algo == timeline.AlgoNVLS && (op == timeline.CollAllGather || op == timeline.CollReduceScatter):
		s.nvlsShareFlows(ii, op, t.runBw(op, c)*1e9)
		s.startFlows(ii, lat)
		return
	case c.Algo == timeline.AlgoNVLS || c.Algo == timeline.AlgoNVLSTree:
		s.nvlsFlows(ii, t, c.AlgBw*1e9)
		s.startFlows(ii, lat)
		return
	}
	_, ringBw, _ := t.model(op, timeline.AlgoRing, timeline.ProtoSimple)
	scale := c.AlgBw / ringBw
	rings, chain, share := s.ringEdges(op, ranks, bytes)
	if s.ringBlock(ii, rings, chain, share, scale, lat) {
		return
	}
	s.edges.next(len(s.hosts))
	for _, ring := range rings {
		for i := range ring {
			if chain && i == len(ring)-1 {
				break
			}
			src, dst := ring[i], ring[(i+1)%len(ring)]
			shared := len(rings) > 1 && s.nodeOf(src) == s.nodeOf(dst)
			if shared {
				// The rings enter a node at different GPUs but walk its GPUs in one order, so
				// most of a node's edges are the same GPU pair in every ring: the same links,
				// bytes and cap, hence always the same rate. They are one flow standing for as
				// many (a 1,024-GPU ring all-reduce has 2,048 flows instead of 8,192).
				if fi := s.edges.find(src, dst); fi >= 0 && s.flows[fi].mult < math.MaxUint16 {
					s.flows[fi].mult++
					continue
				}
			}
			fi := s.newFlow(ownerInst, ii, share)
			s.edge(fi, src, dst)
			s.flows[fi].cap *= scale
			if shared {
				// NCCL's channels inside a host are the same whichever NIC a ring leaves by: the
				// rings share the intra-host bandwidth NCCL's graph gives them, rather than each
				// getting all of it (NCCL's ring bandwidth is the minimum of intra and inter).
				s.flows[fi].ways = uint8(min(len(rings), 255))
				s.edges.note(src, dst, fi)
			}
			s.pending = append(s.pending, fi)
		}
	}
	s.startFlows(ii, lat)
}

// edgeScratch remembers, for one collective being expanded, the flow of each GPU's edge inside its
// node: the rings that take the same pair of GPUs share that flow (startCollective).
type edgeScratch struct {
	seen  []uint32 // seen[src] == epoch: dst[src] and fi[src] are this collective's
	dst   []engine.DeviceID
	fi    []int32
	epoch uint32
	off   bool // every edge its own flow (tests of the merge)
}

// next starts a collective over n devices: nothing is remembered.
func (e *edgeScratch) next(n int) {
	if len(e.seen) < n {
		e.seen, e.dst, e.fi = make([]uint32, n), make([]engine.DeviceID, n), make([]int32, n)
		e.epoch = 0
	}
	e.epoch++
	if e.epoch == 0 {
		clear(e.seen)
		e.epoch = 1
	}
}

// find returns the flow of the edge src → dst noted in this collective, or -1.
func (e *edgeScratch) find(src, dst engine.DeviceID) int32 {
	if e.seen[src] == e.epoch && e.dst[src] == dst && !e.off {
		return e.fi[src]
	}
	return -1
}

// note remembers fi as the flow of the edge src → dst, unless src has one already (a GPU's edges
// inside a node all go to the same next GPU; another would be a different pair, not merged).
func (e *edgeScratch) note(src, dst engine.DeviceID, fi int32) {
	if e.seen[src] != e.epoch {
		e.seen[src], e.dst[src], e.fi[src] = e.epoch, dst, fi
	}
}

// nvlsFlows adds NVLS traffic: each rank sends its buffer into the NVSwitch and receives the
// reduced result (its own NVLink out and in) at the NVLS algorithm bandwidth; across hosts each
// rank, the head of 1/ppn of the buffer, also carries that share through its NIC both ways, once
// on 2 hosts and twice on more: NCCL's NVLS-tree spans the hosts with a double binary tree, in
// which a host is an inner node (2 children and a parent) of one tree and a leaf of the other.
func (s *Sim) nvlsFlows(ii int32, t ncclTopo, algBps float64) {
	in := &s.instPool[ii]
	ppn := int64(t.Ranks / t.Nodes)
	hops := int64(1)
	if t.Nodes > 2 {
		hops = 2
	}
	// Across rail groups the tree's parent or children are behind the spine: each head's share
	// leaves by its leaf's uplink and arrives by its downlink.
	spine := s.spansGroups(s.op(in.ops[0]).op.Ranks)
	for _, x := range in.ops {
		o := s.op(x)
		d := int32(o.op.Device) * linksPerDevice
		fi := s.newFlow(ownerInst, ii, o.op.Bytes)
		s.route(fi, d+linkNVOut, d+linkNVIn, algBps)
		s.pending = append(s.pending, fi)
		if t.Nodes > 1 {
			fi := s.newFlow(ownerInst, ii, hops*o.op.Bytes/ppn)
			s.route(fi, d+linkNICOut, d+linkNICIn, s.m.NICBps*s.m.NCCLNICEff)
			if spine {
				h, r := s.topo.HostOf(o.op.Device), int(o.op.Device)%s.topo.GPUsPerHost
				f := &s.flows[fi]
				f.links[1], f.links[2], f.links[3], f.nl = s.leafLink(h, r, true), s.leafLink(h, r, false), d+linkNICIn, 4
			}
			s.pending = append(s.pending, fi)
		}
	}
}

// nvlsShareFlows adds the traffic of an NVLS all-gather or reduce-scatter inside one host (NCCL's
// src/device/all_gather.h and reduce_scatter.h, one node). All-gather: each rank stores its share
// (S/n of the gathered S) once to the switch's multicast address, which writes it into every rank,
// itself included: S/n out of each rank's NVLink and S into it. Reduce-scatter: each rank reads its
// share with multimem.ld_reduce, for which the switch pulls that share from every rank, itself
// included: S out of each NVLink and S/n into it. The heavy direction moves at bps; the light one,
// fed by or feeding it, at bps/n, so both end together, its link busy 1/n of the time.
func (s *Sim) nvlsShareFlows(ii int32, op timeline.CollOp, bps float64) {
	in := &s.instPool[ii]
	for _, x := range in.ops {
		o := s.op(x)
		d := int32(o.op.Device) * linksPerDevice
		n := len(o.op.Ranks)
		heavy, light := d+linkNVIn, d+linkNVOut
		if op == timeline.CollReduceScatter {
			heavy, light = light, heavy
		}
		fi := s.newFlow(ownerInst, ii, o.op.Bytes)
		s.route(fi, heavy, -1, bps)
		s.pending = append(s.pending, fi)
		fi = s.newFlow(ownerInst, ii, o.op.Bytes/int64(n))
		s.route(fi, light, -1, bps/float64(n))
		s.flows[fi].thin = uint8(min(n, 255))
		s.pending = append(s.pending, fi)
	}
}

// ncclTopo describes the communicator over ranks to the tuner: its nodes, the bandwidth of the GPU
// link (NVLink, or PCIe on a box without it) and the NICs' share per GPU, from the model.
func (s *Sim) ncclTopo(ranks []engine.DeviceID) ncclTopo {
	s.hostEpoch++
	if s.hostEpoch == 0 {
		clear(s.hostSeen)
		s.hostEpoch = 1
	}
	nodes := 0
	for _, r := range ranks {
		h := s.nodeOf(r)
		if h >= len(s.hostSeen) {
			s.hostSeen = append(s.hostSeen, make([]uint32, h+1-len(s.hostSeen))...)
		}
		if s.hostSeen[h] != s.hostEpoch {
			s.hostSeen[h] = s.hostEpoch
			nodes++
		}
	}
	m := &s.m
	ring, hw := m.NVLinkBps*m.NCCLNVLinkEff/1e9, hwNVLink
	if m.Interconnect == engine.PCIeOnly {
		ring, hw = m.PCIeBps*m.NCCLNVLinkEff/1e9, hwPCI
	}
	ppn := len(ranks) / nodes
	t := ncclTopo{Ranks: len(ranks), Nodes: nodes, IntraHW: hw, Hopper: m.Hopper, AMD: m.CPU == engine.CPUAMD,
		Channels: max(m.NCCLChannels, 1), RingBus: ring, TreeBus: ring, NVLS: m.NVLS, NVLSTree: m.NVLSTree,
		NVLSChannels: max(m.NVLSChannels, 1), NetOverhead: m.NetOverheadUs}
	if nodes > 1 {
		t.InterBus = float64(ppn) * m.NICBps * m.NCCLNICEff / 1e9
	}
	if m.NVLS {
		// NCCL's NVLS graph has one channel per GPU of a node (its head); every head's channel pulls
		// from each GPU's NVLink and twice from its own, and the search settles on the highest of
		// its speed steps that fits (8×H100: 369.9 GB/s / 9 → 40 GB/s). Across nodes each head
		// sends through its GPU's NIC share.
		t.NVLSHeads = ppn
		t.NVLSIntra = speedStep(ring/float64(ppn+1), sm90SpeedIntra)
		if nodes > 1 {
			t.NVLSInter = speedStep(t.InterBus/float64(ppn), sm90SpeedInter)
		}
	}
	return t
}

// startFlows schedules the flows collected in s.pending to start after lat, owned by instance ii.
func (s *Sim) startFlows(ii int32, lat int64) {
	in := &s.instPool[ii]
	in.flows = int32(len(s.pending))
	if in.flows == 0 {
		s.at(s.now+lat, evCollStart, ii, in.gen)
		return
	}
	// One item starts them all: a collective over 1,024 ranks has thousands of flows, and an item
	// each filled the heap. Their items had consecutive sequence numbers, so nothing ran between
	// them, and what a start schedules comes after the last of them either way: starting them in
	// turn under one item keeps the order of everything.
	in.starts = append(in.starts[:0], s.pending...)
	s.formBlock(ii)
	s.at(s.now+lat, evCollFlows, ii, in.gen)
}

func (s *Sim) startAllToAll(ii int32) {
	in := &s.instPool[ii]
	if s.scheduledAllToAll(s.op(in.ops[0]).op.Ranks) {
		s.startScheduledAllToAll(ii)
		return
	}
	var maxHop int64
	s.pending = s.pending[:0]
	for _, x := range in.ops {
		o := s.op(x)
		ranks := o.op.Ranks
		n := len(ranks)
		for j, dst := range ranks {
			if dst == o.op.Device {
				continue
			}
			var b int64
			if sizes := o.op.sizes(); sizes != nil {
				b = sizes[j]
			} else {
				b = o.op.Bytes / int64(n)
			}
			if b <= 0 {
				continue
			}
			fi := s.newFlow(ownerInst, ii, b)
			maxHop = max(maxHop, s.edge(fi, o.op.Device, dst))
			s.pending = append(s.pending, fi)
		}
	}
	s.warnAllToAll(len(in.ops), len(s.pending), false)
	s.startFlows(ii, s.m.NCCLBaseNs+maxHop)
}
