package depgraph

import (
	"fmt"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// Category is what time on the critical path was spent on.
type Category uint8

// Categories of critical-path time.
const (
	CatCompute       Category = iota // compute kernels
	CatCommunication                 // collectives, sends and receives
	CatCopies                        // copies and memsets
	CatLaunch                        // host runtime calls, the gaps between them, launch delays
	CatWaits                         // event, barrier, peer and host waits; GPU time no dependency explains
	catCount
)

var catNames = [catCount]string{"compute", "communication", "copies", "launch", "waits"}

// String names the category.
func (c Category) String() string {
	if c < catCount {
		return catNames[c]
	}
	return fmt.Sprintf("category(%d)", uint8(c))
}

// Categories lists the categories in order.
func Categories() []Category {
	return []Category{CatCompute, CatCommunication, CatCopies, CatLaunch, CatWaits}
}

// Path is the critical path of one step (or of the whole trace): the chain of dependencies that
// bound its end, walked back to its start.
type Path struct {
	Step       int32 // the step's node, -1 for the whole trace
	StartNs    int64
	EndNs      int64
	ByCategory [catCount]int64 // ns of the path in each category; they sum to EndNs − StartNs
	Nodes      []int32         // the ops whose time lies on the path, latest first
	NodeNs     []int64         // the time each of Nodes has on the path (its edges' share of it)
}

// Category is the category of node n's own duration on a critical path.
func (g *Graph) Category(n int32) Category { return g.category(n) }

// category is the category of node n's own duration.
func (g *Graph) category(n int32) Category {
	switch e := g.Event(n); {
	case e.Kind == timeline.KindKernel:
		return CatCompute
	case e.Kind.IsNCCL():
		return CatCommunication
	case e.Kind == timeline.KindMemcpy:
		return CatCopies
	case e.Kind == timeline.KindRuntime || e.Kind == timeline.KindGraphLaunch || e.Kind == timeline.KindCommInit:
		return CatLaunch
	}
	return CatWaits
}

// edgeCategory is the category of the time edge e weighs.
func (g *Graph) edgeCategory(e *Edge) Category {
	if n := g.NodeOf(e.From); n >= 0 {
		return g.category(n)
	}
	n := g.NodeOf(e.To) // an instance's join to a part's end: the part's kind
	if g.Event(n).Kind == timeline.KindBarrier {
		return CatWaits
	}
	return CatCommunication
}

// residualCategory is the category of the time at point p that its binding edge does not explain.
func (g *Graph) residualCategory(p int32, bound *Edge) Category {
	if n := g.NodeOf(p); n >= 0 {
		if k := g.Event(n).Kind; k == timeline.KindRuntime || k == timeline.KindGraphLaunch {
			return CatLaunch
		}
	}
	if bound != nil && bound.Kind == EdgeLaunch {
		return CatLaunch
	}
	return CatWaits
}

// CriticalPaths returns the critical path of each of the job's steps (JobSteps: from its first
// rank's start, back from the end of the rank that ended it last), or of the whole trace when it
// has no steps, under times and weights (the measured ones: Time, and nil for the edges' own). At each
// point the binding edge is the one whose source time plus weight is latest.
func (g *Graph) CriticalPaths(times, weights []int64) []Path {
	return g.CriticalPathsBound(times, weights, nil)
}

// CriticalPathsBound is CriticalPaths where bound names the edge that bound each point (-1: none),
// as a replay knows it: a replayed point keeps the lag its measured binding edge had (a launch
// latency, a host gap), so the edge whose source plus weight is latest need not be the one that
// set its time, and walking that one instead would hand a lag to the wrong chain (a kernel scaled
// by 0.9 then took the whole of a step's compute off its path). nil bound: CriticalPaths' rule.
func (g *Graph) CriticalPathsBound(times, weights []int64, bound []int32) []Path {
	if bound != nil && len(bound) != len(g.Time) {
		bound = nil
	}
	if times == nil {
		times = g.Time
	}
	if len(g.Steps) == 0 {
		if len(g.Nodes) == 0 {
			return nil
		}
		lo, hi := times[0], int32(0)
		for p, t := range times {
			lo = min(lo, t)
			if t > times[hi] {
				hi = int32(p)
			}
		}
		return []Path{g.walk(hi, lo, -1, times, weights, bound)}
	}
	jobs := g.JobSteps()
	out := make([]Path, 0, len(jobs))
	for _, ranks := range jobs {
		out = append(out, g.JobStepPath(ranks, times, weights, bound))
	}
	return out
}

// JobStepPath is the critical path of the job step whose ranks' step nodes are ranks (one of
// JobSteps): walked back from the rank that ended last, from the first rank's start.
func (g *Graph) JobStepPath(ranks []int32, times, weights []int64, bound []int32) Path {
	sink, from := jobSpan(ranks, times)
	return g.walk(End(sink), from, sink, times, weights, bound)
}

// JobSteps groups the step nodes into the job's steps, in the order of their first rank's start:
// the marks of one step number by several ranks (merged per-rank traces, each rank's profiler
// marking ProfilerStep#N, each step node on its rank's device) are one step of the job. A rank
// that marks a number again begins another step, so a source that numbers no step (every mark 0)
// keeps each mark a step.
func (g *Graph) JobSteps() [][]int32 {
	var jobs [][]int32
	open := map[uint32]int{} // step number → its latest job step
	for _, s := range g.Steps {
		e := g.Event(s)
		if j, ok := open[e.Aux]; ok && !slices.ContainsFunc(jobs[j], func(o int32) bool {
			r := g.Event(o)
			return r.Device == e.Device && r.Host == e.Host
		}) {
			jobs[j] = append(jobs[j], s)
			continue
		}
		open[e.Aux] = len(jobs)
		jobs = append(jobs, []int32{s})
	}
	return jobs
}

// jobSpan is the rank step of a job step that ended last under times (the job's step ends with it,
// so its critical path is the job step's) and the job step's start, its first rank's.
func jobSpan(ranks []int32, times []int64) (sink int32, from int64) {
	sink, from = ranks[0], times[Start(ranks[0])]
	for _, s := range ranks[1:] {
		if times[End(s)] > times[End(sink)] {
			sink = s
		}
		from = min(from, times[Start(s)])
	}
	return sink, from
}

// walk follows the binding edges back from point sink until time from.
func (g *Graph) walk(sink int32, from int64, step int32, times, weights []int64, binding []int32) Path {
	path := Path{Step: step, StartNs: from, EndNs: times[sink]}
	w := func(i int32) int64 {
		if weights != nil {
			return weights[i]
		}
		return g.Edges[i].W
	}
	last := int32(-1)
	for p := sink; times[p] > from; {
		var bound *Edge
		var bi int32
		at := int64(-1 << 63)
		if binding != nil {
			if bi = binding[p]; bi >= 0 {
				bound = &g.Edges[bi]
				at = min(times[p], times[bound.From]+w(bi))
			}
		} else {
			for _, i := range g.In[p] {
				if t := times[g.Edges[i].From] + w(i); t > at || t == at && bound != nil && bound.Kind != EdgeDuration && g.Edges[i].Kind == EdgeDuration {
					at, bound, bi = t, &g.Edges[i], i
				}
			}
		}
		if bound == nil || at <= from { // the rest of the step is this point's own
			path.ByCategory[g.residualCategory(p, bound)] += times[p] - from
			break
		}
		path.ByCategory[g.residualCategory(p, bound)] += times[p] - at
		if wt := w(bi); wt > 0 {
			part := min(wt, at-from)
			path.ByCategory[g.edgeCategory(bound)] += part
			n := g.NodeOf(bound.From)
			if n < 0 {
				n = g.NodeOf(bound.To)
			}
			if n != last {
				path.Nodes = append(path.Nodes, n)
				path.NodeNs = append(path.NodeNs, 0)
				last = n
			}
			path.NodeNs[len(path.NodeNs)-1] += part
		}
		p = bound.From
	}
	return path
}

// Binding is, for each point, the incoming edge CriticalPaths walks under times and weights (the
// measured ones: Time, and nil for the edges' own): the one whose source time plus weight is
// latest, a duration before a dependency on ties; -1 for a point with none. A graph built for a
// window walks its steps with it (StepPath), the points it took from earlier windows keeping the
// edge that bound them there.
func (g *Graph) Binding(times, weights []int64) []int32 {
	if times == nil {
		times = g.Time
	}
	bound := make([]int32, len(g.Time))
	for p := range bound {
		bound[p] = -1
		at := int64(-1 << 63)
		for _, i := range g.In[p] {
			e := &g.Edges[i]
			w := e.W
			if weights != nil {
				w = weights[i]
			}
			if t := times[e.From] + w; t > at || t == at && bound[p] >= 0 && g.Edges[bound[p]].Kind != EdgeDuration && e.Kind == EdgeDuration {
				at, bound[p] = t, i
			}
		}
	}
	return bound
}

// StepPath is the critical path of step node s under times, weights and bound (as for
// CriticalPathsBound, bound required).
func (g *Graph) StepPath(s int32, times, weights []int64, bound []int32) Path {
	return g.walk(End(s), times[Start(s)], s, times, weights, bound)
}
