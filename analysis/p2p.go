package analysis

import (
	"cmp"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// maxP2PNodes bounds the open iterations' union-find (groups and op ids not yet folded into a
// row). Past it the iterations that ended before the event at hand began are folded into their
// rows and forgotten; if that frees less than half, every one is (an iteration still in flight then
// counts as two, which only a trace with tens of thousands of concurrent groups can see).
const maxP2PNodes = 1 << 16

// p2pIterations joins grouped sends and receives into iterations, as nccl-tests' sendrecv_perf
// times them: an iteration is every group one exchange touches, linked by the op id a send shares
// with its receive (sendrecv_perf: each rank's group holds a send to the next rank and a receive
// from the previous one, so the ring of links joins every rank's group), and it lasts from the
// first start to the last end of its sends and receives. The iterations of one size take the
// union of their spans: a rank whose pairs are done starts the next iteration while the slowest
// pair still runs, so iterations overlap, and nccl-tests' time (elapsed over the iterations /
// iterations) is that union over their count, set by the slowest pair. Sends and receives outside
// a group are not iterations.
type p2pIterations struct {
	byGroup map[uint32]int32
	byOp    map[uint64]int32
	parent  []int32
	span    []p2pSpan         // by node; a root's holds its iteration's
	rows    map[int64]*p2pRow // by each send's bytes
	limit   int               // nodes that trigger a flush (maxP2PNodes)
}

// p2pSpan is what an iteration has seen so far.
type p2pSpan struct {
	start, end int64
	sendBytes  int64 // the largest send
	sends      int32
}

// p2pRow is the iterations of one size: how many, and the union of their spans (its older part
// committed to a total once it grows past maxIntervals disjoint intervals).
type p2pRow struct {
	count, committedNs int64
	sends              int32 // the most sends an iteration had
	spans              intervalSet
}

func (r *p2pRow) add(start, end int64) {
	r.count++
	r.spans.add(start, end)
	if n := r.spans.size(); n > maxIntervals {
		r.committedNs += timeline.Length(r.spans.cut(r.spans.at(n/2).Start, nil))
	}
}

func (r *p2pRow) timeNs() int64 { return r.committedNs + r.spans.length() }

func newP2PIterations() *p2pIterations {
	return &p2pIterations{byGroup: map[uint32]int32{}, byOp: map[uint64]int32{}, rows: map[int64]*p2pRow{}, limit: maxP2PNodes}
}

func (p *p2pIterations) add(e *timeline.Event) {
	if (e.Kind == timeline.KindSend || e.Kind == timeline.KindRecv) && e.Status == timeline.StatusOK && e.Group != 0 && !e.TimeUnknown() {
		p.addOp(e) // the test inlines into Analyzer.Emit (see transfers.add)
	}
}

func (p *p2pIterations) addOp(e *timeline.Event) {
	if len(p.parent) >= p.limit {
		p.flush(e.Start)
	}
	n := node(p, p.byGroup, e.Group)
	if e.Op != 0 {
		n = p.union(n, node(p, p.byOp, e.Op))
	}
	s := &p.span[n]
	s.start, s.end = min(s.start, e.Start), max(s.end, e.End)
	if e.Kind == timeline.KindSend {
		s.sends++
		s.sendBytes = max(s.sendBytes, e.Bytes)
	}
}

// node returns the root of k's iteration, making a node for a key not seen yet.
func node[K comparable](p *p2pIterations, m map[K]int32, k K) int32 {
	if n, ok := m[k]; ok {
		return p.find(n)
	}
	n := int32(len(p.parent))
	p.parent = append(p.parent, n)
	p.span = append(p.span, p2pSpan{start: 1<<63 - 1, end: -1 << 63})
	m[k] = n
	return n
}

func (p *p2pIterations) find(n int32) int32 {
	for p.parent[n] != n {
		p.parent[n] = p.parent[p.parent[n]]
		n = p.parent[n]
	}
	return n
}

// union joins two roots' iterations and returns the joined root.
func (p *p2pIterations) union(a, b int32) int32 {
	if a == b {
		return a
	}
	sa, sb := &p.span[a], p.span[b]
	sa.start, sa.end = min(sa.start, sb.start), max(sa.end, sb.end)
	sa.sendBytes, sa.sends = max(sa.sendBytes, sb.sendBytes), sa.sends+sb.sends
	p.parent[b] = a
	return a
}

// fold adds the open iterations but those in skip to rows; whole only, when it leaves out an
// iteration with fewer sends than another of its size (one still in flight: its other pairs have
// not reported).
func (p *p2pIterations) fold(rows map[int64]*p2pRow, whole bool, skip map[int32]int32) {
	most := map[int64]int32{}
	if whole {
		for n, s := range p.span {
			if p.parent[n] == int32(n) {
				most[s.sendBytes] = max(most[s.sendBytes], s.sends, rowSends(rows[s.sendBytes]))
			}
		}
	}
	for n := range p.parent {
		if _, ok := skip[int32(n)]; ok || p.parent[n] != int32(n) {
			continue
		}
		s := p.span[n]
		if s.sends == 0 || s.end < s.start || (whole && s.sends < most[s.sendBytes]) {
			continue // receives whose sends are not in the stream (yet); an iteration in flight
		}
		r := rows[s.sendBytes]
		if r == nil {
			r = &p2pRow{}
			rows[s.sendBytes] = r
		}
		r.sends = max(r.sends, s.sends)
		r.add(s.start, s.end)
	}
}

func rowSends(r *p2pRow) int32 {
	if r == nil {
		return 0
	}
	return r.sends
}

// flush folds the open iterations that ended before t into the rows and forgets them, or all of
// them when that would keep more than half the limit.
func (p *p2pIterations) flush(t int64) {
	kept := map[int32]int32{} // root → its node once the others are gone
	for n, s := range p.span {
		if p.parent[n] == int32(n) && s.end >= t {
			kept[int32(n)] = int32(len(kept))
		}
	}
	if len(kept) > p.limit/2 {
		clear(kept)
	}
	p.byGroup = rekey(p, p.byGroup, kept)
	p.byOp = rekey(p, p.byOp, kept)
	p.fold(p.rows, false, kept)
	parent, span := make([]int32, len(kept)), make([]p2pSpan, len(kept))
	for old, n := range kept {
		parent[n], span[n] = n, p.span[old]
	}
	p.parent, p.span = parent, span
}

// rekey keeps m's keys whose iteration is kept, pointing them at its new node.
func rekey[K comparable](p *p2pIterations, m map[K]int32, kept map[int32]int32) map[K]int32 {
	out := make(map[K]int32, len(kept))
	for k, n := range m {
		if nn, ok := kept[p.find(n)]; ok {
			out[k] = nn
		}
	}
	return out
}

// P2PIteration is the grouped send/recv iterations of one size: nccl-tests' sendrecv_perf row.
// TimeNs is the time the Count iterations took together (the union of their spans, each from its
// first start to its last end), so TimeNs / Count is nccl-tests' time per iteration; AlgBW is
// Bytes over that, GB/s (nccl-tests' algbw for send/recv, and its busbw: the factor is 1).
type P2PIteration struct {
	Bytes  int64    `json:"bytes"` // each send (the largest, if they differ)
	Sends  int      `json:"sends"` // the most sends an iteration had: the ranks of sendrecv_perf's ring
	Count  int64    `json:"count"`
	TimeNs int64    `json:"time_ns"`
	AlgBW  *float64 `json:"algbw"`
}

// result returns the iterations so far by size, smallest first. The open ones (a later event may
// still join one; they stay open) count as they stand, but for those with fewer sends than another
// of their size: iterations still in flight.
func (p *p2pIterations) result() []P2PIteration {
	rows := make(map[int64]*p2pRow, len(p.rows))
	for k, v := range p.rows {
		rows[k] = &p2pRow{count: v.count, committedNs: v.committedNs, sends: v.sends, spans: v.spans.clone()}
	}
	p.fold(rows, true, nil)
	out := make([]P2PIteration, 0, len(rows))
	for k, r := range rows {
		t := r.timeNs()
		out = append(out, P2PIteration{Bytes: k, Sends: int(r.sends), Count: r.count, TimeNs: t, AlgBW: rate(k*r.count, t)})
	}
	slices.SortFunc(out, func(a, b P2PIteration) int { return cmp.Compare(a.Bytes, b.Bytes) })
	return out
}
