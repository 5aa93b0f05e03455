package nsys

import "math"

// Bounds on the launch times kept. Each process has a ring indexed by correlation id (CUPTI's are
// 32-bit, and grow by one with each API call of a process), which holds the launches of its last
// ringMax calls at most: a GPU op starts after its launch, so its runtime call went out of the merge
// before it, and only a GPU op that starts more than that many calls after its launch (a host far
// ahead of its GPUs) finds its launch forgotten; the import says how many did. Rings start small and
// grow while the calls in flight do not fit, within ringBudget entries in all.
const (
	ringMin    = 1 << 10
	ringMax    = 1 << 16
	ringBudget = 1 << 20
	maxProcs   = 1 << 12
)

// procID names a process of one file.
type procID struct {
	file uint16
	proc procKey
}

// launchRing maps a process's correlation ids to launch times: slot corr mod its length.
type launchRing struct {
	corr  []uint32 // 0: empty
	start []int64
}

func newRing(n int) *launchRing {
	return &launchRing{corr: make([]uint32, n), start: make([]int64, n)}
}

// launchTimes maps correlations to their runtime call's start.
type launchTimes struct {
	rings map[procID]*launchRing
	// sizes holds, by process, the span of the correlation ids of its runtime calls (the survey's):
	// its ring starts as large as that needs (within ringMin and ringMax), where growing to it would
	// allocate and copy every smaller ring on the way (the ids of a process are sparse: its driver
	// calls take ids too).
	sizes  map[procID]int
	last   procID // the last process looked up, and its ring: rows come in runs
	lastR  *launchRing
	budget int
	lost   int
}

func newLaunchTimes() launchTimes {
	return launchTimes{rings: map[procID]*launchRing{}, sizes: map[procID]int{}, budget: ringBudget}
}

// ring returns the ring of process p, made when create is set and the bounds allow.
func (l *launchTimes) ring(p procID, create bool) *launchRing {
	if l.lastR != nil && p == l.last {
		return l.lastR
	}
	r := l.rings[p]
	if r == nil {
		n := ringMin
		for n < l.sizes[p] && n < ringMax && l.budget >= 2*n { // the size growing to it would reach
			n *= 2
		}
		if !create || len(l.rings) >= maxProcs || l.budget < n {
			return nil
		}
		r = newRing(n)
		l.budget -= n
		l.rings[p] = r
	}
	l.last, l.lastR = p, r
	return r
}

// put records a launch; the first (earliest) of a correlation is kept.
func (l *launchTimes) put(p procID, corr uint64, start int64) {
	if corr == 0 || corr > math.MaxUint32 {
		return
	}
	r := l.ring(p, true)
	if r == nil {
		return
	}
	c := uint32(corr)
	i := c & uint32(len(r.corr)-1)
	switch old := r.corr[i]; {
	case old == c:
		return
	case old != 0 && len(r.corr) < ringMax && l.budget >= len(r.corr):
		// the calls in flight do not fit: grow rather than forget one
		l.budget -= len(r.corr)
		r = l.grow(p, r)
		i = c & uint32(len(r.corr)-1)
	}
	r.corr[i], r.start[i] = c, start
}

// grow doubles a ring, keeping its entries (the newer of two that land in one slot).
func (l *launchTimes) grow(p procID, r *launchRing) *launchRing {
	g := newRing(2 * len(r.corr))
	mask := uint32(len(g.corr) - 1)
	for j, c := range r.corr {
		if k := c & mask; c != 0 && c > g.corr[k] {
			g.corr[k], g.start[k] = c, r.start[j]
		}
	}
	l.rings[p], l.lastR = g, g
	return g
}

// get returns the launch time of a correlation.
func (l *launchTimes) get(p procID, corr uint64) (int64, bool) {
	if corr == 0 || corr > math.MaxUint32 {
		return 0, false
	}
	r := l.ring(p, false)
	if r == nil {
		return 0, false
	}
	c := uint32(corr)
	i := c & uint32(len(r.corr)-1)
	if r.corr[i] == c {
		return r.start[i], true
	}
	if r.corr[i] > c {
		l.lost++ // a later call of the process took its slot
	}
	return 0, false
}
