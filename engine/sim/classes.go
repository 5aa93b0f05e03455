package sim

import (
	"math"

	"github.com/xfertop/xfertop/engine"
)

// Classes of flows. A collective's flows that start alone on their links (no other flow on any
// of them, each link carrying one of its flows) and share their bytes, cap and links'
// bandwidths get the same rate at every level of progressive filling, start together and end
// together: a ring collective over 1,024 GPUs is 2,048 such flows in two classes (its NVLink
// edges and its NIC edges). So the collective is started as a block of classes: each class is one
// flow's state standing for all its members, solved once, with one completion item, and its
// links are touched only to set and bank their loads. A ring's edges are never made flows
// (ringBlock); other collectives' members keep the flow slots they were made in, unused, until
// their class ends. A member's flow is made (or put to use) only when the block is split.
//
// Everything must come out as separate flows give it, float for float and in the same order,
// which holds because a block stands where its flows would: its start puts one mark in the
// changed links where its links would have been (its flows are then found together, in the order
// they started, where they would have been), its classes are tested in a level where its flows
// would have been, the completions of the classes frozen in a level take the sequence numbers
// their members would have taken (so no other item comes between them), and a completion ends its
// members in that order. The moment anything else touches one of its links (a flow starting on
// it, a fault changing its bandwidth), the block is split back into its flows, each given its
// class's state; the ones whose completion was scheduled keep it, ended by the class's item in
// their order unless a later solve gives them another.

// maxClasses is the most classes in one block: a collective with more kinds of flows is started
// flow by flow.
const maxClasses = 4

// flowClass is one class of a block.
type flowClass struct {
	t          flow             // the members as they were made (before onWire)
	f          flow             // the members' state: rem, rate, cap, payload, last, ver, scheduled
	n          int32            // members
	bw         [maxHops]float64 // the bandwidth of the members' links at each position
	ln         [maxHops]float64 // their line rates (lineBW)
	sl         [maxHops]int32   // their slot: l%linksPerDevice, or -1 for a fabric port
	cn         [maxHops]int32   // in a solve: flows counted on each of its links (mult, 0 once frozen)
	sh         [maxHops]float64 // in a level: each link's share
	open, done bool             // open: not yet frozen in the solve; done: its members have ended
	at         int64            // in a level: when its members end
	bkey       uint64           // the key of the item that ends its members (0: none)
}

// flowBlock is a collective's flows started as classes.
type flowBlock struct {
	gen     uint32 // its items are stale once it changes (the block was let go)
	ii      int32  // the collective's instance
	split   bool   // its members are flows of their own now
	pending bool   // its mark is in dirtyLinks
	nc      int
	cls     [maxClasses]flowClass
	members []int32  // the flows, in the order they started (-1: not made, memberFlow makes it)
	of      []uint8  // each member's class
	links   []int32  // the members' links, in that order
	vers    []uint32 // after a split: each member's ver as its class's completion left it
}

// blockOf returns the block a mark (a negative entry in dirtyLinks, links or comp) names.
func blockOf(mark int32) int32 { return -mark - 1 }

// formBlock groups instance ii's flows (its starts, just made) into a block of classes, to be
// started as one when the flows start (startBlock); it leaves them as they are when they cannot
// be: a link taken by two of them (an all-to-all's), or more kinds than maxClasses. Grouping
// them now, while startCollective has just written them, reads them from the cache.
func (s *Sim) formBlock(ii int32) {
	in := &s.instPool[ii]
	if s.classesOff || len(in.starts) < 2 {
		return
	}
	bi := s.beginBlock(ii)
	b := &s.blocks[bi]
	for _, fi := range in.starts {
		if !s.joinClass(b, fi) {
			s.endBlock(bi)
			return
		}
	}
	in.blk = bi + 1
}

// joinClass adds flow fi to block b: to the class it shares everything with, or a new one. It
// reports false when the flow cannot be a member: a link of it another member's, or a class too
// many.
func (s *Sim) joinClass(b *flowBlock, fi int32) bool {
	f := &s.flows[fi]
	c := 0
	for ; c < b.nc; c++ {
		g := &b.cls[c].f
		if g.nl == f.nl && g.rem == f.rem && g.cap == f.cap && g.mult == f.mult && g.ways == f.ways && g.thin == f.thin &&
			g.kind == f.kind && g.payload == f.payload {
			break
		}
	}
	if c == b.nc {
		if c == maxClasses {
			return false
		}
		b.nc++
		b.cls[c] = flowClass{t: *f, f: *f}
		cl := &b.cls[c]
		for k := range f.nl {
			l := f.links[k]
			cl.bw[k], cl.ln[k], cl.sl[k] = s.linkBW[l], s.lineBW(l), s.linkSlot(l)
		}
	}
	cl := &b.cls[c]
	for k := range f.nl {
		l := f.links[k]
		if s.linkForm[l] == s.formEpoch || !(cl.bw[k] > 0) || s.linkBW[l] != cl.bw[k] || s.lineBW(l) != cl.ln[k] || s.linkSlot(l) != cl.sl[k] {
			return false
		}
		s.linkForm[l] = s.formEpoch
		b.links = append(b.links, l)
	}
	cl.n++
	b.members = append(b.members, fi)
	b.of = append(b.of, uint8(c))
	return true
}

// startBlock starts instance ii's flows (its starts) as the block formBlock made of them and
// reports whether it did; it does not when there is no block, or when a link of it is not alone
// now (another flow on it, changed since the last solve, or a bandwidth changed by a fault): then
// nothing was changed, the block is let go and the flows are to be started one by one.
func (s *Sim) startBlock(ii int32) bool {
	in := &s.instPool[ii]
	if in.blk == 0 {
		return false
	}
	bi := in.blk - 1
	b := &s.blocks[bi]
	off := 0
	for j := range b.members {
		cl := &b.cls[b.of[j]]
		for k, l := range b.links[off : off+int(cl.f.nl)] {
			if s.linkBlock[l] != 0 || len(s.linkFlows[l]) > 0 || s.isDirty[l] || s.linkBW[l] != cl.bw[k] {
				for _, m := range b.links[:off+k] {
					s.linkBlock[m] = 0
				}
				s.unblock(bi)
				return false
			}
			s.linkBlock[l] = bi + 1
		}
		off += int(cl.f.nl)
	}
	now := s.now
	for c := range b.nc {
		cl := &b.cls[c]
		// onWire gives every member what it gives one (the same cap and bytes, and line rates).
		cl.f = cl.t
		s.onWire(&cl.f)
		cl.f.last, cl.f.rate, cl.f.scheduled, cl.f.on = now, 0, false, true
	}
	b.pending = true
	s.blocksStarted++
	s.lastBlockAt = s.now
	s.dirtyLinks = append(s.dirtyLinks, -bi-1)
	s.dirty()
	return true
}

// linkSlot is which of a device's links l is, or -1 for a fabric port.
func (s *Sim) linkSlot(l int32) int32 {
	if s.fab.rail && l >= s.fab.base {
		return -1
	}
	return l % linksPerDevice
}

// newBlock returns a block to fill, emptied.
func (s *Sim) newBlock() int32 {
	var bi int32
	if n := len(s.freeBlocks); n > 0 {
		bi = s.freeBlocks[n-1]
		s.freeBlocks = s.freeBlocks[:n-1]
	} else {
		s.blocks = append(s.blocks, flowBlock{})
		bi = int32(len(s.blocks) - 1)
	}
	b := &s.blocks[bi]
	b.gen++
	b.split, b.pending, b.nc = false, false, 0
	b.members, b.of, b.links, b.vers = b.members[:0], b.of[:0], b.links[:0], b.vers[:0]
	return bi
}

// endBlock lets the block of a finished instance go: its items are stale from now on.
func (s *Sim) endBlock(bi int32) {
	s.blocks[bi].gen++
	s.freeBlocks = append(s.freeBlocks, bi)
}

// splitAt splits the block link l belongs to, if any, back into its flows: something else is about
// to touch l.
func (s *Sim) splitAt(l int32) {
	if b := s.linkBlock[l]; b != 0 {
		s.splitBlock(b - 1)
	}
}

// splitBlock makes the running members of block bi flows of their own, in its links' lists, with
// their class's state, as they would have been all along.
func (s *Sim) splitBlock(bi int32) {
	b := &s.blocks[bi]
	b.split = true
	s.blockSplits++
	if b.pending {
		s.earlySplits++
	}
	off := 0
	for j, fi := range b.members {
		cl := &b.cls[b.of[j]]
		ls := b.links[off : off+int(cl.f.nl)]
		off += int(cl.f.nl)
		if cl.done {
			// Ended, its slot given back (and perhaps another flow's now).
			b.vers = append(b.vers, 0)
			continue
		}
		fi = s.memberFlow(b, j, ls)
		f := &s.flows[fi]
		// A new version: whatever a former flow of the slot left in the queue stays stale.
		f.ver++
		b.vers = append(b.vers, f.ver)
		f.rem, f.rate, f.cap, f.payload, f.last, f.scheduled, f.on = cl.f.rem, cl.f.rate, cl.f.cap, cl.f.payload, cl.f.last, cl.f.scheduled, true
		for k, l := range ls {
			s.linkBlock[l] = 0
			f.lpos[k] = int32(len(s.linkFlows[l]))
			s.linkFlows[l] = append(s.linkFlows[l], fi)
			if b.pending {
				// Its mark stands for these links in dirtyLinks: they are changed already.
				s.isDirty[l] = true
			}
		}
	}
}

// visitBlock adds the block marked by mark to a solve's links: the mark itself, standing for its
// links, or, if the block was split, its links one by one.
func (s *Sim) visitBlock(links []int32, mark int32) []int32 {
	b := &s.blocks[blockOf(mark)]
	b.pending = false
	if b.split {
		for _, l := range b.links {
			s.isDirty[l] = false
			links = s.visitLink(links, l)
		}
		return links
	}
	for c := range b.nc {
		cl := &b.cls[c]
		cl.open = true
		for k := range cl.f.nl {
			cl.cn[k] = int32(cl.f.mult)
		}
	}
	// The pace of publications and cancel checks counts its flows and links as the flows' did.
	s.blockWork += uint64(len(b.members) + len(b.links) - 2)
	return append(links, mark)
}

// blockShares takes the share of each link of block mark's classes still open into x, as the
// level's loop over the links does for each, and reports whether any still has flows to fill.
func (s *Sim) blockShares(mark int32, x float64) (float64, bool) {
	b := &s.blocks[blockOf(mark)]
	any := false
	for c := range b.nc {
		cl := &b.cls[c]
		for k := range cl.f.nl {
			if cl.cn[k] > 0 {
				// Each of the class's links: the same bandwidth, one member counted mult times.
				cl.sh[k] = cl.bw[k] / float64(cl.cn[k])
				x = min(x, cl.sh[k])
				any = true
			}
		}
	}
	return x, any
}

// blockCap takes the caps of block mark's open classes into x.
func (s *Sim) blockCap(mark int32, x float64) float64 {
	b := &s.blocks[blockOf(mark)]
	for c := range b.nc {
		if b.cls[c].open {
			x = min(x, b.cls[c].f.cap)
		}
	}
	return x
}

// freezeBlock freezes block mark's open classes that a level at rate x (limit lim) bottlenecks,
// as the level does each flow, schedules their ends, and reports whether any class is still open.
func (s *Sim) freezeBlock(mark int32, x, lim float64) bool {
	bi := blockOf(mark)
	b := &s.blocks[bi]
	var sched [maxClasses]bool
	open, anySched := false, false
	for c := range b.nc {
		cl := &b.cls[c]
		if !cl.open {
			continue
		}
		f := &cl.f
		bottleneck := f.cap <= lim
		for k := int8(0); k < f.nl && !bottleneck; k++ {
			bottleneck = cl.cn[k] > 0 && cl.sh[k] <= lim
		}
		if !bottleneck {
			open = true
			continue
		}
		// Alone on each of its links, a member is the last frozen on each: no residual to take.
		cl.open = false
		for k := range f.nl {
			cl.cn[k] = 0
		}
		if f.rate == x && f.scheduled {
			continue
		}
		s.settle(f)
		f.ver++
		if x <= 0 {
			f.rate, f.scheduled, cl.bkey = 0, false, 0
			continue
		}
		f.rate, f.scheduled = x, true
		cl.at = s.now + int64(math.Ceil(f.rem/x))
		sched[c], anySched = true, true
	}
	if anySched {
		s.scheduleBlock(b, bi, &sched)
	}
	return open
}

// scheduleBlock schedules the ends of the classes of block bi marked in sched, frozen in one
// level: their members took the next sequence numbers in the order they started, one each, so
// nothing else comes between them; one item a completion time stands for them, with a number of
// theirs (classes of one level that end at different times are told apart by their times).
func (s *Sim) scheduleBlock(b *flowBlock, bi int32, sched *[maxClasses]bool) {
	base, total := s.seq, uint64(0)
	var times [maxClasses]int64
	groups := 0
	for c := range b.nc {
		if !sched[c] {
			continue
		}
		cl := &b.cls[c]
		total += uint64(cl.n)
		g := 0
		for g < groups && times[g] != cl.at {
			g++
		}
		if g == groups {
			times[g] = cl.at
			groups++
			s.q.push(item{t: cl.at, key: (base+1+uint64(g))<<8 | uint64(evClassDone), a: bi, ver: b.gen})
		}
		cl.bkey = (base+1+uint64(g))<<8 | uint64(evClassDone)
	}
	s.seq = base + total
}

// reloadBlock banks block mark's links and sets their loads and busy shares from their classes'
// rates, as reload does each link, in its links' order.
func (s *Sim) reloadBlock(mark int32) {
	b := &s.blocks[blockOf(mark)]
	lb := &s.lb
	var load, util [maxClasses]float64
	for c := range b.nc {
		f := &b.cls[c].f
		pay := f.rate * f.payload
		for range f.mult {
			load[c] += pay
			util[c] += f.rate
		}
	}
	off := 0
	for j := range b.members {
		c := b.of[j]
		cl := &b.cls[c]
		for k, l := range b.links[off : off+int(cl.f.nl)] {
			s.bank(l, s.now)
			lb.load[l], lb.util[l] = load[c], min(util[c]/cl.bw[k], 1)
			if !lb.inUse[l] && (lb.load[l] > 0 || lb.util[l] > 0 || lb.acc[l] > 0) {
				if len(lb.used) == 0 {
					lb.from = s.now
				}
				lb.inUse[l] = true
				lb.used = append(lb.used, l)
			}
		}
		off += int(cl.f.nl)
	}
}

// classDone ends the members of block bi's classes whose completion item (key) this is, in the
// order they started, as their own items would have: each taken off its links and its slot
// freed; the collective finishes with its last flow.
func (s *Sim) classDone(bi int32, key uint64) {
	b := &s.blocks[bi]
	var ends [maxClasses]bool
	for c := range b.nc {
		ends[c] = b.cls[c].bkey == key
	}
	if b.split {
		gen := b.gen
		for j, fi := range b.members {
			if !ends[b.of[j]] {
				continue
			}
			if f := &s.flows[fi]; f.on && f.ver == b.vers[j] {
				s.flowDone(fi)
				if s.blocks[bi].gen != gen {
					return // that was the collective's last flow: the block is let go
				}
			}
		}
		return
	}
	off, n := 0, int32(0)
	for j, fi := range b.members {
		c := b.of[j]
		cl := &b.cls[c]
		ls := b.links[off : off+int(cl.f.nl)]
		off += int(cl.f.nl)
		if !ends[c] {
			continue
		}
		for _, l := range ls {
			s.linkBlock[l] = 0
			s.markDirty(l)
		}
		if fi >= 0 {
			// The slot is free (its version need not change: the member never had an item).
			s.freeFlows = append(s.freeFlows, fi)
		}
		n++
	}
	for c := range b.nc {
		if ends[c] {
			b.cls[c].done, b.cls[c].f.on, b.cls[c].bkey = true, false, 0
		}
	}
	s.dirty()
	s.work += uint64(n - 1) // the publications' pace counts each member's end, as their items were
	in := &s.instPool[b.ii]
	in.flows -= n
	if in.flows == 0 {
		s.instDone(b.ii)
	}
}

// unblock lets instance ii's block bi go before it started: its members become the flows
// startCollective would have made (those it made are kept), in its starts, to be started one by one.
func (s *Sim) unblock(bi int32) {
	b := &s.blocks[bi]
	in := &s.instPool[b.ii]
	in.starts = in.starts[:0]
	off := 0
	for j := range b.members {
		nl := int(b.cls[b.of[j]].t.nl)
		fi := s.memberFlow(b, j, b.links[off:off+nl])
		off += nl
		in = &s.instPool[b.ii]
		in.starts = append(in.starts, fi)
	}
	in.blk = 0
	s.endBlock(bi)
}

// memberFlow returns member j of block b's flow slot (links are its links), making the flow as
// startCollective would have if the block was made without one (ringBlock).
func (s *Sim) memberFlow(b *flowBlock, j int, links []int32) int32 {
	if fi := b.members[j]; fi >= 0 {
		return fi
	}
	t := &b.cls[b.of[j]].t
	fi := s.newFlow(t.kind, t.owner, 0)
	f := &s.flows[fi]
	f.rem, f.cap, f.mult, f.ways, f.thin, f.nl = t.rem, t.cap, t.mult, t.ways, t.thin, t.nl
	copy(f.links[:], links)
	b.members[j] = fi
	return fi
}

// ringBlock makes a ring collective's edges (startCollective: rings, chain, share and scale as it
// has them) into a block of classes without making a flow of each, and schedules their start
// after lat; when they cannot be one (a link taken by two edges, more kinds of edges than
// maxClasses) it makes them the flows startCollective would have, in its order, merged as it
// merges them, and starts those. It reports false, having made nothing, when the classes are off.
func (s *Sim) ringBlock(ii int32, rings [][]engine.DeviceID, chain bool, share int64, scale float64, lat int64) bool {
	if s.classesOff {
		return false
	}
	p := &s.proto
	p.nl, p.cap, p.mult, p.ways, p.links = p.nl[:0], p.cap[:0], p.mult[:0], p.ways[:0], p.links[:0]
	// Each edge is routed in one scratch flow, which stays in the cache.
	sc := s.newFlow(ownerInst, ii, share)
	s.edges.next(len(s.hosts))
	for _, ring := range rings {
		// Each GPU's node is found once, as the destination of the edge before (a division each).
		dstNode := s.nodeOf(ring[0])
		for i := range ring {
			if chain && i == len(ring)-1 {
				break
			}
			next := i + 1
			if next == len(ring) {
				next = 0
			}
			src, dst := ring[i], ring[next]
			srcNode := dstNode
			dstNode = s.nodeOf(dst)
			shared := len(rings) > 1 && srcNode == dstNode
			if shared {
				if j := s.edges.find(src, dst); j >= 0 && p.mult[j] < math.MaxUint16 {
					p.mult[j]++
					continue
				}
			}
			switch {
			case src == dst:
				s.edge(sc, src, dst)
			case srcNode == dstNode:
				s.gpuRoute(sc, src, dst, s.m.NCCLNVLinkEff) // as edge does, its nodes known
			default:
				s.netRoute(sc, src, dst)
			}
			f := &s.flows[sc]
			ways := uint8(0)
			if shared {
				ways = uint8(min(len(rings), 255))
				s.edges.note(src, dst, int32(len(p.nl)))
			}
			p.nl, p.cap, p.mult, p.ways = append(p.nl, f.nl), append(p.cap, f.cap*scale), append(p.mult, 1), append(p.ways, ways)
			p.links = append(p.links, f.links[:f.nl]...)
		}
	}
	tmpl := s.flows[sc]
	s.flows[sc].ver++
	s.freeFlows = append(s.freeFlows, sc)
	bi, ok := int32(0), false
	if len(p.nl) >= 2 {
		bi, ok = s.protoBlock(ii, &tmpl)
	}
	if !ok {
		// The flows startCollective would have made, made from the edges (a rail fabric's ports
		// taken by many edges): the rings are not walked twice.
		s.pending = s.pending[:0]
		off := 0
		for j, nl := range p.nl {
			fi := s.newFlow(ownerInst, ii, share)
			f := &s.flows[fi]
			f.nl, f.cap, f.mult, f.ways = nl, p.cap[j], p.mult[j], p.ways[j]
			copy(f.links[:], p.links[off:off+int(nl)])
			off += int(nl)
			s.pending = append(s.pending, fi)
		}
		s.startFlows(ii, lat)
		return true
	}
	in := &s.instPool[ii]
	in.flows = int32(len(p.nl))
	in.starts = in.starts[:0]
	in.blk = bi + 1
	s.at(s.now+lat, evCollFlows, ii, in.gen)
	return true
}

// beginBlock starts a new block for collective instance ii and a new epoch of linkForm, so that
// the links of the block being formed are told apart from those of earlier ones without clearing.
func (s *Sim) beginBlock(ii int32) int32 {
	s.formEpoch++
	if s.formEpoch == 0 {
		clear(s.linkForm)
		s.formEpoch = 1
	}
	bi := s.newBlock()
	s.blocks[bi].ii = ii
	return bi
}

// protoBlock groups the edges in s.proto into the classes of a new block (tmpl gives what the
// edges' flows share: owner, kind, bytes) and reports whether they could be.
func (s *Sim) protoBlock(ii int32, tmpl *flow) (int32, bool) {
	p := &s.proto
	bi := s.beginBlock(ii)
	b := &s.blocks[bi]
	off := 0
	for j, nl := range p.nl {
		links := p.links[off : off+int(nl)]
		off += int(nl)
		c := 0
		for ; c < b.nc; c++ {
			t := &b.cls[c].t
			if t.nl == nl && t.cap == p.cap[j] && t.mult == p.mult[j] && t.ways == p.ways[j] {
				break
			}
		}
		if c == b.nc {
			if c == maxClasses {
				s.endBlock(bi)
				return 0, false
			}
			b.nc++
			t := flow{kind: tmpl.kind, owner: tmpl.owner, peer: -1, rem: tmpl.rem, payload: 1, nl: nl, cap: p.cap[j], mult: p.mult[j], ways: p.ways[j]}
			copy(t.links[:], links)
			b.cls[c] = flowClass{t: t, f: t}
			cl := &b.cls[c]
			for k, l := range links {
				cl.bw[k], cl.ln[k], cl.sl[k] = s.linkBW[l], s.lineBW(l), s.linkSlot(l)
			}
		}
		cl := &b.cls[c]
		for k, l := range links {
			if s.linkForm[l] == s.formEpoch || !(cl.bw[k] > 0) || s.linkBW[l] != cl.bw[k] || s.lineBW(l) != cl.ln[k] || s.linkSlot(l) != cl.sl[k] {
				s.endBlock(bi)
				return 0, false
			}
			s.linkForm[l] = s.formEpoch
		}
		cl.n++
		b.members = append(b.members, -1)
		b.of = append(b.of, uint8(c))
	}
	b.links = append(b.links, p.links...)
	return bi, true
}

// ringProto is a ring collective's edges as ringBlock makes them: each one's links (nl of them,
// in links in turn), cap, the rings it stands for and the rings sharing its port.
type ringProto struct {
	nl    []int8
	cap   []float64
	mult  []uint16
	ways  []uint8
	links []int32
}
