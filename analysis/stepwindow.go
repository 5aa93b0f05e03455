package analysis

import "github.com/xfertop/xfertop/timeline"

// maxStepSpans bounds the disjoint stretches of steps the window keeps: steps run back to back,
// so their union is a few stretches; past it (steps each parted by a gap, thousands of them) the
// time inside steps is unknown.
const maxStepSpans = 1 << 14

// maxPendingGaps bounds the stream gaps held, each exactly, until the steps around them are
// known. Past it every gap, those held included, is summed into time bins (gapBins): bounded
// memory, and a figure that does not depend on the order the gaps came in, which is an estimate.
const maxPendingGaps = 1 << 14

// stepWindow is where the job's steps ran, for the idle figures counted per step: the union of
// the steps' spans (steps counted, from the analysis's start on), less the first step's
// communicator setup (Steps.SetupNs), which is reported apart. Idle time before the first step,
// between steps and after the last is not a step's either. An idle stretch is put inside or
// outside the steps when the result is read; a stretch that must be settled earlier (a device's
// busy time committed, a stream gap past maxPendingGaps) is settled by the steps known then, a
// stretch after the last step known taken as inside the step under way (producers mark a step
// when it ends). Stream gaps are all settled when the result is read: held exactly up to
// maxPendingGaps, past that summed in time bins and estimated (gapBins).
type stepWindow struct {
	s      *steps
	spans  intervalSet
	over   bool  // more than maxStepSpans stretches: unknown
	latest int64 // the latest step end known
	any    bool
	// The setup window [setupFrom, setupTo), recomputed when a step or a communicator changed.
	setupFrom, setupTo int64
	stale              bool
	// Stream gaps held exactly, up to maxPendingGaps; bins once there were more (then pending is
	// empty and every gap is in bins).
	pending []pendingGap
	bins    *gapBins
}

type pendingGap struct {
	start, end int64
	cause      Cause
}

// mark notes a counted step mark.
func (w *stepWindow) mark(iv timeline.Interval) {
	w.stale = true
	if w.over {
		return
	}
	w.spans.add(iv.Start, iv.End)
	if w.spans.size() > maxStepSpans {
		w.over, w.spans = true, intervalSet{}
	}
	if !w.any || iv.End > w.latest {
		w.latest, w.any = iv.End, true
	}
}

// setup returns the first step's setup window.
func (w *stepWindow) setup() (int64, int64) {
	if w.stale {
		w.setupFrom, w.setupTo, w.stale = 0, 0, false
		if f := w.s.firstFold(); f.haveFirst {
			w.setupFrom = f.first.Start
			w.setupTo = f.first.Start + w.s.setup(&f)
		}
	}
	return w.setupFrom, w.setupTo
}

// inside is how much of [a, b) lies inside the steps, setup left out; final: by what is known now
// (for a result), else with the time after the latest step known taken as a step under way.
func (w *stepWindow) inside(a, b int64, final bool) int64 {
	if b <= a {
		return 0
	}
	in := w.spans.overlap(a, b)
	switch {
	case final:
	case !w.any:
		in = b - a
	case b > w.latest:
		in += b - max(a, w.latest)
	}
	if sf, st := w.setup(); st > sf {
		in -= max(0, min(b, st)-max(a, sf))
	}
	return max(in, 0)
}

// insideAll is inside summed over sorted disjoint intervals, by what is known now.
func (w *stepWindow) insideAll(ivs []timeline.Interval) int64 {
	in := timeline.IntersectLength(ivs, w.spans.flat())
	if sf, st := w.setup(); st > sf {
		in -= timeline.IntersectLength(ivs, []timeline.Interval{{Start: sf, End: st}})
	}
	return max(in, 0)
}

// gap holds a stream's idle stretch until its steps are known.
func (w *stepWindow) gap(start, end int64, c Cause) {
	if end <= start {
		return
	}
	if w.bins != nil {
		w.bins.add(start, end, c)
		return
	}
	if len(w.pending) < maxPendingGaps {
		w.pending = append(w.pending, pendingGap{start, end, c})
		return
	}
	// Too many to hold: from now on every gap goes to the bins, so that the figure is the same
	// whichever gaps came first (settling the oldest by the steps known at the time was not).
	w.bins = newGapBins()
	for _, g := range w.pending {
		w.bins.add(g.start, g.end, g.cause)
	}
	w.pending = nil
	w.bins.add(start, end, c)
}

// gapsInside is the stream gaps inside the steps, by cause, and how far that may be from the
// exact figure (0: exact); false when it is unknown.
func (w *stepWindow) gapsInside() (CauseNs, int64, bool) {
	if w.over {
		return CauseNs{}, 0, false
	}
	var out CauseNs
	for _, g := range w.pending {
		out[g.cause] += w.inside(g.start, g.end, true)
	}
	if w.bins == nil {
		return out, 0, true
	}
	est, bound := w.bins.inside(w)
	for c := range out {
		out[c] += est[c]
	}
	return out, bound, true
}
