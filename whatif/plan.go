package whatif

import (
	"cmp"
	"math"
	"slices"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/timeline"
)

// Plan is a first pass over a trace, looking at what Stream needs to cut it into windows: its
// steps (one event each) and how far out of start order its ops come. It holds a few bytes a
// step, nothing of the ops.
type Plan struct {
	steps    []Placed
	seq      int64
	maxStart int64
	late     int64
	started  bool
	ops      int64 // the ops the graph holds (depgraph.IsNode)
}

// Ops is how many ops the input holds: what a replay holds at once when it has no steps to cut
// it at (Params' Cuts empty), its graph being then the whole input's.
func (p *Plan) Ops() int64 { return p.ops }

// Events takes the input's next events (all of them, steps inferred at its end included).
func (p *Plan) Events(batch []timeline.Event) {
	for i := range batch {
		e := &batch[i]
		seq := p.seq
		p.seq++
		if e.Kind == timeline.KindStep {
			p.steps = append(p.steps, Placed{*e, seq})
			continue
		}
		if !depgraph.IsNode(e) {
			continue
		}
		p.ops++
		if !p.started || e.Start > p.maxStart {
			p.maxStart, p.started = e.Start, true
		}
		p.late = max(p.late, p.maxStart-e.Start)
	}
}

// Params are the windows: cut just after the starts of the steps, a group of steps that begin
// together (the ranks of one job mark the same steps a little apart) cut after the last of them,
// the steps placed where the input has them. Just after: a step's start and the end of the step
// before (often the same instant) fall in one window, so that the window that ends a step holds
// its path, not the next.
func (p *Plan) Params() StreamParams {
	sp := StreamParams{Late: p.late, Steps: p.steps}
	ss := slices.Clone(p.steps)
	slices.SortStableFunc(ss, func(a, b Placed) int {
		return cmp.Or(cmp.Compare(a.Event.Start, b.Event.Start), cmp.Compare(a.Event.End, b.Event.End))
	})
	for i := 0; i < len(ss); {
		last, end := ss[i].Event.Start, ss[i].Event.End
		j := i + 1
		for ; j < len(ss) && ss[j].Event.Start < end; j++ {
			last, end = ss[j].Event.Start, min(end, ss[j].Event.End)
		}
		if last < math.MaxInt64 && (len(sp.Cuts) == 0 || last+1 > sp.Cuts[len(sp.Cuts)-1]) {
			sp.Cuts = append(sp.Cuts, last+1)
		}
		i = j
	}
	return sp
}
