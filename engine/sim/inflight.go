package sim

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// running is the simulation's ops in flight as last published, for readers on other goroutines
// (the console). The simulation publishes every 1,024 items it handles (or as many as it has op
// slots and hosts) once InFlight has been called, before each pacing sleep, and when Run returns;
// between those it never takes the lock, so the hot path pays nothing. A run nobody watches (a
// headless report, a recording) does not publish every 1,024 items: each publication reads every
// op slot, a cache miss per item handled on a cluster whose step queues many ops.
type running struct {
	watched atomic.Bool // InFlight has been called
	scans   int         // publications so far (for tests)

	mu    sync.Mutex
	evs   []timeline.Event // published: read under mu
	spare []timeline.Event // the simulation's own buffer, swapped with evs on publish
	// A paced simulation publishes before it sleeps until the wall clock reaches its next item:
	// nothing ends before that item, so every op published is still running at any simulated
	// time up to it, and a reader places itself on the pace (wall and sim are its anchor).
	sleeping  bool
	until     int64 // the simulated time of the item the simulation waits for
	pace      timeline.Pace
	wallClock func() time.Time
}

// InFlight appends to dst the ops that were running when the simulation last published them, and
// returns it. Each is the event the op will be reported as when it ends, except that End is the
// simulated time it was last seen running (so End >= Start; the op may have ended since): a kernel
// holding the SMs, a copy, a send, receive or collective moving data, a barrier or an event wait
// under way, and, before a send, receive or collective has its peers, its peer wait. Ops queued on
// a stream or waiting for the SMs are not running and are left out. It is safe to call from any
// goroutine while Run runs, and appends without allocating once dst has room.
//
// While a paced simulation waits for the wall clock, End is the simulated time the pace has
// reached (up to the item it waits for), so a reader's live edge moves on through a long kernel
// or a communicator's initialisation instead of standing still until the next item.
func (s *Sim) InFlight(dst []timeline.Event) []timeline.Event {
	r := &s.running
	r.watched.Store(true)
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(dst)
	dst = append(dst, r.evs...)
	if r.sleeping {
		now := min(r.until, r.pace.Position(r.wallClock()))
		for i := n; i < len(dst); i++ {
			dst[i].End = max(dst[i].End, now)
		}
	}
	return dst
}

// publish makes the ops running now what InFlight returns.
func (s *Sim) publish() { s.publishSleep(false, 0) }

// publishSleep publishes before a pacing sleep until the item at simulated time until.
func (s *Sim) publishSleep(sleeping bool, until int64) {
	r := &s.running
	r.scans++
	r.spare = s.inFlight(r.spare[:0])
	r.mu.Lock()
	r.evs, r.spare = r.spare, r.evs
	r.sleeping, r.until, r.pace = sleeping, until, s.pace
	if r.wallClock == nil {
		r.wallClock = time.Now
	}
	r.mu.Unlock()
}

// inFlight appends the ops running at s.now to dst, on the simulation's goroutine.
func (s *Sim) inFlight(dst []timeline.Event) []timeline.Event {
	for hi := range s.hosts {
		if e, ok := s.runningHostCmd(int32(hi)); ok {
			dst = append(dst, e)
		}
	}
	for oi := range s.nOps {
		if e, ok := s.runningOp(int32(oi)); ok {
			dst = append(dst, e)
		}
	}
	return dst
}

// runningOp is the event of the op in slot oi as it stands at s.now, when that op is running.
func (s *Sim) runningOp(oi int32) (timeline.Event, bool) {
	o := s.op(oi)
	if !o.live || (o.parent < 0 && s.streams[o.op.Stream].running != oi) {
		return timeline.Event{}, false // a free slot, or an op queued behind its stream's head
	}
	switch o.op.Kind {
	case engine.OpKernel:
		if o.parent < 0 && s.devs[o.op.Device].running != oi {
			return timeline.Event{}, false // waiting for the SMs
		}
	case engine.OpSend, engine.OpRecv, engine.OpCollective:
		if !o.matched {
			if o.waitAt < 0 {
				return timeline.Event{}, false // waiting for the SMs
			}
			// Launched, waiting for its peers: reported as a peer wait when they come.
			e := s.opEvent(oi, s.now)
			e.Kind, e.Start, e.Ranks = timeline.KindPeerWait, o.waitAt, 0
			e.Peer = int32(o.op.Peer)
			// Which collective it waits in, or send or receive: a hang or deadlock is named by it.
			e.Sub, e.Aux = peerWaitWhat(&o.op)
			return e, true
		}
	case engine.OpBarrier, engine.OpWaitEvent:
		if o.waitAt < 0 {
			return timeline.Event{}, false
		}
	case engine.OpCopy:
	default: // records are instants; a group launch is drawn through its parts
		return timeline.Event{}, false
	}
	e := s.opEvent(oi, s.now)
	return e, e.Kind != timeline.KindNone
}

// runningHostCmd is the event of the command host hi is carrying out, when it is one reported as
// it ends: a communicator's initialisation or a sleep.
func (s *Sim) runningHostCmd(hi int32) (timeline.Event, bool) {
	h := &s.hosts[hi]
	if !h.busy || h.waiting {
		return timeline.Event{}, false
	}
	switch h.cur.Kind {
	case engine.CmdCommInit, engine.CmdSleep:
		return hostCmdEvent(h, &h.cur, s.now), true
	}
	return timeline.Event{}, false
}
