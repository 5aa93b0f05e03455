package depgraph

import (
	"cmp"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// HostOps is the time each host process (by process id) spent inside CPU operators: the union of
// its operators' intervals, in time order (kineto.CPUOps). HTA weighs the host's time inside an
// operator and not the gaps between top-level ones.
type HostOps map[uint32][]timeline.Interval

// covered is the time of [a, b] inside process pid's operators.
func (h HostOps) covered(pid uint32, a, b int64) int64 {
	ivs := h[pid]
	i, _ := slices.BinarySearchFunc(ivs, a, func(iv timeline.Interval, t int64) int { return cmp.Compare(iv.End, t) })
	var t int64
	for ; i < len(ivs) && ivs[i].Start < b; i++ {
		t += max(0, min(b, ivs[i].End)-max(a, ivs[i].Start))
	}
	return t
}

// CriticalPathsHTA returns the critical path of each step (or of the whole trace when it has no
// steps) as Holistic Trace Analysis's critical_path_analysis defines it: the longest path of the
// graph under its weights, wherever it starts and ends within the step. An op's own time weighs its
// duration (a blocking host call's weighs nothing, as HTA zeroes a synchronisation's), a launch
// weighs the delay from the launching call's start to the op's start, and the gap between two ops
// of one stream weighs itself (HTA's kernel-kernel delay); every other dependency weighs 0, the
// gaps between the host's calls among them (HTA's dependency edges between top-level operators).
// So where CriticalPaths follows the chain that bound a step's end, host gaps and all, this one
// takes the chain with the most GPU, launch and call time, which ends at the step's last GPU ops
// when the host idled before its final synchronisation.
//
// Nodes holds every op with a point on the path, latest first, as HTA marks every event with a
// node on it. ByCategory gives each edge of the path the time it spans, and the rest of the step
// (before the path begins, after it ends) to waits.
func (g *Graph) CriticalPathsHTA(times, weights []int64, ops HostOps) []Path {
	if times == nil {
		times = g.Time
	}
	if len(g.Nodes) == 0 {
		return nil
	}
	hw := g.htaWeights(times, weights, ops)
	w := func(i int32) int64 { return hw[i] }
	spans := g.stepSpans(times)
	// in is the step (index into spans) each point belongs to, -1 for none: a step's own points
	// and points outside every step.
	isStep := make([]bool, len(g.Nodes))
	for _, s := range g.Steps {
		isStep[s] = true
	}
	in := make([]int32, len(times))
	rankSpans := g.rankStepSpans(spans, times)
	for p := range times {
		in[p] = -1
		n := g.NodeOf(int32(p))
		if n >= 0 && isStep[n] {
			continue
		}
		// A point of a rank that marks its own steps lies in its rank's step (the job's steps
		// overlap where one rank ends a step after another began the next).
		ss, rank := spans, false
		if n >= 0 {
			ss, rank = rankSpans[g.Event(n).Device]
			if !rank {
				ss = spans
			}
		}
		i, found := slices.BinarySearchFunc(ss, times[p], func(s Path, t int64) int { return cmp.Compare(s.StartNs, t) })
		if !found {
			i--
		}
		switch {
		case i < 0 || times[p] > ss[i].EndNs:
		case rank:
			in[p] = ss[i].Step // the job step's index
		default:
			in[p] = int32(i)
		}
	}
	dist := make([]int64, len(times))
	pred := make([]int32, len(times)) // the edge into each point the longest path takes, -1 at its start
	best := make([]int32, len(spans))
	for i := range best {
		best[i] = -1
	}
	for _, p := range g.Order {
		pred[p] = -1
		s := in[p]
		if s < 0 {
			continue
		}
		for _, i := range g.In[p] {
			if from := g.Edges[i].From; in[from] == s && w(i) != absent {
				if d := dist[from] + w(i); d > dist[p] {
					dist[p], pred[p] = d, i
				}
			}
		}
		if b := best[s]; b < 0 || dist[p] > dist[b] || dist[p] == dist[b] && times[p] > times[b] {
			best[s] = p
		}
	}
	out := make([]Path, 0, len(spans))
	for s, path := range spans {
		if best[s] >= 0 {
			g.tracePath(&path, best[s], pred, times)
		}
		path.ByCategory[CatWaits] += path.EndNs - path.StartNs - sum(path.ByCategory[:])
		out = append(out, path)
	}
	return out
}

// kernelKernelDelay is HTA's bound on the gap between two ops of one stream that it counts as
// the second waiting for the first (KERNEL_KERNEL_DELAY_THRESHOLD_US): a longer gap "probably
// indicates an unrecognized dependency", and weighs nothing.
const kernelKernelDelay = 1_500_000

// absent marks an edge HTA's graph does not have: it carries no path.
const absent = -1 << 62

// htaWeights is each edge's weight under HTA's definition. A GPU op's start has one incoming edge
// at most of its launch and its stream's: its launch, weighing the delay from the call's start,
// when the op was alone in its stream's queue (the op before it had ended when the call began, and
// no later op of the stream was launched before it started: HTA's queue lengths 1 and 0); else
// the gap after the op before it on its stream when that is under kernelKernelDelay; else
// neither, and the op starts a path of its own (HTA adds no zero-weight launch edge by default).
func (g *Graph) htaWeights(times, weights []int64, ops HostOps) []int64 {
	hw := make([]int64, len(g.Edges))
	for i := range g.Edges {
		switch e := &g.Edges[i]; e.Kind {
		case EdgeDuration, EdgeCollective, EdgeSendRecv:
			hw[i] = e.W
			if weights != nil {
				hw[i] = weights[i]
			}
		case EdgeThread:
			// The operators' time as measured, no more than the gap as replayed.
			if from := g.Event(g.NodeOf(e.From)); ops != nil && from.Kind == timeline.KindRuntime {
				hw[i] = min(ops.covered(from.Aux, g.Time[e.From], g.Time[e.To]), max(0, times[e.To]-times[e.From]))
			}
		}
	}
	launch, stream, next := g.launchAndStream()
	gap := func(i int32) int64 { return max(0, times[g.Edges[i].To]-times[g.Edges[i].From]) }
	for n := range g.Nodes {
		l, s := launch[n], stream[n]
		if l < 0 && s < 0 {
			continue
		}
		alone := l >= 0 && (s < 0 || times[g.Edges[s].From] < times[g.Edges[l].From]) &&
			(next[n] < 0 || launch[next[n]] < 0 || times[g.Edges[launch[next[n]]].From] >= times[Start(int32(n))])
		switch {
		case alone:
			hw[l] = gap(l)
			if s >= 0 {
				hw[s] = absent
			}
		case s >= 0 && gap(s) < kernelKernelDelay:
			hw[s] = gap(s)
			if l >= 0 {
				hw[l] = absent
			}
		default:
			if l >= 0 {
				hw[l] = absent
			}
			if s >= 0 {
				hw[s] = absent
			}
		}
	}
	return hw
}

// launchAndStream is, for each node, its incoming launch and stream edges (-1: none), and the
// node after it on its stream (-1: none).
func (g *Graph) launchAndStream() (launch, stream, next []int32) {
	launch, stream, next = make([]int32, len(g.Nodes)), make([]int32, len(g.Nodes)), make([]int32, len(g.Nodes))
	for n := range g.Nodes {
		launch[n], stream[n], next[n] = -1, -1, -1
	}
	for n := range g.Nodes {
		for _, i := range g.In[Start(int32(n))] {
			switch e := &g.Edges[i]; e.Kind {
			case EdgeLaunch:
				launch[n] = i
			case EdgeStream:
				stream[n] = i
				next[g.NodeOf(e.From)] = int32(n)
			}
		}
	}
	return launch, stream, next
}

// stepSpans is a Path for each of the job's steps (JobSteps) in time order with its bounds set, or one for the whole trace.
func (g *Graph) stepSpans(times []int64) []Path {
	if len(g.Steps) == 0 {
		lo, hi := times[0], times[0]
		for _, t := range times {
			lo, hi = min(lo, t), max(hi, t)
		}
		return []Path{{Step: -1, StartNs: lo, EndNs: hi}}
	}
	jobs := g.JobSteps()
	spans := make([]Path, len(jobs))
	for i, ranks := range jobs {
		sink, from := jobSpan(ranks, times)
		spans[i] = Path{Step: sink, StartNs: from, EndNs: times[End(sink)]}
	}
	slices.SortStableFunc(spans, func(a, b Path) int { return cmp.Compare(a.StartNs, b.StartNs) })
	return spans
}

// rankStepSpans is, for each device that marks steps of its own (merged per-rank traces), its steps
// in time order, each with Step set to the index in spans of the job step it belongs to; spans are
// stepSpans'. Steps marked for the whole job (NoDevice) are not in it.
func (g *Graph) rankStepSpans(spans []Path, times []int64) map[int32][]Path {
	job := map[int32]int32{}
	for i, ranks := range g.JobSteps() {
		for _, s := range ranks {
			job[s] = int32(i)
		}
	}
	// stepSpans sorts the job steps by start: find each one's index by its sink step.
	at := map[int32]int32{}
	for i, sp := range spans {
		at[job[sp.Step]] = int32(i)
	}
	out := map[int32][]Path{}
	for _, s := range g.Steps {
		if d := g.Event(s).Device; d != timeline.NoDevice {
			out[d] = append(out[d], Path{Step: at[job[s]], StartNs: times[Start(s)], EndNs: times[End(s)]})
		}
	}
	for _, ps := range out {
		slices.SortStableFunc(ps, func(a, b Path) int { return cmp.Compare(a.StartNs, b.StartNs) })
	}
	return out
}

// tracePath walks the longest path back from point p by pred, filling path's nodes and categories.
func (g *Graph) tracePath(path *Path, p int32, pred []int32, times []int64) {
	last := int32(-1)
	mark := func(p int32) {
		if n := g.NodeOf(p); n >= 0 && n != last {
			path.Nodes = append(path.Nodes, n)
			last = n
		}
	}
	mark(p)
	for pred[p] >= 0 {
		e := &g.Edges[pred[p]]
		span := max(0, times[e.To]-times[e.From])
		switch e.Kind {
		case EdgeDuration:
			c := g.category(g.NodeOf(e.From))
			if c == CatLaunch && g.Edges[pred[p]].W == 0 && span > 0 {
				c = CatWaits // a blocking call: its time is the GPU's
			}
			path.ByCategory[c] += span
		case EdgeCollective, EdgeSendRecv:
			path.ByCategory[g.edgeCategory(e)] += span
		case EdgeLaunch, EdgeThread:
			path.ByCategory[CatLaunch] += span // the host's: its calls, its operators, its launches
		default:
			path.ByCategory[CatWaits] += span
		}
		p = e.From
		mark(p)
	}
}

func sum(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}
