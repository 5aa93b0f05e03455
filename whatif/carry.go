package whatif

import (
	"slices"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/timeline"
)

// keep marks what the next window needs of this one's events (by index in the window's input):
// of its own and the older ones it kept, those still running at the cut, the sources of
// dependencies into later points, the last op of each stream, host process, event, device and
// step, launches whose op is still to come, and the chains the next steps' critical paths can
// walk.
func (s *Stream) keep(g *depgraph.Graph, events int, lo, hi int64, times [3][]int64, bounds [3][]int32) []bool {
	k := newKeeper(g, events)
	// A record of an event is kept for the waits to come while it is of this window or the one
	// before, or while its event is recorded again and again (reused, as CUDA programs reuse
	// theirs): the engine records each event of its own once, and a record kept for ever for
	// each would grow with the trace.
	recent := lo
	if s.next >= 2 {
		recent, _ = s.bounds(s.next - 2)
	}
	k.frontier(lo, hi, recent)
	k.paths(hi, times, bounds)
	// The collectives numbered here and not kept count before the next window's.
	for _, n := range g.Alone {
		if !k.keep[g.Nodes[n]] {
			s.seqBase[depgraph.SeqKeyOf(g.Event(n))]++
		}
	}
	return k.keep
}

// carry keeps the events keep marks for the next window, and the points of those (record stored
// them), and passes on the replayed ops no later window can start before.
func (s *Stream) carry(evs []timeline.Event, seqs []int64, keep []bool, hi int64) error {
	kept := map[int64]bool{}
	s.carried = s.carried[:0:0]
	for i := range evs {
		if keep[i] {
			s.carried = append(s.carried, Placed{evs[i], seqs[i]})
			kept[seqs[i]] = true
		}
	}
	for key := range s.store {
		if !kept[int64((key-1)/4)] {
			delete(s.store, key)
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
		if err := s.flush(v, lb); err != nil {
			return err
		}
	}
	return nil
}

// keeper marks the events of a window's graph that the next window keeps.
type keeper struct {
	g    *depgraph.Graph
	keep []bool // by event index
	inst map[int32]*depgraph.Instance
}

func newKeeper(g *depgraph.Graph, events int) *keeper {
	k := &keeper{g: g, keep: make([]bool, events), inst: map[int32]*depgraph.Instance{}}
	for i := range g.Instances {
		k.inst[g.Instances[i].Join] = &g.Instances[i]
	}
	return k
}

func (k *keeper) mark(n int32) { k.keep[k.g.Nodes[n]] = true }

// markPoint marks a point's node; for a join, its parts and what leads to the join.
func (k *keeper) markPoint(p int32) {
	g := k.g
	if n := g.NodeOf(p); n >= 0 {
		k.mark(n)
		return
	}
	for _, n := range k.inst[p].Parts {
		k.mark(n)
	}
	for _, i := range g.In[p] {
		if n := g.NodeOf(g.Edges[i].From); n >= 0 {
			k.mark(n)
		}
	}
}

// frontier marks what the dependencies of later points reach back to: the sources of those
// into points at or after the cut hi (ops still running), the ops still running, the last op of
// each stream, host process, event, device and step, and the launches (since lo) whose op has not
// come yet (it runs in a later step) or that launched a graph (its ops share its correlation).
// The last record of an event is an anchor while it ended at or after recent or its event was
// recorded twice (on its stream, among what is held).
func (k *keeper) frontier(lo, hi, recent int64) {
	g := k.g
	launched := make([]bool, len(g.Nodes))
	for _, e := range g.Edges {
		if g.Time[e.To] >= hi {
			k.markPoint(e.From)
		}
		if e.Kind == depgraph.EdgeLaunch {
			launched[g.NodeOf(e.From)] = true
		}
	}
	anchors := newAnchors()
	for n := range g.Nodes {
		if g.Time[depgraph.End(int32(n))] >= hi {
			k.mark(int32(n))
		}
		anchors.add(g, int32(n))
		if e := g.Event(int32(n)); e.Op != 0 && g.Time[depgraph.Start(int32(n))] >= lo &&
			(e.Kind == timeline.KindRuntime && !launched[n] || e.Kind == timeline.KindGraphLaunch) {
			k.mark(int32(n))
		}
	}
	for _, n := range anchors.nodes(g, recent) {
		k.mark(n)
	}
}

// paths marks the points the critical paths of the steps still to walk can reach, in each of the
// three runs (times and the edges that bound each point): back from what is kept along the
// binding edges, as far as a step still to walk can begin, replayed. A step here that ends later
// began where it did; a later step begins after the last host call of its host (of each
// process: the least of them) that ended before the cut, or, on a host without calls, after the
// step before it.
func (k *keeper) paths(hi int64, times [3][]int64, bounds [3][]int32) {
	g := k.g
	lastCall, lastStep := map[[2]int32]int32{}, int32(-1)
	for n := range g.Nodes {
		e, end := g.Event(int32(n)), g.Time[depgraph.End(int32(n))]
		switch {
		case end >= hi:
		case e.Kind == timeline.KindRuntime || e.Kind == timeline.KindGraphLaunch:
			key := [2]int32{int32(e.Host), e.Device}
			if c, ok := lastCall[key]; !ok || end >= g.Time[depgraph.End(c)] {
				lastCall[key] = int32(n)
			}
		case e.Kind == timeline.KindStep:
			if lastStep < 0 || end >= g.Time[depgraph.End(lastStep)] {
				lastStep = int32(n)
			}
		}
	}
	// Each run's chains begin at what the frontier keeps: a source one run's chain reached, and
	// stopped at, is before any step still to walk in that run; begun from too in the next run,
	// each run took the chains a step further back (a step's start is bound by the step before's
	// end), and what was kept, and the reorder buffers, trailed the cut by four steps.
	var seeds []int32
	for n := range g.Nodes {
		if k.keep[g.Nodes[n]] {
			seeds = append(seeds, depgraph.Start(int32(n)), depgraph.End(int32(n)))
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
		k.chains(seeds, times[v], bounds[v], from)
	}
}

// chains marks, back from the points of what is kept, the sources of the edges that bound them,
// and goes on from those later than from.
func (k *keeper) chains(seeds []int32, times []int64, bound []int32, from int64) {
	g := k.g
	seen := make([]bool, len(g.Time))
	stack := slices.Clone(seeds)
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		b := bound[p]
		if b < 0 {
			continue
		}
		src := g.Edges[b].From
		k.markPoint(src)
		if times[src] > from && !seen[src] {
			seen[src] = true
			stack = append(stack, src)
		}
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

// nodes lists the anchors, but for the records of events recorded once that ended before recent.
func (a *anchors) nodes(g *depgraph.Graph, recent int64) []int32 {
	var ns []int32
	for k, l := range a.last {
		if k.kind == anchorRecord && l[0] < 0 && g.Time[depgraph.End(a.end[k])] < recent {
			continue
		}
		for _, n := range l {
			if n >= 0 {
				ns = append(ns, n)
			}
		}
		ns = append(ns, a.end[k])
	}
	return ns
}
