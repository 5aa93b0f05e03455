package timeline

import "testing"

// A collective's Aux round-trips its algorithm, protocol and channels; other kinds and an Aux of 0
// say nothing; names parse back as NCCL_ALGO / NCCL_PROTO spell them.
func TestNCCLAux(t *testing.T) {
	tests := []struct {
		a     NCCLAlgo
		p     NCCLProto
		ch    int
		label string
		wantC int
	}{
		{AlgoRing, ProtoLL, 1, "Ring_LL", 1},
		{AlgoTree, ProtoLL128, 16, "Tree_LL128", 16},
		{AlgoNVLS, ProtoSimple, 32, "NVLS_Simple", 32},
		{AlgoNVLSTree, ProtoSimple, 300, "NVLSTree_Simple", 255},
		{0, 0, 0, "", 0},
	}
	for _, tc := range tests {
		e := Event{Kind: KindCollective, Aux: PackNCCL(tc.a, tc.p, tc.ch)}
		a, p, ch := e.NCCLChoice()
		if a != tc.a || p != tc.p || ch != tc.wantC || e.AlgoProto() != tc.label {
			t.Errorf("%v/%v/%d: got %v/%v/%d %q", tc.a, tc.p, tc.ch, a, p, ch, e.AlgoProto())
		}
		if tc.a != 0 {
			if got, ok := ParseNCCLAlgo(tc.a.String()); !ok || got != tc.a {
				t.Errorf("ParseNCCLAlgo(%q) = %v, %v", tc.a.String(), got, ok)
			}
		}
		if tc.p != 0 {
			if got, ok := ParseNCCLProto(tc.p.String()); !ok || got != tc.p {
				t.Errorf("ParseNCCLProto(%q) = %v, %v", tc.p.String(), got, ok)
			}
		}
	}
	g := Event{Kind: KindGroupLaunch, Aux: PackNCCL(AlgoRing, ProtoLL, 4)}
	if g.AlgoProto() != "" {
		t.Errorf("a group launch's Aux read as a choice: %q", g.AlgoProto())
	}
	for _, bad := range []string{"rings", "LL64"} {
		if _, ok := ParseNCCLAlgo(bad); ok {
			t.Errorf("ParseNCCLAlgo(%q) accepted", bad)
		}
		if _, ok := ParseNCCLProto(bad); ok {
			t.Errorf("ParseNCCLProto(%q) accepted", bad)
		}
	}
	if a, ok := ParseNCCLAlgo("nvls_tree"); !ok || a != AlgoNVLSTree {
		t.Errorf("nvls_tree: %v %v", a, ok)
	}
}
