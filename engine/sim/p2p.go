package sim

import (
	"fmt"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// ---- point to point ----

func (s *Sim) matchP2P(oi int32) {
	o := s.op(oi)
	other, ok := s.pairs[o.op.ID]
	if !ok || s.op(other).op.Kind == o.op.Kind {
		s.pairs[o.op.ID] = oi
		o.waitAt = s.now
		s.arm(oi)
		return
	}
	delete(s.pairs, o.op.ID)
	snd, rcv := oi, other
	if o.op.Kind == engine.OpRecv {
		snd, rcv = other, oi
	}
	so, ro := s.op(snd), s.op(rcv)
	if so.op.Peer != ro.op.Device || ro.op.Peer != so.op.Device || so.op.Bytes != ro.op.Bytes {
		err := &engine.GuardError{Op: "send/recv", Kind: engine.ErrSizeMismatch, Devices: []engine.DeviceID{so.op.Device, ro.op.Device},
			Detail: fmt.Sprintf("op %d: send of %d bytes %d→%d does not match recv of %d bytes %d←%d",
				so.op.ID, so.op.Bytes, so.op.Device, so.op.Peer, ro.op.Bytes, ro.op.Device, ro.op.Peer)}
		s.alert(snd, err.Error(), timeline.StatusError)
		for _, x := range [2]int32{snd, rcv} {
			s.op(x).matched = true
			s.fail(x, err)
			s.finish(x, true) // the streams go on; the failed op is recorded with an error status
		}
		return
	}
	for _, x := range [2]int32{snd, rcv} {
		xo := s.op(x)
		xo.matched = true
		s.peerWait(x)
		xo.start = s.now
	}
	if s.stallsP2P(snd, rcv) {
		return // a rank hung in it: its transfer never moves, and its ops never complete
	}
	fi := s.newFlow(ownerP2P, snd, so.op.Bytes)
	s.flows[fi].peer = rcv
	s.at(s.now+s.p2pRoute(fi, so.op.Device, ro.op.Device), evFlowStart, fi, 0)
}

// p2pRoute routes flow fi of a send from src to dst and returns its latency: NCCL's fixed cost
// of the kernel and the hop's (PredictP2P times a send alone the same way).
func (s *Sim) p2pRoute(fi int32, src, dst engine.DeviceID) int64 {
	lat := s.m.NCCLBaseNs + s.edge(fi, src, dst)
	if s.m.Interconnect == engine.NVLinkMesh && src != dst && s.topo.HostOf(src) == s.topo.HostOf(dst) {
		// Without a switch a pair has only the links joining the two GPUs: a GPU's links are
		// spread over its peers.
		s.flows[fi].cap /= float64(max(s.topo.GPUsPerHost-1, 1))
	}
	return lat
}

func (s *Sim) peerWait(oi int32) {
	o := s.op(oi)
	if o.waitAt >= 0 && o.waitAt < s.now {
		sub, aux := peerWaitWhat(&o.op)
		s.emit(timeline.Event{Kind: timeline.KindPeerWait, Sub: sub, Aux: aux, Start: o.waitAt, End: s.now, Queued: o.queued, Device: int32(o.op.Device),
			Peer: int32(o.op.Peer), Stream: uint32(o.op.Stream), Op: o.op.ID, Bytes: o.op.Bytes, Comm: o.op.Comm, Group: o.group,
			Barrier: o.op.Barrier, Host: s.hostOf(o.op.Device), Priority: int8(s.streams[o.op.Stream].prio), Label: o.op.Label})
	}
	o.waitAt = -1
}

// peerWaitWhat is what a peer wait waits in (timeline.PeerWaitSend): the collective (Sub), or
// whether a send or a receive (Aux).
func peerWaitWhat(op *opSpec) (sub uint8, aux uint32) {
	switch op.Kind {
	case engine.OpCollective:
		return uint8(op.Coll), 0
	case engine.OpSend:
		return 0, timeline.PeerWaitSend
	case engine.OpRecv:
		return 0, timeline.PeerWaitRecv
	}
	return 0, 0
}
