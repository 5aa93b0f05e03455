package sim

import (
	"github.com/xfertop/xfertop/engine"
)

// An all-to-all is what NCCL makes of a group of ncclSend/ncclRecv to every peer (its alltoall is
// that group; nccl-tests' alltoall_perf and PyTorch's all_to_all_single issue it so). NCCL does
// not start the n(n−1) transfers at once; it walks a schedule of rounds (docs/ARCHITECTURE.md,
// "The simulator"):
//
//   - ncclP2pSchedule (src/init.cc): the ranks are cut into groups of G (NCCL_P2P_SCHEDULE_GROUP_SIZE,
//     8 = NCCL_MAX_DEV_WORK_P2P_PER_BATCH, when the communicator spans nodes; the gcd with every
//     node's rank count), groups in node order. The group deltas are enumerated in the quadratic
//     order (x²+x)/2 mod pow2Up(groups), those ≥ groups skipped; for each, G rounds: in round
//     (delta, δ) rank (group g, local l) sends to (g+delta, l+δ) and receives from (g−delta, l−δ).
//     Every round is a permutation.
//   - ncclAddWorkBatchToPlan (src/enqueue.cc) puts the rounds of one group delta (at most 8) in one
//     work batch of one channel (ncclP2pChannelBaseForRound, src/include/channel.h, gives all
//     of them the same base); a channel's thread block runs its batches one after another, each
//     to its end: all its sends and receives (ncclKernelMain, src/device/common.h). A send moves
//     only while its receiver's block is on the same batch.
//   - Batches of different group deltas go to different channels: up to p2pnChannels /
//     p2pnChannelsPerPeer of them at once (ncclTopoComputeP2pChannels, src/graph/paths.cc: 32 at
//     1,024 ranks, when p2pnChannelsPerPeer has been halved to 1).
//
// The simulator follows the rounds and batches, with two lanes per rank instead of NCCL's up to
// 32 channels: the batch of delta 0 (a rank's own group: NVLink) on one, the others (the network)
// one at a time in NCCL's order on the other, a batch ended before the next begins and a flow
// started once both its ends are on its batch. One network batch already puts G flows on every
// NIC out and G on every NIC in, which is as busy as more batches make it; what the lane gives up
// is the overlap of a ragged batch's tail with the next batch's head. What it buys is bounded
// solves: a flow's links are shared only with the flows of its two ranks' current batches (about
// G² = 64 flows a component), where n(n−1) flows at once were one component of all of them, each
// of their uneven ends re-solving it (f²/2 flow updates: 9 CPU hours at 1,024 ranks).

// a2aRun is the schedule of one all-to-all across nodes while it runs.
type a2aRun struct {
	ii     int32
	n      int
	g      int     // ranks per group (G above)
	groups int     // groups in all
	deltas []int32 // the group deltas, batch k's is deltas[k]; batch 0 is delta 0
	// rankAt[γ·g+λ] is the rank (its index in the communicator) of group γ's λ-th member; group
	// and local are each rank's.
	rankAt []int32
	group  []int32
	local  []int32
	op     []int32 // op slot of each rank
	cur    []int32 // each rank's network batch (len(deltas): done)
	left   []int32 // flows of its current network batch not ended, sends and receives
	ranks  []engine.DeviceID
}

// scheduledAllToAll reports whether the all-to-all of instance ii spans nodes: one on a single
// node is NCCL's one channel per round, every peer at once (p2pSchedule with G = the node's
// ranks, ncclP2pChannelBaseForRound = the round), which startAllToAll's flows already are.
func (s *Sim) scheduledAllToAll(ranks []engine.DeviceID) bool {
	n0 := s.nodeOf(ranks[0])
	for _, r := range ranks[1:] {
		if s.nodeOf(r) != n0 {
			return true
		}
	}
	return false
}

// newA2ARun lays out NCCL's p2p schedule over the instance's ranks.
func (s *Sim) newA2ARun(ii int32) *a2aRun {
	in := &s.instPool[ii]
	ranks := s.op(in.ops[0]).op.Ranks
	n := len(ranks)
	r := &a2aRun{ii: ii, n: n, ranks: ranks, op: make([]int32, n), cur: make([]int32, n), left: make([]int32, n),
		group: make([]int32, n), local: make([]int32, n), rankAt: make([]int32, n)}
	// Each op's rank: its device's place in the communicator.
	idx := make(map[engine.DeviceID]int32, n)
	for i, d := range ranks {
		idx[d] = int32(i)
	}
	for _, x := range in.ops {
		r.op[idx[s.op(x).op.Device]] = x
	}
	// Nodes in the order their first rank appears, each node's ranks in communicator order (their
	// local ranks); G is 8, or the gcd with a node's rank count where it does not divide it.
	nodeIx := make(map[int]int32)
	var members [][]int32
	for i, d := range ranks {
		h := s.nodeOf(d)
		k, ok := nodeIx[h]
		if !ok {
			k = int32(len(members))
			nodeIx[h] = k
			members = append(members, nil)
		}
		members[k] = append(members[k], int32(i))
	}
	r.layout(members)
	return r
}

// layout cuts the ranks of each node (members, nodes in order, each node's ranks in local-rank
// order) into groups of G and sets the group deltas.
func (r *a2aRun) layout(members [][]int32) {
	g := p2pGroupSize
	for _, m := range members {
		if len(m)%g != 0 || len(m) < g {
			g = gcd(g, len(m))
		}
	}
	r.g = g
	for _, m := range members {
		for j, p := range m {
			γ := r.groups + j/g
			r.group[p], r.local[p] = int32(γ), int32(j%g)
			r.rankAt[γ*g+j%g] = p
		}
		r.groups += len(m) / g
	}
	r.deltas = quadraticDeltas(r.groups)
}

// p2pGroupSize is NCCL_P2P_SCHEDULE_GROUP_SIZE's default: NCCL_MAX_DEV_WORK_P2P_PER_BATCH.
const p2pGroupSize = 8

// quadraticDeltas is ncclP2pSchedule's order of group deltas over groups groups: (x²+x)/2 mod
// the next power of two, those ≥ groups skipped (16: 0, 1, 3, 6, 10, 15, 5, 12, 4, 13, 7, 2, 14,
// 11, 9, 8).
func quadraticDeltas(groups int) []int32 {
	pow2 := 1
	for pow2 < groups {
		pow2 <<= 1
	}
	out := make([]int32, 0, groups)
	delta := 0
	for round := 1; round <= pow2; round++ {
		if delta < groups {
			out = append(out, int32(delta))
		}
		delta = (delta + round) & (pow2 - 1)
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// sendPeer and recvPeer are rank p's peers in round δ of batch k.
func (r *a2aRun) sendPeer(p int32, k, δ int) int32 {
	γ := (int(r.group[p]) + int(r.deltas[k])) % r.groups
	return r.rankAt[γ*r.g+(int(r.local[p])+δ)%r.g]
}

func (r *a2aRun) recvPeer(p int32, k, δ int) int32 {
	γ := (int(r.group[p]) - int(r.deltas[k]) + r.groups) % r.groups
	return r.rankAt[γ*r.g+(int(r.local[p])-δ+r.g)%r.g]
}

// bytes is what rank p sends to rank q.
func (s *Sim) a2aBytes(r *a2aRun, p, q int32) int64 {
	o := &s.op(r.op[p]).op
	if sizes := o.sizes(); sizes != nil {
		return sizes[q]
	}
	return o.Bytes / int64(r.n)
}

// startScheduledAllToAll starts an all-to-all across nodes as NCCL's schedule runs it: every
// rank's delta-0 batch, and its first network batch as its peers reach it. The instance ends when
// all its flows (every pair with bytes to move) have.
func (s *Sim) startScheduledAllToAll(ii int32) {
	r := s.newA2ARun(ii)
	total := int32(0)
	for p := range int32(r.n) {
		for q := range int32(r.n) {
			if p != q && s.a2aBytes(r, p, q) > 0 {
				total++
			}
		}
	}
	in := &s.instPool[ii]
	in.flows = total
	if total == 0 {
		s.at(s.now+s.m.NCCLBaseNs, evCollStart, ii, in.gen)
		return
	}
	if s.a2aRuns == nil {
		s.a2aRuns = make(map[int32]*a2aRun)
	}
	s.a2aRuns[ii] = r
	s.warnAllToAll(r.n, int(total), true)
	at := s.now + s.m.NCCLBaseNs
	// The delta-0 batch: a rank's own group, all at once.
	for p := range int32(r.n) {
		for δ := 1; δ < r.g; δ++ {
			s.a2aFlow(r, p, r.sendPeer(p, 0, δ), at)
		}
	}
	for p := range int32(r.n) {
		s.a2aEnter(r, p, 1, at)
	}
}

// a2aFlow starts the flow from rank p to rank q at time at plus the hop's latency, if p has bytes
// for q.
func (s *Sim) a2aFlow(r *a2aRun, p, q int32, at int64) {
	b := s.a2aBytes(r, p, q)
	if b <= 0 {
		return
	}
	fi := s.newFlow(ownerInst, r.ii, b)
	lat := s.edge(fi, r.ranks[p], r.ranks[q])
	s.flows[fi].peer = p*int32(r.n) + q
	s.at(at+lat, evFlowStart, fi, 0)
}

// a2aEnter moves rank p onto network batch k (and past any in which it has nothing to move),
// starting the flows of the batch whose other end is on it already.
func (s *Sim) a2aEnter(r *a2aRun, p int32, k int, at int64) {
	for ; k < len(r.deltas); k++ {
		r.cur[p], r.left[p] = int32(k), 0
		for δ := range r.g {
			if q := r.sendPeer(p, k, δ); s.a2aBytes(r, p, q) > 0 {
				r.left[p]++
				if r.cur[q] == int32(k) && q != p {
					s.a2aFlow(r, p, q, at)
				}
			}
			if q := r.recvPeer(p, k, δ); s.a2aBytes(r, q, p) > 0 {
				r.left[p]++
				if r.cur[q] == int32(k) && q != p {
					s.a2aFlow(r, q, p, at)
				}
			}
		}
		if r.left[p] > 0 {
			return
		}
	}
	r.cur[p] = int32(len(r.deltas))
}

// a2aFlowDone is told of the end of flow f of instance ii (before the instance counts it): a
// network flow's end may end its ranks' batches, which moves them on to their next.
func (s *Sim) a2aFlowDone(ii int32, f *flow) {
	r := s.a2aRuns[ii]
	if r == nil {
		return
	}
	if s.instPool[ii].flows == 1 {
		delete(s.a2aRuns, ii) // its last flow
		return
	}
	p, q := f.peer/int32(r.n), f.peer%int32(r.n)
	if r.group[p] == r.group[q] {
		return // the delta-0 batch: no lane to move on
	}
	for _, x := range [2]int32{p, q} {
		r.left[x]--
		if r.left[x] == 0 {
			s.a2aEnter(r, x, int(r.cur[x])+1, s.now)
		}
	}
}
