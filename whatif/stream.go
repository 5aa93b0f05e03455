package whatif

import (
	"cmp"
	"fmt"
	"math"
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
	anyNodes bool
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
		global: map[int64]int32{}, seqBase: map[depgraph.SeqDevKey]int{}, maxStart: math.MinInt64}
	s.opts[0] = Options{Topology: o.Topology, TraceDevices: o.TraceDevices}
	s.opts[1] = o
	s.res.Baseline = &Result{Kept: map[string]int{}, NotForced: map[string]int{}, matched: map[string]int{}}
	s.res.Changed = &Result{Kept: map[string]int{}, NotForced: map[string]int{}, matched: map[string]int{}}
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
		s.flush(v, math.MaxInt64)
	}
	if !s.anyNodes {
		return nil, fmt.Errorf("the trace has no ops to replay (kernels, copies, collectives, runtime calls)")
	}
	if err := s.res.Changed.unmatchedScale(s.opts[1]); err != nil {
		return nil, err
	}
	for v := range s.paths {
		slices.SortStableFunc(s.paths[v], func(a, b depgraph.Path) int { return cmp.Compare(a.Step, b.Step) })
	}
	s.res.Before, s.res.Unchanged, s.res.After = s.paths[0], s.paths[1], s.paths[2]
	return &s.res, nil
}

// flush passes on replay v's ops that start before lb.
func (s *Stream) flush(v int, lb int64) {
	sink, order := s.out.Baseline, (*[]int32)(nil)
	if v == 1 {
		sink, order = s.out.Changed, s.out.ChangedOrder
	}
	s.reorder[v].flush(lb, sink, order)
}

// key names point p of g across windows: a node's start or end by its event's index in the
// input, a join by its first part's.
func key(g *depgraph.Graph, seqs []int64, joinOf map[int32]int32, p int32) uint64 {
	if n := g.NodeOf(p); n >= 0 {
		return uint64(seqs[g.Nodes[n]])*4 + uint64(p%2) + 1
	}
	return uint64(seqs[g.Nodes[joinOf[p]]])*4 + 3
}

// window replays the next window.
func (s *Stream) window() error {
	k := s.next
	s.next++
	lo, hi := s.bounds(k)
	own := s.pending[k]
	delete(s.pending, k)
	slices.SortStableFunc(own, func(a, b Placed) int { return cmp.Compare(a.Seq, b.Seq) })
	in := make([]Placed, 0, len(s.carried)+len(own))
	in = append(append(in, s.carried...), own...)
	slices.SortStableFunc(in, func(a, b Placed) int { return cmp.Compare(a.Seq, b.Seq) })
	evs := make([]timeline.Event, len(in))
	seqs := make([]int64, len(in))
	for i := range in {
		evs[i], seqs[i] = in[i].Event, in[i].Seq
	}
	final := func(g *depgraph.Graph, p int32) bool { t := g.Time[p]; return t >= lo && t < hi }
	g, err := depgraph.BuildWindow(evs, s.names, depgraph.Window{Final: final, SeqBase: s.seqBase})
	if err != nil {
		return fmt.Errorf("dependency graph: %w", err)
	}
	s.anyNodes = s.anyNodes || len(g.Nodes) > 0
	s.res.Stats.Add(g.Stats)
	joinOf := map[int32]int32{} // a join point's first part
	for _, in := range g.Instances {
		joinOf[in.Join] = in.Parts[0]
	}
	keyOf := func(p int32) uint64 { return key(g, seqs, joinOf, p) }
	isFinal := func(p int32) bool { return final(g, p) }
	// The edge of point p's in-edges that a stored binding names, -1 when the window lacks it.
	edgeOf := func(p int32, b boundRec) int32 {
		for _, i := range g.In[p] {
			if e := &g.Edges[i]; e.Kind == b.kind && b.from != 0 && keyOf(e.From) == b.from {
				return i
			}
		}
		return -1
	}
	// The points earlier windows finalised, looked up once: their replayed times, and the edges
	// (of this window's graph) that bound them there.
	type pinned struct {
		pt    point
		edges [3]int32
	}
	var pins []pinned
	pinOf := make([]int32, len(g.Time)) // index in pins + 1; 0: not pinned
	for p := range g.Time {
		if g.Time[p] >= lo || g.Time[p] >= hi {
			continue // final here, or later
		}
		if pt, ok := s.store[keyOf(int32(p))]; ok {
			pn := pinned{pt: pt}
			for v := range pn.edges {
				pn.edges[v] = edgeOf(int32(p), pt.bound[v])
			}
			pins = append(pins, pn)
			pinOf[p] = int32(len(pins))
		}
	}
	var rs [2]*Result
	for v := range rs {
		pin := func(p int32) (int64, int32, bool) {
			i := pinOf[p]
			if i == 0 {
				return 0, 0, false
			}
			return pins[i-1].pt.t[v], pins[i-1].edges[v+1], true
		}
		if rs[v], err = replay(g, s.names, s.opts[v], &window{final: isFinal, pin: pin}); err != nil {
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
	rec := func(p int32, bound int32, weights []int64) boundRec {
		if bound < 0 {
			return boundRec{}
		}
		e := &g.Edges[bound]
		w := e.W
		if weights != nil {
			w = weights[bound]
		}
		return boundRec{from: keyOf(e.From), w: w, kind: e.Kind}
	}
	for p := range g.Time {
		if !isFinal(int32(p)) {
			continue
		}
		s.store[keyOf(int32(p))] = point{
			t:     [2]int64{rs[0].Times[p], rs[1].Times[p]},
			bound: [3]boundRec{rec(int32(p), measured[p], nil), rec(int32(p), rs[0].Bound[p], rs[0].Weight), rec(int32(p), rs[1].Bound[p], rs[1].Weight)},
		}
	}
	s.emit(g, seqs, rs, isFinal)
	s.walk(g, seqs, rs, measured, isFinal, k)
	s.carry(g, in, seqs, lo, hi, [3][]int64{g.Time, rs[0].Times, rs[1].Times}, [3][]int32{measured, rs[0].Bound, rs[1].Bound})
	return nil
}

// tally adds a window's replay counts to the totals.
func (s *Stream) tally(v int, r *Result) {
	t := s.res.Baseline
	if v == 1 {
		t = s.res.Changed
	}
	t.Retimed += r.Retimed
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
			e := *g.Event(int32(n))
			st, end := r.Times[depgraph.Start(int32(n))], r.Times[depgraph.End(int32(n))]
			if e.Queued > 0 {
				e.Queued = max(0, e.Queued+st-e.Start)
			}
			e.Start, e.End = st, max(st, end)
			if c, ok := r.choice[int32(n)]; ok {
				e.Aux = c
			}
			s.reorder[v].add(e, s.global[seqs[g.Nodes[n]]])
		}
	}
}

// walk walks the critical paths of the steps whose end the window finalised; a graph without
// steps is one window, and its path is the whole trace's.
func (s *Stream) walk(g *depgraph.Graph, seqs []int64, rs [2]*Result, measured []int32, final func(int32) bool, k int) {
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
	for _, st := range g.Steps {
		if !final(depgraph.End(st)) {
			continue
		}
		for v := range s.paths {
			p := g.StepPath(st, times[v], weights[v], bounds[v])
			s.paths[v] = append(s.paths[v], s.globalPath(g, seqs, p))
		}
	}
}

// globalPath renumbers a window's path by the measured ops' order.
func (s *Stream) globalPath(g *depgraph.Graph, seqs []int64, p depgraph.Path) depgraph.Path {
	if p.Step >= 0 {
		p.Step = s.global[seqs[g.Nodes[p.Step]]]
	}
	if !s.params.KeepPathNodes {
		p.Nodes = nil
		return p
	}
	for i, n := range p.Nodes {
		p.Nodes[i] = s.global[seqs[g.Nodes[n]]]
	}
	return p
}

// carry keeps what the next window needs of this one's events: its own events, and of the older
// ones those still running at its start, the sources of dependencies into it, and the last op of
// each stream, host process, event, device and step (what the next ops' dependencies reach back
// to); and the points those finalised.
func (s *Stream) carry(g *depgraph.Graph, in []Placed, seqs []int64, lo, hi int64, times [3][]int64, bounds [3][]int32) {
	keep := make([]bool, len(in))
	mark := func(n int32) { keep[g.Nodes[n]] = true }
	inst := map[int32]*depgraph.Instance{}
	for i := range g.Instances {
		inst[g.Instances[i].Join] = &g.Instances[i]
	}
	// A point's node; a join's parts and what leads to the join.
	markPoint := func(p int32) {
		if n := g.NodeOf(p); n >= 0 {
			mark(n)
			return
		}
		for _, n := range inst[p].Parts {
			mark(n)
		}
		for _, i := range g.In[p] {
			if n := g.NodeOf(g.Edges[i].From); n >= 0 {
				mark(n)
			}
		}
	}
	// The sources of the dependencies into points later windows finalise (ops still running).
	launched := make([]bool, len(g.Nodes))
	for _, e := range g.Edges {
		if g.Time[e.To] >= hi {
			markPoint(e.From)
		}
		if e.Kind == depgraph.EdgeLaunch {
			launched[g.NodeOf(e.From)] = true
		}
	}
	// The last ops of each stream, host process, event, device and step, and the ops running on.
	anchors := newAnchors()
	for n := range g.Nodes {
		if g.Time[depgraph.End(int32(n))] >= hi {
			mark(int32(n))
		}
		anchors.add(g, int32(n))
		// A launch whose op has not come yet (it runs in a later step), or a graph's launch
		// (its ops share its correlation).
		if e := g.Event(int32(n)); e.Op != 0 && g.Time[depgraph.Start(int32(n))] >= lo &&
			(e.Kind == timeline.KindRuntime && !launched[n] || e.Kind == timeline.KindGraphLaunch) {
			mark(int32(n))
		}
	}
	for _, n := range anchors.nodes() {
		mark(n)
	}
	// The critical paths of the steps still to walk reach back to where each began, replayed: a
	// step here that ends later began where it did; a later step begins after the last host
	// call of its host (of each process: the least of them) that ended before the cut, or, on a
	// host without calls, after the step before it. The points later than that on the chains of
	// binding edges into what is kept, and the edges that bound them, are kept.
	lastCall, lastStep := map[[2]int32]int32{}, int32(-1)
	for n := range g.Nodes {
		e, end := g.Event(int32(n)), g.Time[depgraph.End(int32(n))]
		switch {
		case end >= hi:
		case e.Kind == timeline.KindRuntime || e.Kind == timeline.KindGraphLaunch:
			k := [2]int32{int32(e.Host), e.Device}
			if c, ok := lastCall[k]; !ok || end >= g.Time[depgraph.End(c)] {
				lastCall[k] = int32(n)
			}
		case e.Kind == timeline.KindStep:
			if lastStep < 0 || end >= g.Time[depgraph.End(lastStep)] {
				lastStep = int32(n)
			}
		}
	}
	for v := range times {
		from := hi
		for _, st := range g.Steps {
			if g.Time[depgraph.End(st)] >= hi {
				from = min(from, times[v][depgraph.Start(st)])
			}
		}
		for _, c := range lastCall {
			from = min(from, times[v][depgraph.End(c)])
		}
		if len(lastCall) == 0 && lastStep >= 0 {
			from = min(from, times[v][depgraph.End(lastStep)])
		}
		// Back from the points of what is kept along the edges that bound them: only those
		// chains reach the points to come.
		seen := make([]bool, len(g.Time))
		var stack []int32
		for n := range g.Nodes {
			if keep[g.Nodes[n]] {
				stack = append(stack, depgraph.Start(int32(n)), depgraph.End(int32(n)))
			}
		}
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			b := bounds[v][p]
			if b < 0 {
				continue
			}
			src := g.Edges[b].From
			markPoint(src)
			if times[v][src] > from && !seen[src] {
				seen[src] = true
				stack = append(stack, src)
			}
		}
	}
	// The collectives numbered here and not kept count before the next window's.
	for _, n := range g.Alone {
		if !keep[g.Nodes[n]] {
			s.seqBase[depgraph.SeqKeyOf(g.Event(n))]++
		}
	}
	kept := map[int64]bool{}
	s.carried = s.carried[:0:0]
	for i := range in {
		if keep[i] {
			s.carried = append(s.carried, in[i])
			kept[seqs[i]] = true
		}
	}
	for k := range s.store {
		if !kept[int64((k-1)/4)] {
			delete(s.store, k)
		}
	}
	for q := range s.global {
		if !kept[q] {
			delete(s.global, q)
		}
	}
	for v := range s.reorder {
		lb := hi
		for _, pt := range s.store {
			lb = min(lb, pt.t[v])
		}
		s.flush(v, lb)
	}
}

// anchors are the last ops of each stream, host process, event, device and rank's steps: what
// the dependencies of ops to come reach back to.
type anchors struct {
	last map[anchorKey][2]int32 // the last two by start, and the one that ended last
	end  map[anchorKey]int32
}

// Kinds of anchors.
const (
	anchorStream uint8 = iota
	anchorProcess
	anchorRecord
	anchorDevice
	anchorHostCalls
	anchorSteps
)

type anchorKey struct {
	kind  uint8
	dev   int32
	id    uint64
	host  uint16
	extra uint32
}

func newAnchors() *anchors {
	return &anchors{last: map[anchorKey][2]int32{}, end: map[anchorKey]int32{}}
}

// add takes node n, the latest yet in start order.
func (a *anchors) add(g *depgraph.Graph, n int32) {
	e := g.Event(n)
	call := e.Kind == timeline.KindRuntime || e.Kind == timeline.KindGraphLaunch
	var keys []anchorKey
	switch {
	case e.Kind == timeline.KindStep:
		keys = append(keys, anchorKey{kind: anchorSteps, dev: e.Device})
	case call:
		pid := e.Aux
		if e.Kind == timeline.KindGraphLaunch {
			pid = 0
		}
		keys = append(keys, anchorKey{kind: anchorProcess, dev: e.Device, host: e.Host, extra: pid}, anchorKey{kind: anchorHostCalls, dev: e.Device, host: e.Host})
	case e.Stream != 0 && e.Device >= 0:
		keys = append(keys, anchorKey{kind: anchorStream, dev: e.Device, extra: e.Stream})
		if e.Kind == timeline.KindEventRecord {
			keys = append(keys, anchorKey{kind: anchorRecord, dev: e.Device, extra: e.Stream, id: uint64(e.Aux)})
		}
		if e.Kind.IsBusy() {
			keys = append(keys, anchorKey{kind: anchorDevice, dev: e.Device})
		}
	}
	for _, k := range keys {
		l, ok := a.last[k]
		if !ok {
			l = [2]int32{-1, -1}
		}
		a.last[k] = [2]int32{l[1], n}
		if m, ok := a.end[k]; !ok || g.Time[depgraph.End(n)] >= g.Time[depgraph.End(m)] {
			a.end[k] = n
		}
	}
}

// nodes lists the anchors.
func (a *anchors) nodes() []int32 {
	var ns []int32
	for _, l := range a.last {
		for _, n := range l {
			if n >= 0 {
				ns = append(ns, n)
			}
		}
	}
	for _, n := range a.end {
		ns = append(ns, n)
	}
	return ns
}

// reorderBuf holds a replay's ops until no later window can start one before them.
type reorderBuf struct {
	ops     []reordered // sorted up to sorted
	sorted  int
	scratch []reordered
}

// reordered is an op and its index among the measured ops: the order of ops starting together.
type reordered struct {
	e   timeline.Event
	idx int32
}

func (r *reorderBuf) add(e timeline.Event, idx int32) {
	r.ops = append(r.ops, reordered{e, idx})
}

func byStart(a, b reordered) int {
	return cmp.Or(cmp.Compare(a.e.Start, b.e.Start), cmp.Compare(a.idx, b.idx))
}

// flush passes on, in start order, the ops that start before lb (and their indices to order).
func (r *reorderBuf) flush(lb int64, sink timeline.Sink, order *[]int32) {
	// What is left from the last flush is sorted: sort the ops added since, and merge.
	old, added := r.ops[:r.sorted], r.ops[r.sorted:]
	slices.SortFunc(added, byStart)
	merged := r.scratch[:0]
	for len(old) > 0 && len(added) > 0 {
		if byStart(added[0], old[0]) < 0 {
			merged, added = append(merged, added[0]), added[1:]
		} else {
			merged, old = append(merged, old[0]), old[1:]
		}
	}
	merged = append(append(merged, old...), added...)
	r.ops, r.scratch = merged, r.ops
	n, _ := slices.BinarySearchFunc(r.ops, lb, func(o reordered, t int64) int { return cmp.Compare(o.e.Start, t) })
	for i := range r.ops[:n] {
		if sink != nil {
			sink.Emit(&r.ops[i].e)
		}
		if order != nil {
			*order = append(*order, r.ops[i].idx)
		}
	}
	r.ops = r.ops[:copy(r.ops, r.ops[n:])]
	r.sorted = len(r.ops)
}
