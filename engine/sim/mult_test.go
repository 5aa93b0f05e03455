package sim

import (
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// A flow standing for mult ring edges (startCollective) must leave its links as that many flows
// would: each edge's rate taken off a shared link's residual, and added to its links' load and
// busy share, one at a time. In floating point mult additions of one rate are not mult times the
// rate, so the solver is held to the sequence, not to the product (nor to a sum kept elsewhere
// and added once): the rates of the flows frozen after it and the bytes every link reports follow
// from these sums.
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
	// 0.7 bytes/ns out of GPU 0, shared by a flow standing for 7 edges into GPU 1, each capped at
	// c, and one more flow into GPU 2, which gets what the 7 leave: 0.7 less c seven times.
	const bw, c = 0.7, 0.043
	s.linkBW[out] = bw
	a := s.newFlow(ownerCopy, 0, 1<<30)
	s.route(a, out, in1, 1e18)
	s.flows[a].mult, s.flows[a].cap = 7, c
	b := s.newFlow(ownerCopy, 1, 1<<30)
	s.route(b, out, in2, 1e18)
	s.flowStart(a)
	s.flowStart(b)
	s.recompute()

	left, seven := bw, 0.0
	for range 7 {
		left -= c
		seven += c
	}
	if left == bw-7*c || seven == 7*c || seven+left == 7*c+(bw-7*c) {
		t.Fatalf("the sums %v, %v equal the products: the test cannot tell them apart", left, seven)
	}
	if r := s.flows[a].rate; r != c {
		t.Errorf("the merged flow's rate %v, want its cap %v", r, c)
	}
	if r := s.flows[b].rate; r != left {
		t.Errorf("the other flow's rate %v, want %v (the link less one subtraction per edge)", r, left)
	}
	if got := s.lb.load[in1]; got != seven {
		t.Errorf("load of the merged flow's own link %v, want %v (one addition per edge)", got, seven)
	}
	if got, want := s.lb.load[out], seven+left; got != want {
		t.Errorf("load of the shared link %v, want %v (one addition per edge, then the other flow)", got, want)
	}
	if got, want := s.lb.util[out], min((seven+left)/bw, 1); got != want {
		t.Errorf("busy share of the shared link %v, want %v", got, want)
	}
}
