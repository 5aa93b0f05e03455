package diagnosis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// Bounds of the sequence matcher: communicators followed, members named per finding detail, and
// the window of recent (sequence, index) signatures compared per communicator.
const (
	maxSeqComms   = 4096
	maxSeqMembers = 1 << 20
	sigSlots      = 512
	maxDetails    = 4
)

// seqs matches the ranks of each communicator by the sequence numbers their collectives carry
// (timeline.SeqOp, marked by timeline.AuxSeqOp: PyTorch's Flight Recorder numbers a process
// group's collectives), as
// fr_trace does: the first sequence number some member has not completed is where they diverge;
// the members that never entered it are behind, and what each of them waits in instead (its
// oldest unfinished op anywhere) says why. Ranks that entered one sequence number with different
// ops or sizes are a mismatch.
type seqs struct {
	comms   map[uint32]*seqComm
	members int
	// waits holds each rank's oldest unfinished op, on any communicator.
	waits map[int32]seqWait
	// p2p pairs sends with receives (sequence_p2p.go).
	p2p map[p2pKey]*p2pMsg
	// p2pLost holds the ranks whose sends and receives came without a count in their pair.
	p2pLost map[int32]bool
}

type seqComm struct {
	label uint32 // the communicator's name (a membership mark's label), 0: none
	size  int
	ranks map[int32]*seqRank
	first int64 // the lowest sequence number seen on it
	sigs  [sigSlots]seqSig
	mm    *seqSig // the first mismatch seen, as it stands
	// norecord holds, sorted, the members its source knows of but has no record of
	// (timeline.StatusNoRecord): the unseen members that can be named.
	norecord []int32
}

// seqRank is one member's progress on one communicator; sequence numbers are −1 when none.
type seqRank struct {
	done, entered, pend int64
	pendSub             uint8
	pendStart, pendEnd  int64
	pendLabel           uint32
	last                int64 // the sequence number of its last op, and how many it had at it
	idx                 int
}

// seqSig is the first op seen at one (sequence number, index in a coalesced group) of a
// communicator, and which members agreed with it.
type seqSig struct {
	seq    int64
	idx    int
	kind   timeline.Kind
	sub    uint8
	bytes  int64
	rank   int32
	agree  int
	differ []seqDiff
	// start is when the first op began; at when the first that differs did.
	start, at int64
}

type seqDiff struct {
	rank  int32
	sub   uint8
	bytes int64
}

type seqWait struct {
	comm  uint32
	seq   int64
	kind  timeline.Kind
	sub   uint8
	peer  int32
	start int64
}

func newSeqs() *seqs { return &seqs{comms: map[uint32]*seqComm{}, waits: map[int32]seqWait{}} }

// add folds an event whose Op is a sequence number (a collective, a send or receive, or a
// membership mark with sequence number 0).
func (s *seqs) add(e *timeline.Event) {
	seq64, ok := e.OpSeq()
	if ok && e.Kind == timeline.KindMark && e.Status == timeline.StatusNoRecord && seq64 == 0 {
		s.addNoRecord(e)
		return
	}
	if !ok || e.Comm == 0 || e.Device < 0 || e.Device >= maxRanks {
		return
	}
	c := s.comm(e.Comm)
	if c == nil {
		return
	}
	c.size = max(c.size, int(e.Ranks))
	r := s.rank(c, e.Device)
	if r == nil {
		return
	}
	if e.Kind == timeline.KindMark {
		if seq64 == 0 && c.label == 0 {
			c.label = e.Label
		}
		return
	}
	pending := e.Status == timeline.StatusPending
	if pending {
		if w, ok := s.waits[e.Device]; !ok || e.Start < w.start {
			if len(s.waits) < maxRanks {
				s.waits[e.Device] = seqWait{comm: e.Comm, seq: int64(seq64 &^ (1 << 39)), kind: e.Kind, sub: e.Sub, peer: e.Peer, start: e.Start}
			}
		}
	}
	if e.Kind != timeline.KindCollective {
		s.addP2P(e, seq64) // sends and receives are numbered per pair, not with the collectives
		return
	}
	seq := int64(seq64)
	if c.first < 0 || seq < c.first {
		c.first = seq
	}
	if seq == r.last {
		r.idx++
	} else {
		r.last, r.idx = seq, 0
	}
	r.entered = max(r.entered, seq)
	if pending {
		if r.pend < 0 || seq < r.pend {
			r.pend, r.pendSub, r.pendStart, r.pendEnd, r.pendLabel = seq, e.Sub, e.Start, e.End, e.Label
		}
	} else if r.pend != seq {
		r.done = max(r.done, seq)
	}
	c.sign(e, seq, r.idx)
}

// addNoRecord notes a member of a communicator its source has no record of (its Peer): it is
// not one of the members seen, but when the divergence has no other suspect it is named.
func (s *seqs) addNoRecord(e *timeline.Event) {
	if e.Comm == 0 || e.Peer < 0 || e.Peer >= maxRanks {
		return
	}
	c := s.comm(e.Comm)
	if c == nil {
		return
	}
	c.size = max(c.size, int(e.Ranks))
	if i, found := slices.BinarySearch(c.norecord, e.Peer); !found && s.members < maxSeqMembers {
		s.members++
		c.norecord = slices.Insert(c.norecord, i, e.Peer)
	}
}

func (s *seqs) comm(id uint32) *seqComm {
	c := s.comms[id]
	if c == nil {
		if len(s.comms) >= maxSeqComms {
			return nil
		}
		c = &seqComm{ranks: map[int32]*seqRank{}, first: -1}
		s.comms[id] = c
	}
	return c
}

func (s *seqs) rank(c *seqComm, dev int32) *seqRank {
	r := c.ranks[dev]
	if r == nil {
		if s.members >= maxSeqMembers {
			return nil
		}
		s.members++
		r = &seqRank{done: -1, entered: -1, pend: -1, last: -1}
		c.ranks[dev] = r
	}
	return r
}

// sign compares a collective with the first op seen at its place (sequence number, index) on the
// communicator: same op, and same size except where sizes differ by design (all-to-all, and the
// ops xfertop has no name for: gather, scatter).
func (c *seqComm) sign(e *timeline.Event, seq int64, idx int) {
	slot := &c.sigs[(seq*8+int64(idx))%sigSlots]
	if slot.seq != seq || slot.idx != idx || slot.agree == 0 {
		*slot = seqSig{seq: seq, idx: idx, kind: e.Kind, sub: e.Sub, bytes: e.Bytes, rank: e.Device, agree: 1, start: e.Start}
		return
	}
	sizes := e.Sub != 0 && e.Sub != uint8(timeline.CollAllToAll) && e.Sub != uint8(timeline.CollRaggedAllToAll)
	if e.Sub == slot.sub && (!sizes || e.Bytes == slot.bytes) {
		slot.agree++
	} else if len(slot.differ) < maxMissing {
		if len(slot.differ) == 0 {
			slot.at = e.Start
		}
		slot.differ = append(slot.differ, seqDiff{e.Device, e.Sub, e.Bytes})
	}
	if len(slot.differ) > 0 && (c.mm == nil || (c.mm.seq == seq && c.mm.idx == idx)) {
		cp := *slot
		cp.differ = slices.Clone(slot.differ)
		c.mm = &cp
	}
}

// findings are the matcher's verdicts as they stand: per communicator, its first divergence and
// its first mismatch; then per pair of ranks, its first send or receive that went wrong.
func (s *seqs) findings(labels timeline.Labels, hostOf func(int32) int32) []Finding {
	ids := make([]uint32, 0, len(s.comms))
	for id := range s.comms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out []Finding
	for _, id := range ids {
		c := s.comms[id]
		name := fmt.Sprintf("communicator %d", id)
		if labels != nil && c.label != 0 {
			name = labels.Lookup(c.label)
		}
		mmSeq := int64(-1)
		if c.mm != nil {
			out = append(out, c.mismatch(id, name, hostOf))
			mmSeq = c.mm.seq
		}
		if f, ok := s.divergence(id, c, name, mmSeq, hostOf); ok {
			out = append(out, f)
		}
	}
	return append(out, s.p2pFindings(labels, hostOf)...)
}

func (c *seqComm) mismatch(id uint32, name string, hostOf func(int32) int32) Finding {
	m := c.mm
	// The culprits are the side fewer ranks took; on a tie, the ranks that differ from the first.
	culprits := make([]int32, 0, len(m.differ))
	for _, d := range m.differ {
		culprits = append(culprits, d.rank)
	}
	first := fmt.Sprintf("%s of %s", collName(m.sub), fmtBytes(m.bytes))
	if len(m.differ) > m.agree {
		culprits = []int32{m.rank}
	}
	parts := make([]string, 0, len(m.differ))
	for _, d := range m.differ {
		parts = append(parts, fmt.Sprintf("rank %d posted %s of %s", d.rank, collName(d.sub), fmtBytes(d.bytes)))
	}
	f := Finding{Kind: Mismatch, Rank: culprits[0], Host: hostOf(culprits[0]), Link: -1, Comm: id, Seq: int(m.seq), Coll: timeline.CollOp(m.sub),
		Onset: min(m.start, m.at), At: max(m.start, m.at),
		Confidence: float64(max(m.agree, len(m.differ))) / float64(m.agree+len(m.differ)) / float64(len(culprits)),
		Evidence: fmt.Sprintf("%s #%d on %s: rank %d%s posted %s; %s (an op whose arguments differ across ranks: it cannot complete)",
			collName(m.sub), m.seq, name, m.rank, others(m.agree-1), first, strings.Join(parts, "; "))}
	if m.idx > 0 {
		f.Evidence += fmt.Sprintf(" [op %d of its coalesced group]", m.idx+1)
	}
	return f
}

// divergence finds the first sequence number of communicator c that some member has not
// completed and some member entered.
func (s *seqs) divergence(id uint32, c *seqComm, name string, mmSeq int64, hostOf func(int32) int32) (Finding, bool) {
	members := make([]int32, 0, len(c.ranks))
	for d := range c.ranks {
		members = append(members, d)
	}
	slices.Sort(members)
	frontier, sub := c.frontier(members)
	var entered, missing, waiting []int32
	var onset, at, severity int64
	onset = -1
	for _, d := range members {
		r := c.ranks[d]
		if r.entered < frontier || r.entered < 0 {
			missing = append(missing, d)
			continue
		}
		entered = append(entered, d)
		if r.pend == frontier {
			waiting = append(waiting, d)
			sub = r.pendSub
			if onset < 0 || r.pendStart < onset {
				onset = r.pendStart
			}
			at = max(at, r.pendEnd)
			severity += r.pendEnd - r.pendStart
		}
	}
	if frontier < 0 || len(entered) == 0 || (len(missing) == 0 && len(waiting) == 0) || frontier == mmSeq {
		return Finding{}, false // nobody diverged here, or the mismatch finding says why
	}
	// The members never seen: those the source names as unrecorded, and any more its size counts.
	var named []int32
	for _, d := range c.norecord {
		if _, ok := c.ranks[d]; !ok {
			named = append(named, d)
		}
	}
	unseen := max(c.size-len(members), len(named))
	f := Finding{Kind: Hang, Rank: -1, Host: -1, Link: -1, Comm: id, Seq: int(frontier), Coll: timeline.CollOp(sub),
		Onset: max(onset, 0), At: at, Severity: severity, MissingN: len(missing) + unseen}
	f.Missing = missing[:min(len(missing), maxMissing)]
	f.Entered, f.Waiting = sortedRanks(entered), sortedRanks(waiting)
	what := fmt.Sprintf("%s #%d on %s", collName(sub), frontier, name)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s entered it", what, rankSummary(entered))
	switch {
	case len(waiting) > listRanks && len(waiting) == len(entered):
		b.WriteString(" (all waiting in it, not completed)")
	case len(waiting) > listRanks:
		fmt.Fprintf(&b, " (%s waiting in it, not completed)", rankSummary(waiting))
	case len(waiting) > 0:
		fmt.Fprintf(&b, " (%s waiting in it, not completed)", rankList(waiting, len(waiting)))
	default:
		b.WriteString(" and completed it")
	}
	if len(missing)+unseen == 0 {
		b.WriteString("; every member entered it, none is missing: the collective itself does not complete (a rank's GPU or network, not its program, is stuck)")
		f.Evidence = b.String()
		return f, true // no culprit: confidence 0
	}
	if len(missing) == 0 {
		unseenCulprit(&f, &b, named, unseen, c.size, hostOf)
		return f, true
	}
	fmt.Fprintf(&b, "; %s %s never entered it", units.Plural(len(missing), "rank"), rankList(f.Missing, len(missing)))
	if unseen > 0 {
		fmt.Fprintf(&b, " (and %s of its %d %s never seen: %s)", units.Counted(unseen, "member"), c.size, units.Plural(unseen, "was", "were"), noDumpOf(named, unseen))
	}
	root := false
	for i, d := range missing {
		if i == maxDetails {
			fmt.Fprintf(&b, "; …")
			break
		}
		r := c.ranks[d]
		w, ok := s.waits[d]
		switch {
		case ok:
			fmt.Fprintf(&b, "; rank %d waits in %s", d, w.name())
		default:
			root = true
			last := "nothing on it"
			if r.done >= 0 {
				last = fmt.Sprintf("#%d", r.done)
			}
			fmt.Fprintf(&b, "; rank %d completed %s and waits in no recorded op%s", d, last, busyElsewhere)
		}
	}
	f.Evidence = b.String()
	f.Rank, f.Host = missing[0], hostOf(missing[0])
	// A missing rank waiting in another communicator's op is there because of that op: this
	// divergence is a consequence, less likely the root.
	f.Confidence = 1 / float64(len(missing))
	if !root {
		f.Confidence /= 2
	}
	return f, true
}

// frontier is the first sequence number of c some member has not completed (its lowest pending
// one, else the one after its last completed), and its op as first seen; −1 when none.
func (c *seqComm) frontier(members []int32) (int64, uint8) {
	frontier := int64(-1)
	for _, d := range members {
		r := c.ranks[d]
		f := r.done + 1
		if r.pend >= 0 {
			f = r.pend
		}
		if r.entered < 0 {
			f = c.first // a member that entered nothing is behind from the first
		}
		if frontier < 0 || f < frontier {
			frontier = f
		}
	}
	// Sequence numbers are consecutive on a communicator, but a ring that overwrote entries, or a
	// source that skips, may leave a gap: the divergence is at the first one a member entered.
	var sub uint8
	if frontier >= 0 {
		next := int64(-1)
		for i := range c.sigs {
			sg := &c.sigs[i]
			if sg.agree > 0 && sg.idx == 0 && sg.seq >= frontier && (next < 0 || sg.seq < next) {
				next, sub = sg.seq, sg.sub
			}
		}
		if next >= 0 {
			frontier = next
		}
	}
	return frontier, sub
}

// unseenCulprit completes a divergence every member seen entered, though some members were never
// seen: they are the ones that never entered it, as far as the records show. Members the source
// names (it knows them, but holds no record of them: the hung rank is the one least likely to
// leave a dump) are named as the culprits, at half the confidence of a rank seen behind, since
// what they did is unknown; members only counted leave the culprit unknown.
func unseenCulprit(f *Finding, b *strings.Builder, named []int32, unseen, size int, hostOf func(int32) int32) {
	f.MissingN = unseen
	if len(named) == 0 {
		fmt.Fprintf(b, "; %s of its %d %s never seen (no record of %s): which of them never entered it is unknown",
			units.Counted(unseen, "member"), size, units.Plural(unseen, "was", "were"), units.Plural(unseen, "it", "them"))
		f.Evidence = b.String()
		return // no culprit: confidence 0
	}
	f.Missing = named[:min(len(named), maxMissing)]
	fmt.Fprintf(b, "; %s %s never entered it as far as is known: %s, what %s did is unknown",
		units.Plural(len(named), "rank"), rankList(f.Missing, len(named)), noDumpOf(named, len(named)), units.Plural(len(named), "it", "they"))
	if more := unseen - len(named); more > 0 {
		fmt.Fprintf(b, " (and %s of its %d %s never seen)", units.Counted(more, "more member"), size, units.Plural(more, "was", "were"))
	}
	f.Evidence = b.String()
	f.Rank, f.Host = named[0], hostOf(named[0])
	f.Confidence = 0.5 / float64(unseen)
}

// noDumpOf says which unseen members have no record: by rank where all of them are named.
func noDumpOf(named []int32, unseen int) string {
	if len(named) == 0 || len(named) < unseen {
		return "no dump of them"
	}
	return fmt.Sprintf("no dump of %s %s", units.Plural(len(named), "rank"), rankList(named[:min(len(named), maxMissing)], len(named)))
}

// name names the op a rank waits in by its kind, sequence number or peer, and communicator.
func (w seqWait) name() string {
	switch w.kind {
	case timeline.KindSend:
		return fmt.Sprintf("a send to rank %d on communicator %d", w.peer, w.comm)
	case timeline.KindRecv:
		return fmt.Sprintf("a receive from rank %d on communicator %d", w.peer, w.comm)
	}
	return fmt.Sprintf("%s #%d on communicator %d", collName(w.sub), w.seq, w.comm)
}

func others(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return " and 1 other rank"
	}
	return fmt.Sprintf(" and %d other ranks", n)
}

func collName(sub uint8) string {
	if sub == 0 {
		return "collective"
	}
	return timeline.CollOp(sub).String()
}

func fmtBytes(b int64) string {
	switch {
	case b <= 0:
		return "unknown size"
	case b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d B", b)
}
