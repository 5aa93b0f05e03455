package sim

import (
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// A flow standing for mult ring edges (startCollective) must leave its links as that many flows
// would: each edge's rate taken off a shared link's residual, and added to its links' load and
// busy share, one at a time. In floating point mult additions of one rate are not mult times the
// rate, so the solver is held to the sequence, not to the product (nor to a sum kept elsewhere
// and added once): the bytes every link reports follow from these sums.
func TestMergedFlowAccountsPerEdge(t *testing.T) {
	tp, err := TopologyByName("h100x8x2")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Topology: tp, Seed: 1}, nil, timeline.NewStrings())
	if err != nil {
		t.Fatal(err)
	}
	out := int32(0)*linksPerDevice + linkNVOut
	in1 := int32(1)*linksPerDevice + linkNVIn
	in2 := int32(2)*linksPerDevice + linkNVIn
	// 0.7 bytes/ns out of GPU 0, shared by a flow standing for 7 edges (into GPU 1) and one more
	// (into GPU 2): each edge gets 0.7/8, and sums of it differ from its multiples.
	const bw = 0.7
	s.linkBW[out] = bw
	a := s.newFlow(ownerCopy, 0, 1<<30)
	s.route(a, out, in1, 1e18)
	s.flows[a].mult = 7
	b := s.newFlow(ownerCopy, 1, 1<<30)
	s.route(b, out, in2, 1e18)
	s.flowStart(a)
	s.flowStart(b)
	s.recompute()

	x := bw / 8
	if r := s.flows[a].rate; r != x || s.flows[b].rate != x {
		t.Fatalf("rates %v and %v, want %v each", r, s.flows[b].rate, x)
	}
	residual, load := bw, 0.0
	for range 8 { // a's 7 edges, then b, in the order the solve meets them
		residual -= x
		load += x
	}
	if residual == bw-7*x-x || load == 7*x+x {
		t.Fatalf("the sums %v, %v equal the products: the test cannot tell them apart", residual, load)
	}
	if got := s.residual[out]; got != residual {
		t.Errorf("residual of the shared link %v, want %v (one subtraction per edge)", got, residual)
	}
	if got := s.lb.load[out]; got != load {
		t.Errorf("load of the shared link %v, want %v (one addition per edge)", got, load)
	}
	if got, want := s.lb.util[out], min(load/bw, 1); got != want {
		t.Errorf("busy share of the shared link %v, want %v", got, want)
	}
	seven := 0.0
	for range 7 {
		seven += x
	}
	if got := s.lb.load[in1]; got != seven {
		t.Errorf("load of a's own link %v, want %v (one addition per edge)", got, seven)
	}
}
