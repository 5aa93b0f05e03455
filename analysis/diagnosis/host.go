package diagnosis

import (
	"fmt"
	"math"
	"slices"

	"github.com/xfertop/xfertop/units"
)

// slowWholeHost compares hosts, not ranks, for a host slow to launch on all its GPUs at once. The
// rank comparison (slowHost) groups ranks by their launch count, their role; when a job's roles
// follow its hosts (a pipeline of one host per stage, a host's eight ranks one tensor-parallel
// group), every peer of a slow host's ranks is on that host or on the one other host of its role,
// and half of them slow is no outlier (the median is theirs). Per host, its ranks' median least
// time between two launches (rankAcc.minGap: a host thread's cost per launch, whatever its role
// makes it wait on between launches, which a pipeline stage's spread of launches is not) is
// compared with the other hosts' by their median and MAD, as ranks are: at least hostRatio and
// zLimit robust deviations above. The culprit is the host; which rank is unknown (all of them).
func (d *Diagnosis) slowWholeHost() (suspect, bool) {
	// Each host's ranks, the hosts in order of their number (the host map's: a rank whose host
	// is unknown is on none).
	byHost := map[int32][]int32{}
	var order []int32
	for r := range d.ranks {
		h := d.hostOf(int32(r))
		if h < 0 {
			continue
		}
		if _, ok := byHost[h]; !ok {
			order = append(order, h)
		}
		byHost[h] = append(byHost[h], int32(r))
	}
	slices.Sort(order)
	var per, figs []float64
	var idx []int32
	var spread, launches []int64
	for _, h := range order {
		per = per[:0]
		var sp, n int64
		for _, r := range byHost[h] {
			a := &d.ranks[r]
			if a.minGap <= 0 {
				continue
			}
			per = append(per, float64(a.minGap))
			sp += a.qmax - a.qmin
			n += int64(a.launches)
		}
		if len(per) == 0 {
			continue
		}
		med, _ := medMAD(per)
		figs = append(figs, med)
		idx = append(idx, h)
		spread, launches = append(spread, sp/int64(len(per))), append(launches, n/int64(len(per)))
	}
	if len(figs) == 2 {
		return slowOfTwoHosts(figs, idx, spread, launches)
	}
	if len(figs) < minPeers {
		return suspect{}, false
	}
	best, bestX, second := -1, 0.0, 0.0
	for i, x := range figs {
		if x > bestX {
			best, second, bestX = i, bestX, x
		} else if x > second {
			second = x
		}
	}
	med, mad := medMAD(append([]float64(nil), figs...))
	if best < 0 || med <= 0 || bestX < hostRatio*med || bestX-med < zLimit*mad {
		return suspect{}, false
	}
	conf := math.Min(1, (bestX-max(second, med))/(bestX-med))
	if conf <= 0 { // hosts as slow as it: one of them
		n := 0
		for _, x := range figs {
			if x >= hostRatio*med && x-med >= zLimit*mad {
				n++
			}
		}
		conf = 1 / float64(max(n, 1))
	}
	ratio := bestX / med
	excess := int64(float64(launches[best]) * (bestX - med))
	return suspect{kind: SlowHost, rank: -1, host: idx[best], ratio: ratio, conf: conf, excess: excess, link: -1,
		detail: fmt.Sprintf("its ranks' launches were at least %s apart, %.2f× the median of %s (%s); they spread the step's %s per rank over %s",
			fmtNs(int64(bestX)), ratio, units.Counted(len(figs), "host"), fmtNs(int64(med)), units.Counted(launches[best], "launch"), fmtNs(spread[best])), cost: "its launches"}, true
}

// twoHostRatio is how many times the other host's least launch gap a host's must be to be named
// when a job runs on two hosts: no median of two singles one out, and no MAD measures their noise,
// so only a gap many times the other's (a host thread's cost per launch does not double by chance)
// is a finding.
const twoHostRatio = 2

// slowOfTwoHosts names the slower of a job's two hosts by their ranks' least time between launches
// (figs, per host idx), where it is at least twoHostRatio times the other's: a workload on two of
// a cluster's hosts, one slow to launch, made every step 3× longer while no median could say which.
func slowOfTwoHosts(figs []float64, idx []int32, spread, launches []int64) (suspect, bool) {
	best, other := 0, 1
	if figs[1] > figs[0] {
		best, other = 1, 0
	}
	bestX, otherX := figs[best], figs[other]
	if otherX <= 0 || bestX < twoHostRatio*otherX {
		return suspect{}, false
	}
	ratio := bestX / otherX
	excess := int64(float64(launches[best]) * (bestX - otherX))
	return suspect{kind: SlowHost, rank: -1, host: idx[best], ratio: ratio, conf: 1 - otherX/bestX, excess: excess, link: -1,
		detail: fmt.Sprintf("its ranks' launches were at least %s apart, %.2f× the other host's (host %d: %s; with 2 hosts no median singles one out, so a host is named only at %d× the other's or more); they spread the step's %s per rank over %s",
			fmtNs(int64(bestX)), ratio, idx[other], fmtNs(int64(otherX)), twoHostRatio, units.Counted(launches[best], "launch"), fmtNs(spread[best])), cost: "its launches"}, true
}
