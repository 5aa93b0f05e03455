package sim

import (
	"unsafe"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// stream is a stream's state. Its queue is a list through its ops' slots (opState.next), from
// the op at its head (running, or next to run) to the last queued: when an op ends, the next one's
// slot is read from the ended op's, in the caches, where a queue of its own per stream was one
// more array out of them per op at 1,024 GPUs (6,144 streams).
type stream struct {
	dev         engine.DeviceID
	prio        engine.Priority
	first, last int32 // the queue's head and tail slots, -1 when it is empty
	running     int32
}

type evState struct {
	recorded bool
	at       int64
	ops      []opRef // stream ops waiting for it
	hosts    []int32 // host threads waiting for it
}

// opRef names an op slot and the generation of the op it meant: a reference kept while the op may
// finish (a timer, a watchdog entry, a wait list) must not come to mean the slot's next op.
type opRef struct {
	oi  int32
	gen uint32
}

// retired is the state of an event recorded so long ago that its slot was reused (eventslot).
var retired = evState{recorded: true}

type opState struct {
	op     opSpec
	seq    uint64
	queued int64
	start  int64
	waitAt int64 // when it started waiting for peers or an event; -1 when it did not
	parts  int32
	parent int32
	inst   int32
	// gen is the slot's generation (Sim.gens): it grows each time the slot takes a new op and
	// survives freeing, so a watchdog entry or timer left from an earlier op never matches a
	// later one.
	gen     uint32
	group   uint32
	aux     uint32 // collectives: the tuner's choice, packed as timeline.PackNCCL
	live    bool
	matched bool
	failed  bool
	status  uint8 // recorded on the op's event when it did not complete normally
	next    int32 // the slot of the op queued after it on its stream, -1: none (stream)
}

// ---- streams ----

// opChunk is how many op slots are allocated at a time. Slots live in chunks that never move, so
// that a step of millions of ops queued at once costs no copying of the slots already taken.
const opChunk = 4096

// op returns the op in slot oi.
func (s *Sim) op(oi int32) *opState { return &s.ops[oi/opChunk][oi%opChunk] }

// newOp puts o in a free slot (or a new one) as the slot's next generation and returns the slot.
func (s *Sim) newOp(o opState) int32 {
	oi := s.takeSlot()
	o.gen = s.gens[oi]
	*s.op(oi) = o
	return oi
}

// takeSlot returns a free op slot (or a new one) and moves it to its next generation. The
// generations are kept apart from the slots (gens): a slot taken is written whole, and reading
// its last generation from it first was a cache miss per op (a step's ops are queued long before
// they run, so the slot freed longest ago is as cold as memory gets).
func (s *Sim) takeSlot() int32 {
	var oi int32
	if n := len(s.freeOps); n > 0 {
		oi = s.freeOps[n-1]
		s.freeOps = s.freeOps[:n-1]
	} else {
		if s.nOps%opChunk == 0 {
			s.ops = append(s.ops, make([]opState, opChunk))
		}
		oi = int32(s.nOps)
		s.nOps++
		s.gens = append(s.gens, 0)
	}
	s.gens[oi]++
	return oi
}

// freeOp clears a finished op's slot (dropping its future and parts); its generation stays in gens.
func (s *Sim) freeOp(oi int32) {
	*s.op(oi) = opState{}
	s.freeOps = append(s.freeOps, oi)
}

// orderFreeSlots lays the free list out so that the next ops take the slots in ascending order,
// once every slot is free (a step has run to its end). Freed as their ops ended, the slots were
// handed out again, last freed first, in an order unrelated to where they lie in memory: the
// next step's launches wrote, and its host threads and streams read, one scattered 176-byte slot
// after another (at 1,024 GPUs 282,624 slots, 50 MB: a cache and TLB miss each, a step dearer at
// every step after the first). In ascending order they are written and read in the order the
// step's ops are issued, as the first step's fresh slots were. The order decides which slot an op
// takes, nothing it does: only InFlight, which lists by slot, lists a later step's ops in the order
// they were issued, as it lists the first step's.
func (s *Sim) orderFreeSlots() {
	if len(s.freeOps) != s.nOps {
		return
	}
	for i := range s.freeOps {
		s.freeOps[i] = int32(s.nOps - 1 - i) // taken from the end
	}
}

// ref names the op now in slot oi.
func (s *Sim) ref(oi int32) opRef { return opRef{oi, s.gens[oi]} }

// current reports whether r still names the op in its slot.
func (s *Sim) current(r opRef) bool {
	o := s.op(r.oi)
	return o.live && o.gen == r.gen
}

// reserve puts op in a free slot (or a new one), not yet queued on its stream (enqueue does
// that), and returns the slot. A launch's op is put in its slot as it is submitted, and waits
// there while its host thread reaches it: it is written once, built in the slot (an op is some
// 180 bytes), and read once more when queued.
func (s *Sim) reserve(op *engine.StreamOp) int32 {
	oi := s.takeSlot()
	o := s.op(oi)
	// Field by field, not *o = opState{op: specOf(op), …}: that built the slot on the stack and
	// copied it in (a memmove, and with the collector running a write barrier over every word),
	// three times the bytes a launch writes.
	o.op.set(op)
	o.seq, o.queued, o.start, o.waitAt = 0, 0, 0, -1
	o.parts, o.parent, o.inst, o.gen, o.group, o.aux = 0, -1, -1, s.gens[oi], 0, 0
	o.live, o.matched, o.failed, o.status, o.next = false, false, false, 0, -1
	return oi
}

// enqueue queues the op reserved in slot oi on its stream.
func (s *Sim) enqueue(oi int32) {
	s.seq++
	o := s.op(oi)
	o.seq, o.queued, o.start, o.live = s.seq, s.now, s.now, true
	sid := o.op.Stream
	st := &s.streams[sid]
	o.next = -1
	if st.last >= 0 {
		s.op(st.last).next = oi
	} else {
		st.first = oi
	}
	st.last = oi
	s.pendingOps++
	if st.running < 0 {
		s.streamKick(sid)
	}
}

func (s *Sim) streamKick(sid engine.StreamID) {
	st := &s.streams[sid]
	for st.running < 0 && st.first >= 0 {
		oi := st.first
		st.running = oi
		if next := s.op(oi).next; next >= 0 {
			// The stream's next op starts when this one ends; queued with its step, long
			// before, its slot is out of the caches by now.
			prefetch(unsafe.Pointer(s.op(next)))
		}
		if s.startOp(oi) {
			s.finish(oi, false)
		}
		st = &s.streams[sid]
	}
}

// startOp begins the op at the head of its stream; it returns true when the op completed at once.
func (s *Sim) startOp(oi int32) bool {
	o := s.op(oi)
	o.start = s.now
	switch o.op.Kind {
	case engine.OpRecord:
		s.record(o.op.Event, oi)
		return true
	case engine.OpWaitEvent:
		ev := s.event(o.op.Event)
		if ev.recorded && ev.at+s.m.EventLatencyNs <= s.now {
			return true
		}
		o.waitAt = s.now
		if ev.recorded {
			s.atOp(ev.at+s.m.EventLatencyNs, evStreamWake, s.ref(oi))
		} else {
			ev.ops = append(ev.ops, s.ref(oi))
		}
		return false
	case engine.OpCopy:
		s.startCopy(oi)
	case engine.OpBarrier:
		s.arrive(oi)
	case engine.OpKernel, engine.OpSend, engine.OpRecv, engine.OpCollective, engine.OpGroup:
		s.admit(oi)
	}
	return false
}

func (s *Sim) record(evID engine.EventID, oi int32) {
	ev := s.event(evID)
	if ev.recorded {
		return // recorded twice: the first recording stands
	}
	ev.recorded, ev.at = true, s.now
	s.events.Done(uint32(evID))
	o := s.op(oi)
	s.emit(timeline.Event{Kind: timeline.KindEventRecord, Start: s.now, End: s.now, Queued: o.queued, Device: int32(o.op.Device),
		Peer: timeline.NoDevice, Stream: uint32(o.op.Stream), Aux: uint32(evID), Host: s.hostOf(o.op.Device)})
	for _, w := range ev.ops {
		s.atOp(s.now+s.m.EventLatencyNs, evStreamWake, w)
	}
	for _, hi := range ev.hosts {
		s.at(s.now+s.m.NotifyNs, evHostReady, hi, 0)
	}
	ev.ops, ev.hosts = nil, nil
}

// hostOf is s.topo.HostOf(d), without the copy of the topology (some 400 bytes) the compiler
// makes to call a method of it by value: every event names its host.
func (s *Sim) hostOf(d engine.DeviceID) uint16 { return uint16(int(d) / s.topo.GPUsPerHost) }
