package diagnosis

import (
	"fmt"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// A pipeline's sends cross few links: a class of sends and receives with fewer than minPeers
// (rank, peer) pairs has no peers to compare with (slowPairs), so each pair is compared with
// itself before, as a GPU without peers is (selfslow.go): its mean time this step over the
// lowest mean of its earlier steps. Both ends of a slowed transfer slow alike, so the transfer
// times say a link slowed, not which: the link is the one whose rate while busy over the step
// fell against its own earlier steps (a healthy link on the other end still moves at its line
// rate while busy, only for longer). The step must have grown by half the transfers' extra
// time over the shortest step before (workBase), else they were hidden behind compute.

// selfLinkState is the pairs' and links' own history, kept across steps.
type selfLinkState struct {
	pair map[pairKey]float64 // the lowest mean time of an earlier step
	// rate is per rank the highest rate while busy of an earlier step, by class and direction.
	rate [][3][2]float64
	// down and up count per rank and class the windows its link moved below downRatio of its own
	// rate (down), and those after the first of them at busyRatio of it or more (up again).
	down, up [][3]int32
	last     [][3]int64 // the last window counted (its two directions count once)
}

// selfPairs marks the pairs of a class too small to compare with peers that took opRatio× their
// own lowest mean of earlier steps.
func (d *Diagnosis) selfPairs(ks []pairKey) {
	for _, k := range ks {
		// Not counted in the rank's ops: slowLink's shares are of the transfers it compares.
		a, r := d.pairs[k], &d.ranks[k.dev]
		base := d.selfLink.pair[k]
		if base <= 0 || a.sum/float64(a.cnt) <= opRatio*base {
			continue
		}
		r.selfOps += a.cnt
		r.selfExcess += int64(a.sum - float64(a.cnt)*base)
		r.selfRef += float64(a.cnt) * base
		if d.keyList[k.slot].cross {
			r.selfCross += a.cnt
		}
	}
}

// addSelfBusy adds a link bytes event to its rank's step totals, and counts its window down or up
// against the link's own earlier rate.
func (d *Diagnosis) addSelfBusy(r *rankAcc, e *timeline.Event, c, dir int) {
	if e.Op == 0 {
		return
	}
	r.busyB[c][dir] += e.Bytes
	r.busyT[c][dir] += int64(e.Op)
	d.markHiddenWin(r, e, c, dir)
	s := &d.selfLink
	if e.Op < minBusyNs || int(e.Device) >= len(s.rate) {
		return
	}
	h := s.rate[e.Device][c][dir]
	if h <= 0 {
		return
	}
	for len(s.down) <= int(e.Device) {
		s.down, s.up, s.last = append(s.down, [3]int32{}), append(s.up, [3]int32{}), append(s.last, [3]int64{})
	}
	idx := e.Start/timeline.LinkWindowNs + 1
	share := float64(e.Bytes) / float64(e.Op) / h
	switch dv := e.Device; {
	case share < downRatio && s.last[dv][c] != idx:
		s.down[dv][c]++
		s.last[dv][c] = idx
	case share >= busyRatio && s.down[dv][c] > 0 && s.last[dv][c] != idx:
		s.up[dv][c]++
		s.last[dv][c] = idx
	}
}

// selfRate is rank r's rate while busy this step on class c against its own earlier steps: the
// lower of its two directions' (0: not known).
func (d *Diagnosis) selfRate(r int32, c int) float64 {
	if int(r) >= len(d.selfLink.rate) {
		return 0
	}
	a, low := &d.ranks[r], 0.0
	for dir := range 2 {
		h := d.selfLink.rate[r][c][dir]
		if h <= 0 || a.busyT[c][dir] < minBusyNs {
			continue
		}
		if x := float64(a.busyB[c][dir]) / float64(a.busyT[c][dir]) / h; low == 0 || x < low {
			low = x
		}
	}
	return low
}

// selfSlowLink finds the link whose sends and receives without peers slowed against their own
// earlier steps (the comment above). growth is the step's growth over the shortest before
// (negative: none known).
func (d *Diagnosis) selfSlowLink(growth int64) (suspect, bool) {
	if growth < 0 {
		return suspect{}, false
	}
	var excess int64
	var cands []int32
	for r := range d.ranks {
		if a := &d.ranks[r]; a.selfOps > 0 {
			cands = append(cands, int32(r))
			excess = max(excess, a.selfExcess)
		}
	}
	if len(cands) == 0 || 2*growth < excess {
		return suspect{}, false // hidden behind compute: the step did not wait on them
	}
	// The link among the slowed transfers' ends whose rate while busy fell most against its own.
	best, bestShare, second, cls := int32(-1), 0.0, 1.0, 1
	for _, r := range cands {
		c := 1
		if a := &d.ranks[r]; 2*a.selfCross >= a.selfOps {
			c = 2
		}
		switch x := d.selfRate(r, c); {
		case x <= 0:
		case best < 0 || x < bestShare:
			if best >= 0 {
				second = min(second, bestShare)
			}
			best, bestShare, cls = r, x, c
		default:
			second = min(second, x)
		}
	}
	if best < 0 || bestShare >= busyRatio || second < busyRatio {
		// No link's rate fell, or both ends' did: which link is not known, and no guess is made.
		return suspect{}, false
	}
	a := &d.ranks[best]
	s := suspect{kind: SlowLink, rank: best, host: d.hostOf(best), link: linkClass(cls), excess: a.selfExcess,
		conf: min(1, (second-bestShare)/(1-bestShare+1e-12)), cost: "its transfers"}
	s.ratio = 1 / bestShare
	var down, up int32
	if int(best) < len(d.selfLink.down) {
		down, up = d.selfLink.down[best][cls], d.selfLink.up[best][cls]
	}
	say := fmt.Sprintf("its %s moved at %.0f%% of its own rate while busy in earlier steps", linkName(linkClass(cls)), 100*bestShare)
	if down > 0 && up > 0 {
		s.flaps = true
		say = fmt.Sprintf("its %s flaps: down (below %.0f%% of its own rate while busy in earlier steps) in %s of the run, back up at that rate in %s between; %.0f%% of it over this step",
			linkName(linkClass(cls)), 100*downRatio, units.Counted(int(down), "window"), units.Counted(int(up), "window"), 100*bestShare)
	}
	s.detail = fmt.Sprintf("%s; %s over it this step with no peers to compare with (as a pipeline's stages send to one another) took %.2f× the same transfers' time in its earlier steps: the step waited on them",
		say, units.Counted(a.selfOps, "transfer"), 1+float64(a.selfExcess)/max(a.selfRef, 1))
	return s, true
}

// endSelfLink folds the step into the pairs' and links' histories: the lowest mean time of a step,
// the highest rate while busy.
func (d *Diagnosis) endSelfLink() {
	s := &d.selfLink
	if s.pair == nil {
		s.pair = map[pairKey]float64{}
	}
	for k, a := range d.pairs {
		if m := a.sum / float64(a.cnt); s.pair[k] == 0 || m < s.pair[k] {
			if len(s.pair) < maxPairsPerRank*max(len(d.ranks), 1) || s.pair[k] > 0 {
				s.pair[k] = m
			}
		}
	}
	for len(s.rate) < len(d.ranks) {
		s.rate = append(s.rate, [3][2]float64{})
	}
	for r := range d.ranks {
		a := &d.ranks[r]
		for c := range 3 {
			for dir := range 2 {
				if a.busyT[c][dir] >= minBusyNs {
					s.rate[r][c][dir] = max(s.rate[r][c][dir], float64(a.busyB[c][dir])/float64(a.busyT[c][dir]))
				}
			}
		}
	}
}
