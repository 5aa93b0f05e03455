package analysis

// The link throughput history is a ring of HistoryBuckets slots, each holding every device's bytes
// per link in one bucket. Results share it: a result keeps the ring as it was when made (a
// *histRing, never written after), and a later write copies only what it changes, once per
// result: the ring's slot table, the slot's block table, and the block of histBlockDevs devices
// (copy on write). A frame's ops fall in the latest bucket or two, so a frame copies a few blocks
// per device group, where copying every device's whole history (4.8 kB each) cost 2.4 MB a frame
// at 512 devices. Parts are individually allocated, so an old block lives only while a result or
// the current ring refers to it.

// histBlockDevs is how many devices share a block: the unit copied on write.
const histBlockDevs = 64

// histCell is one device's bytes per link in the bucket stamp (the bucket number k, of time
// k·BucketNs) that its slot holds.
type histCell struct {
	stamp int64
	bytes [NumLinks][NumDirs]float64
}

// histBlock is one slot's cells of histBlockDevs consecutive devices.
type histBlock struct {
	cells [histBlockDevs]histCell
}

// histSlot is one slot's blocks by device / histBlockDevs, nil where none of a block's devices
// wrote in it.
type histSlot struct {
	blocks []*histBlock
}

// histRing is the history as of one result.
type histRing struct {
	slots [HistoryBuckets]*histSlot
}

// at returns dev's cell in slot i; a zero cell (stamp 0, no bytes) where nothing was written.
func (r *histRing) at(dev int32, i int) histCell {
	if r == nil {
		return histCell{}
	}
	s := r.slots[i]
	if s == nil {
		return histCell{}
	}
	b := int(dev) / histBlockDevs
	if b >= len(s.blocks) || s.blocks[b] == nil {
		return histCell{}
	}
	return s.blocks[b].cells[int(dev)%histBlockDevs]
}

// linkHistory is the history being written: cur, and which of its parts the writer made since the
// last result, which it may write in place; the others may be held by a result. A part is the
// writer's own while its generation is gen, the number of results made so far. (The generations
// are kept here, not in the parts, so that a result holds nothing but the history itself.)
type linkHistory struct {
	cur      *histRing
	gen      uint64
	ringGen  uint64
	slotGen  [HistoryBuckets]uint64
	blockGen [HistoryBuckets][]uint64
}

// at returns dev's cell in slot i as it is now.
func (h *linkHistory) at(dev int32, i int) histCell { return h.cur.at(dev, i) }

// cell returns dev's cell in slot i for writing, first copying the ring, slot and block that hold
// it where a result may hold them.
func (h *linkHistory) cell(dev int32, i int) *histCell {
	if h.cur == nil || h.ringGen != h.gen {
		r := &histRing{}
		if h.cur != nil {
			r.slots = h.cur.slots
		}
		h.cur, h.ringGen = r, h.gen
	}
	b := int(dev) / histBlockDevs
	s := h.cur.slots[i]
	switch {
	case s == nil || h.slotGen[i] != h.gen:
		n := b + 1
		if s != nil {
			n = max(n, len(s.blocks))
		}
		ns := &histSlot{blocks: make([]*histBlock, n)}
		if s != nil {
			copy(ns.blocks, s.blocks)
		}
		h.cur.slots[i], h.slotGen[i], s = ns, h.gen, ns
	case b >= len(s.blocks):
		s.blocks = append(s.blocks, make([]*histBlock, b+1-len(s.blocks))...)
	}
	gens := h.blockGen[i]
	for b >= len(gens) {
		gens = append(gens, 0)
	}
	h.blockGen[i] = gens
	blk := s.blocks[b]
	if blk == nil || gens[b] != h.gen {
		nb := &histBlock{}
		if blk != nil {
			*nb = *blk
		}
		s.blocks[b], gens[b], blk = nb, h.gen, nb
	}
	return &blk.cells[int(dev)%histBlockDevs]
}

// publish returns the history as it is now, for a result: never written after, since every part
// of it now belongs to an older generation.
func (h *linkHistory) publish() *histRing {
	if h.cur == nil {
		h.cur = &histRing{}
	}
	h.gen++
	return h.cur
}
