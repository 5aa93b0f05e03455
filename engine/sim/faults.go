package sim

import (
	"fmt"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/timeline"
)

// The simulator models each injected fault (engine/fault) where it acts physically: a degraded or
// flapping NIC, a slow NVLink port or PCIe trained down a generation change the bandwidth of
// exactly those links from the fault's onset (the links' components are re-solved then, so only
// the flows crossing them slow down), as does a leaf switch's ports to the spines degraded (the
// flows between rail groups that cross them); a throttled GPU's kernels take longer; a slow host pays more
// for each launch; a hung rank's host thread stops at the op it never posts (or its part of the op
// never finishes); a missing
// rank's communicator initialisation never completes.

// faults is the simulator's fault state; its per-device slices are nil when no fault needs them,
// so a healthy run pays one nil check per hook.
type faults struct {
	list []fault.Fault
	// nominal is each link's healthy bandwidth (bytes/ns), kept when a fault changes linkBW.
	nominal []float64
	// byDev[d] lists the faults acting on device d's GPU or host thread (not its links).
	byDev [][]int32
	// links[i] are the links fault i changes.
	links [][]int32
	// collPosted[d] is whether device d's host thread has posted a collective (with byDev): a
	// hang of the default rule (fault.HangNext) stops a rank that has not at a send or receive.
	collPosted []bool
}

// setFaults binds fs to the topology and schedules their link changes.
func (s *Sim) setFaults(fs []fault.Fault) error {
	if len(fs) == 0 {
		return nil
	}
	fl := &s.flt
	fl.list = make([]fault.Fault, len(fs))
	fl.links = make([][]int32, len(fs))
	for i, f := range fs {
		if err := f.Bind(s.topo); err != nil {
			return fmt.Errorf("sim: fault %d: %w", i+1, err)
		}
		fl.list[i] = f
		if fl.links[i] = s.faultLinks(&f); fl.links[i] == nil {
			if fl.byDev == nil {
				fl.byDev = make([][]int32, len(s.hosts))
				fl.collPosted = make([]bool, len(s.hosts))
			}
			for _, d := range f.Devices(s.topo) {
				fl.byDev[d] = append(fl.byDev[d], int32(i))
			}
			continue
		}
		if fl.nominal == nil {
			fl.nominal = append([]float64(nil), s.linkBW...)
		}
		s.at(f.At, evFault, int32(i), 0)
	}
	return nil
}

// lineBW is link l's healthy line rate: the rate NCCL's protocol overhead is reckoned against,
// whatever a fault has left of it.
func (s *Sim) lineBW(l int32) float64 {
	if s.flt.nominal != nil {
		return s.flt.nominal[l]
	}
	return s.linkBW[l]
}

// faultStep applies link fault i at s.now (onset, each flap and the end) and schedules its next
// change. A link's bandwidth is its nominal rate times the factors of the faults in effect on it.
func (s *Sim) faultStep(i int32) {
	fl := &s.flt
	f := &fl.list[i]
	for _, l := range fl.links[i] {
		bw := fl.nominal[l] * s.linkFactor(l)
		if bw != s.linkBW[l] {
			s.splitAt(l) // a block's links are alike no more
			s.linkBW[l] = bw
			s.markDirty(l)
			s.dirty()
		}
	}
	next := int64(-1)
	if f.Kind == fault.NICFlap && f.Active(s.now) {
		next = s.now + max(f.Period/2, 1)
	}
	if end := f.At + f.For; f.For > 0 && s.now < end && (next < 0 || end < next) {
		next = end
	}
	if next >= 0 {
		s.at(next, evFault, i, 0)
	}
}

// linkFactor is the share of link l's rate the faults in effect now leave it.
func (s *Sim) linkFactor(l int32) float64 {
	return factorAt(s.flt.list, s.flt.links, l, s.now)
}

// faultLinks are the links fault f (bound to s's topology) changes: a NIC's, an NVLink port's or
// a PCIe link's both directions on each GPU it serves, a leaf switch's uplink and downlink; nil for
// a fault that acts on a GPU or a host thread, not a link.
func (s *Sim) faultLinks(f *fault.Fault) []int32 {
	var port []int
	switch f.Kind {
	case fault.NICSlow, fault.NICFlap:
		port = []int{linkNICOut, linkNICIn}
	case fault.NVLinkSlow:
		port = []int{linkNVOut, linkNVIn}
	case fault.PCIeGen:
		port = []int{linkPCIeIn, linkPCIeOut}
	case fault.FabricSlow:
		// The leaf's uplink and downlink: its ports to the spines, pooled (engine/sim/fabric.go).
		up := s.fab.base + 2*int32(f.Group*s.fab.rails+f.Rail)
		return []int32{up, up + 1}
	default:
		return nil
	}
	var out []int32
	for _, d := range f.Devices(s.topo) {
		for _, p := range port {
			out = append(out, int32(d)*linksPerDevice+int32(p))
		}
	}
	return out
}

// factorAt is the share of link l's rate the faults of list (links[i]: fault i's links) in effect
// at time t leave it: the product of their factors, a flapping NIC's only in the down half of its
// period.
func factorAt(list []fault.Fault, links [][]int32, l int32, t int64) float64 {
	x := 1.0
	for i := range list {
		f := &list[i]
		if !f.Active(t) {
			continue
		}
		if f.Kind == fault.NICFlap && ((t-f.At)/max(f.Period/2, 1))%2 == 1 {
			continue // the up half of its period
		}
		for _, fl := range links[i] {
			if fl == l {
				x *= f.Factor
				break
			}
		}
	}
	return x
}

// kernelNs is a kernel's duration on device d now: a throttled GPU's kernels take 1/factor as long.
func (s *Sim) kernelNs(d engine.DeviceID, dur int64) int64 {
	if s.flt.byDev == nil {
		return dur
	}
	for _, i := range s.flt.byDev[d] {
		if f := &s.flt.list[i]; f.Kind == fault.GPUSlow && f.Active(s.now) {
			dur = int64(float64(dur) / f.Factor)
		}
	}
	return dur
}

// launchDelay is the host time a slow host adds to each launch on device d's host thread now.
func (s *Sim) launchDelay(d int32) int64 {
	if s.flt.byDev == nil {
		return 0
	}
	var x int64
	for _, i := range s.flt.byDev[d] {
		if f := &s.flt.list[i]; f.Kind == fault.HostSlow && f.Active(s.now) {
			x += f.Delay
		}
	}
	return x
}

// stuck reports whether device d's host thread stops for ever at cmd: a hung rank at the op it
// never posts, a missing rank at its communicator's initialisation. A launch that goes on is
// noted if it posts a collective (faults.collPosted).
func (s *Sim) stuck(d int32, cmd *hostCmd) bool {
	if s.flt.byDev == nil {
		return false
	}
	launch := cmd.Kind == engine.CmdLaunch || cmd.Kind == engine.CmdBatch
	for _, i := range s.flt.byDev[d] {
		f := &s.flt.list[i]
		if !f.Active(s.now) {
			continue
		}
		switch {
		case f.Kind == fault.MissingRank && cmd.Kind == engine.CmdCommInit:
			return true
		case f.Kind == fault.Hang && f.Mode == fault.HangBefore && launch && s.hangsAt(f, engine.DeviceID(d), &s.op(cmd.ref).op):
			return true
		}
	}
	if launch && len(s.flt.byDev[d]) > 0 && !s.flt.collPosted[d] {
		op := s.op(cmd.ref).op.streamOp()
		s.flt.collPosted[d] = fault.PostsCollective(&op)
	}
	return false
}

// stalls reports whether collective instance ii, all of whose ranks have just posted it, holds a
// rank hung in it (a hang fault of mode in, in effect now, naming this collective): the rank's
// part of it never finishes, so the collective, which needs every rank's data, never completes on
// any of them. Its ops stay running, matched, for ever, and what is queued behind them waits.
// The hung rank's op is marked stalled (timeline.StatusStalled, on its event in flight): its part
// made no progress, as NCCL's proxy steps show a rank whose kernel stopped; its peers' parts run.
func (s *Sim) stalls(ii int32) bool {
	if s.flt.byDev == nil {
		return false
	}
	stalled := false
	for _, x := range s.instPool[ii].ops {
		o := s.op(x)
		for _, i := range s.flt.byDev[o.op.Device] {
			if f := &s.flt.list[i]; f.Kind == fault.Hang && f.Mode == fault.HangIn && f.Active(s.now) && s.hangsAt(f, o.op.Device, &o.op) {
				o.status, stalled = timeline.StatusStalled, true
				break
			}
		}
	}
	return stalled
}

// stallsP2P reports whether the matched send snd and receive rcv hold a rank hung in one of them
// (a hang fault of mode in, in effect now, naming a send or receive): that rank's part never
// finishes, so neither does the transfer; both ops stay running, matched, for ever. As in a
// collective (stalls), the hung rank's op is marked stalled and its peer's is not: the peer's
// part runs, waiting on it, and without the mark the two would look alike.
func (s *Sim) stallsP2P(snd, rcv int32) bool {
	if s.flt.byDev == nil {
		return false
	}
	stalled := false
	for _, x := range [2]int32{snd, rcv} {
		o := s.op(x)
		for _, i := range s.flt.byDev[o.op.Device] {
			if f := &s.flt.list[i]; f.Kind == fault.Hang && f.Mode == fault.HangIn && f.Active(s.now) && s.hangsAt(f, o.op.Device, &o.op) {
				o.status, stalled = timeline.StatusStalled, true
				break
			}
		}
	}
	return stalled
}

// hold keeps host thread hi busy with cmd for ever: nothing completes it.
func (s *Sim) hold(hi int32, cmd hostCmd) {
	h := &s.hosts[hi]
	h.cur, h.busy, h.since = cmd, true, s.now
}
