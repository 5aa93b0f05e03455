package whatif

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/timeline"
)

// Streamed is a what-if replayed window by window: what Run's WhatIf says, without the graph and
// the ops, which went to the Outputs as each window was done.
type Streamed struct {
	Stats    depgraph.Stats  // the graph's, summed over the windows
	Baseline *Result         // the tallies of the replay with nothing changed (no Events, Times)
	Changed  *Result         // the tallies of the changed replay
	Before   []depgraph.Path // the measured trace's critical paths, per step
	After    []depgraph.Path // the changed replay's
	// Unchanged is the replay with nothing changed's critical paths, per step.
	Unchanged []depgraph.Path
	// Windows is the number of windows; MaxWindow the most events a window's graph held (its own
	// and those it kept of earlier windows): what memory follows.
	Windows, MaxWindow int
	// MaxHeld is the most items held from one window to the next: the events kept, the points
	// finalised of them, their places among the measured ops, and the replayed ops waiting in the
	// reorder buffers. Bounded by a step, it stays flat however long the trace.
	MaxHeld int
	// Differ counts the ops whose replayed duration the change alters: the changed replay's
	// against the unchanged one's. None: the change reaches no op of the trace.
	Differ int
	// StepRanks is the number of ranks (host and device) whose step marks the trace has: the job's
	// steps are len(Before), each marked by each rank (Stats.Steps marks in all).
	StepRanks int
}

// Outputs receive a streamed what-if's ops as they are final, in the orders Run gives them:
// the measured ops (the graph's nodes, in start order) and each replay's ops in replayed start
// order. Any may be nil.
type Outputs struct {
	Measured, Baseline, Changed timeline.Sink
	// ChangedOrder, when set, gets the index among the measured ops of each op Changed gets.
	ChangedOrder *[]int32
}

// StreamParams say where a trace is cut into windows.
type StreamParams struct {
	// Cuts are the times (ns) the windows begin at after the first: the starts of the steps of one
	// device (or of the job's). None: the whole trace is one window.
	Cuts []int64
	// Late is how far (ns) an event may come before an event that started earlier: the input's
	// events arrive in start order give or take Late (a recording's come as they end).
	Late int64
	// Steps are the trace's steps with their place among its events (the index of each in the
	// input, counting every event): steps inferred after the input was read come at its end.
	// Steps in the input itself are passed over (they are these).
	Steps []Placed
	// KeepPathNodes keeps each critical path's ops (Path.Nodes, as indices into the measured ops'
	// order): the console marks them. It costs a few bytes an op of the trace.
	KeepPathNodes bool
}

// Placed is an event and its index among the input's events.
type Placed struct {
	Event timeline.Event
	Seq   int64
}

// Stream replays a trace window by window, holding the ops of about two steps: a window is a
// step's ops (those starting between two cuts), with the ops of the step before and the older
// ops the window's dependencies reach back to (each stream's, host process's and event's last,
// ops still running, the sources of dependencies into the window). The points of each window
// (the starts and ends of its ops that lie between its cuts) are replayed with the points of
// earlier windows pinned at their replayed times, exactly as the whole trace's graph would
// replay them (TestStreamMatchesRun). Events must come in start order, give or take
// StreamParams.Late.
type Stream struct {
	names  depgraph.Names
	opts   [2]Options // the baseline's and the change's
	params StreamParams
	out    Outputs

	seq      int64
	maxStart int64
	next     int              // the next window to replay
	pending  map[int][]Placed // each window's own events, by window
	carried  []Placed         // older events the next window keeps
	store    map[uint64]point // the points earlier windows finalised, of the events still kept
	global   map[int64]int32  // each kept node's index among the measured ops
	nodes    int32            // measured ops emitted
	seqBase  map[depgraph.SeqDevKey]int
	reorder  [2]reorderBuf
	res      Streamed
	paths    [3][]depgraph.Path
	queues   [2]stepQueue // each replay's ranks' step sequences (serializeSteps), window to window
	// pathFirst is, for each job step walked, its first mark's index among the measured ops:
	// the paths come out in that order, as CriticalPathsBound gives them.
	pathFirst []int32
	anyNodes  bool
	stepRanks map[[2]int32]bool // the ranks (host, device) that mark steps
	// full, when set (by a benchmark), is called at each window's fullest: its graph and both
	// replays built, its ops in the reorder buffers, before the carry lets go of what the next
	// window does not keep; events is the window's.
	full func(events int)
}

// point is a finalised point's replayed times and binding edges: measured, baseline, changed.
type point struct {
	t     [2]int64 // replayed: baseline, changed
	bound [3]boundRec
}

// boundRec names the edge that bound a point by its kind and source, which the graphs of later
// windows number differently.
type boundRec struct {
	from uint64 // the source's key; 0: none
	w    int64
	kind depgraph.EdgeKind
}

// NewStream starts a streamed what-if under o.
func NewStream(names depgraph.Names, o Options, p StreamParams, out Outputs) *Stream {
	s := &Stream{names: names, params: p, out: out, pending: map[int][]Placed{}, store: map[uint64]point{},
		global: map[int64]int32{}, seqBase: map[depgraph.SeqDevKey]int{}, maxStart: math.MinInt64, stepRanks: map[[2]int32]bool{}}
	s.opts[0] = baselineOptions(o)
	s.opts[1] = o
	s.res.Baseline = &Result{Kept: map[string]int{}, NotForced: map[string]int{}, matched: map[string]int{}, commMatched: map[string]int{}}
	s.res.Changed = &Result{Kept: map[string]int{}, NotForced: map[string]int{}, matched: map[string]int{}, commMatched: map[string]int{}}
	for _, st := range p.Steps {
		k := s.windowOf(st.Event.Start)
		s.pending[k] = append(s.pending[k], st)
	}
	return s
}

// windows is the number of windows.
func (s *Stream) windows() int { return len(s.params.Cuts) + 1 }

// bounds are window k's: its points are those at times in [lo, hi).
func (s *Stream) bounds(k int) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if k > 0 {
		lo = s.params.Cuts[k-1]
	}
	if k < len(s.params.Cuts) {
		hi = s.params.Cuts[k]
	}
	return lo, hi
}

// windowOf is the window whose own events start at t.
func (s *Stream) windowOf(t int64) int {
	i, _ := slices.BinarySearch(s.params.Cuts, t+1)
	return i
}

// Events takes the input's next events.
func (s *Stream) Events(batch []timeline.Event) error {
	for i := range batch {
		e := &batch[i]
		seq := s.seq
		s.seq++
		if e.Kind == timeline.KindStep || !depgraph.IsNode(e) {
			continue
		}
		k := s.windowOf(e.Start)
		if k < s.next {
			return fmt.Errorf("an op starting at %d ns came after its step was replayed: the input is out of start order by more than %d ns", e.Start, s.params.Late)
		}
		s.pending[k] = append(s.pending[k], Placed{*e, seq})
		if e.Start > s.maxStart {
			s.maxStart = e.Start
			for s.next < s.windows() {
				if _, hi := s.bounds(s.next); hi == math.MaxInt64 || s.maxStart-s.params.Late < hi {
					break
				}
				if err := s.window(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Close replays the windows left and returns the totals.
func (s *Stream) Close() (*Streamed, error) {
	for s.next < s.windows() {
		if err := s.window(); err != nil {
			return nil, err
		}
	}
	for v := range s.reorder {
		if err := s.flush(v, math.MaxInt64); err != nil {
			return nil, err
		}
	}
	if !s.anyNodes {
		return nil, fmt.Errorf("the trace has no ops to replay (kernels, copies, collectives, runtime calls)")
	}
	if err := s.res.Changed.unmatchedScale(s.opts[1]); err != nil {
		return nil, err
	}
	if len(s.pathFirst) == len(s.paths[0]) {
		idx := make([]int, len(s.pathFirst))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(s.pathFirst[a], s.pathFirst[b]) })
		for v := range s.paths {
			sorted := make([]depgraph.Path, len(idx))
			for i, j := range idx {
				sorted[i] = s.paths[v][j]
			}
			s.paths[v] = sorted
		}
	}
	s.res.Before, s.res.Unchanged, s.res.After = s.paths[0], s.paths[1], s.paths[2]
	s.res.StepRanks = len(s.stepRanks)
	return &s.res, nil
}

// flush passes on replay v's ops that start before lb.
func (s *Stream) flush(v int, lb int64) error {
	sink, order := s.out.Baseline, (*[]int32)(nil)
	if v == 1 {
		sink, order = s.out.Changed, s.out.ChangedOrder
	}
	return s.reorder[v].flush(lb, sink, order)
}

// winGraph is one window's graph: its events' indices in the input, and the times [lo, hi) of
// the points it finalises.
type winGraph struct {
	g      *depgraph.Graph
	seqs   []int64
	joinOf map[int32]int32 // a join point's first part
	lo, hi int64
}

// key names point p across windows: a node's start or end by its event's index in the input, a
// join by its first part's.
func (w *winGraph) key(p int32) uint64 {
	if n := w.g.NodeOf(p); n >= 0 {
		return uint64(w.seqs[w.g.Nodes[n]])*4 + uint64(p%2) + 1
	}
	return uint64(w.seqs[w.g.Nodes[w.joinOf[p]]])*4 + 3
}

// nodeOfPoint is the node of point p: a join's is its instance's first part, whose event's index
// in the input names it (key).
func (w *winGraph) nodeOfPoint(p int32) int32 {
	if n := w.g.NodeOf(p); n >= 0 {
		return n
	}
	return w.joinOf[p]
}

// final reports whether the window finalises point p.
func (w *winGraph) final(p int32) bool { t := w.g.Time[p]; return t >= w.lo && t < w.hi }

// edgeOf is the edge of point p's in-edges that a stored binding names, -1 when the window
// lacks it.
func (w *winGraph) edgeOf(p int32, b boundRec) int32 {
	for _, i := range w.g.In[p] {
		if e := &w.g.Edges[i]; e.Kind == b.kind && b.from != 0 && w.key(e.From) == b.from {
			return i
		}
	}
	return -1
}

// pinned is a point an earlier window finalised: its replayed times, and the edges (of this
// window's graph) that bound it there in each run.
type pinned struct {
	pt    point
	edges [3]int32
}

// window replays the next window.
func (s *Stream) window() error {
	k := s.next
	s.next++
	lo, hi := s.bounds(k)
	own := s.pending[k]
	delete(s.pending, k)
	in := make([]Placed, 0, len(s.carried)+len(own))
	in = append(append(in, s.carried...), own...)
	slices.SortStableFunc(in, func(a, b Placed) int { return cmp.Compare(a.Seq, b.Seq) })
	s.res.Windows++
	s.res.MaxWindow = max(s.res.MaxWindow, len(in))
	evs := make([]timeline.Event, len(in))
	seqs := make([]int64, len(in))
	for i := range in {
		evs[i], seqs[i] = in[i].Event, in[i].Seq
	}
	events := len(in)
	in = nil // evs and seqs hold it: a copy less of the window's events while it is replayed
	final := func(g *depgraph.Graph, p int32) bool { t := g.Time[p]; return t >= lo && t < hi }
	g, err := depgraph.BuildWindow(evs, s.names, depgraph.Window{Final: final, SeqBase: s.seqBase})
	if err != nil {
		return fmt.Errorf("dependency graph: %w", err)
	}
	s.anyNodes = s.anyNodes || len(g.Nodes) > 0
	s.res.Stats.Add(g.Stats)
	w := &winGraph{g: g, seqs: seqs, joinOf: map[int32]int32{}, lo: lo, hi: hi}
	for _, in := range g.Instances {
		w.joinOf[in.Join] = in.Parts[0]
	}
	pins, pinOf := s.pins(w)
	var rs [2]*Result
	for v := range rs {
		pin := func(p int32) (int64, int32, bool) {
			i := pinOf[p]
			if i == 0 {
				return 0, 0, false
			}
			return pins[i-1].pt.t[v], pins[i-1].edges[v+1], true
		}
		if rs[v], err = replay(g, s.names, s.opts[v], &window{final: w.final, pin: pin}); err != nil {
			return err
		}
		s.tally(v, rs[v])
	}
	measured := g.Binding(nil, nil)
	// Pinned points keep the edges (and weights) that bound them in their own window.
	for p, i := range pinOf {
		if i == 0 {
			continue
		}
		pn := &pins[i-1]
		measured[p] = pn.edges[0]
		for v := range rs {
			if b := rs[v].Bound[p]; b >= 0 {
				rs[v].Weight[b] = pn.pt.bound[v+1].w
			}
		}
	}
	for n := range g.Nodes {
		st, end := depgraph.Start(int32(n)), depgraph.End(int32(n))
		if w.final(end) && rs[1].Times[end]-rs[1].Times[st] != rs[0].Times[end]-rs[0].Times[st] {
			s.res.Differ++
		}
	}
	// The steps that end here start no earlier than their rank's previous step ended, as Run's
	// serializeSteps has them; later windows pin these points as replayed, before the move, as the
	// whole graph's replay has them too.
	for _, st := range g.Steps {
		if e := g.Event(st); w.final(depgraph.Start(st)) {
			s.stepRanks[[2]int32{int32(e.Host), e.Device}] = true
		}
	}
	var ends []int32
	for _, st := range g.Steps {
		if w.final(depgraph.End(st)) {
			ends = append(ends, st)
		}
	}
	for v := range rs {
		s.queues[v].serialize(g, ends, rs[v].Times)
	}
	s.emit(g, seqs, rs, w.final)
	s.walk(g, seqs, rs, measured, w.final, hi)
	if s.full != nil {
		s.full(events)
		runtime.KeepAlive(g)
		runtime.KeepAlive(rs)
		runtime.KeepAlive(w)
	}
	keep := s.keep(g, len(evs), lo, hi, [3][]int64{g.Time, rs[0].Times, rs[1].Times}, [3][]int32{measured, rs[0].Bound, rs[1].Bound})
	// Only the points of the events the next windows keep are stored: no later window pins the
	// others (a window pins only its events' points).
	s.record(w, rs, measured, keep)
	if err := s.carry(evs, seqs, keep, hi); err != nil {
		return err
	}
	s.res.MaxHeld = max(s.res.MaxHeld, len(s.carried)+len(s.store)+len(s.global)+len(s.reorder[0].ops)+len(s.reorder[1].ops))
	return nil
}

// pins looks up the points of w that earlier windows finalised, once: pinOf[p] is p's index in
// pins plus one, 0 for a point not pinned.
func (s *Stream) pins(w *winGraph) ([]pinned, []int32) {
	var pins []pinned
	pinOf := make([]int32, len(w.g.Time))
	for p, t := range w.g.Time {
		if t >= w.lo {
			continue // final here, or later
		}
		if pt, ok := s.store[w.key(int32(p))]; ok {
			pn := pinned{pt: pt}
			for v := range pn.edges {
				pn.edges[v] = w.edgeOf(int32(p), pt.bound[v])
			}
			pins = append(pins, pn)
			pinOf[p] = int32(len(pins))
		}
	}
	return pins, pinOf
}

// record stores the points w finalises: their replayed times, and the edges that bound them
// (measured, and in each replay).
func (s *Stream) record(w *winGraph, rs [2]*Result, measured []int32, keep []bool) {
	rec := func(bound int32, weights []int64) boundRec {
		if bound < 0 {
			return boundRec{}
		}
		e := &w.g.Edges[bound]
		wt := e.W
		if weights != nil {
			wt = weights[bound]
		}
		return boundRec{from: w.key(e.From), w: wt, kind: e.Kind}
	}
	for p := range w.g.Time {
		if !w.final(int32(p)) || !keep[w.g.Nodes[w.nodeOfPoint(int32(p))]] {
			continue
		}
		s.store[w.key(int32(p))] = point{
			t:     [2]int64{rs[0].Times[p], rs[1].Times[p]},
			bound: [3]boundRec{rec(measured[p], nil), rec(rs[0].Bound[p], rs[0].Weight), rec(rs[1].Bound[p], rs[1].Weight)},
		}
	}
}

// tally adds a window's replay counts to the totals.
func (s *Stream) tally(v int, r *Result) {
	t := s.res.Baseline
	if v == 1 {
		t = s.res.Changed
	}
	t.Retimed += r.Retimed
	t.RetimedP2P += r.RetimedP2P
	t.FaultedColl += r.FaultedColl
	t.FaultedP2P += r.FaultedP2P
	t.Healed += r.Healed
	t.Scaled += r.Scaled
	t.ScaledComm += r.ScaledComm
	for k, n := range r.Kept {
		t.Kept[k] += n
	}
	for k, n := range r.NotForced {
		t.NotForced[k] += n
	}
	for k, n := range r.matched {
		t.matched[k] += n
	}
	for k, n := range r.commMatched {
		t.commMatched[k] += n
	}
}

// emit passes on the ops the window finalised: the measured ops that start in it, in node order,
// and each replay's ops that end in it, through a reorder buffer that lets out the ops no later
// window can start before.
func (s *Stream) emit(g *depgraph.Graph, seqs []int64, rs [2]*Result, final func(int32) bool) {
	for n := range g.Nodes {
		if !final(depgraph.Start(int32(n))) {
			continue
		}
		s.global[seqs[g.Nodes[n]]] = s.nodes
		s.nodes++
		if s.out.Measured != nil {
			s.out.Measured.Emit(g.Event(int32(n)))
		}
	}
	for v, r := range rs {
		for n := range g.Nodes {
			if !final(depgraph.End(int32(n))) {
				continue
			}
			s.reorder[v].add(r.event(g, int32(n)), s.global[seqs[g.Nodes[n]]])
		}
	}
}

// walk walks the critical paths of the steps whose end the window finalised; a graph without
// steps is one window, and its path is the whole trace's.
func (s *Stream) walk(g *depgraph.Graph, seqs []int64, rs [2]*Result, measured []int32, final func(int32) bool, hi int64) {
	times := [3][]int64{g.Time, rs[0].Times, rs[1].Times}
	weights := [3][]int64{nil, rs[0].Weight, rs[1].Weight}
	bounds := [3][]int32{measured, rs[0].Bound, rs[1].Bound}
	if len(s.params.Cuts) == 0 && len(g.Steps) == 0 {
		for v := range s.paths {
			for _, p := range g.CriticalPathsBound(times[v], weights[v], bounds[v]) {
				s.paths[v] = append(s.paths[v], s.globalPath(g, seqs, p))
			}
		}
		return
	}
	// A job step (the ranks' marks of one step number) is walked in the window that ends its
	// last mark: the marks of steps that begin together are cut into one window (Plan.Params).
	for _, ranks := range g.JobSteps() {
		if !slices.ContainsFunc(ranks, func(st int32) bool { return final(depgraph.End(st)) }) ||
			slices.ContainsFunc(ranks, func(st int32) bool { return g.Time[depgraph.End(st)] >= hi }) {
			continue
		}
		first := s.global[seqs[g.Nodes[ranks[0]]]]
		for v := range s.paths {
			p := g.JobStepPath(ranks, times[v], weights[v], bounds[v])
			s.paths[v] = append(s.paths[v], s.globalPath(g, seqs, p))
		}
		s.pathFirst = append(s.pathFirst, first)
	}
}

// globalPath renumbers a window's path by the measured ops' order.
func (s *Stream) globalPath(g *depgraph.Graph, seqs []int64, p depgraph.Path) depgraph.Path {
	if p.Step >= 0 {
		p.Step = s.global[seqs[g.Nodes[p.Step]]]
	}
	if !s.params.KeepPathNodes {
		p.Nodes, p.NodeNs = nil, nil
		return p
	}
	for i, n := range p.Nodes {
		p.Nodes[i] = s.global[seqs[g.Nodes[n]]]
	}
	return p
}
