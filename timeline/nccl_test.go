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

// A count mismatch's Aux carries its collective and how far behind its rank is, capped at 2²⁴−1;
// other events read as unknown.
func TestCountBehind(t *testing.T) {
	for _, c := range []struct {
		op     CollOp
		behind uint64
		want   int64
	}{
		{CollAllReduce, 1, 1},
		{CollAllGather, 1406, 1406},
		{0, 0, 0},
		{CollBroadcast, 1 << 40, 1<<24 - 1},
	} {
		e := Event{Kind: KindAlert, Sub: AlertCountMismatch, Aux: PackCountBehind(c.op, c.behind)}
		if op, n := e.CountBehind(); op != c.op || n != c.want {
			t.Errorf("CountBehind(PackCountBehind(%v, %d)) = %v, %d; want %v, %d", c.op, c.behind, op, n, c.op, c.want)
		}
	}
	other := Event{Kind: KindAlert, Sub: AlertRankDead, Aux: PackCountBehind(CollAllReduce, 1)}
	if op, n := other.CountBehind(); op != 0 || n != 0 {
		t.Errorf("a dead rank's alert: CountBehind = %v, %d; want nothing", op, n)
	}
}
