package diagnosis

import (
	"fmt"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// A link's rate while busy (its bytes over the time it was busy, from link bytes events that carry
// their busy time, as port counters do on real hardware) is its line rate for a healthy link,
// whatever its share of a ring or its pace: a link transmits at its line rate or not at all. A
// degraded link transmits at what is left of it. So where transfer times cannot tell links apart
// (one ring of every rank slows every rank alike; a host's tensor-parallel ranks all wait for its
// slowest NVLink), the rate while busy can. Each link is compared with its peers (the links of the
// same class and direction) in the same window, so that they moved the same mix of protocols: a
// window of small all-reduces (NCCL's LL protocol, half of it flags) moves less payload per busy
// second on every link alike.
const (
	// minBusyNs: a window in which a link was busy for less says too little about its rate.
	minBusyNs = 10_000
	// busyRatio: a link whose rate while busy is below this share of its peers' is degraded.
	busyRatio = 0.85
	// stallRatio: in a window with too few busy links to compare, a link busy at below this share
	// of its peers' rate in the last window that had enough is holding the others up: a link that
	// is down stalls the ring, whose other links then wait idle.
	stallRatio = 0.1
	// downRatio: a link busy at below this share of its peers' rate in a window was down in it
	// (a flapping NIC at factor 0 moves nothing while down), not slow.
	downRatio = 0.05
)

// flapAcc is, per link class, what a rank's link did across the run's windows (kept across steps:
// a flap's down and up halves can fall in different steps): the windows it was down in, and the
// windows after the first of those in which it moved at its peers' rate again (up between).
type flapAcc struct {
	down, up [3]int32
	last     [3]int64 // the last window counted (its two directions count once)
}

// flapOf returns rank r's flap history, growing the table; nil past the bound.
func (d *Diagnosis) flapOf(r int32) *flapAcc {
	if r < 0 || r >= maxRanks {
		return nil
	}
	if int(r) >= len(d.flaps) {
		d.flaps = append(d.flaps, make([]flapAcc, int(r)+1-len(d.flaps))...)
	}
	return &d.flaps[r]
}

// noteFlap counts window idx for rank r's link of class c: down (below downRatio of its peers'
// rate), or up again at its peers' rate after having been down.
func (d *Diagnosis) noteFlap(r int32, c int, idx int64, share float64, slow bool) {
	f := d.flapOf(r)
	if f == nil {
		return
	}
	switch {
	case slow && share < downRatio:
		if f.down[c] == 0 || f.last[c] != idx {
			f.down[c]++
			f.last[c] = idx
		}
	case !slow && f.down[c] > 0 && f.last[c] != idx:
		f.up[c]++
		f.last[c] = idx
	}
}

// busyWindow gathers one link window's rates while busy, per link class and direction.
type busyWindow struct {
	idx   int64 // the window's index (Start / LinkWindowNs); -1: none yet
	end   int64 // the latest End of its events
	rates [3][2][]rankRate
	// ports are the fabric's switch ports (up, down), by leaf.
	ports [2][]portRate
	// peers is the most links compared per class in one window this step (for the evidence).
	peers     [3]int
	portPeers int
	// ref and portRef are the peers' median rate while busy in the last window that had enough
	// of them, per class and direction (0: none yet).
	ref     [3][2]float64
	portRef [2]float64
}

// judge returns how to tell a slow link among a window's rates xs (which it reorders): against
// their median and MAD when they are enough peers (and the median becomes *ref), else against
// *ref, for a link all but stalled. ok is false when there is nothing to judge by.
func judge(xs []float64, ref *float64) (slow func(x float64) (share float64, is bool), ok bool) {
	switch {
	case len(xs) >= minPeers:
		med, mad := medMAD(xs)
		*ref = med
		return func(x float64) (float64, bool) { return x / med, x < busyRatio*med && med-x >= zLimit*mad }, true
	case len(xs) > 0 && *ref > 0:
		r := *ref
		return func(x float64) (float64, bool) { return x / r, x < stallRatio*r }, true
	}
	return nil, false
}

type portRate struct {
	leaf uint32
	rate float64
}

type portAcc struct {
	windows int32
	last    int64 // the last window counted (its two directions count once)
	first   int64 // the first window counted
	low     float64
}

// maxPorts bounds the switch ports kept per step.
const maxPorts = 1 << 12

type rankRate struct {
	rank int32
	rate float64
	busy int64 // ns the link was busy in the window
}

// addBusy notes link class c, direction dir of a link bytes event that says how long the link was
// busy. A window's links are compared when the events of a later window arrive (or the step that
// covers the window ends): a source reports a window's links together, when it ends.
func (d *Diagnosis) addBusy(e *timeline.Event, c, dir int) {
	if d.inWindow(e) {
		d.win.rates[c][dir] = append(d.win.rates[c][dir], rankRate{e.Device, float64(e.Bytes) / float64(e.Op), int64(e.Op)})
	}
}

// addPortBusy does for a fabric switch port (a leaf's ports to the spines, up or down) what
// addBusy does for a device's link.
func (d *Diagnosis) addPortBusy(e *timeline.Event, dir int) {
	if d.inWindow(e) && len(d.win.ports[dir]) < maxPorts {
		d.win.ports[dir] = append(d.win.ports[dir], portRate{e.Aux, float64(e.Bytes) / float64(e.Op)})
	}
}

// inWindow reports whether e says how long its link was busy and falls in the window gathered,
// comparing the one gathered so far when e begins a later one.
func (d *Diagnosis) inWindow(e *timeline.Event) bool {
	if e.Op < minBusyNs {
		return false
	}
	w := &d.win
	idx := e.Start / timeline.LinkWindowNs
	switch {
	case idx > w.idx:
		d.flushWindow()
		w.idx = idx
	case idx < w.idx:
		return false // a window already compared
	}
	w.end = max(w.end, e.End)
	return true
}

// flushWindow compares each link of the window gathered with its peers: a link below busyRatio of
// their median rate while busy and zLimit robust deviations under it moved slower than they did.
func (d *Diagnosis) flushWindow() {
	w := &d.win
	var xs []float64
	for c := range w.rates {
		for dir := range w.rates[c] {
			rs := w.rates[c][dir]
			w.rates[c][dir] = rs[:0]
			xs = xs[:0]
			for _, x := range rs {
				xs = append(xs, x.rate)
			}
			slow, ok := judge(xs, &w.ref[c][dir])
			if !ok {
				continue
			}
			if len(rs) >= minPeers {
				w.peers[c] = max(w.peers[c], len(rs))
			}
			for _, x := range rs {
				share, is := slow(x.rate)
				d.noteFlap(x.rank, c, w.idx, share, is)
				if !is {
					continue
				}
				a := &d.ranks[x.rank]
				// What its peers' rate would have taken for the same bytes: the rest of its busy
				// time is what the link's slowness added (busyExtra).
				a.busyExtra[c][dir] += int64(float64(x.busy) * (1 - min(share, 1)))
				if a.busySlow[c] == 0 || share < a.busyLow[c] {
					a.busyLow[c] = share
				}
				if a.busySlow[c] == 0 {
					a.busyOne[c] = w.idx
				}
				if a.busySlow[c] == 0 || a.busyWin[c] != w.idx { // its two directions count once
					a.busySlow[c]++
					a.busyWin[c] = w.idx
				}
			}
		}
	}
	for dir, ps := range w.ports {
		w.ports[dir] = ps[:0]
		xs = xs[:0]
		for _, p := range ps {
			xs = append(xs, p.rate)
		}
		slow, ok := judge(xs, &w.portRef[dir])
		if !ok {
			continue
		}
		if len(ps) >= minPeers {
			w.portPeers = max(w.portPeers, len(ps))
		}
		for _, p := range ps {
			share, is := slow(p.rate)
			if !is {
				continue
			}
			a, ok := d.portSlow[p.leaf]
			if !ok && len(d.portSlow) >= maxPorts {
				continue
			}
			if a.windows == 0 || share < a.low {
				a.low = share
			}
			if a.windows == 0 {
				a.first = w.idx
			}
			if a.windows == 0 || a.last != w.idx {
				a.windows++
				a.last = w.idx
			}
			d.portSlow[p.leaf] = a
		}
	}
}

// slowestPort is the switch port that moved slower while busy than its peers in the most windows
// this step (then the lower share of their rate), with its share of the windows in which a port
// was slow as its confidence.
func (d *Diagnosis) slowestPort() (leaf uint32, a portAcc, conf float64, ok bool) {
	var total int32
	for l, x := range d.portSlow {
		total += x.windows
		if !ok || x.windows > a.windows || (x.windows == a.windows && (x.low < a.low || (x.low == a.low && l < leaf))) {
			leaf, a, ok = l, x, true
		}
	}
	if ok {
		conf = float64(a.windows) / float64(total)
	}
	return leaf, a, conf, ok
}

// busyPlace is a link placed by its rate while busy.
type busyPlace struct {
	rank    int32
	class   int // timeline.PeakNVLink or PeakNIC
	windows int32
	low     float64 // its lowest share of its peers' median rate while busy
	peers   int
	conf    float64
	first   int64 // the first window (its index) in which it was slow
	// down and up: the windows of the run its link was down in (below downRatio of its peers'
	// rate) and back at its peers' rate after the first of those (flapAcc).
	down, up int32
}

// slowestBusy looks among the ranks in cands for the link that moved slower while busy than its
// peers in the most windows this step (NVLink or NIC; then the lower share of their rate). Its
// confidence is its share of the windows in which a candidate's link of its class was slow.
func (d *Diagnosis) slowestBusy(cands []int32) (busyPlace, bool) {
	var best busyPlace
	found := false
	for _, cls := range [...]int{1, 2} {
		var total int32
		for _, r := range cands {
			a := &d.ranks[r]
			n := a.busySlow[cls]
			if n == 0 {
				continue
			}
			total += n
			if !found || n > best.windows || (n == best.windows && a.busyLow[cls] < best.low) {
				best = busyPlace{rank: r, class: linkClass(cls), windows: n, low: a.busyLow[cls], peers: d.win.peers[cls], first: a.busyOne[cls]}
				if f := d.flapOf(r); f != nil {
					best.down, best.up = f.down[cls], f.up[cls]
				}
				found = true
			}
		}
		if found && best.class == linkClass(cls) {
			best.conf = float64(best.windows) / float64(total)
		}
	}
	return best, found
}

// say is the evidence: the link's rate while busy against its peers'; a link that went down and
// came back up at its peers' rate between flaps, which is what its fix needs (a cable or a
// transceiver, not congestion).
func (p busyPlace) say() string {
	if p.down > 0 && p.up > 0 {
		return fmt.Sprintf("its %s flaps: down (%.0f%% of its peers' median rate while busy) in %s of the run, back up at its peers' rate in %s between; slow in %s",
			linkName(p.class), 100*p.low, units.Counted(int(p.down), "window"), units.Counted(int(p.up), "window"), units.Counted(p.windows, "window"))
	}
	if p.down > 0 && p.low < downRatio {
		return fmt.Sprintf("its %s went down (%.0f%% of its peers' median rate while busy; %s the same window), in %s",
			linkName(p.class), 100*p.low, peersSay(p), units.Counted(p.windows, "window"))
	}
	if p.peers == 0 {
		return fmt.Sprintf("its %s moved at %.0f%% of its peers' median rate while busy (theirs in the last window they moved in: they waited on it), in %s",
			linkName(p.class), 100*p.low, units.Counted(p.windows, "window"))
	}
	return fmt.Sprintf("its %s moved at %.0f%% of its peers' median rate while busy (%s %s, the same window), in %s",
		linkName(p.class), 100*p.low, units.Counted(p.peers, "rank's", "ranks'"), linkName(p.class), units.Counted(p.windows, "window"))
}

// busyCands are the ranks with slow transfers this step: the ranks a slow link's place is looked
// for among.
func (d *Diagnosis) busyCands() []int32 {
	var out []int32
	for r := range d.ranks {
		if d.ranks[r].slowOps > 0 {
			out = append(out, int32(r))
		}
	}
	return out
}

// peersSay names what a link was compared with.
func peersSay(p busyPlace) string {
	if p.peers == 0 {
		return "theirs in the last window they moved in: they waited on it;"
	}
	return fmt.Sprintf("%s %s,", units.Counted(p.peers, "rank's", "ranks'"), linkName(p.class))
}
