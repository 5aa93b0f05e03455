package analysis

import "github.com/xfertop/xfertop/timeline"

// maxStepSpans bounds the disjoint stretches of steps the window keeps: steps run back to back,
// so their union is a few stretches; past it (steps each parted by a gap, thousands of them) the
// time inside steps is unknown.
const maxStepSpans = 1 << 14

// maxPendingGaps bounds the stream gaps held until the steps around them are known.
const maxPendingGaps = 1 << 14

// stepWindow is where the job's steps ran, for the idle figures counted per step: the union of
// the steps' spans (steps counted, from the analysis's start on), less the first step's
// communicator setup (Steps.SetupNs), which is reported apart. Idle time before the first step,
// between steps and after the last is not a step's either. An idle stretch is put inside or
// outside the steps when the result is read; a stretch that must be settled earlier (a device's
// busy time committed, a stream gap past maxPendingGaps) is settled by the steps known then, a
// stretch after the last step known taken as inside the step under way (producers mark a step
// when it ends).
type stepWindow struct {
	s      *steps
	spans  intervalSet
	over   bool  // more than maxStepSpans stretches: unknown
	latest int64 // the latest step end known
	any    bool
	// The setup window [setupFrom, setupTo), recomputed when a step or a communicator changed.
	setupFrom, setupTo int64
	stale              bool
	// Stream gaps not yet settled (a ring), and those settled inside steps, by cause.
	pending []pendingGap
	head    int
	settled CauseNs
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
	if len(w.spans.ivs) > maxStepSpans {
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
	in := timeline.IntersectLength(ivs, w.spans.ivs)
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
	if len(w.pending) < maxPendingGaps {
		w.pending = append(w.pending, pendingGap{start, end, c})
		return
	}
	old := &w.pending[w.head]
	w.settled[old.cause] += w.inside(old.start, old.end, false)
	*old = pendingGap{start, end, c}
	w.head = (w.head + 1) % len(w.pending)
}

// gapsInside is the stream gaps inside the steps, by cause; false when that is unknown.
func (w *stepWindow) gapsInside() (CauseNs, bool) {
	if w.over {
		return CauseNs{}, false
	}
	out := w.settled
	for _, g := range w.pending {
		out[g.cause] += w.inside(g.start, g.end, true)
	}
	return out, true
}
