package analysis

// Bounds of gapBins: the bins span at most maxGapBins widths (the width doubles past that); the
// first width is 2^minBinShift ns.
const (
	maxGapBins  = 1 << 12
	minBinShift = 10
)

// gapBins sums stream gaps by cause into time bins of width 2^shift ns aligned on time 0, from the
// earliest bin a gap touched to the latest, the width doubled (adjacent pairs of bins merged)
// whenever that span would pass maxGapBins. A bin's sums are the same whichever order the gaps
// came in, and so is the width: the span only grows, so the width ends as the narrowest that
// holds the whole span in maxGapBins bins. So what is read from it does not depend on the order
// of the events (a recording's, in the order ops end, and its Chrome JSON's, sorted by start), at
// the price of a bin's resolution: where a step's edge falls inside a bin, the part of the bin's
// gaps inside the step is estimated.
//
// A gap adds to its first and last bins what it covers of them (ends), and to the bins between,
// which it covers whole, a width each; those it counts in a difference array (whole: bin i is
// covered whole by the sum of whole over the bins from base to i, by cause), two writes whatever
// the gap's length, where adding a width to each bin was a write per bin (at 1,024 GPUs a quarter
// of a million gaps a step, many crossing hundreds of bins). A bin's sum is its ends plus the
// width times that count, the same integers either way (bins).
//
// Bin i lives at index i mod maxGapBins of two arrays made once: the span never holds more, so
// no two of its bins share an index, and a span growing backwards (a gap earlier than any before)
// moves nothing, where a slice from the earliest bin had to be copied into a new one.
type gapBins struct {
	shift uint
	base  int64 // the earliest bin held
	n     int64 // how many bins are held, from base on; those outside are zero in the arrays
	ends  *[maxGapBins]CauseNs
	whole *[maxGapBins]causeCounts
}

// causeCounts is a count by cause.
type causeCounts [causeCount]int64

func newGapBins() *gapBins {
	return &gapBins{shift: minBinShift, ends: new([maxGapBins]CauseNs), whole: new([maxGapBins]causeCounts)}
}

// at is where bin i lives in the arrays.
func at(i int64) int64 { return i & (maxGapBins - 1) }

// add sums [start, end) into the bins it overlaps, widening them first when the span of bins
// would pass maxGapBins.
func (g *gapBins) add(start, end int64, c Cause) {
	lo, hi := start>>g.shift, (end-1)>>g.shift
	if g.n == 0 {
		for hi-lo >= maxGapBins {
			g.shift++
			lo, hi = start>>g.shift, (end-1)>>g.shift
		}
		g.base, g.n = lo, 1
	}
	for max(hi, g.base+g.n-1)-min(lo, g.base) >= maxGapBins {
		g.widen()
		lo, hi = start>>g.shift, (end-1)>>g.shift
	}
	if lo < g.base {
		g.base, g.n = lo, g.n+g.base-lo
	}
	g.n = max(g.n, hi-g.base+1)
	if lo == hi {
		g.ends[at(lo)][c] += end - start
		return
	}
	g.ends[at(lo)][c] += (lo+1)<<g.shift - start
	g.ends[at(hi)][c] += end - hi<<g.shift
	if hi-lo > 1 {
		g.whole[at(lo+1)][c]++
		g.whole[at(hi)][c]--
	}
}

// bins returns the sums of the bins held, from the bin at index base on.
func (g *gapBins) bins() []CauseNs {
	out := make([]CauseNs, g.n)
	width := int64(1) << g.shift
	var n causeCounts
	for k := range out {
		i := at(g.base + int64(k))
		for c := range n {
			n[c] += g.whole[i][c]
			out[k][c] = g.ends[i][c] + width*n[c]
		}
	}
	return out
}

// widen doubles the bins' width: bin i becomes part of bin i>>1 (floor, also below time 0).
func (g *gapBins) widen() {
	bins := g.bins()
	*g.ends, *g.whole = [maxGapBins]CauseNs{}, [maxGapBins]causeCounts{}
	g.shift++
	base := g.base >> 1
	for k, v := range bins {
		w := &g.ends[at((g.base+int64(k))>>1)]
		for c := range v {
			w[c] += v[c]
		}
	}
	g.base, g.n = base, (g.base+g.n-1)>>1-base+1
}

// inside estimates the gaps inside w's steps, by cause: all of a bin wholly inside them, none of
// one wholly outside, and of a bin a step's edge crosses the share of the bin inside (as if its
// gaps were spread evenly over it). bound is the most that estimate can be off: for each crossed
// bin, the larger of the part counted and the part left out.
func (g *gapBins) inside(w *stepWindow) (est CauseNs, bound int64) {
	width := int64(1) << g.shift
	var n causeCounts
	for k := range g.n {
		i := at(g.base + k)
		v := g.ends[i]
		for c := range n { // the bin's sums, as bins makes them, without a slice each Result
			n[c] += g.whole[i][c]
			v[c] += width * n[c]
		}
		if v == (CauseNs{}) {
			continue
		}
		lo := (g.base + k) << g.shift
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
