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

// launchRing maps a process's correlation ids to launch times: slot corr mod its length. A ring
// as long as the span of the process's ids (the survey's) never has two of them share a slot, and
// then holds every launch: its slots are then kept by a hash of the id instead (hashed), in a table
// twice as large as the process's calls (the ids of a process are sparse: 3,338 calls over 33,000
// ids in the 2-GPU sample, 98 KiB of slots instead of 786 KiB), which finds what the ring would.
type launchRing struct {
	corr  []uint32 // 0: empty
	start []int64
	// hashed: corr and start are a table of the launches by a hash of their id (linear probing,
	// at most half full), which stands for a ring of span slots whose ids start at lo.
	hashed bool
	lo     uint32
	span   uint32
	n      int // launches in the table
}

func newRing(n int) *launchRing {
	return &launchRing{corr: make([]uint32, n), start: make([]int64, n)}
}

// newTable returns a hashed ring that stands for a ring of span slots holding the ids from lo, for
// calls launches.
func newTable(lo uint32, span, calls int) *launchRing {
	n := 64
	for n < 2*calls {
		n *= 2
	}
	r := newRing(n)
	r.hashed, r.lo, r.span = true, lo, uint32(span)
	return r
}

// slot is where a hashed ring's probe for c starts (Fibonacci hashing: sparse ids spread).
func (r *launchRing) slot(c uint32) uint32 {
	return uint32(uint64(c)*0x9E3779B97F4A7C15>>32) & uint32(len(r.corr)-1)
}

// putHashed records a launch in a hashed ring; the first of a correlation is kept.
func (r *launchRing) putHashed(c uint32, start int64) {
	mask := uint32(len(r.corr) - 1)
	i := r.slot(c)
	for r.corr[i] != 0 {
		if r.corr[i] == c {
			return
		}
		i = (i + 1) & mask
	}
	r.corr[i], r.start[i] = c, start
	if r.n++; 2*r.n > len(r.corr) { // more calls than the survey counted: the file changed
		g := newRing(2 * len(r.corr))
		g.hashed, g.lo, g.span, g.n = true, r.lo, r.span, r.n
		for j, c := range r.corr {
			if c != 0 {
				k := g.slot(c)
				for g.corr[k] != 0 {
					k = (k + 1) & uint32(len(g.corr)-1)
				}
				g.corr[k], g.start[k] = c, r.start[j]
			}
		}
		*r = *g
	}
}

// getHashed looks a launch up in a hashed ring. A miss counts as lost where the ring it stands for
// would have held a later id in c's slot: the one id of the span that shares it, if it was put.
func (r *launchRing) getHashed(c uint32, lost *int) (int64, bool) {
	if s, ok := r.find(c); ok {
		return s, true
	}
	if other := uint64(r.lo) + uint64((c-r.lo)&(r.span-1)); other > uint64(c) && other <= math.MaxUint32 {
		if _, ok := r.find(uint32(other)); ok {
			*lost++
		}
	}
	return 0, false
}

// find probes a hashed ring for c.
func (r *launchRing) find(c uint32) (int64, bool) {
	mask := uint32(len(r.corr) - 1)
	for i := r.slot(c); r.corr[i] != 0; i = (i + 1) & mask {
		if r.corr[i] == c {
			return r.start[i], true
		}
	}
	return 0, false
}

// launchTimes maps correlations to their runtime call's start.
type launchTimes struct {
	rings map[procID]*launchRing
	// sizes holds, by process, the span of the correlation ids of its runtime calls (the survey's):
	// its ring starts as large as that needs (within ringMin and ringMax), where growing to it would
	// allocate and copy every smaller ring on the way (the ids of a process are sparse: its driver
	// calls take ids too).
	sizes map[procID]int
	// spans holds, by process, the survey's span of its ids and how many calls it made (corrSpan):
	// a ring that would be as long as the span is hashed.
	spans  map[procID]corrSpan
	last   procID // the last process looked up, and its ring: rows come in runs
	lastR  *launchRing
	budget int
	lost   int
}

func newLaunchTimes() launchTimes {
	return launchTimes{rings: map[procID]*launchRing{}, sizes: map[procID]int{}, spans: map[procID]corrSpan{}, budget: ringBudget}
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
		if s, ok := l.spans[p]; ok && uint64(s.hi-s.lo) < uint64(n) && 2*s.calls < n {
			r = newTable(s.lo, n, s.calls) // the budget counts the ring it stands for
		} else {
			r = newRing(n)
		}
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
	if r.hashed {
		r.putHashed(c, start)
		return
	}
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
	if r.hashed {
		return r.getHashed(c, &l.lost)
	}
	i := c & uint32(len(r.corr)-1)
	if r.corr[i] == c {
		return r.start[i], true
	}
	if r.corr[i] > c {
		l.lost++ // a later call of the process took its slot
	}
	return 0, false
}
