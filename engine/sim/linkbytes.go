package sim

import (
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// The simulator reports what each link carried as KindLinkBytes events, one per link and
// direction per window of timeline.LinkWindowNs it was used in: the flows' own rates integrated
// over time, so a link's figure is what the algorithm put on it (ring neighbours on NVLink, the
// NICs on the hops between hosts, NVLS to and from the switch) and can never exceed the link's
// bandwidth. The accounting follows the solver: a link's load (payload bytes per ns) changes only
// when its component is re-solved, and that is when its bytes so far are banked.
//
// Beside the bytes, each event carries the time the link was busy in the window (its Op, in ns),
// as a port's busy or transmit-wait counters do on real hardware: a link transmits at its line
// rate or not at all, so a link whose flows put w wire bytes/ns on it at bandwidth c is busy w/c
// of the time, and a link that is down (bandwidth 0) while flows wait on it is busy all of it.
// Bytes over busy time is then the link's rate while it moved data: what is left of a degraded
// link, whatever its flows' share or pace. The links of one ring carry the same bytes in a
// window, but a degraded one is busy all the time and its peers only part of it.

// linkBytes is the per-link accounting, indexed as linkBW.
type linkBytes struct {
	load  []float64 // payload bytes/ns on the link now
	since []int64   // when load last changed (bytes before it are in acc)
	acc   []float64 // payload bytes since the window began
	util  []float64 // the share of the time the link is busy now (0-1)
	busy  []float64 // ns busy since the window began
	inUse []bool    // the link is in used
	used  []int32   // links with bytes in this window or load now
	from  int64     // the current window's start
}

func (lb *linkBytes) init(n int) {
	lb.load, lb.since, lb.acc, lb.inUse = make([]float64, n), make([]int64, n), make([]float64, n), make([]bool, n)
	lb.util, lb.busy = make([]float64, n), make([]float64, n)
}

// bank moves link l's bytes and busy time up to time t into its window's totals.
func (s *Sim) bank(l int32, t int64) {
	lb := &s.lb
	if dt := t - lb.since[l]; dt > 0 {
		lb.acc[l] += lb.load[l] * float64(dt)
		lb.busy[l] += lb.util[l] * float64(dt)
	}
	lb.since[l] = t
}

// reload sets the loads of a solved component's links from its flows' new rates.
func (s *Sim) reload(links, comp []int32) {
	lb := &s.lb
	for _, l := range links {
		if l < 0 {
			continue // a block's links are banked and loaded at its place below (reloadBlock)
		}
		s.bank(l, s.now)
		lb.load[l], lb.util[l] = 0, 0
	}
	for _, fi := range comp {
		if fi < 0 {
			continue
		}
		f := &s.flows[fi]
		pay := f.rate * f.payload
		for k := range f.nl {
			l := f.links[k]
			// One addition per flow it stands for: the same sums as that many flows. The sums
			// stay in registers meanwhile (through memory each waited for the store before it).
			load, util := lb.load[l], lb.util[l]
			for range f.mult {
				load += pay
				util += f.rate // wire bytes/ns, made a share of the bandwidth below
			}
			lb.load[l], lb.util[l] = load, util
		}
	}
	for _, l := range links {
		if l < 0 {
			s.reloadBlock(l)
			continue
		}
		switch bw := s.linkBW[l]; {
		case bw > 0:
			lb.util[l] = min(lb.util[l]/bw, 1)
		case len(s.linkFlows[l]) > 0:
			lb.util[l] = 1 // down with flows waiting on it
		}
		if !lb.inUse[l] && (lb.load[l] > 0 || lb.util[l] > 0 || lb.acc[l] > 0) {
			if len(lb.used) == 0 {
				lb.from = s.now // the window of the first bytes after a quiet spell starts with them
			}
			lb.inUse[l] = true
			lb.used = append(lb.used, l)
		}
	}
}

// crossWindows reports the windows that end before the simulation moves on to time t. It is
// driven by the clock rather than by items in the queue, so that a quiet or deadlocked run is not
// kept going, nor its clock moved, by the accounting.
func (s *Sim) crossWindows(t int64) {
	lb := &s.lb
	for len(lb.used) > 0 {
		end := (lb.from/timeline.LinkWindowNs + 1) * timeline.LinkWindowNs
		if end > t {
			return
		}
		s.linkWindow(end)
	}
}

// linkWindow ends the current window at time to: it reports every used link's bytes since the
// window began and starts the next window there. A run that returns in mid-window reports up to
// then, and the rest of the window is reported when it ends.
func (s *Sim) linkWindow(to int64) {
	lb := &s.lb
	if to <= lb.from {
		return
	}
	kept := lb.used[:0]
	for _, l := range lb.used {
		s.bank(l, to)
		b, busy := int64(lb.acc[l]+0.5), int64(lb.busy[l]+0.5)
		if b > 0 || busy > 0 {
			s.emitLinkBytes(l, lb.from, to, b, busy)
		}
		lb.acc[l], lb.busy[l] = 0, 0
		if lb.load[l] > 0 || lb.util[l] > 0 {
			kept = append(kept, l)
		} else {
			lb.inUse[l] = false
		}
	}
	lb.used = kept
	lb.from = to
}

// linkPorts names each of a device's links as the timeline does: link class and direction.
var linkPorts = [linksPerDevice][2]int{
	linkHBM:     {timeline.PeakHBM, timeline.LinkTx},
	linkPCIeIn:  {timeline.PeakPCIe, timeline.LinkRx},
	linkPCIeOut: {timeline.PeakPCIe, timeline.LinkTx},
	linkNVOut:   {timeline.PeakNVLink, timeline.LinkTx},
	linkNVIn:    {timeline.PeakNVLink, timeline.LinkRx},
	linkNICOut:  {timeline.PeakNIC, timeline.LinkTx},
	linkNICIn:   {timeline.PeakNIC, timeline.LinkRx},
}

// emitLinkBytes reports link l's bytes and busy ns over [from, to].
func (s *Sim) emitLinkBytes(l int32, from, to, bytes, busy int64) {
	if s.fab.rail && l >= s.fab.base {
		s.emitPortBytes(l, from, to, bytes, busy)
		return
	}
	dev := l / linksPerDevice
	p := linkPorts[l%linksPerDevice]
	s.emit(timeline.Event{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(p[0], p[1]), Start: from, End: to, Bytes: bytes,
		Op: uint64(busy), Device: dev, Peer: timeline.NoDevice, Host: s.hostOf(engine.DeviceID(dev))})
}
