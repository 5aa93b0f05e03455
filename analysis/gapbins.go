package analysis

// Bounds of gapBins: the bins span at most maxGapBins widths (the width doubles past that); the
// first width is 2^minBinShift ns.
const (
	maxGapBins  = 1 << 12
	minBinShift = 10
)

// gapBins sums stream gaps by cause into time bins of width 2^shift ns aligned on time 0, held
// in one slice from the earliest bin a gap touched to the latest, the width doubled (adjacent
// pairs of bins merged) whenever that span would pass maxGapBins. A bin's sums are the same
// whichever order the gaps came in, and so is the width: the span only grows, so the width ends
// as the narrowest that holds the whole span in maxGapBins bins. So what is read from it does not
// depend on the order of the events (a recording's, in the order ops end, and its Chrome JSON's,
// sorted by start), at the price of a bin's resolution: where a step's edge falls inside a bin,
// the part of the bin's gaps inside the step is estimated. A slice rather than a map: a gap adds
// to every bin it overlaps, a few slice elements instead of as many map lookups (at 1,024 GPUs a
// quarter of a million gaps a step).
type gapBins struct {
	shift uint
	base  int64 // the bin index of bins[0]
	bins  []CauseNs
}

func newGapBins() *gapBins { return &gapBins{shift: minBinShift} }

// add sums [start, end) into the bins it overlaps, widening them first when the span of bins
// would pass maxGapBins.
func (g *gapBins) add(start, end int64, c Cause) {
	lo, hi := start>>g.shift, (end-1)>>g.shift
	if len(g.bins) == 0 {
		for hi-lo >= maxGapBins {
			g.shift++
			lo, hi = start>>g.shift, (end-1)>>g.shift
		}
		g.base = lo
	}
	for max(hi, g.base+int64(len(g.bins))-1)-min(lo, g.base) >= maxGapBins {
		g.widen()
		lo, hi = start>>g.shift, (end-1)>>g.shift
	}
	if lo < g.base {
		grown := make([]CauseNs, g.base-lo+int64(len(g.bins)))
		copy(grown[g.base-lo:], g.bins)
		g.bins, g.base = grown, lo
	}
	if n := hi - g.base + 1; n > int64(len(g.bins)) {
		g.bins = append(g.bins, make([]CauseNs, n-int64(len(g.bins)))...)
	}
	for i := lo; i <= hi; i++ {
		binLo, binHi := i<<g.shift, (i+1)<<g.shift
		g.bins[i-g.base][c] += min(end, binHi) - max(start, binLo)
	}
}

// widen doubles the bins' width: bin i becomes part of bin i>>1 (floor, also below time 0).
func (g *gapBins) widen() {
	g.shift++
	base := g.base >> 1
	last := (g.base + int64(len(g.bins)) - 1) >> 1
	merged := make([]CauseNs, last-base+1)
	for i, v := range g.bins {
		w := &merged[(g.base+int64(i))>>1-base]
		for c := range v {
			w[c] += v[c]
		}
	}
	g.bins, g.base = merged, base
}

// inside estimates the gaps inside w's steps, by cause: all of a bin wholly inside them, none of
// one wholly outside, and of a bin a step's edge crosses the share of the bin inside (as if its
// gaps were spread evenly over it). bound is the most that estimate can be off: for each crossed
// bin, the larger of the part counted and the part left out.
func (g *gapBins) inside(w *stepWindow) (est CauseNs, bound int64) {
	width := int64(1) << g.shift
	for k, v := range g.bins {
		if v == (CauseNs{}) {
			continue
		}
		lo := (g.base + int64(k)) << g.shift
		in := w.inside(lo, lo+width, true)
		switch in {
		case 0:
			continue
		case width:
			for c := range v {
				est[c] += v[c]
			}
			continue
		}
		f := float64(in) / float64(width)
		for c := range v {
			part := int64(float64(v[c]) * f)
			est[c] += part
			bound += max(part, v[c]-part)
		}
	}
	return est, bound
}
