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

// Run builds evs' graph and replays it, unchanged and under o: the whole trace in one graph, in
// memory (Stream replays it a step at a time, to the same result).
func Run(evs []timeline.Event, names depgraph.Names, o Options) (*WhatIf, error) {
	g, err := depgraph.Build(evs, names)
	if err != nil {
		return nil, fmt.Errorf("dependency graph: %w", err)
	}
	if len(g.Nodes) == 0 {
		return nil, fmt.Errorf("the trace has no ops to replay (kernels, copies, collectives, runtime calls)")
	}
	w := &WhatIf{Graph: g}
	if w.Baseline, err = Replay(g, names, baselineOptions(o)); err != nil {
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

// baselineOptions are the unchanged replay's under o: the trace as it ran, on its own topology
// (none: collectives keep their measured time), with its own NCCL choices and its own faults
// (a recording's: the replay of a faulty run with them healed would call the fault's whole
// effect its error), no scale-out.
func baselineOptions(o Options) Options {
	return Options{Topology: o.Recorded, Recorded: o.Recorded, TraceDevices: o.TraceDevices, RunAlgo: o.RunAlgo, RunProto: o.RunProto,
		Faults: o.RecordedFaults, RecordedFaults: o.RecordedFaults}
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
func Dependencies(g depgraph.Stats) string {
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
	out := fmt.Sprintf("%d ops, %d dependencies (%d inferred)%s", g.Ops, total, inferred, s)
	if contra > 0 {
		out += fmt.Sprintf("; %d contradicted by the timestamps, not added (or weakened to start-to-start on a stream)", contra)
	}
	if g.Matched > 0 {
		out += fmt.Sprintf("; %d collective, barrier or send/receive instances matched across ranks", g.Matched)
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
	var q stepQueue
	if !q.serialize(g, g.Steps, r.Times) {
		return
	}
	for i, n := range r.Node {
		if g.Event(n).Kind == timeline.KindStep {
			r.Events[i].Start = r.Times[depgraph.Start(n)]
		}
	}
	// In start order, ops starting together in node order: as Stream passes them on.
	idx := make([]int, len(r.Node))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool {
		a, b := r.Events[idx[i]].Start, r.Events[idx[j]].Start
		return a < b || a == b && r.Node[idx[i]] < r.Node[idx[j]]
	})
	evs, nodes := make([]timeline.Event, len(idx)), make([]int32, len(idx))
	for i, j := range idx {
		evs[i], nodes[i] = r.Events[j], r.Node[j]
	}
	r.Events, r.Node = evs, nodes
}

// stepQueue is each rank's place in its sequence of steps, for serializeSteps; Stream carries it
// from window to window.
type stepQueue map[stepRank]*stepSeq

// stepRank is the rank a step mark is on.
type stepRank struct {
	host uint16
	dev  int32
}

// stepSeq is a rank's current step and the end of the one before.
type stepSeq struct {
	num            uint32 // the current step's number (0: unnumbered, each mark a step)
	curEnd, before int64  // the current step's latest end; the previous step's
	begun          bool
}

// serialize moves the start of each of steps (step nodes of g, taken in their replayed start
// order) to no earlier than its rank's previous step ended, in times; it reports whether any moved.
func (q *stepQueue) serialize(g *depgraph.Graph, steps []int32, times []int64) bool {
	if *q == nil {
		*q = stepQueue{}
	}
	moved := false
	steps = append([]int32(nil), steps...)
	sort.SliceStable(steps, func(i, j int) bool { return times[depgraph.Start(steps[i])] < times[depgraph.Start(steps[j])] })
	for _, st := range steps {
		e := g.Event(st)
		k := stepRank{e.Host, e.Device}
		s := (*q)[k]
		if s == nil {
			s = &stepSeq{}
			(*q)[k] = s
		}
		start, end := depgraph.Start(st), depgraph.End(st)
		if !s.begun || e.Aux == 0 || e.Aux != s.num {
			if s.begun {
				s.before = s.curEnd
			}
			s.num, s.curEnd = e.Aux, times[end]
		}
		if s.begun && times[start] < s.before {
			times[start], moved = min(s.before, times[end]), true
		}
		s.begun, s.curEnd = true, max(s.curEnd, times[end])
	}
	return moved
}
