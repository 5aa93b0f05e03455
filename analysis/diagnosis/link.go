package diagnosis

import (
	"fmt"
	"slices"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// slowLink compares each rank's transfers with its peers' of the same class this step (kind, op,
// size, ranks, across hosts or not): per class the peers' median time per op, or, when the whole
// class slowed together (one communicator of every rank), its lowest median of earlier steps. A
// rank whose transfers of a class took opRatio× that is slow in it; a class where more than a
// quarter of its ranks are slow is a difference of roles (a pipeline's first stage), not a fault.
// The suspect is the rank slow in the most transfers: a link's own rank is slow in every class
// that crosses it, its peers only in those they share with it. When ranks tie (every rank in every
// slowed collective) the links' peak rates in the step's windows break the tie: a degraded link
// never moves more than what is left of it.
func (d *Diagnosis) slowLink() (suspect, bool) {
	d.slowPairs()
	d.slowColls()
	// A link's own rank is slow in all its transfers that cross it; a peer on the other end of some
	// of them only in those: the share of a rank's transfers that were slow ranks them, then the count.
	var tied []int32
	var best float64
	var bestN int32
	for r := range d.ranks {
		a := &d.ranks[r]
		if a.slowOps < 2 && (a.slowOps == 0 || float64(a.slowExcess) < (strong-1)*a.slowRef) {
			// One slow transfer is a suspect only when it stalled far past its reference (a
			// flapping NIC holds a step's one send per rank while it is down); a little slower
			// is noise.
			continue
		}
		share := float64(a.slowOps) / float64(a.ops)
		switch {
		case share > best+1e-9 || (share > best-1e-9 && a.slowOps > bestN):
			best, bestN, tied = share, a.slowOps, append(tied[:0], int32(r))
		case share > best-1e-9 && a.slowOps == bestN:
			tied = append(tied, int32(r))
		}
	}
	if len(tied) == 0 {
		return suspect{}, false
	}
	culprit := tied[0]
	a := &d.ranks[culprit]
	ratio := 1 + float64(a.slowExcess)/max(a.slowRef, 1)
	p, ok := d.slowestBusy(d.busyCands())
	if leaf, pa, conf, pok := d.slowestPort(); pok && (!ok || pa.windows > p.windows) {
		// A leaf's ports to the spines: the flows that cross them are held back there, not at
		// their NICs, whose rate while busy stays their line rate.
		return suspect{kind: SlowLink, rank: -1, host: -1, ratio: ratio, conf: max(conf, 0.01), excess: a.slowExcess, link: timeline.LinkFabric, port: leaf + 1,
			evidence: pa.first*timeline.LinkWindowNs + 1,
			detail: fmt.Sprintf("its ports to the spines moved at %.0f%% of their peers' median rate while busy (%s ports, the same window), in %s this step, in which %s took %.2f× their reference",
				100*pa.low, units.Counted(d.win.portPeers, "leaf's", "leaves'"), units.Counted(pa.windows, "window"), whose(tied, a.slowOps), ratio), cost: "their transfers"}, true
	}
	if ok {
		// The link itself, by its rate while busy: the ranks' transfer times say the step lost
		// time to a link, its rate says which.
		return suspect{kind: SlowLink, rank: p.rank, host: d.hostOf(p.rank), ratio: ratio, conf: p.conf, excess: a.slowExcess, link: p.class, flaps: p.down > 0 && p.up > 0,
			evidence: p.first*timeline.LinkWindowNs + 1,
			detail: fmt.Sprintf("%s this step, in which %s took %.2f× their reference",
				p.say(), whose(tied, a.slowOps), ratio), cost: "their transfers"}, true
	}
	class, cls := timeline.PeakNVLink, 1
	if 2*a.slowCross >= a.slowOps {
		class, cls = timeline.PeakNIC, 2
	}
	conf := 1.0
	peakNote := ""
	host := d.hostOf(culprit)
	var ties uint64
	if len(tied) > 1 {
		var c int32
		c, conf, peakNote = d.lowestPeak(tied, cls)
		if c >= 0 {
			culprit, host = c, d.hostOf(c)
		} else {
			// The link is one of the tied ranks': named by their host when they share one, else
			// unknown, rather than a guess.
			culprit = -1
			for _, r := range tied {
				if d.hostOf(r) != host {
					host = -1
				}
			}
			if host < 0 {
				// Transfers across hosts that slowed on every rank alike cross NVLink and NICs
				// both: which class is slow is not known either.
				class = -1
			}
			ties = tieKey(tied)
		}
	} else if p, med, ok := d.peakAgainst(culprit, cls); ok && p < 0.9*med {
		peakNote = fmt.Sprintf("; its %s peaked at %.0f%% of its peers' peak rate", linkName(class), 100*p/med)
	}
	s := suspect{kind: SlowLink, rank: culprit, host: host, ratio: ratio, conf: conf, excess: a.slowExcess, link: class, ties: ties,
		detail: fmt.Sprintf("%d of its transfers this step took %.2f× its peers' time%s",
			a.slowOps, ratio, peakNote), cost: "its transfers"}
	return s, true
}

// slowColls marks each rank's collectives of a class that took opRatio× the class's reference.
func (d *Diagnosis) slowColls() {
	var means []float64
	for k := range d.oSum {
		if d.keyList[k].kind != timeline.KindCollective {
			continue
		}
		sum, cnt := d.oSum[k], d.oCnt[k]
		means = means[:0]
		for r := range sum {
			if cnt[r] > 0 {
				means = append(means, sum[r]/float64(cnt[r]))
				d.ranks[r].ops += cnt[r]
			}
		}
		if len(means) < minPeers {
			continue
		}
		slices.Sort(means)
		med := means[len(means)/2]
		ref, whole := med, false
		if b := d.oBase[k]; b > 0 && med > opRatio*b {
			ref, whole = b, true
		}
		if d.oBase[k] == 0 || med < d.oBase[k] {
			d.oBase[k] = med
		}
		slow := 0
		for r := range sum {
			if cnt[r] > 0 && sum[r]/float64(cnt[r]) > opRatio*ref {
				slow++
			}
		}
		if slow == 0 || (!whole && float64(slow) > maxOutlier*float64(len(means))) {
			continue
		}
		for r := range sum {
			if cnt[r] > 0 && sum[r]/float64(cnt[r]) > opRatio*ref {
				a := &d.ranks[r]
				a.slowOps += cnt[r]
				a.slowExcess += int64(sum[r] - float64(cnt[r])*ref)
				if d.keyList[k].cross {
					a.slowCross += cnt[r]
				}
				a.slowRef += float64(cnt[r]) * ref
			}
		}
	}
}

// slowPairs does for sends and receives what slowLink does for collectives, per (rank, peer):
// the class's reference is the median over every pair's mean time.
func (d *Diagnosis) slowPairs() {
	bySlot := map[int32][]pairKey{}
	for k := range d.pairs {
		bySlot[k.slot] = append(bySlot[k.slot], k)
	}
	var means []float64
	for slot, ks := range bySlot {
		if len(ks) < minPeers {
			d.selfPairs(ks)
			continue
		}
		means = means[:0]
		for _, k := range ks {
			a := d.pairs[k]
			means = append(means, a.sum/float64(a.cnt))
		}
		slices.Sort(means)
		med := means[len(means)/2]
		ref, whole := med, false
		if b := d.oBase[slot]; b > 0 && med > opRatio*b {
			ref, whole = b, true
		}
		if d.oBase[slot] == 0 || med < d.oBase[slot] {
			d.oBase[slot] = med
		}
		slow := 0
		for _, k := range ks {
			if a := d.pairs[k]; a.sum/float64(a.cnt) > opRatio*ref {
				slow++
			}
		}
		skip := slow == 0 || (!whole && float64(slow) > maxOutlier*float64(len(ks)))
		for _, k := range ks {
			a, r := d.pairs[k], &d.ranks[k.dev]
			r.ops += a.cnt
			if skip || a.sum/float64(a.cnt) <= opRatio*ref {
				continue
			}
			r.slowOps += a.cnt
			r.slowExcess += int64(a.sum - float64(a.cnt)*ref)
			if d.keyList[slot].cross {
				r.slowCross += a.cnt
			}
			r.slowRef += float64(a.cnt) * ref
		}
	}
}

// linkPeak is the lower of a rank's two directions' peak rates on link class c (the one a fault
// holds down), ignoring a direction that carried nothing.
func (d *Diagnosis) linkPeak(r int32, c int) float64 {
	p := d.ranks[r].peak[c]
	switch {
	case p[0] > 0 && p[1] > 0:
		return min(p[0], p[1])
	case p[0] > 0:
		return p[0]
	}
	return p[1]
}

// lowestPeak picks, among ranks tied on slow transfers, the one whose link of class c peaked
// lowest, when it is clearly lowest (below 70% of the tied ranks' median peak); otherwise the
// first, with the confidence of a guess among them.
func (d *Diagnosis) lowestPeak(tied []int32, c int) (int32, float64, string) {
	var peaks []float64
	low, lowR := -1.0, tied[0]
	for _, r := range tied {
		p := d.linkPeak(r, c)
		if p <= 0 {
			continue
		}
		peaks = append(peaks, p)
		if low < 0 || p < low {
			low, lowR = p, r
		}
	}
	if len(peaks) < minPeers {
		return -1, 1 / float64(len(tied)), fmt.Sprintf("; %s alike (%s), no link rates to tell them apart", units.Counted(len(tied), "rank"), rankRange(tied))
	}
	slices.Sort(peaks)
	med, second := peaks[len(peaks)/2], peaks[1]
	if low >= 0.7*med {
		return -1, 1 / float64(len(tied)), fmt.Sprintf("; %s alike (%s), their links' peak rates too", units.Counted(len(tied), "rank"), rankRange(tied))
	}
	conf := min(1, (second-low)/(med-low+1e-12))
	return lowR, conf, fmt.Sprintf("; its %s peaked at %.0f%% of the %s median peak rate", linkName(linkClass(c)), 100*low/med, units.Counted(len(tied), "peer's", "peers'"))
}

// peakAgainst is rank r's peak on class c against the median peak of every rank that used it.
func (d *Diagnosis) peakAgainst(r int32, c int) (p, med float64, ok bool) {
	p = d.linkPeak(r, c)
	if p <= 0 {
		return 0, 0, false
	}
	var peaks []float64
	for x := range d.ranks {
		if q := d.linkPeak(int32(x), c); q > 0 {
			peaks = append(peaks, q)
		}
	}
	if len(peaks) < minPeers {
		return 0, 0, false
	}
	slices.Sort(peaks)
	return p, peaks[len(peaks)/2], true
}

func linkClass(c int) int {
	return [...]int{timeline.PeakPCIe, timeline.PeakNVLink, timeline.PeakNIC}[c]
}

// tieKey identifies a set of tied ranks (FNV-1a over their ids, in order): a link named by no
// rank is one suspect across steps only while the same ranks tie for it.
func tieKey(rs []int32) uint64 {
	h := uint64(14695981039346656037)
	for _, r := range rs {
		for i := range 4 {
			h ^= uint64(byte(uint32(r) >> (8 * i)))
			h *= 1099511628211
		}
	}
	return h
}

// rankRange writes ranks compactly: "0-7" when contiguous, else the first and last.
func rankRange(rs []int32) string {
	if int(rs[len(rs)-1]-rs[0]) == len(rs)-1 {
		return fmt.Sprintf("ranks %d-%d", rs[0], rs[len(rs)-1])
	}
	return fmt.Sprintf("ranks %d … %d", rs[0], rs[len(rs)-1])
}

// whose says whose transfers were slow: one rank's, or the tied ranks'.
func whose(tied []int32, ops int32) string {
	if len(tied) == 1 {
		return fmt.Sprintf("%s of rank %d", units.Counted(ops, "transfer"), tied[0])
	}
	return fmt.Sprintf("%s of each of %s", units.Counted(ops, "transfer"), units.Counted(len(tied), "rank"))
}
