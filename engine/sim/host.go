package sim

import (
	"unsafe"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

type host struct {
	dev         engine.DeviceID
	q           cmdQueue
	busy        bool
	waiting     bool
	kicked      bool
	cur         hostCmd
	since       int64 // when cur began: a communicator init or a sleep is reported when it ends
	comms       int
	batch       []engine.StreamOp
	batchGen    uint32
	flushWanted bool
}

// ---- host threads ----

// cmdQueue is a host thread's commands, first in first out, in blocks of cmdBlock that never move
// and go back to the Sim's pool once read: a step that queues thousands of commands on each of a
// thousand host threads grows no array by copying, and keeps no array per thread once it drained.
type cmdQueue struct {
	blocks [][]hostCmd // the first holds the next command, at head
	head   int
	tail   int // commands in the last block
}

// cmdBlock is how many commands a block of a cmdQueue holds.
const cmdBlock = 32

func (q *cmdQueue) empty() bool { return len(q.blocks) == 0 }

// front returns the next command; the queue must not be empty.
func (q *cmdQueue) front() *hostCmd { return &q.blocks[0][q.head] }

// pushCmd appends a command to q and returns its slot, to be written.
func (s *Sim) pushCmd(q *cmdQueue) *hostCmd {
	if len(q.blocks) == 0 || q.tail == cmdBlock {
		var b []hostCmd
		if n := len(s.freeCmds); n > 0 {
			b, s.freeCmds = s.freeCmds[n-1], s.freeCmds[:n-1]
		} else {
			b = make([]hostCmd, cmdBlock)
		}
		q.blocks, q.tail = append(q.blocks, b), 0
	}
	q.tail++
	return &q.blocks[len(q.blocks)-1][q.tail-1]
}

// popCmd drops q's front command (clearing its slot), and gives a block it has read to the pool.
func (s *Sim) popCmd(q *cmdQueue) {
	q.blocks[0][q.head] = hostCmd{}
	q.head++
	if (len(q.blocks) == 1 && q.head == q.tail) || q.head == cmdBlock {
		s.freeCmds = append(s.freeCmds, q.blocks[0])
		// Shifted down, not resliced past: the array of blocks is reused from its start.
		n := copy(q.blocks, q.blocks[1:])
		q.blocks[n] = nil
		q.blocks, q.head = q.blocks[:n], 0
		if n == 0 {
			q.tail = 0
		}
	}
}

func (s *Sim) launchCost(op *opSpec) int64 {
	switch op.Kind {
	case engine.OpSend, engine.OpRecv, engine.OpCollective:
		return s.m.NCCLLaunchNs
	case engine.OpGroup:
		return s.m.GroupLaunchNs + s.m.GroupPerOpNs*int64(len(op.parts()))
	case engine.OpRecord, engine.OpWaitEvent:
		return s.m.WaitLaunchNs
	}
	return s.m.HostLaunchNs
}

func (s *Sim) hostStep(hi int32) {
	h := &s.hosts[hi]
	for !h.busy {
		if h.flushWanted {
			h.flushWanted = false
			if len(h.batch) > 0 {
				s.launchBatch(hi)
				return
			}
		}
		if h.q.empty() {
			return
		}
		if next := h.q.front(); next.Kind == engine.CmdLaunch && !s.stuck(hi, next) {
			h.cur, h.busy = *next, true
			s.popCmd(&h.q)
			// The op's slot and the next command are read when this launch is over, thousands
			// of items later; written with the whole step, they are long out of the caches.
			prefetch(unsafe.Pointer(s.op(h.cur.ref)))
			if !h.q.empty() {
				prefetch(unsafe.Pointer(h.q.front()))
			}
			s.at(s.now+h.cur.Duration+s.launchDelay(hi), evHostDone, hi, 0)
			return
		}
		cmd := *h.q.front()
		s.popCmd(&h.q)
		switch cmd.Kind {
		case engine.CmdLaunch: // stuck
			s.hold(hi, cmd)
			return
		case engine.CmdHostWait:
			ev := s.event(cmd.Event)
			if ev.recorded {
				s.pendingCmds--
				continue
			}
			h.busy, h.waiting = true, true
			ev.hosts = append(ev.hosts, hi)
		case engine.CmdCommInit:
			if s.stuck(hi, &cmd) {
				s.hold(hi, cmd)
				return
			}
			cost := s.m.CommInitNs
			if h.comms == 0 {
				cost = s.m.CommInitFirstNs
			}
			h.comms++
			h.cur, h.busy, h.since = cmd, true, s.now
			s.at(s.now+cost, evHostDone, hi, 0)
		case engine.CmdSleep:
			h.cur, h.busy, h.since = cmd, true, s.now
			s.at(s.now+cmd.Duration, evHostDone, hi, 0)
		case engine.CmdBatch:
			if s.stuck(hi, &cmd) {
				s.hold(hi, cmd)
				return
			}
			h.batch = append(h.batch, s.op(cmd.ref).op.streamOp())
			s.freeOp(cmd.ref) // reserved, never queued: the batch's group launch takes a slot of its own
			s.batched++
			h.cur, h.busy = cmd, true
			if len(h.batch) == 1 {
				h.batchGen++
				s.at(s.now+s.batchWin, evBatchTimer, hi, h.batchGen)
			}
			s.at(s.now+s.m.BatchAddNs, evHostDone, hi, 0)
		case engine.CmdGraphLaunch:
			s.startGraphLaunch(hi, cmd)
		case engine.CmdFlush:
			s.pendingCmds--
			if len(h.batch) > 0 {
				s.launchBatch(hi)
			}
		default:
			s.pendingCmds--
		}
	}
}

// launchBatch launches the batching window's ops as one group; the host pays the group launch.
func (s *Sim) launchBatch(hi int32) {
	h := &s.hosts[hi]
	parts := make([]engine.StreamOp, len(h.batch))
	copy(parts, h.batch)
	s.batched -= len(parts)
	h.batch = h.batch[:0]
	h.batchGen++
	oi := s.reserve(&engine.StreamOp{Kind: engine.OpGroup, Stream: parts[0].Stream, Device: h.dev, Peer: -1, Parts: parts})
	cost := s.launchCost(&s.op(oi).op)
	h.cur, h.busy = hostCmd{Kind: engine.CmdLaunch, ref: oi, Duration: cost}, true
	s.pendingCmds++
	s.at(s.now+cost+s.launchDelay(hi), evHostDone, hi, 0)
}

// hostCmdEvent is the event of cmd, a communicator init or a sleep h began at h.since, up to end.
func hostCmdEvent(h *host, cmd *hostCmd, end int64) timeline.Event {
	if cmd.Kind == engine.CmdCommInit {
		return timeline.Event{Kind: timeline.KindCommInit, Start: h.since, End: end, Device: int32(h.dev),
			Peer: timeline.NoDevice, Comm: cmd.Comm, Ranks: uint16(cmd.devices), Label: cmd.Label}
	}
	return timeline.Event{Kind: timeline.KindMark, Start: h.since, End: end, Device: int32(h.dev),
		Peer: timeline.NoDevice, Label: cmd.Label}
}

func (s *Sim) hostDone(hi int32) {
	h := &s.hosts[hi]
	h.busy = false
	s.pendingCmds--
	// h.cur is read in place, not copied: what runs below schedules items but starts no host
	// command, so nothing writes h.cur before it is cleared.
	switch cmd := &h.cur; cmd.Kind {
	case engine.CmdLaunch:
		s.enqueue(cmd.ref)
	case engine.CmdGraphLaunch:
		s.graphLaunched(h, cmd)
	case engine.CmdCommInit, engine.CmdSleep:
		// Reported as they end, as ops are: emitted at its start, an init's end would run the
		// session's clock (the latest end seen) ahead of the paced simulation by the whole init.
		s.emit(hostCmdEvent(h, cmd, s.now))
	case engine.CmdBatch:
		if len(h.batch) >= s.batchMax {
			h.cur = hostCmd{}
			s.launchBatch(hi)
			return
		}
	}
	h.cur = hostCmd{}
	s.hostStep(hi)
}
