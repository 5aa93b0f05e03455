package diagnosis

import (
	"fmt"
	"slices"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// maxBarriers bounds the barrier instances kept in one step.
const maxBarriers = 4096

// barrierInst is one barrier's arrivals so far: every rank's, to find the last and the median.
type barrierInst struct {
	arrivals []int64
	last     int32
	lastAt   int64
}

// addBarrier notes a rank's arrival at a barrier (its event starts when it arrived).
func (d *Diagnosis) addBarrier(e *timeline.Event) {
	if e.Device < 0 || e.Status != timeline.StatusOK {
		return
	}
	b := d.barriers[e.Op]
	if b == nil {
		if len(d.barriers) >= maxBarriers {
			d.Dropped++
			return
		}
		b = &barrierInst{last: -1}
		d.barriers[e.Op] = b
	}
	if len(b.arrivals) < 1<<12 {
		b.arrivals = append(b.arrivals, e.Start)
	}
	if b.last < 0 || e.Start > b.lastAt {
		b.last, b.lastAt = e.Device, e.Start
	}
}

// straggler finds a rank that arrived last at most of the step's barriers (three at least), late
// after the median arrival by 2% of the step or more in all: the others waited for it. That is
// the barriers' straggler table as a finding; a slow GPU takes precedence (its kernels made it
// late), else it is its host.
func (d *Diagnosis) straggler(stepNs int64) (suspect, bool) {
	n := 0
	last := map[int32]int{}
	late := map[int32]int64{}
	for _, b := range d.barriers {
		if len(b.arrivals) < minPeers {
			continue
		}
		n++
		slices.Sort(b.arrivals)
		last[b.last]++
		late[b.last] += b.lastAt - b.arrivals[len(b.arrivals)/2]
	}
	if n < 3 {
		return suspect{}, false
	}
	best, bestN := int32(-1), 0
	for r, c := range last {
		if c > bestN || (c == bestN && r < best) {
			best, bestN = r, c
		}
	}
	if 4*bestN < 3*n || late[best]*50 < stepNs {
		return suspect{}, false
	}
	ratio := 1 + float64(late[best])/float64(stepNs)
	return suspect{kind: SlowHost, rank: best, host: d.hostOf(best), ratio: ratio, conf: float64(bestN) / float64(n), excess: late[best], link: -1, cost: "its arrivals",
		detail: fmt.Sprintf("arrived last at %d of %s this step, %s in all after the median arrival; the others waited for it",
			bestN, units.Counted(n, "barrier"), fmtNs(late[best]))}, true
}
