package analysis

// Bounds of gapBins: at most maxGapBins bins are occupied (the width doubles past that); the
// first width is 2^minBinShift ns.
const (
	maxGapBins  = 1 << 12
	minBinShift = 10
)

// gapBins sums stream gaps by cause into time bins of width 2^shift ns aligned on time 0, the
// width doubled (adjacent pairs of bins merged) whenever more than maxGapBins bins hold a gap.
// A bin's sums are the same whichever order the gaps came in, and so is the width: it ends as
// the narrowest that holds every gap in maxGapBins bins, since the bins a part of the gaps
// occupies are among those all of them occupy. So what is read from it does not depend on the
// order of the events (a recording's, in the order ops end, and its Chrome JSON's, sorted by
// start), at the price of a bin's resolution: where a step's edge falls inside a bin, the part
// of the bin's gaps inside the step is estimated.
type gapBins struct {
	shift uint
	bins  map[int64]CauseNs
}

func newGapBins() *gapBins { return &gapBins{shift: minBinShift, bins: map[int64]CauseNs{}} }

// add sums [start, end) into the bins it overlaps, widening them first when it alone would
// occupy more than maxGapBins.
func (g *gapBins) add(start, end int64, c Cause) {
	for (end-1)>>g.shift-start>>g.shift >= maxGapBins {
		g.widen()
	}
	for i := start >> g.shift; i <= (end-1)>>g.shift; i++ {
		lo, hi := i<<g.shift, (i+1)<<g.shift
		v := g.bins[i]
		v[c] += min(end, hi) - max(start, lo)
		g.bins[i] = v
	}
	for len(g.bins) > maxGapBins {
		g.widen()
	}
}

// widen doubles the bins' width: bin i becomes part of bin i>>1 (floor, also below time 0).
func (g *gapBins) widen() {
	old := g.bins
	g.bins = make(map[int64]CauseNs, len(old)/2+1)
	for i, v := range old {
		w := g.bins[i>>1]
		for c := range v {
			w[c] += v[c]
		}
		g.bins[i>>1] = w
	}
	g.shift++
}

// inside estimates the gaps inside w's steps, by cause: all of a bin wholly inside them, none of
// one wholly outside, and of a bin a step's edge crosses the share of the bin inside (as if its
// gaps were spread evenly over it). bound is the most that estimate can be off: for each crossed
// bin, the larger of the part counted and the part left out.
func (g *gapBins) inside(w *stepWindow) (est CauseNs, bound int64) {
	width := int64(1) << g.shift
	for i, v := range g.bins { // integer sums: the map's order does not matter
		lo := i << g.shift
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
