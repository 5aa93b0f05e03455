package sim

import (
	"slices"
	"testing"
)

// The group deltas come in ncclP2pSchedule's order: its comment's example for 16 (src/init.cc),
// and for a count that is not a power of two the same walk with the deltas past it skipped.
func TestQuadraticDeltas(t *testing.T) {
	for _, tc := range []struct {
		groups int
		want   []int32
	}{
		{16, []int32{0, 1, 3, 6, 10, 15, 5, 12, 4, 13, 7, 2, 14, 11, 9, 8}},
		{5, []int32{0, 1, 3, 2, 4}}, // pow2 8: 0 1 3 6 2 7 5 4, 6 7 5 skipped
		{2, []int32{0, 1}},
		{1, []int32{0}},
	} {
		if got := quadraticDeltas(tc.groups); !slices.Equal(got, tc.want) {
			t.Errorf("quadraticDeltas(%d) = %v; want %v", tc.groups, got, tc.want)
		}
	}
}

// Every round of the schedule is a permutation whose receive side mirrors its send side (rank p
// sends to q in round (k, δ) exactly when q receives from p in it), and over all rounds each rank
// sends to every rank once: the schedule NCCL's ranks agree on, so that a send always finds its
// receive in the same batch.
func TestA2AScheduleIsNCCLs(t *testing.T) {
	for _, tc := range []struct{ nodes, perNode, wantG int }{{2, 8, 8}, {5, 8, 8}, {3, 4, 4}, {4, 12, 4}} {
		n := tc.nodes * tc.perNode
		r := &a2aRun{n: n, group: make([]int32, n), local: make([]int32, n), rankAt: make([]int32, n)}
		layoutGroups(r, tc.nodes, tc.perNode)
		if r.g != tc.wantG {
			t.Errorf("%d nodes × %d: group size %d; want %d", tc.nodes, tc.perNode, r.g, tc.wantG)
			continue
		}
		seen := make([]bool, n*n)
		for k := range r.deltas {
			for δ := range r.g {
				dst := make([]bool, n)
				for p := range int32(n) {
					q := r.sendPeer(p, k, δ)
					if dst[q] {
						t.Fatalf("%d nodes × %d: round (%d, %d) sends to rank %d twice", tc.nodes, tc.perNode, k, δ, q)
					}
					dst[q] = true
					if back := r.recvPeer(q, k, δ); back != p {
						t.Errorf("%d nodes × %d: round (%d, %d): %d sends to %d, which receives from %d", tc.nodes, tc.perNode, k, δ, p, q, back)
					}
					seen[int(p)*n+int(q)] = true
				}
			}
		}
		if i := slices.Index(seen, false); i >= 0 {
			t.Errorf("%d nodes × %d: rank %d never sends to rank %d", tc.nodes, tc.perNode, i/n, i%n)
		}
	}
}

// layoutGroups lays out r for nodes nodes of perNode ranks each, ranks numbered node by node, as
// newA2ARun does from a communicator's devices.
func layoutGroups(r *a2aRun, nodes, perNode int) {
	members := make([][]int32, nodes)
	for p := range int32(nodes * perNode) {
		members[int(p)/perNode] = append(members[int(p)/perNode], p)
	}
	r.layout(members)
}
