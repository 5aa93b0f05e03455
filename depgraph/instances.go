package depgraph

import (
	"cmp"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// instKey groups the rank parts of one instance.
type instKey struct {
	kind timeline.Kind // KindCollective, KindBarrier, or KindSend for a send and its receive
	id   uint64
}

// instanceKey is the instance node n is a part of: a collective's parts share their op id (and
// name two or more ranks), a barrier's its barrier id, a send and its receive their op id.
func instanceKey(e *timeline.Event) (instKey, bool) {
	switch {
	case e.Kind == timeline.KindCollective && e.Op != 0 && e.Ranks > 1:
		return instKey{timeline.KindCollective, e.Op}, true
	case e.Kind == timeline.KindBarrier && e.Barrier != 0:
		return instKey{timeline.KindBarrier, uint64(e.Barrier)}, true
	case (e.Kind == timeline.KindSend || e.Kind == timeline.KindRecv) && e.Op != 0:
		return instKey{timeline.KindSend, e.Op}, true
	}
	return instKey{}, false
}

// instances joins the rank parts of each collective, barrier and send/receive: every part ends
// no earlier than the last part became ready plus the time all of them ran together (the last
// ready part's start to the first part's end). A part is ready when it started, or when the peer
// wait just before it on its stream began (the engine records the wait apart). Parts are matched
// by their op id (or barrier id); collective parts that match nothing so (an importer's op id is
// its process's correlation id) are matched by communicator and sequence (bySequence). A part
// alone in the trace, or whose parts never overlapped, keeps its own duration and is counted
// unmatched.
func (b *builder) instances() {
	g := b.g
	b.member = make([]bool, len(g.Nodes))
	groups := map[instKey][]int32{}
	var keys []instKey
	for n := range g.Nodes {
		if k, ok := instanceKey(g.Event(int32(n))); ok {
			if _, seen := groups[k]; !seen {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], int32(n))
		}
	}
	waitBefore := b.peerWaits()
	var alone []int32
	for _, k := range keys {
		parts := groups[k]
		if k.kind == timeline.KindCollective && len(parts) == 1 {
			alone = append(alone, parts[0])
			continue
		}
		if len(parts) < 2 || k.kind == timeline.KindCollective && len(parts) > int(g.Event(parts[0]).Ranks) || !b.tryJoin(k, parts, waitBefore, false) {
			b.unmatched(parts)
		}
	}
	g.Alone = alone
	for _, parts := range b.bySequence(alone) {
		if len(parts) < 2 || !b.tryJoin(instKey{timeline.KindCollective, 0}, parts, waitBefore, true) {
			b.unmatched(parts)
		}
	}
}

// unmatched counts parts that are no instance, each at its end: by then every part it could have
// been matched with had begun (the parts of an instance overlap), so a window's graph that
// finalises the end has them all.
func (b *builder) unmatched(parts []int32) {
	for _, p := range parts {
		if b.counts(End(p)) {
			b.g.Unmatched++
		}
	}
}

// tryJoin joins parts into one instance when they ran on streams of their own and overlapped in
// time (all were ready before the first ended), and reports whether it did. Parts that only
// touch, or share a stream, ran one after the other: they are no instance (and joining them would
// make the instance wait for itself).
func (b *builder) tryJoin(k instKey, parts []int32, waitBefore map[int32]int32, inferred bool) bool {
	g := b.g
	ready, minEnd := int64(-1<<63), int64(1<<63-1)
	seen := make(map[streamKey]bool, len(parts))
	for _, p := range parts {
		e := g.Event(p)
		sk := streamKey{e.Device, e.Stream}
		if seen[sk] {
			return false
		}
		seen[sk] = true
		r := g.Time[Start(p)]
		if w, ok := waitBefore[p]; ok {
			r = g.Time[Start(w)]
		}
		ready, minEnd = max(ready, r), min(minEnd, g.Time[End(p)])
	}
	if ready >= minEnd {
		return false
	}
	b.join(k, parts, waitBefore, ready, minEnd-ready, inferred)
	return true
}

// seqKey is a collective's communicator, op, ranks and size, and its number among the
// collectives of that key on its device.
type seqKey struct {
	comm  uint32
	op    uint8
	ranks uint16
	bytes int64
	seq   int
}

// SeqDevKey is what numbers a collective part in its communicator's sequence on its device.
type SeqDevKey struct {
	Dev   int32
	Comm  uint32
	Op    uint8
	Ranks uint16
	Bytes int64
}

// SeqKeyOf is e's sequence key.
func SeqKeyOf(e *timeline.Event) SeqDevKey {
	return SeqDevKey{e.Device, e.Comm, e.Sub, e.Ranks, e.Bytes}
}

// bySequence groups collective parts, each alone under its op id, by communicator and sequence:
// the n-th collective of one op, rank count and size on a communicator on each device is one
// instance, as NCCL runs a communicator's collectives in the order every rank posts them. The
// match is inferred (a trace whose op ids do not span ranks records neither communicator nor
// sequence as NCCL numbers them), and kept only when its parts overlapped in time.
func (b *builder) bySequence(parts []int32) [][]int32 {
	g := b.g
	slices.SortFunc(parts, func(x, y int32) int { return cmp.Compare(g.Time[Start(x)], g.Time[Start(y)]) })
	count := map[SeqDevKey]int{}
	groups := map[seqKey][]int32{}
	var keys []seqKey
	for _, p := range parts {
		e := g.Event(p)
		k := seqKey{e.Comm, e.Sub, e.Ranks, e.Bytes, 0}
		dk := SeqKeyOf(e)
		c, ok := count[dk]
		if !ok {
			c = b.seqBase[dk]
		}
		k.seq = c
		count[dk] = c + 1
		if _, seen := groups[k]; !seen {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], p)
	}
	out := make([][]int32, 0, len(keys))
	for _, k := range keys {
		if ps := groups[k]; len(ps) <= int(k.ranks) {
			out = append(out, ps)
		} else {
			b.unmatched(ps) // more parts than ranks: not one instance
		}
	}
	return out
}

// join adds one instance's join point at time ready and its edges.
func (b *builder) join(k instKey, parts []int32, waitBefore map[int32]int32, ready, dur int64, inferred bool) {
	g := b.g
	j := int32(len(g.Time))
	g.Time = append(g.Time, ready)
	kind := EdgeCollective
	if k.kind == timeline.KindSend {
		kind = EdgeSendRecv
	}
	for _, p := range parts {
		from := Start(p)
		if w, ok := waitBefore[p]; ok {
			from = Start(w)
			b.add(j, End(w), 0, kind, inferred)
		}
		b.add(from, j, 0, kind, inferred)
		b.add(j, End(p), dur, kind, inferred)
		b.member[p] = true
	}
	g.Instances = append(g.Instances, Instance{Parts: parts, Join: j, Kind: k.kind})
	if b.counts(j) {
		g.Matched++
	}
}

// peerWaits maps each op to the peer wait just before it on its stream, ending as it starts.
func (b *builder) peerWaits() map[int32]int32 {
	m := map[int32]int32{}
	for _, ns := range b.byStream() {
		for i := 1; i < len(ns); i++ {
			w := b.g.Event(ns[i-1])
			if w.Kind == timeline.KindPeerWait && w.End == b.g.Event(ns[i]).Start {
				m[ns[i]] = ns[i-1]
			}
		}
	}
	return m
}

// steps chains each step to the one before it (of its rank, in merged traces), and binds its end
// to the last op of each stream and host process that ran inside it.
func (b *builder) steps() {
	g := b.g
	byDev := map[int32][]int32{}
	for _, s := range g.Steps {
		d := g.Event(s).Device
		byDev[d] = append(byDev[d], s)
	}
	calls := b.callsByEnd()
	for _, ss := range byDev {
		for i, st := range ss {
			// A step marked on the host (a profiler's step range) begins where the host got to:
			// after the host's last call before it. Else (an engine's steps) after the step before.
			if c, ok := b.callBefore(calls, g.Event(st)); ok {
				b.add(End(c), Start(st), 0, EdgeStep, false)
			} else if i > 0 {
				b.add(End(ss[i-1]), Start(st), 0, EdgeStep, false)
			}
		}
	}
	b.stepIssues(byDev, calls)
	type lastKey struct {
		step   int32
		stream streamKey
		thread threadKey
	}
	last := map[lastKey]int32{}
	var order []lastKey
	for n := range g.Nodes {
		e := g.Event(int32(n))
		if e.Kind == timeline.KindStep || e.Kind == timeline.KindCommInit {
			continue
		}
		s, ok := b.stepOf(byDev, e)
		if !ok {
			continue
		}
		k := lastKey{step: s, stream: streamKey{e.Device, e.Stream}}
		if e.Kind == timeline.KindRuntime || e.Kind == timeline.KindGraphLaunch {
			k = lastKey{step: s, thread: threadKey{e.Host, e.Device, e.Aux}}
		}
		p, seen := last[k]
		if !seen {
			order = append(order, k)
		}
		if !seen || e.End > g.Time[End(p)] {
			last[k] = int32(n)
		}
	}
	for _, k := range order {
		b.add(End(last[k]), End(k.step), 0, EdgeStep, false)
	}
}

// stepIssues binds the first op of each device stream in a step to the step's start, for steps
// whose host records no runtime call: the engine's, which issues a step's ops as the step begins
// and begins it only once the step before has drained. Without this the next step's ops would
// keep, as a lag, their measured wait for that boundary, and a step whose tail grows (a slower
// all-reduce) or shrinks (faster kernels) would not move the steps after it. A profiler's steps
// are bound through the host calls that launch their ops instead.
func (b *builder) stepIssues(byDev map[int32][]int32, calls []int32) {
	g := b.g
	hosts := map[uint16]bool{}
	for _, c := range calls {
		hosts[g.Event(c).Host] = true
	}
	for _, ns := range b.byStream() {
		prev := int32(-1)
		for i, n := range ns {
			e := g.Event(n)
			s, ok := b.stepOf(byDev, e)
			if !ok || e.Kind == timeline.KindStep || e.Kind == timeline.KindCommInit {
				prev = -1
				continue
			}
			if st := g.Event(s); !hosts[st.Host] && (i == 0 || prev != s) {
				b.add(Start(s), Start(n), 0, EdgeStep, false)
			}
			prev = s
		}
	}
}

// callsByEnd is the host runtime calls in end order.
func (b *builder) callsByEnd() []int32 {
	var ns []int32
	for n := range b.g.Nodes {
		if k := b.g.Event(int32(n)).Kind; k == timeline.KindRuntime || k == timeline.KindGraphLaunch {
			ns = append(ns, int32(n))
		}
	}
	slices.SortFunc(ns, func(x, y int32) int { return cmp.Compare(b.g.Time[End(x)], b.g.Time[End(y)]) })
	return ns
}

// callBefore is the runtime call of step st's host (and rank, when steps are per rank) that ended
// last before st began.
func (b *builder) callBefore(calls []int32, st *timeline.Event) (int32, bool) {
	i, _ := slices.BinarySearchFunc(calls, st.Start+1, func(n int32, t int64) int { return cmp.Compare(b.g.Time[End(n)], t) })
	for i--; i >= 0; i-- {
		if c := b.g.Event(calls[i]); c.Host == st.Host && (st.Device < 0 || c.Device == st.Device) {
			return calls[i], true
		}
	}
	return 0, false
}

// stepOf is the step (of e's rank when steps are per rank) that e lies wholly inside.
func (b *builder) stepOf(byDev map[int32][]int32, e *timeline.Event) (int32, bool) {
	g := b.g
	ss := byDev[timeline.NoDevice]
	if len(ss) == 0 {
		ss = byDev[e.Device]
	}
	i, _ := slices.BinarySearchFunc(ss, e.Start+1, func(s int32, t int64) int { return cmp.Compare(g.Time[Start(s)], t) })
	if i == 0 {
		return 0, false
	}
	s := ss[i-1]
	if e.End > g.Time[End(s)] {
		return 0, false
	}
	return s, true
}
