package depgraph

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// EdgeKind says why one point waits for another.
type EdgeKind uint8

// Edge kinds. The numbers index Graph.Counts.
const (
	EdgeDuration   EdgeKind = iota // an op's start to its end, weighing its duration
	EdgeStream                     // the previous op on the same stream
	EdgeThread                     // the previous runtime call of the same host process
	EdgeLaunch                     // the runtime call that launched a GPU op (start to start, by correlation)
	EdgeEvent                      // an event record to the wait for it (or, inferred, the op the wait ended with)
	EdgeHostSync                   // a GPU op to the end of the host call that waited for it
	EdgeCollective                 // a rank part of a collective (or barrier) to the instance, the instance to each part
	EdgeSendRecv                   // a send and its receive, through their instance
	EdgeStep                       // the previous step, and a step's last ops, to its end; an engine step's start to its streams' first ops
	EdgeSM                         // the compute kernel that held the device's SMs to the NCCL op admitted as it ended (inferred)
	edgeKindCount
)

var edgeNames = [edgeKindCount]string{"duration", "stream", "thread", "launch", "event", "host_sync", "collective", "send_recv", "step", "sm"}

// String names the kind.
func (k EdgeKind) String() string {
	if k < edgeKindCount {
		return edgeNames[k]
	}
	return fmt.Sprintf("edge(%d)", uint8(k))
}

// EdgeKinds lists the kinds in order.
func EdgeKinds() []EdgeKind {
	ks := make([]EdgeKind, edgeKindCount)
	for i := range ks {
		ks[i] = EdgeKind(i)
	}
	return ks
}

// Edge is one dependency: point To comes no earlier than point From plus W (ns).
type Edge struct {
	From, To int32
	W        int64
	Kind     EdgeKind
	Inferred bool // the trace does not record it; the graph inferred it from times
}

// Graph is the dependency graph of a trace's ops. Point 2i is the start of node i, 2i+1 its end;
// points from 2×len(Nodes) on are instance joins.
type Graph struct {
	Events []timeline.Event // the trace's events, as given (not copied)
	Nodes  []int32          // the events that are nodes, by index in Events
	Time   []int64          // each point's measured time
	In     [][]int32        // each point's incoming edges, by index in Edges
	Edges  []Edge
	// Order is the points in an order that puts every edge's source before its target.
	Order []int32
	// Instances are the collective, barrier and send/receive instances: their nodes, and the join
	// point the parts meet at.
	Instances []Instance
	// Steps are the nodes that are steps, in time order.
	Steps []int32
	// Alone are the collective parts alone under their op id, matched (or not) by communicator
	// sequence instead, in start order.
	Alone []int32
	// Stats counts what the graph holds; for a window's graph, only what lies at its final points.
	Stats
}

// Stats is what a graph is made of, as people are told: a window's graph counts the ops, edges
// and instances at the points it finalises (Window.Final), so that the windows of a trace add up
// to its whole graph's.
type Stats struct {
	Ops   int // nodes (whose start is final)
	Steps int // step nodes (whose start is final)
	// Counts is the edges added by kind; Inferred those of them the graph inferred; Contradicted
	// the dependencies not added because their timestamps contradict them (an op starting on its
	// stream before the previous one ended). Each is counted at its target point.
	Counts, Inferred, Contradicted [edgeKindCount]int
	// Matched counts the instances (counted at their join point).
	Matched int
	// Unmatched counts the collective parts whose other ranks are not in the trace (or whose
	// parts never overlapped): their time is their own measured one.
	Unmatched int
}

// Add adds o's counts to s's.
func (s *Stats) Add(o Stats) {
	s.Ops += o.Ops
	s.Steps += o.Steps
	for k := range s.Counts {
		s.Counts[k] += o.Counts[k]
		s.Inferred[k] += o.Inferred[k]
		s.Contradicted[k] += o.Contradicted[k]
	}
	s.Matched += o.Matched
	s.Unmatched += o.Unmatched
}

// Instance is one collective, barrier or send/receive: its parts (nodes) and their join point.
type Instance struct {
	Parts []int32
	Join  int32
	Kind  timeline.Kind
}

// Start and End are the points of node n.
func Start(n int32) int32 { return 2 * n }

// End is the end point of node n.
func End(n int32) int32 { return 2*n + 1 }

// NodeOf is the node a start or end point belongs to, -1 for a join point.
func (g *Graph) NodeOf(p int32) int32 {
	if int(p) >= 2*len(g.Nodes) {
		return -1
	}
	return p / 2
}

// Event is node n's event.
func (g *Graph) Event(n int32) *timeline.Event { return &g.Events[g.Nodes[n]] }

// Names resolves labels (a *timeline.Strings, or nil when none are known).
type Names interface{ Lookup(id uint32) string }

// ErrCycle is returned when the dependencies form a cycle (timestamps that contradict each other
// at one instant).
var ErrCycle = errors.New("the dependencies form a cycle")

// IsNode reports whether an event is an op of the graph. An op of unknown time
// (timeline.AuxTimeUnknown: a Flight Recorder entry not retired, without duration_ms) is not: its
// End is a placeholder, and as a node of weight 0 it would bind points at a time it may not have
// run at.
func IsNode(e *timeline.Event) bool {
	if e.TimeUnknown() {
		return false
	}
	switch e.Kind {
	case timeline.KindRuntime, timeline.KindGraphLaunch, timeline.KindStep, timeline.KindCommInit:
		return e.End >= e.Start
	case timeline.KindEventRecord:
		return e.Stream != 0 && e.Device >= 0
	}
	return e.OnStream() && e.End >= e.Start
}

// Build builds the graph of evs (any order); names resolves labels to tell blocking host calls.
func Build(evs []timeline.Event, names Names) (*Graph, error) {
	return BuildWindow(evs, names, Window{})
}

// Window says which part of a trace a graph is built for: a trace replayed step by step builds
// the graph of each window of its ops (the ops of a step and of the step before, and the older
// ops the window's dependencies reach back to), and counts in Stats only what lies at the
// points the window finalises.
type Window struct {
	// Final reports whether point p is one the window finalises; nil: every point.
	Final func(g *Graph, p int32) bool
	// SeqBase is, for each device and collective key, the number of collectives of that key the
	// device ran before the window's ops (communicator sequences count from the trace's start).
	SeqBase map[SeqDevKey]int
}

// Build builds the graph of evs in window w.
func BuildWindow(evs []timeline.Event, names Names, w Window) (*Graph, error) {
	g := &Graph{Events: evs}
	for i := range evs {
		if IsNode(&evs[i]) {
			g.Nodes = append(g.Nodes, int32(i))
		}
	}
	slices.SortStableFunc(g.Nodes, func(a, b int32) int {
		return cmp.Or(cmp.Compare(evs[a].Start, evs[b].Start), cmp.Compare(evs[a].End, evs[b].End))
	})
	g.Time = make([]int64, 2*len(g.Nodes))
	for n := range g.Nodes {
		e := g.Event(int32(n))
		g.Time[2*n], g.Time[2*n+1] = e.Start, e.End
		if e.Kind == timeline.KindStep {
			g.Steps = append(g.Steps, int32(n))
		}
	}
	b := builder{g: g, names: names, final: w.Final, seqBase: w.SeqBase}
	for n := range g.Nodes {
		if b.counts(Start(int32(n))) {
			g.Ops++
			if g.Event(int32(n)).Kind == timeline.KindStep {
				g.Stats.Steps++
			}
		}
	}
	b.instances()
	b.durations()
	b.streams()
	b.threads()
	b.launches()
	b.events()
	b.sms()
	b.hostSyncs()
	b.steps()
	if err := g.order(); err != nil {
		// Dependencies between points of one instant can close a loop (zero-length ops that
		// records, launches and streams all order): those are dropped, counted contradicted.
		g.dropTies(w.Final)
		if err := g.order(); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// dropTies removes the dependencies between points of one instant that order left unordered: in
// a cycle, or after one.
func (g *Graph) dropTies(final func(*Graph, int32) bool) {
	done := make([]bool, len(g.Time))
	for _, p := range g.Order {
		done[p] = true
	}
	kept := g.Edges[:0]
	for _, e := range g.Edges {
		if e.Kind != EdgeDuration && !done[e.From] && !done[e.To] && g.Time[e.From] == g.Time[e.To] && e.W == 0 {
			if final == nil || final(g, e.To) {
				g.Counts[e.Kind]--
				if e.Inferred {
					g.Inferred[e.Kind]--
				}
				g.Contradicted[e.Kind]++
			}
			continue
		}
		kept = append(kept, e)
	}
	g.Edges = kept
}

// builder adds the edges of one graph.
type builder struct {
	g       *Graph
	names   Names
	member  []bool // nodes whose end an instance binds (their own duration does not)
	final   func(*Graph, int32) bool
	seqBase map[SeqDevKey]int
}

// counts reports whether what lies at point p is counted in the graph's Stats.
func (b *builder) counts(p int32) bool { return b.final == nil || b.final(b.g, p) }

// contradicted counts a dependency of kind k into point p that the timestamps contradict.
func (b *builder) contradicted(k EdgeKind, p int32) {
	if b.counts(p) {
		b.g.Contradicted[k]++
	}
}

// add adds a dependency edge, unless the measured times contradict it.
func (b *builder) add(from, to int32, w int64, k EdgeKind, inferred bool) {
	g := b.g
	if g.Time[from]+w > g.Time[to] {
		b.contradicted(k, to)
		return
	}
	g.Edges = append(g.Edges, Edge{From: from, To: to, W: w, Kind: k, Inferred: inferred})
	if b.counts(to) {
		g.Counts[k]++
		if inferred {
			g.Inferred[k]++
		}
	}
}

func (b *builder) label(n int32) string {
	if b.names == nil {
		return ""
	}
	return b.names.Lookup(b.g.Event(n).Label)
}

// blocking reports whether a host runtime call named name waits for the GPU, so that its time is
// the GPU's, not the host's own: a synchronisation, or a synchronous copy (cudaMemcpy, not
// cudaMemcpyAsync). HTA's list also has cudaEventQuery, which returns at once, and
// cudaMemcpyAsync, which waits only from pageable memory (its copy then ends inside it, and
// binds it by correlation).
func blocking(name string) bool {
	return strings.Contains(name, "Synchronize") || strings.Contains(name, "Memcpy") && !strings.Contains(name, "Async")
}

// waits reports whether node n is a wait whose end other points decide (its own duration weighs
// nothing): an event wait, a peer wait, a blocking host call.
func (b *builder) waits(n int32) bool {
	switch b.g.Event(n).Kind {
	case timeline.KindEventWait, timeline.KindPeerWait:
		return true
	case timeline.KindRuntime:
		return blocking(b.label(n))
	}
	return false
}

// durations adds each node's start-to-end edge: its duration, or 0 for a wait or an instance's part.
func (b *builder) durations() {
	g := b.g
	for n := range g.Nodes {
		w := g.Time[2*n+1] - g.Time[2*n]
		if b.member[n] || b.waits(int32(n)) || g.Event(int32(n)).Kind == timeline.KindStep {
			w = 0
		}
		g.Edges = append(g.Edges, Edge{From: int32(2 * n), To: int32(2*n + 1), W: w, Kind: EdgeDuration})
		if b.counts(int32(2*n + 1)) {
			g.Counts[EdgeDuration]++
		}
	}
}

// order sorts the points topologically, earliest measured time first among those ready, after
// indexing each point's incoming edges.
func (g *Graph) order() error {
	// Each point's edges are a part of one array (in edge order, as appending them gave): a
	// slice of its own per point cost an allocation and its slack each, more than the edges.
	indeg := make([]int32, len(g.Time))
	outdeg := make([]int32, len(g.Time))
	for _, e := range g.Edges {
		indeg[e.To]++
		outdeg[e.From]++
	}
	g.In = spans(indeg, len(g.Edges))
	out := spans(outdeg, len(g.Edges))
	for i, e := range g.Edges {
		g.In[e.To] = append(g.In[e.To], int32(i))
		out[e.From] = append(out[e.From], e.To)
	}
	h := pointHeap{t: g.Time}
	for p := range g.Time {
		if indeg[p] == 0 {
			h.push(int32(p))
		}
	}
	g.Order = make([]int32, 0, len(g.Time))
	for h.len() > 0 {
		p := h.pop()
		g.Order = append(g.Order, p)
		for _, q := range out[p] {
			if indeg[q]--; indeg[q] == 0 {
				h.push(q)
			}
		}
	}
	if len(g.Order) != len(g.Time) {
		return fmt.Errorf("%w among %d of %d points", ErrCycle, len(g.Time)-len(g.Order), len(g.Time))
	}
	return nil
}

// spans cuts one array of total elements into empty slices with room for counts[p] each.
func spans(counts []int32, total int) [][]int32 {
	all := make([]int32, total)
	s := make([][]int32, len(counts))
	off := 0
	for p, n := range counts {
		s[p] = all[off : off : off+int(n)]
		off += int(n)
	}
	return s
}

// pointHeap is a min-heap of points by measured time, then id.
type pointHeap struct {
	t []int64
	p []int32
}

func (h *pointHeap) len() int { return len(h.p) }

func (h *pointHeap) less(i, j int) bool {
	a, b := h.p[i], h.p[j]
	return h.t[a] < h.t[b] || (h.t[a] == h.t[b] && a < b)
}

func (h *pointHeap) push(p int32) {
	h.p = append(h.p, p)
	for i := len(h.p) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h.p[i], h.p[parent] = h.p[parent], h.p[i]
		i = parent
	}
}

func (h *pointHeap) pop() int32 {
	top := h.p[0]
	last := len(h.p) - 1
	h.p[0] = h.p[last]
	h.p = h.p[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h.p) && h.less(l, m) {
			m = l
		}
		if r < len(h.p) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.p[i], h.p[m] = h.p[m], h.p[i]
		i = m
	}
	return top
}
