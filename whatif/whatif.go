package whatif

import (
	"fmt"
	"sort"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/timeline"
)

// WhatIf is a trace's graph replayed twice: unchanged (the method's own error on this trace) and
// with the changes asked for; and the critical paths of the measured trace and of the change.
type WhatIf struct {
	Graph    *depgraph.Graph
	Baseline *Result // replayed with nothing changed, on the trace's own topology (Options.Recorded)
	Changed  *Result
	Before   []depgraph.Path // the measured trace's critical paths, per step
	After    []depgraph.Path // the changed replay's
}

// Run builds evs' graph and replays it, unchanged and under o.
func Run(evs []timeline.Event, names depgraph.Names, o Options) (*WhatIf, error) {
	g, err := depgraph.Build(evs, names)
	if err != nil {
		return nil, fmt.Errorf("dependency graph: %w", err)
	}
	if len(g.Nodes) == 0 {
		return nil, fmt.Errorf("the trace has no ops to replay (kernels, copies, collectives, runtime calls)")
	}
	w := &WhatIf{Graph: g}
	// The trace as it ran: on its own topology (none: collectives keep their measured time), with
	// its own NCCL choices, no scale-out.
	base := Options{Topology: o.Recorded, Recorded: o.Recorded, TraceDevices: o.TraceDevices, RunAlgo: o.RunAlgo, RunProto: o.RunProto}
	if w.Baseline, err = Replay(g, names, base); err != nil {
		return nil, err
	}
	if w.Changed, err = Replay(g, names, o); err != nil {
		return nil, err
	}
	w.Baseline.serializeSteps(g)
	w.Changed.serializeSteps(g)
	w.Before = g.CriticalPaths(nil, nil)
	w.After = g.CriticalPathsBound(w.Changed.Times, w.Changed.Weight, w.Changed.Bound)
	return w, nil
}

// Summary is the mean critical path of a trace's steps: time per step in each category.
type Summary struct {
	Steps      int                           // steps averaged over
	FirstLeft  bool                          // the first step was left out (it warms up: communicators, caches)
	Whole      bool                          // the path is the whole trace's: it has no steps
	StepNs     float64                       // mean step length along the path
	ByCategory map[depgraph.Category]float64 // mean ns per step
}

// Summarize averages paths, leaving the first step out when there are two or more: it holds the
// job's warm-up (communicator set-up, first allocations), which a replay keeps as measured.
func Summarize(paths []depgraph.Path) Summary {
	s := Summary{ByCategory: map[depgraph.Category]float64{}, Whole: len(paths) == 1 && paths[0].Step < 0}
	if len(paths) > 1 && paths[0].Step >= 0 {
		paths, s.FirstLeft = paths[1:], true
	}
	for _, p := range paths {
		s.StepNs += float64(p.EndNs - p.StartNs)
		for _, c := range depgraph.Categories() {
			s.ByCategory[c] += float64(p.ByCategory[c])
		}
	}
	s.Steps = len(paths)
	if s.Steps > 0 {
		n := float64(s.Steps)
		s.StepNs /= n
		for c := range s.ByCategory {
			s.ByCategory[c] /= n
		}
	}
	return s
}

// Dependencies describes the graph for people: its edges by kind, how many were inferred, how
// many the timestamps contradicted, and the collective parts left unmatched.
func Dependencies(g *depgraph.Graph) string {
	total, inferred, contra := 0, 0, 0
	s := ""
	for _, k := range depgraph.EdgeKinds() {
		if k == depgraph.EdgeDuration {
			continue
		}
		total += g.Counts[k]
		inferred += g.Inferred[k]
		contra += g.Contradicted[k]
		if g.Counts[k] > 0 {
			s += fmt.Sprintf(", %s %d", k, g.Counts[k])
			if g.Inferred[k] > 0 {
				s += fmt.Sprintf(" (%d inferred)", g.Inferred[k])
			}
		}
	}
	out := fmt.Sprintf("%d ops, %d dependencies (%d inferred)%s", len(g.Nodes), total, inferred, s)
	if contra > 0 {
		out += fmt.Sprintf("; %d contradicted by the timestamps, not added (or weakened to start-to-start on a stream)", contra)
	}
	if len(g.Instances) > 0 {
		out += fmt.Sprintf("; %d collective, barrier or send/receive instances matched across ranks", len(g.Instances))
	}
	if g.Unmatched > 0 {
		out += fmt.Sprintf("; %d collective parts without their other ranks in the trace (each is timed alone)", g.Unmatched)
	}
	return out
}

// serializeSteps starts each step no earlier than the previous step ended. A profiler's step
// begins where the host began it, and a host that runs ahead of a slowed GPU begins the next step
// while the GPU still runs this one: replayed, the steps would overlap, each holding the queue of
// the one before, and their mean would count that time twice (kernels ×3 on the ResNet-50 trace:
// steps of 434 ms a step apart by 297). A step holds the machine from the previous one's end, as
// the time between step ends, the job's throughput, has it. Ranks' marks of one step (the same
// step number, Aux, in merged per-rank traces, which do not say whose a mark is) run side by side:
// each starts no earlier than the latest end of the step numbered before it.
func (r *Result) serializeSteps(g *depgraph.Graph) {
	type rank struct {
		host uint16
		dev  int32
	}
	type seq struct {
		num            uint32 // the current step's number (0: unnumbered, each mark a step)
		curEnd, before int64  // the current step's latest end; the previous step's
		begun          bool
	}
	seqs := map[rank]*seq{}
	moved := false
	steps := append([]int32(nil), g.Steps...)
	sort.SliceStable(steps, func(i, j int) bool { return r.Times[depgraph.Start(steps[i])] < r.Times[depgraph.Start(steps[j])] })
	for _, st := range steps {
		e := g.Event(st)
		k := rank{e.Host, e.Device}
		q := seqs[k]
		if q == nil {
			q = &seq{}
			seqs[k] = q
		}
		start, end := depgraph.Start(st), depgraph.End(st)
		if !q.begun || e.Aux == 0 || e.Aux != q.num {
			if q.begun {
				q.before = q.curEnd
			}
			q.num, q.curEnd = e.Aux, r.Times[end]
		}
		if q.begun && r.Times[start] < q.before {
			r.Times[start], moved = min(q.before, r.Times[end]), true
		}
		q.begun, q.curEnd = true, max(q.curEnd, r.Times[end])
	}
	if !moved {
		return
	}
	for i, n := range r.Node {
		if g.Event(n).Kind == timeline.KindStep {
			r.Events[i].Start = r.Times[depgraph.Start(n)]
		}
	}
	idx := make([]int, len(r.Node))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return r.Events[idx[i]].Start < r.Events[idx[j]].Start })
	evs, nodes := make([]timeline.Event, len(idx)), make([]int32, len(idx))
	for i, j := range idx {
		evs[i], nodes[i] = r.Events[j], r.Node[j]
	}
	r.Events, r.Node = evs, nodes
}
