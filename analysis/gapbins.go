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
// the part of the bin's gaps inside the step is estimated. A slice rather than a map: at 1,024
// GPUs a quarter of a million gaps a step.
//
// A gap adds to its first and last bins what it covers of them (ends), and to the bins between,
// which it covers whole, a width each; those it counts in a difference array (whole: bin i is
// covered whole by the sum of whole[0..i] gaps, by cause), two writes whatever the gap's length,
// where adding a width to each bin was a write per bin (a long gap crosses hundreds). A bin's sum
// is its ends plus the width times that count, the same integers either way (bins).
type gapBins struct {
	shift uint
	base  int64 // the bin index of ends[0] and whole[0]
	ends  []CauseNs
	whole []causeCounts
}

// causeCounts is a count by cause.
type causeCounts [causeCount]int64

func newGapBins() *gapBins { return &gapBins{shift: minBinShift} }

// add sums [start, end) into the bins it overlaps, widening them first when the span of bins
// would pass maxGapBins.
func (g *gapBins) add(start, end int64, c Cause) {
	lo, hi := start>>g.shift, (end-1)>>g.shift
	if len(g.ends) == 0 {
		for hi-lo >= maxGapBins {
			g.shift++
			lo, hi = start>>g.shift, (end-1)>>g.shift
		}
		g.base = lo
	}
	for max(hi, g.base+int64(len(g.ends))-1)-min(lo, g.base) >= maxGapBins {
		g.widen()
		lo, hi = start>>g.shift, (end-1)>>g.shift
	}
	if lo < g.base {
		n := g.base - lo + int64(len(g.ends))
		ends, whole := make([]CauseNs, n), make([]causeCounts, n)
		copy(ends[g.base-lo:], g.ends)
		copy(whole[g.base-lo:], g.whole)
		g.ends, g.whole, g.base = ends, whole, lo
	}
	if n := hi - g.base + 1; n > int64(len(g.ends)) {
		g.ends = append(g.ends, make([]CauseNs, n-int64(len(g.ends)))...)
		g.whole = append(g.whole, make([]causeCounts, n-int64(len(g.whole)))...)
	}
	if lo == hi {
		g.ends[lo-g.base][c] += end - start
		return
	}
	g.ends[lo-g.base][c] += (lo+1)<<g.shift - start
	g.ends[hi-g.base][c] += end - hi<<g.shift
	if hi-lo > 1 {
		g.whole[lo+1-g.base][c]++
		g.whole[hi-g.base][c]--
	}
}

// bins returns each bin's sums, from the bin at index base on.
func (g *gapBins) bins() []CauseNs {
	out := make([]CauseNs, len(g.ends))
	width := int64(1) << g.shift
	var n causeCounts
	for i := range g.ends {
		for c := range n {
			n[c] += g.whole[i][c]
			out[i][c] = g.ends[i][c] + width*n[c]
		}
	}
	return out
}

// widen doubles the bins' width: bin i becomes part of bin i>>1 (floor, also below time 0).
func (g *gapBins) widen() {
	bins := g.bins()
	g.shift++
	base := g.base >> 1
	last := (g.base + int64(len(bins)) - 1) >> 1
	merged := make([]CauseNs, last-base+1)
	for i, v := range bins {
		w := &merged[(g.base+int64(i))>>1-base]
		for c := range v {
			w[c] += v[c]
		}
	}
	g.ends, g.whole, g.base = merged, make([]causeCounts, len(merged)), base
}

// inside estimates the gaps inside w's steps, by cause: all of a bin wholly inside them, none of
// one wholly outside, and of a bin a step's edge crosses the share of the bin inside (as if its
// gaps were spread evenly over it). bound is the most that estimate can be off: for each crossed
// bin, the larger of the part counted and the part left out.
func (g *gapBins) inside(w *stepWindow) (est CauseNs, bound int64) {
	width := int64(1) << g.shift
	var n causeCounts
	for k := range g.ends {
		v := g.ends[k]
		for c := range n { // the bin's sums, as bins makes them, without a slice each Result
			n[c] += g.whole[k][c]
			v[c] += width * n[c]
		}
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
