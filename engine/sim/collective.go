package sim

import (
	"math"

	"github.com/xfertop/xfertop/engine"
)

type inst struct {
	gen      uint32 // as opState.gen, for the instance's timer
	id       uint64
	n        int
	barrier  bool
	ops      []int32
	flows    int32
	starts   []int32 // the flows an evCollFlows starts
	blk      int32   // the block its flows started as, + 1 (0: none; classes.go)
	released int64
}

// ---- collectives and barriers ----

func (s *Sim) arrive(oi int32) {
	o := s.op(oi)
	ii, ok := s.insts[o.op.ID]
	if !ok {
		if n := len(s.freeInsts); n > 0 {
			ii = s.freeInsts[n-1]
			s.freeInsts = s.freeInsts[:n-1]
		} else {
			s.instPool = append(s.instPool, inst{})
			ii = int32(len(s.instPool) - 1)
		}
		in := &s.instPool[ii]
		in.id, in.n, in.barrier, in.ops, in.flows = o.op.ID, len(o.op.Ranks), o.op.Kind == engine.OpBarrier, in.ops[:0], 0
		s.insts[o.op.ID] = ii
	}
	in := &s.instPool[ii]
	o.inst = ii
	o.waitAt = s.now
	in.ops = append(in.ops, oi)
	if len(in.ops) == 1 && in.n > 1 {
		s.arm(oi)
	}
	if len(in.ops) < in.n {
		return
	}
	delete(s.insts, in.id)
	for _, x := range in.ops {
		s.op(x).matched = true
	}
	if in.barrier {
		steps := int64(math.Ceil(math.Log2(float64(in.n))))
		in.released = s.now + s.m.BarrierStepNs*max(steps, 1)
		s.at(in.released, evCollStart, ii, in.gen)
		return
	}
	for _, x := range in.ops {
		s.peerWait(x)
		s.op(x).start = s.now
	}
	if s.stalls(ii) {
		return // a rank hung in it: it never completes (its instance stays, as its ops do)
	}
	s.startCollective(ii)
}

func (s *Sim) instDone(ii int32) {
	in := &s.instPool[ii]
	ops := in.ops
	for _, x := range ops {
		s.finish(x, true)
	}
	in = &s.instPool[ii]
	if in.blk != 0 {
		s.endBlock(in.blk - 1)
		in.blk = 0
	}
	in.ops = in.ops[:0]
	in.gen++ // its timers, if any were left, are stale from now on
	s.freeInsts = append(s.freeInsts, ii)
}
