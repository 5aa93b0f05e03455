package diagnosis

import (
	"fmt"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// A link moving bytes at a fraction of what it should is a fault before it costs the job anything:
// a pipeline's sends hidden behind its stages' compute cost the step nothing while the NIC or
// NVLink port under them is degraded, and the step waits on it as soon as the overlap goes (a
// larger microbatch, a faster kernel). Health tools name such a link by what it moves (NCCL RAS,
// DCGM's link counters), so the diagnosis does too: a link whose sends and receives have no peers
// to compare with (selflink.go) is compared, by its rate while busy over the step (its bytes over
// the time its port was busy, busy.go), with what the link gives.
//
// The reference is the topology's line rate of the link's class where the source knows it
// (SetLinkPeaks: the simulator's topology; never a guess): NCCL's protocols move a point-to-point
// transfer's payload at 75-94% of a link's line rate on every topology built in (their
// nccl.link_efficiency and nic_efficiency), so a healthy link is never below hiddenPeakRatio of
// it while busy. Where the line rate is unknown (a trace, attach) the only reference is the link's
// own highest rate of an earlier step, below busyRatio of which it slowed (a fault from the run's
// start is then not seen, rather than judged against an invented peak). Only ranks whose traffic
// in the step was such sends and receives alone are judged: collectives of small sizes move less
// payload per busy second on every link alike (NCCL's LL protocol, half of it flags), which peers
// in the same window tell apart (busy.go), and a line rate cannot.
//
// Such a finding says what it costs as it is: nothing the step waited on is claimed. Its Severity
// is 0 (it sorts below every finding that cost the step), Hidden is set, and Exposure is what it
// would cost the step were nothing overlapping it: its busy time beyond what a link at the
// reference takes for the same bytes.
const (
	// hiddenPeakRatio: a link busy at below this share of its class's line rate is degraded.
	hiddenPeakRatio = 0.6
	// hiddenMinBusyNs: a link busy for less in a step says too little about its rate.
	hiddenMinBusyNs = 1_000_000
)

// SetLinkPeaks gives the diagnosis each link class's line rate per device in bytes/s
// (timeline.Meta.LinkPeaks; 0: unknown), the reference a link without peers is judged against.
// Call it before the first event; without it only a link's own earlier steps are a reference.
func (d *Diagnosis) SetLinkPeaks(p [timeline.NumPeaks]float64) {
	d.linePeak = [3]float64{p[timeline.PeakPCIe] / 1e9, p[timeline.PeakNVLink] / 1e9, p[timeline.PeakNIC] / 1e9}
}

// p2pOnly marks the ranks whose compared traffic this step was sends and receives alone.
func (d *Diagnosis) p2pOnly() []bool {
	only := make([]bool, len(d.ranks))
	for k := range d.pairs {
		only[k.dev] = true
	}
	for slot, cnt := range d.oCnt {
		if slot >= len(d.keyList) || d.keyList[slot].kind != timeline.KindCollective {
			continue
		}
		for r, n := range cnt {
			if n > 0 {
				only[r] = false
			}
		}
	}
	for r := range d.ranks {
		if d.ranks[r].a2a {
			only[r] = false
		}
	}
	return only
}

// hiddenPlace is a link judged by its rate while busy against its reference.
type hiddenPlace struct {
	rank   int32
	cls    int     // 1 NVLink, 2 NIC
	share  float64 // its rate while busy over the reference
	rate   float64 // bytes/ns
	ref    float64 // bytes/ns
	line   bool    // ref is the topology's line rate (else its own earlier steps')
	busy   int64   // ns busy in the direction judged
	extra  int64   // ns of it beyond what the reference takes for its bytes
	thresh float64
	win    int64 // its first slow window this step, index + 1 (0: none seen)
}

// hiddenRef is the reference rank dev's link of class c in direction dir is judged against
// (bytes/ns; 0: none), whether it is the line rate, and the share of it below which it is degraded.
func (d *Diagnosis) hiddenRef(dev int32, c, dir int) (ref float64, line bool, thresh float64) {
	switch {
	case d.linePeak[c] > 0:
		return d.linePeak[c], true, hiddenPeakRatio
	case int(dev) < len(d.selfLink.rate) && d.selfLink.rate[dev][c][dir] > 0:
		return d.selfLink.rate[dev][c][dir], false, busyRatio
	}
	return 0, false, 0
}

// markHiddenWin notes the first window of the step in which a link bytes event moved below its
// reference while busy: a degraded link's finding is first seen there, not at its rank's first op.
func (d *Diagnosis) markHiddenWin(r *rankAcc, e *timeline.Event, c, dir int) {
	if r.hiddenWin[c][dir] != 0 || e.Op < minBusyNs || e.Device < 0 {
		return
	}
	ref, _, thresh := d.hiddenRef(e.Device, c, dir)
	if ref > 0 && float64(e.Bytes)/float64(e.Op) < thresh*ref {
		r.hiddenWin[c][dir] = e.Start/timeline.LinkWindowNs + 1
	}
}

// hiddenShare is rank r's link of class c judged in its slower direction this step (ok: a
// reference and enough busy time).
func (d *Diagnosis) hiddenShare(r int32, c int) (hiddenPlace, bool) {
	a := &d.ranks[r]
	var best hiddenPlace
	ok := false
	for dir := range 2 {
		if a.busyT[c][dir] < hiddenMinBusyNs {
			continue
		}
		p := hiddenPlace{rank: r, cls: c, rate: float64(a.busyB[c][dir]) / float64(a.busyT[c][dir]), busy: a.busyT[c][dir], win: a.hiddenWin[c][dir]}
		if p.ref, p.line, p.thresh = d.hiddenRef(r, c, dir); p.ref <= 0 {
			continue
		}
		p.share = p.rate / p.ref
		p.extra = max(p.busy-int64(float64(a.busyB[c][dir])/p.ref), 0)
		if !ok || p.share < best.share {
			best, ok = p, true
		}
	}
	return best, ok
}

// hiddenLink finds the link without peers that moved below its reference while busy this step
// (the comment above), whatever the step lost to it; what it cost is said at report (hiddenCost).
func (d *Diagnosis) hiddenLink() (suspect, bool) {
	only := d.p2pOnly()
	best, second, found := hiddenPlace{}, 1.0, false
	for r, o := range only {
		if !o {
			continue
		}
		for _, c := range [...]int{1, 2} {
			p, ok := d.hiddenShare(int32(r), c)
			if !ok {
				continue
			}
			x := p.share / p.thresh // below 1: degraded
			switch {
			case !found || x < best.share/best.thresh:
				if found {
					second = min(second, best.share/best.thresh)
				}
				best, found = p, true
			default:
				second = min(second, x)
			}
		}
	}
	if !found || best.share >= best.thresh || second < 1 {
		// No link below its reference, or more than one: which is not known, and no guess is made.
		return suspect{}, false
	}
	x := best.share / best.thresh
	s := suspect{kind: SlowLink, rank: best.rank, host: d.hostOf(best.rank), link: linkClass(best.cls), ratio: 1 / best.share,
		conf: min(1, max((second-x)/(1-x+1e-12), 0.01)), hidden: true, exposure: best.extra}
	if best.win > 0 {
		s.evidence = (best.win-1)*timeline.LinkWindowNs + 1 // first seen at its first slow window
	}
	ref := fmt.Sprintf("its own rate while busy in earlier steps (%s; its line rate is not known)", units.Rate(best.ref*1e9))
	if best.line {
		ref = fmt.Sprintf("its line rate (%s, the topology's; a healthy link moves %.0f%% of it or more)", units.Rate(best.ref*1e9), 100*hiddenPeakRatio)
	}
	s.detail = fmt.Sprintf("degraded: its %s moved at %s while busy this step, %.0f%% of %s, busy %s, %s longer than at that rate",
		linkName(linkClass(best.cls)), units.Rate(best.rate*1e9), 100*best.share, ref, fmtNs(best.busy), fmtNs(best.extra))
	return s, true
}

// hiddenCost says what a hidden degraded link costs the step, against the shortest clean step's
// work before it was first seen (base; 0: none), as costPhrase does for the others (a base taken
// after it was first seen may have been slowed by it too): nothing where the step was no longer,
// at most the step's growth where it grew, less what a slow GPU of the same step accounts for
// (explained: its kernels' lost time, which the link did not cost), else unknown; and what it
// would cost were nothing overlapping it (exposure).
func hiddenCost(exposure, work, base, explained int64) (string, costState) {
	would := fmt.Sprintf("it would cost the step up to %s if nothing overlapped it", fmtNs(exposure))
	if base <= 0 {
		return "what it costs the step now is not known (no clean step before it to compare with); " + would, costUnknown
	}
	grew := max(work-base, 0)
	if grew == 0 {
		return fmt.Sprintf("hidden behind other work: it costs the step nothing now (the step %s, no longer than the shortest step before it, %s); %s",
			fmtNs(work), fmtNs(base), would), costKnown
	}
	left := max(grew-max(explained, 0), 0)
	if left == 0 {
		return fmt.Sprintf("hidden behind other work: it costs the step nothing now (the step grew %s over the shortest step before it, all of it a slow GPU's kernels' lost time, %s); %s",
			fmtNs(grew), fmtNs(explained), would), costKnown
	}
	if explained > 0 {
		return fmt.Sprintf("it costs the step at most %s now (the step grew %s over the shortest step before it, %s of it a slow GPU's kernels' lost time), the rest hidden behind other work; %s",
			fmtNs(min(left, exposure)), fmtNs(grew), fmtNs(explained), would), costBound
	}
	return fmt.Sprintf("it costs the step at most %s now (the step grew %s over the shortest step before it), the rest hidden behind other work; %s",
		fmtNs(min(left, exposure)), fmtNs(grew), would), costBound
}
