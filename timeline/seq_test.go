package timeline

import "testing"

// TestP2PSeq: a send's or receive's pair count and own number come back from its sequence
// number, own cut to its bits and the count wrapped past 0 (unknown) to 1, and a collective's sequence number is not taken for one.
func TestP2PSeq(t *testing.T) {
	cases := []struct{ pair, own, wantPair, wantOwn uint64 }{
		{1, 1, 1, 1},
		{0, 7, 0, 7},
		{1<<20 - 1, 1<<19 - 1, 1<<20 - 1, 1<<19 - 1},
		{1 << 20, 1<<19 + 3, 1, 3},
		{2<<20 - 2, 0, 1<<20 - 1, 0},
	}
	for _, c := range cases {
		e := Event{Aux: AuxSeqOp, Op: SeqOp(5, P2PSeq(c.pair, c.own))}
		seq, ok := e.OpSeq()
		if !ok {
			t.Fatalf("P2PSeq(%d, %d): no sequence number", c.pair, c.own)
		}
		pair, own, ok := SplitP2PSeq(seq)
		if !ok || pair != c.wantPair || own != c.wantOwn {
			t.Errorf("P2PSeq(%d, %d) splits to %d, %d, %v; want %d, %d", c.pair, c.own, pair, own, ok, c.wantPair, c.wantOwn)
		}
	}
	if _, _, ok := SplitP2PSeq(42); ok {
		t.Error("collective sequence number 42 split as a send's")
	}
}
