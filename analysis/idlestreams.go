package analysis

import (
	"math"
	"unsafe"

	"github.com/xfertop/xfertop/internal/cacheline"
	"github.com/xfertop/xfertop/timeline"
)

// streamBlock is how many stream states a block holds: 64 states of 512 bytes are 32 KiB, a size
// the allocator aligns to a page, so that every state starts a cache line.
const streamBlock = 64

// devStreams is how many of a device's streams its directory entry holds; a device with more (a
// trace of many streams) finds the rest through the cache and the map.
const devStreams = 8

// streamCacheSize is how many recently used streams the cache in front of the map holds.
const streamCacheSize = 256

// maxDirectStream bounds the stream ids idleStreams.byID holds (256 KiB at most).
const maxDirectStream = 1 << 16

// idleStreams finds a stream's state. On a cluster an event's stream is rarely the last one's, and
// its state not in the caches. A stream's id finds its state at once (byID) where the id is its
// device's alone, as the engine's are, so the analyzer can ask for the state ahead of its use
// (prefetch); else the device's directory entry (its first devStreams streams' ids and slots, one
// cache line) finds it, as a trace's ids (stream 7 on every GPU) need; streams past a device's
// directory, and devices out of range, go through a small cache and a map.
type idleStreams struct {
	byID   []uint32                          // by stream id: 1 + the slot of the first stream seen with it; 0: none
	dir    []devDir                          // by device id (< MaxDevices)
	blocks []*[streamBlock]streamGaps        // the states, by slot / streamBlock
	n      uint32                            // slots taken
	cache  [streamCacheSize]streamCacheEntry // recently used streams outside the directory
}

// devDir is one device's first streams: an entry whose stream is 0 is free (stream 0 is no stream
// and never looked up).
type devDir [devStreams]struct{ stream, slot uint32 }

type streamCacheEntry struct {
	key streamKey
	st  *streamGaps
}

// slot returns the state in slot s.
func (g *idleGaps) slot(s uint32) *streamGaps { return &g.blocks[s/streamBlock][s%streamBlock] }

// prefetch asks for the state of e's stream ahead of add, when its id finds it and add reads it
// (streamLines).
func (g *idleGaps) prefetch(e *timeline.Event) {
	if id, lines := e.Stream, streamLines(e.Kind); lines > 0 && id < uint32(len(g.byID)) {
		if s := g.byID[id] - 1; s < g.n {
			// The state's address without a load from its block: &block[i] would read the block
			// (Go's check that it is not nil), waiting for the very miss asked for.
			b := unsafe.Pointer(g.blocks[s/streamBlock])
			cacheline.Prefetch(unsafe.Add(b, uintptr(s%streamBlock)*unsafe.Sizeof(streamGaps{})), lines)
		}
	}
}

// streamLines is how many lines of its stream's state add reads for an event of kind k: an op's
// line and a gap's two for a busy op, the op's line for a wait, none for the rest. Other events
// on a stream (a promise fulfilled, an event recorded: two in five of a simulation's) leave the
// state alone, and asking for it would only take one of the few misses the CPU can have under
// way from a line that is read.
func streamLines(k timeline.Kind) int {
	switch {
	case k.IsBusy():
		return 3
	case k == timeline.KindEventWait || k == timeline.KindBarrier || k == timeline.KindPeerWait:
		return 1
	}
	return 0
}

// stream finds (or makes) e's stream.
func (g *idleGaps) stream(e *timeline.Event) *streamGaps {
	if id := e.Stream; id < uint32(len(g.byID)) {
		if s := g.byID[id]; s != 0 {
			if st := g.slot(s - 1); st.dev == e.Device {
				return st
			}
		}
	}
	d := int(e.Device)
	if d < 0 || d >= MaxDevices {
		return g.streamOf(e)
	}
	if d >= len(g.dir) {
		g.dir = append(g.dir, make([]devDir, d+1-len(g.dir))...)
	}
	dd := &g.dir[d]
	for i := range dd {
		switch dd[i].stream {
		case e.Stream:
			return g.slot(dd[i].slot)
		case 0:
			// A free entry: every stream of the device seen so far is in the entries before it,
			// so this one is new.
			st, slot := g.newStream(e)
			dd[i].stream, dd[i].slot = e.Stream, slot
			return st
		}
	}
	return g.streamOf(e)
}

// streamOf finds (or makes) e's stream through the cache and the map.
func (g *idleGaps) streamOf(e *timeline.Event) *streamGaps {
	k := streamKey{e.Device, e.Stream}
	c := &g.cache[(uint32(e.Stream)*2654435761^uint32(e.Device))%streamCacheSize]
	if c.st != nil && c.key == k {
		return c.st
	}
	st := g.streams[k]
	if st == nil {
		st, _ = g.newStream(e)
	}
	c.key, c.st = k, st
	return st
}

// newStream makes the state of e's stream, which was not seen before, in the next free slot.
func (g *idleGaps) newStream(e *timeline.Event) (*streamGaps, uint32) {
	slot := g.n
	if slot%streamBlock == 0 {
		g.blocks = append(g.blocks, new([streamBlock]streamGaps))
	}
	g.n++
	st := g.slot(slot)
	st.priority, st.prevGraph, st.idx, st.dev, st.stream = e.Priority, math.MinInt64, -1, e.Device, e.Stream
	g.streams[streamKey{e.Device, e.Stream}] = st
	if id := e.Stream; id < maxDirectStream {
		if id >= uint32(len(g.byID)) {
			g.byID = append(g.byID, make([]uint32, int(id)+1-len(g.byID))...)
		}
		if g.byID[id] == 0 {
			g.byID[id] = slot + 1
		}
	}
	return st, slot
}
