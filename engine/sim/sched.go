package sim

import (
	"github.com/xfertop/xfertop/engine"
)

type device struct {
	running   int32 // compute kernel holding the SMs, -1 when none
	runStart  int64
	runPrio   engine.Priority
	waitq     []int32
	waveArmed bool
}

// ---- device block scheduler ----

func (s *Sim) prioOf(oi int32) engine.Priority { return s.streams[s.op(oi).op.Stream].prio }

// popFront drops the head of the admission queue, keeping the backing array (no allocation).
func (dv *device) popFront() {
	copy(dv.waitq, dv.waitq[1:])
	dv.waitq = dv.waitq[:len(dv.waitq)-1]
}

// admit queues a kernel for the device's SMs, ordered by priority, then arrival.
func (s *Sim) admit(oi int32) {
	d := s.op(oi).op.Device
	dv := &s.devs[d]
	p, sq := s.prioOf(oi), s.op(oi).seq
	i := len(dv.waitq)
	dv.waitq = append(dv.waitq, oi)
	for i > 0 {
		prev := dv.waitq[i-1]
		pp := s.prioOf(prev)
		if pp < p || (pp == p && s.op(prev).seq < sq) {
			break
		}
		dv.waitq[i] = prev
		i--
	}
	dv.waitq[i] = oi
	s.tryAdmit(d)
}

func (s *Sim) tryAdmit(d engine.DeviceID) {
	dv := &s.devs[d]
	for len(dv.waitq) > 0 {
		oi := dv.waitq[0]
		o := s.op(oi)
		if o.op.Kind == engine.OpKernel {
			if dv.running >= 0 {
				return
			}
			dv.popFront()
			dv.running, dv.runStart, dv.runPrio = oi, s.now, s.prioOf(oi)
			o.start = s.now
			dur := s.kernelNs(d, o.op.Duration)
			if j := s.m.KernelJitter; j > 0 && dur > 0 {
				dur += int64(float64(dur) * j * (2*s.rng.Float64() - 1))
			}
			s.atOp(s.now+max(dur, 0), evOpDone, s.ref(oi))
			continue
		}
		if dv.running < 0 {
			dv.popFront()
			s.launchNCCL(oi)
			dv = &s.devs[d]
			continue
		}
		if s.prioOf(oi) < dv.runPrio && !dv.waveArmed {
			el := s.now - dv.runStart
			next := dv.runStart + (el/s.m.WaveNs+1)*s.m.WaveNs
			dv.waveArmed = true
			s.at(next, evWave, int32(d), 0)
		}
		return
	}
}

// wave is a wave boundary of the running compute kernel: higher-priority NCCL kernels get SMs.
func (s *Sim) wave(d engine.DeviceID) {
	dv := &s.devs[d]
	dv.waveArmed = false
	for len(dv.waitq) > 0 {
		oi := dv.waitq[0]
		if s.op(oi).op.Kind == engine.OpKernel || (dv.running >= 0 && s.prioOf(oi) >= dv.runPrio) {
			break
		}
		dv.popFront()
		s.launchNCCL(oi)
		dv = &s.devs[d]
	}
	s.tryAdmit(d)
}

// launchNCCL starts an admitted NCCL kernel: it now waits for its peers, then moves data.
func (s *Sim) launchNCCL(oi int32) {
	o := s.op(oi)
	o.start = s.now
	switch o.op.Kind {
	case engine.OpSend, engine.OpRecv:
		s.matchP2P(oi)
	case engine.OpCollective:
		s.arrive(oi)
	case engine.OpGroup:
		s.nextGroup++
		gid := s.nextGroup
		o.group = gid
		n := len(o.op.parts())
		o.parts = int32(n)
		children := make([]int32, 0, 8)
		for i := range n {
			o = s.op(oi)
			part := specOf(&o.op.parts()[i])
			part.Group = gid
			s.seq++
			ci := s.newOp(opState{op: part, seq: s.seq, queued: o.queued, start: s.now, waitAt: -1, parent: oi, inst: -1, live: true, group: gid})
			children = append(children, ci)
		}
		for _, ci := range children {
			switch s.op(ci).op.Kind {
			case engine.OpSend, engine.OpRecv:
				s.matchP2P(ci)
			case engine.OpCollective:
				s.arrive(ci)
			default:
				s.finish(ci, true)
			}
		}
	}
}
