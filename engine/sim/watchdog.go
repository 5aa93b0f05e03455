package sim

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// compactFrom is how many consumed entries a FIFO kept in a slice may hold before it is compacted.
const compactFrom = 1024

type wdEntry struct {
	deadline int64
	op       opRef
}

// ---- failure, alerts, watchdog ----

func (s *Sim) arm(oi int32) {
	if s.watchdog <= 0 {
		return
	}
	s.wdQueue = append(s.wdQueue, wdEntry{deadline: s.now + s.watchdog, op: s.ref(oi)})
	if !s.wdArmed {
		s.wdArmed = true
		s.at(s.wdQueue[s.wdHead].deadline, evWatchdog, 0, 0)
	}
}

// wdLive reports whether a watchdog entry still stands for an op waiting for its peers.
func (s *Sim) wdLive(w wdEntry) bool {
	return s.current(w.op) && !s.op(w.op.oi).matched
}

// wdDue drops watchdog entries whose ops are no longer waiting and reports whether the first live
// one is due at t. When it is not, the timer is re-armed for it (or disarmed when none is left), and
// the popped timer item is stale: it must not advance the clock.
func (s *Sim) wdDue(t int64) bool {
	for s.wdHead < len(s.wdQueue) && !s.wdLive(s.wdQueue[s.wdHead]) {
		s.wdHead++
	}
	if s.wdHead == len(s.wdQueue) {
		s.wdQueue, s.wdHead, s.wdArmed = s.wdQueue[:0], 0, false
		return false
	}
	if s.wdHead >= compactFrom && 2*s.wdHead >= len(s.wdQueue) {
		// Some op is nearly always waiting, so the queue rarely empties: drop its consumed half
		// rather than let appends grow the array for ever.
		n := copy(s.wdQueue, s.wdQueue[s.wdHead:])
		s.wdQueue, s.wdHead = s.wdQueue[:n], 0
	}
	if d := s.wdQueue[s.wdHead].deadline; d > t {
		s.at(d, evWatchdog, 0, 0)
		return false
	}
	return true
}

func (s *Sim) alert(oi int32, msg string, status uint8) {
	o := s.op(oi)
	s.emit(timeline.Event{Kind: timeline.KindAlert, Start: s.now, End: s.now, Device: int32(o.op.Device), Peer: int32(o.op.Peer),
		Op: o.op.ID, Bytes: o.op.Bytes, Stream: uint32(o.op.Stream), Comm: o.op.Comm, Status: status,
		Ranks: uint16(max(len(o.op.Ranks), 2)), Label: s.strs.ID(msg), Host: s.hostOf(o.op.Device)})
}

// fail ends an op with err: its future fails and, if it is part of a group, the group's other parts
// are left to the watchdog or the end of the run.
func (s *Sim) fail(oi int32, err error) {
	o := s.op(oi)
	if !o.live {
		return
	}
	o.failed = true
	if o.op.Future != nil {
		s.resolve(o, err)
		o.op.Future = nil
	}
}

func (s *Sim) fireWatchdog(oi int32) {
	o := s.op(oi)
	werr := &engine.WatchdogError{Op: opName(&o.op), OpID: o.op.ID, Rank: o.op.Device, Peer: o.op.Peer, Bytes: o.op.Bytes, WaitedNs: s.now - o.waitAt}
	if o.inst >= 0 {
		in := &s.instPool[o.inst]
		werr.Peer = -1
		for _, r := range o.op.Ranks {
			found := false
			for _, x := range in.ops {
				if s.op(x).op.Device == r {
					found = true
				}
			}
			if !found {
				werr.Missing = append(werr.Missing, r)
			}
		}
		for _, x := range in.ops {
			s.fail(x, werr)
		}
	}
	s.alert(oi, werr.Error(), timeline.StatusTimeout)
	s.fail(oi, werr)
	// Record what the stuck ops did: waited for their peers until now, then failed (an instant, not
	// busy time), so the timeline, the idle analysis and the exported spans all show it.
	stuck := []int32{oi}
	if o := s.op(oi); o.inst >= 0 {
		stuck = s.instPool[o.inst].ops
	}
	for _, x := range stuck {
		xo := s.op(x)
		if !xo.live {
			continue
		}
		s.peerWait(x)
		xo.status, xo.start = timeline.StatusTimeout, s.now
		s.emitOp(x)
	}
	// The run stops here: the other ops still waiting for their peers waited until now. Their
	// waits are reported, so that a recording holds who waited on whom when the run stopped (a
	// replay's diagnosis names the hang, or the wait cycle, as the live run's did). They are
	// reported in the order they were queued, which does not depend on which slots they took.
	var waiting []int32
	for oi := range s.nOps {
		o := s.op(int32(oi))
		if o.live && !o.matched && o.waitAt >= 0 && (o.op.Kind == engine.OpSend || o.op.Kind == engine.OpRecv || o.op.Kind == engine.OpCollective) {
			waiting = append(waiting, int32(oi))
		}
	}
	slices.SortFunc(waiting, func(a, b int32) int { return cmp.Compare(s.op(a).seq, s.op(b).seq) })
	for _, oi := range waiting {
		s.peerWait(oi)
	}
	s.runErr = werr
}

func (s *Sim) deadlock() error {
	n, first := 0, ""
	for sid := range s.streams {
		st := &s.streams[sid]
		for oi := st.first; oi >= 0; oi = s.op(oi).next {
			n++
			if first == "" {
				o := s.op(oi)
				first = fmt.Sprintf("%s on device %d stream %d (op %d)", opName(&o.op), o.op.Device, sid, o.op.ID)
			}
		}
	}
	for hi := range s.hosts {
		h := &s.hosts[hi]
		if h.waiting {
			n++
			if first == "" {
				first = fmt.Sprintf("host thread of device %d waits for an event that is never recorded", h.dev)
			}
		}
	}
	return &engine.DeadlockError{Pending: n, First: first}
}

func errorsIsTimeout(err error) bool {
	_, ok := err.(*engine.WatchdogError)
	return ok
}
