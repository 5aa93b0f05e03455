package sim

import (
	"unsafe"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/internal/cacheline"
	"github.com/xfertop/xfertop/timeline"
)

// ---- completion ----

func (s *Sim) opDone(oi int32) {
	o := s.op(oi)
	if o.op.Kind == engine.OpKernel && o.parent < 0 {
		d := o.op.Device
		if s.devs[d].running == oi {
			s.devs[d].running = -1
			defer s.tryAdmit(d)
		}
	}
	s.finish(oi, true)
}

// finish completes an op at s.now: emits its event, resolves its future, frees the stream.
func (s *Sim) finish(oi int32, kick bool) {
	o := s.op(oi)
	if !o.live {
		return
	}
	if o.op.Future != nil {
		// The future was made with its op, long before at 1,024 GPUs (a step queues a quarter
		// of a million ops ahead of the devices), and is out of the caches: reading it in
		// resolve waited for memory. Asked for now, it arrives while the op's event is folded.
		cacheline.Prefetch(unsafe.Pointer(o.op.Future), 2)
	}
	s.emitOp(oi)
	if f := o.op.Future; f != nil {
		s.resolve(o, nil)
	}
	parent, sid, next := o.parent, o.op.Stream, o.next
	s.freeOp(oi)
	if parent >= 0 {
		p := s.op(parent)
		p.parts--
		if p.parts == 0 {
			s.finish(parent, true)
		}
		return
	}
	st := &s.streams[sid]
	st.running = -1
	if st.first = next; next < 0 {
		st.last = -1
	}
	s.pendingOps--
	if kick {
		s.streamKick(sid)
	}
}

func (s *Sim) resolve(o *opState, err error) {
	f := o.op.Future
	t := s.now + s.m.NotifyNs
	k := timeline.KindPromiseFulfilled
	st := timeline.StatusOK
	if err != nil {
		k, st, t = timeline.KindPromiseFailed, timeline.StatusError, s.now
		if errorsIsTimeout(err) {
			st = timeline.StatusTimeout
		}
	}
	s.emit(timeline.Event{Kind: k, Start: t, End: t, Device: int32(o.op.Device), Peer: int32(o.op.Peer), Op: o.op.ID,
		Stream: uint32(o.op.Stream), Bytes: o.op.Bytes, Status: st, Host: s.hostOf(o.op.Device)})
	f.Complete(t, err)
}

func (s *Sim) emitOp(oi int32) {
	if e := s.opEvent(oi, s.now); e.Kind != timeline.KindNone {
		s.emit(e)
	}
}

// opEvent is the event the op in slot oi is reported as, ending at end; its Kind is KindNone for
// an op that is not reported (a record, which record emits).
func (s *Sim) opEvent(oi int32, end int64) timeline.Event {
	o := s.op(oi)
	e := timeline.Event{Start: o.start, End: end, Queued: o.queued, Bytes: o.op.Bytes, Op: o.op.ID, Device: int32(o.op.Device),
		Peer: int32(o.op.Peer), Stream: uint32(o.op.Stream), Group: o.group, Comm: o.op.Comm, Barrier: o.op.Barrier,
		Label: o.op.Label, Host: s.hostOf(o.op.Device), Priority: int8(s.streams[o.op.Stream].prio)}
	if o.failed {
		e.Status = timeline.StatusError
	}
	if o.status != 0 {
		e.Status = o.status
	}
	switch o.op.Kind {
	case engine.OpKernel:
		e.Kind, e.Peer = timeline.KindKernel, timeline.NoDevice
	case engine.OpCopy:
		e.Kind, e.Sub = timeline.KindMemcpy, uint8(o.op.Dir)
	case engine.OpSend:
		e.Kind = timeline.KindSend
	case engine.OpRecv:
		e.Kind = timeline.KindRecv
	case engine.OpCollective:
		e.Kind, e.Sub, e.Ranks, e.Peer, e.Aux = timeline.KindCollective, uint8(o.op.Coll), uint16(len(o.op.Ranks)), timeline.NoDevice, o.aux
	case engine.OpBarrier:
		e.Kind, e.Ranks, e.Peer = timeline.KindBarrier, uint16(len(o.op.Ranks)), timeline.NoDevice
		e.Start = o.waitAt
		if o.waitAt < 0 {
			e.Start = o.start
		}
	case engine.OpGroup:
		e.Kind, e.Aux, e.Peer, e.Op = timeline.KindGroupLaunch, uint32(len(o.op.parts())), timeline.NoDevice, 0
	case engine.OpWaitEvent:
		// A wait whose event was recorded before the stream reached it is reported too, as an
		// instant: it is still the stream's dependency on the record, which a what-if of a faster
		// stream needs (without it, a pipeline stage that ran slow, its inputs always there,
		// replayed at full speed ran ahead of them).
		e.Kind, e.Aux, e.Peer, e.Op = timeline.KindEventWait, uint32(o.op.Event), timeline.NoDevice, 0
		if o.waitAt >= 0 {
			e.Start = o.waitAt
		}
	}
	markCaptured(&e, o.op.Graph)
	return e
}

func (s *Sim) emit(e timeline.Event) {
	s.ev = e
	s.sink.Emit(&s.ev)
}
