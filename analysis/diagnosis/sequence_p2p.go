package diagnosis

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// maxP2P bounds the messages the pair matcher follows that are not yet matched and done.
const maxP2P = 1 << 20

// p2pKey is one message of one pair: on communicator comm, the pair-th send from src to dst and
// the pair-th receive on dst from src (timeline.P2PSeq) are its two halves.
type p2pKey struct {
	comm     uint32
	src, dst int32
	pair     uint64
}

// p2pHalf is what one side posted; posted false: nothing seen of it.
type p2pHalf struct {
	posted, pending bool
	bytes           int64
	own             uint64 // the source's own number for it (PyTorch's p2p_seq_id)
	start, end      int64
}

type p2pMsg struct{ send, recv p2pHalf }

// addP2P folds a send or receive whose Op is a timeline.P2PSeq into its pair, as fr_trace
// pairs a send with its receive.
func (s *seqs) addP2P(e *timeline.Event, seq uint64) {
	pair, own, ok := timeline.SplitP2PSeq(seq)
	if !ok || e.Peer < 0 || e.Peer >= maxRanks {
		return // no peer: not matched
	}
	if pair == 0 {
		// No count of the pair's ops (a ring that lost its oldest): this rank's halves cannot be
		// paired, and whether it posted a peer's other half is not known either.
		if s.p2pLost == nil {
			s.p2pLost = map[int32]bool{}
		}
		if len(s.p2pLost) < maxRanks {
			s.p2pLost[e.Device] = true
		}
		return
	}
	k := p2pKey{comm: e.Comm, src: e.Device, dst: e.Peer, pair: pair}
	if e.Kind == timeline.KindRecv {
		k.src, k.dst = e.Peer, e.Device
	}
	if s.p2p == nil {
		s.p2p = map[p2pKey]*p2pMsg{}
	}
	m := s.p2p[k]
	if m == nil {
		if len(s.p2p) >= maxP2P {
			return
		}
		m = &p2pMsg{}
		s.p2p[k] = m
	}
	h := &m.send
	if e.Kind == timeline.KindRecv {
		h = &m.recv
	}
	*h = p2pHalf{posted: true, pending: e.Status == timeline.StatusPending, bytes: e.Bytes, own: own, start: e.Start, end: e.End}
	if m.send.posted && m.recv.posted && !m.send.pending && !m.recv.pending && m.send.bytes == m.recv.bytes {
		delete(s.p2p, k) // matched and done: nothing more will come of it, and the bound is for the rest
	}
}

// p2pFindings are the pair matcher's verdicts: per communicator and pair of ranks, its first
// message that went wrong: a half whose other half was never posted (the peer never entered
// it), halves of different sizes, or both posted and neither completed.
func (s *seqs) p2pFindings(labels timeline.Labels, hostOf func(int32) int32) []Finding {
	keys := make([]p2pKey, 0, len(s.p2p))
	for k, m := range s.p2p {
		if s.p2pLost[k.src] || s.p2pLost[k.dst] {
			continue // one side's ring lost ops: its halves are not counted from the pair's first
		}
		if m.send.pending || m.recv.pending || (m.send.posted && m.recv.posted && m.send.bytes != m.recv.bytes) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b p2pKey) int {
		if a.comm != b.comm {
			return int(a.comm) - int(b.comm)
		}
		if a.src != b.src {
			return int(a.src - b.src)
		}
		if a.dst != b.dst {
			return int(a.dst - b.dst)
		}
		return int(a.pair) - int(b.pair)
	})
	var out []Finding
	for i, k := range keys {
		if i > 0 && keys[i-1].comm == k.comm && keys[i-1].src == k.src && keys[i-1].dst == k.dst {
			continue // a pair's later messages wait behind its first: NCCL delivers in order
		}
		out = append(out, s.p2pFinding(k, s.p2p[k], s.commName(k.comm, labels), hostOf))
	}
	// A pending op's wait is only known to have lasted until its own rank's dump: no time lost
	// ranks them, so roots (the rank waits in nothing) come first, then the oldest wait.
	slices.SortStableFunc(out, func(a, b Finding) int {
		if a.Confidence != b.Confidence {
			return cmp.Compare(b.Confidence, a.Confidence)
		}
		return cmp.Compare(a.Onset, b.Onset)
	})
	return s.foldP2P(out)
}

// maxFolded is how many ops a finding names as also waiting on its culprit before "and more".
const maxFolded = 3

// foldP2P makes the pairs' hang findings one per culprit rank, as Pending's are
// (TestHangOneFindingPerRank): a rank that never posted its halves of several pairs (a pipeline
// stage that posts neither its receive from the stage before nor its send to the stage after) is
// one finding, its later pairs "also waited on by" it; and a rank named only because it waits in
// a send or receive to a culprit (through any chain of such waits) is a symptom, folded into that
// culprit's finding. out is in p2pFindings' order: roots first, then the oldest wait.
func (s *seqs) foldP2P(out []Finding) []Finding {
	byRank := map[int32]int{} // culprit rank → its finding's index in kept
	kept := out[:0:0]
	folded := map[int32]int{}
	fold := func(into int, f Finding, why string) {
		k := &kept[into]
		k.Severity += f.Severity
		k.Onset = min(k.Onset, f.Onset)
		folded[k.Rank]++
		what, _, _ := strings.Cut(f.Evidence, ":")
		switch n := folded[k.Rank]; {
		case n <= maxFolded:
			k.Evidence += "; also waited on by " + what + why
		case n == maxFolded+1:
			k.Evidence += " and more"
		}
	}
	var symptoms []Finding
	for _, f := range out {
		if f.Kind != Hang || f.Rank < 0 {
			kept = append(kept, f)
			continue
		}
		if i, ok := byRank[f.Rank]; ok {
			fold(i, f, "")
			continue
		}
		if _, waits := s.waits[f.Rank]; waits && f.Confidence < 1 {
			symptoms = append(symptoms, f) // it waits in another op: settled once every root is known
			continue
		}
		byRank[f.Rank] = len(kept)
		kept = append(kept, f)
	}
	for _, f := range symptoms {
		if root, ok := s.rootOf(f.Rank, byRank); ok {
			fold(byRank[root], f, fmt.Sprintf(" (rank %d waits in %s)", f.Rank, s.waits[f.Rank].name()))
			continue
		}
		if i, ok := byRank[f.Rank]; ok {
			fold(i, f, "")
			continue
		}
		byRank[f.Rank] = len(kept)
		kept = append(kept, f)
	}
	return kept
}

// rootOf follows rank's waits in sends and receives, peer to peer, to a rank that is the culprit
// of a finding (in byRank); false when the chain leaves the sends and receives, ends, or loops.
func (s *seqs) rootOf(rank int32, byRank map[int32]int) (int32, bool) {
	seen := map[int32]bool{rank: true}
	for r := rank; ; {
		w, ok := s.waits[r]
		if !ok || (w.kind != timeline.KindSend && w.kind != timeline.KindRecv) || w.peer < 0 || seen[w.peer] {
			return 0, false
		}
		if _, ok := byRank[w.peer]; ok {
			return w.peer, true
		}
		seen[w.peer] = true
		r = w.peer
	}
}

func (s *seqs) commName(id uint32, labels timeline.Labels) string {
	if c := s.comms[id]; c != nil && labels != nil && c.label != 0 {
		return labels.Lookup(c.label)
	}
	return fmt.Sprintf("communicator %d", id)
}

func (s *seqs) p2pFinding(k p2pKey, m *p2pMsg, name string, hostOf func(int32) int32) Finding {
	what := fmt.Sprintf("send #%d from rank %d to rank %d on %s", k.pair, k.src, k.dst, name)
	f := Finding{Kind: Hang, Rank: -1, Host: -1, Link: -1, Comm: k.comm, Seq: int(k.pair), Coll: timeline.CollSendRecv}
	switch {
	case m.send.posted && m.recv.posted && m.send.bytes != m.recv.bytes:
		// Which side's program is wrong one message cannot tell: the receiver is named, at half
		// confidence.
		f.Kind, f.Rank, f.Host, f.Confidence = Mismatch, k.dst, hostOf(k.dst), 0.5
		f.Onset, f.At = min(m.send.start, m.recv.start), max(m.send.start, m.recv.start)
		f.Evidence = fmt.Sprintf("%s (p2p seq %d on rank %d, %d on rank %d): rank %d sends %s, rank %d receives %s (a send and its receive of different sizes or dtypes: it cannot complete)",
			what, m.send.own, k.src, m.recv.own, k.dst, k.src, fmtBytes(m.send.bytes), k.dst, fmtBytes(m.recv.bytes))
	case m.send.posted && m.recv.posted:
		f.Stuck, f.StuckN = []int32{min(k.src, k.dst), max(k.src, k.dst)}, 2
		if h := hostOf(k.src); h == hostOf(k.dst) {
			f.Host = h
		}
		f.Onset, f.At = min(m.send.start, m.recv.start), max(m.send.end, m.recv.end)
		f.Severity = m.send.end - m.send.start + m.recv.end - m.recv.start
		f.Evidence = fmt.Sprintf("%s (p2p seq %d on rank %d, %d on rank %d): both ranks posted it and neither completed it (the transfer itself does not complete: a rank's GPU or network, not its program, is stuck)",
			what, m.send.own, k.src, m.recv.own, k.dst)
	default:
		posted, peer, verb, h := k.src, k.dst, "receive", m.send
		if m.recv.posted {
			posted, peer, verb, h = k.dst, k.src, "send", m.recv
		}
		f.Rank, f.Host, f.Missing, f.MissingN = peer, hostOf(peer), []int32{peer}, 1
		f.Onset, f.At, f.Severity = h.start, h.end, h.end-h.start
		f.Confidence = 1
		ev := fmt.Sprintf("%s: rank %d posted its half (p2p seq %d on rank %d, %s) and waits in it; rank %d never posted the matching %s",
			what, posted, h.own, posted, fmtBytes(h.bytes), peer, verb)
		switch w, ok := s.waits[peer]; {
		case !s.seen(peer):
			ev += fmt.Sprintf("; no dump of rank %d: what it did is unknown", peer)
			f.Confidence = 0.5
		case ok:
			ev += fmt.Sprintf("; rank %d waits in %s", peer, w.name())
			f.Confidence = 0.5 // it waits in something else: this wait is a consequence
		default:
			ev += fmt.Sprintf("; rank %d waits in no recorded op%s", peer, busyElsewhere)
		}
		f.Evidence = ev
	}
	return f
}

// seen reports whether any op or membership of rank d was folded in.
func (s *seqs) seen(d int32) bool {
	for _, c := range s.comms {
		if _, ok := c.ranks[d]; ok {
			return true
		}
	}
	return false
}
