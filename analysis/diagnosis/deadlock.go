package diagnosis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// maxCycles bounds the deadlocks one look reports.
const maxCycles = 4

// waitEdge says that a rank waits on another in an op.
type waitEdge struct {
	to  int32
	op  uint64
	aux uint32 // the waiting rank's peer-wait Aux: send or receive
}

// deadlocks finds cycles of ranks waiting on each other among the hung ops (a rank waits on the
// members of its op that never entered it): rank 3 in a receive from 5 while 5 is in a receive
// from 3, or two communicators' collectives posted in opposite orders. Only a rank whose one op
// in flight (ops counts them) is that wait, and that no look saw waiting or stuck in another hung
// op (hungElsewhere), is in the graph: what its peer waits for can then only be behind that wait. A rank with more under way (another wait, a kernel, an event wait on
// another stream) may post it from elsewhere once that ends: a pipeline's stages waiting on each
// other's sends behind a hang upstream are not a deadlock of their own. No rank of a cycle can
// move until another of it does, so each cycle is a deadlock, whatever else is hung. Each is
// reported once, and its ops are not reported again as hangs. A rank with a wait the watchdog
// ended that was not kept (past maxEnded) has ops not counted: it is left out, so that a cap
// reached yields no cycle rather than a false one.
func (d *Diagnosis) deadlocks(groups map[uint64]*hangGroup, hung []uint64, ops map[int32]int, thr int64) []Finding {
	out := map[int32][]waitEdge{}
	if d.endedLostAll {
		return nil
	}
	for _, op := range hung {
		g := groups[op]
		for i, w := range g.waiting {
			if ops[w] != 1 || d.endedLost[w] || d.hungElsewhere(w, op) {
				continue
			}
			for _, m := range g.missing {
				out[w] = append(out[w], waitEdge{to: m, op: op, aux: g.waitAux[i]})
			}
		}
	}
	var added []Finding
	for range maxCycles {
		cyc, edges := findCycle(out)
		if cyc == nil {
			break
		}
		for _, r := range cyc {
			delete(out, r)
		}
		i := slices.Index(cyc, slices.Min(cyc)) // from its lowest rank: one cycle seen from two ranks is one
		cyc = append(cyc[i:len(cyc):len(cyc)], cyc[:i]...)
		edges = append(edges[i:len(edges):len(edges)], edges[:i]...)
		key := cycleString(cyc)
		if d.cycles[key] {
			continue
		}
		d.cycles[key] = true
		f := d.deadlockFinding(groups, cyc, edges, thr)
		f.look = true
		for _, e := range edges {
			d.hung[e.op] = len(d.findings)
		}
		d.findings = append(d.findings, f)
		added = append(added, f)
	}
	return added
}

// hungElsewhere reports whether rank r waits or is stuck in a hung op other than op, as a look saw
// it (waitsIn): it has more under way than that wait. A look at the waits the watchdog ended
// (Result's, which has nothing in flight to count) does not see a rank stuck inside a collective
// (a hang of mode in: its part never finishes), which is no wait; without this, that rank's
// receive waiting on a peer that waits on it (a pipeline's stage before, whose send the rank
// never reaches behind the collective) made a cycle of the hang's victims, a "deadlock" beside
// the hang for each pipeline pair.
func (d *Diagnosis) hungElsewhere(r int32, op uint64) bool {
	for _, o := range d.waitsIn[r] {
		if o != op {
			return true
		}
	}
	return false
}

// findCycle returns a cycle of the wait graph (ranks in wait order, with the edge each takes to
// the next), the one through the lowest rank found first, or nil.
func findCycle(out map[int32][]waitEdge) ([]int32, []waitEdge) {
	nodes := make([]int32, 0, len(out))
	for r := range out {
		nodes = append(nodes, r)
	}
	slices.Sort(nodes)
	const (
		white = iota
		grey
		black
	)
	colour := map[int32]int{}
	var path []int32
	var via []waitEdge
	var cyc []int32
	var cycEdges []waitEdge
	var visit func(r int32) bool
	visit = func(r int32) bool {
		colour[r] = grey
		path = append(path, r)
		for _, e := range out[r] {
			switch colour[e.to] {
			case grey:
				i := slices.Index(path, e.to)
				cyc = append([]int32(nil), path[i:]...)
				cycEdges = append(append([]waitEdge(nil), via[i:]...), e)
				return true
			case white:
				if _, waits := out[e.to]; !waits {
					continue // a rank that waits on no one ends the chain
				}
				via = append(via, e)
				if visit(e.to) {
					return true
				}
				via = via[:len(via)-1]
			}
		}
		path = path[:len(path)-1]
		colour[r] = black
		return false
	}
	for _, r := range nodes {
		if colour[r] == white && visit(r) {
			return cyc, cycEdges
		}
	}
	return nil, nil
}

// deadlockFinding names a wait cycle: its ranks and, for each, the op it waits in and on whom.
func (d *Diagnosis) deadlockFinding(groups map[uint64]*hangGroup, cyc []int32, edges []waitEdge, thr int64) Finding {
	f := Finding{Kind: Deadlock, Rank: cyc[0], Host: d.hostOf(cyc[0]), Link: -1, Step: d.step, Cycle: cyc,
		Confidence: 1 / float64(len(cyc)), Onset: -1}
	parts := make([]string, len(cyc))
	for i, r := range cyc {
		e := edges[i]
		g := groups[e.op]
		if f.Onset < 0 || g.oldest < f.Onset {
			f.Onset = g.oldest
		}
		f.At = max(f.At, g.oldest+thr)
		f.Severity += thr
		parts[i] = fmt.Sprintf("rank %d %s", r, d.waitIn(g, e))
	}
	// The ranks of the cycle are the finding's culprit (Culprit): the evidence does not say them again.
	f.Evidence = "each waits on the next: " + strings.Join(parts, "; ")
	return f
}

// waitIn says what a rank of a cycle waits in, with its size and label where known: "in recv of
// 1 MiB from 5, "stage 1→2 microbatch 3" (op 12, communicator 4)", "in all_reduce #4 on
// communicator 7, waiting for 5".
func (d *Diagnosis) waitIn(g *hangGroup, e waitEdge) string {
	first := g.first
	if first.Peer >= 0 {
		what, dir := "send/recv", "with"
		switch e.aux {
		case timeline.PeerWaitSend:
			what, dir = "send", "to"
		case timeline.PeerWaitRecv:
			what, dir = "recv", "from"
		}
		if first.Bytes > 0 {
			what += " of " + units.Bytes(first.Bytes)
		}
		return fmt.Sprintf("in %s %s %d%s (op %d, communicator %d)", what, dir, e.to, labelRef(g.label), e.op, first.Comm)
	}
	name, _ := d.opName(first)
	return fmt.Sprintf("in %s, waiting for %d", name, e.to)
}

// cycleString writes a cycle as "3 → 5 → 3".
func cycleString(cyc []int32) string {
	s := make([]string, 0, len(cyc)+1)
	for _, r := range cyc {
		s = append(s, strconv.Itoa(int(r)))
	}
	if len(cyc) > 0 {
		s = append(s, strconv.Itoa(int(cyc[0])))
	}
	return strings.Join(s, " → ")
}
