package diagnosis

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// TestP2PBoundKeepsUnmatched: more matched and completed messages than the matcher's bound pass
// through it, and a send posted after them whose receive never came is still found: only
// messages not yet done count against the bound.
func TestP2PBoundKeepsUnmatched(t *testing.T) {
	s := newSeqs()
	half := func(kind timeline.Kind, dev, peer int32, pair uint64, st uint8) {
		e := timeline.Event{Kind: kind, Device: dev, Peer: peer, Comm: 1, Ranks: 2, Bytes: 4096, Status: st,
			Aux: timeline.AuxSeqOp, Op: timeline.SeqOp(1, timeline.P2PSeq(pair, pair)), Start: int64(pair), End: int64(pair) + 1}
		s.add(&e)
	}
	// Two pairs of ranks, each under the 2²⁰ a pair's count holds.
	n := uint64(maxP2P/2 + 10)
	for p := uint64(1); p <= n; p++ {
		for _, a := range []int32{0, 2} {
			half(timeline.KindSend, a, a+1, p, timeline.StatusOK)
			half(timeline.KindRecv, a+1, a, p, timeline.StatusOK)
		}
	}
	half(timeline.KindSend, 2, 3, n+1, timeline.StatusPending)
	fs := s.findings(nil, func(int32) int32 { return 0 })
	if len(fs) != 1 || fs[0].Kind != Hang || fs[0].Rank != 3 || fs[0].Seq != int(n+1) ||
		!strings.Contains(fs[0].Evidence, "rank 3 never posted the matching receive") {
		for _, f := range fs {
			t.Log(f.String())
		}
		t.Fatalf("%d findings; want the hang of the last send, naming rank 3", len(fs))
	}
}
