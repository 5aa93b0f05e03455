package diagnosis

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// Hang thresholds: a peer wait is a hang once it lasts hangFloor, or four times the longest wait
// that ended so far in this run if that is longer (a pipeline's bubbles are long waits that end);
// a communicator's initialisation likewise against initFloor and the longest that completed.
const (
	hangFloor   = 1_000_000_000
	initFloor   = 5_000_000_000
	maxMissing  = 16
	hangWaitFac = 4
)

// HangAfter is how long a wait must last, given what this run has seen, to be called a hang.
func (d *Diagnosis) HangAfter() int64 { return max(d.floor(), hangWaitFac*d.maxWait) }

// SetHangFloor sets the least a wait must last to be a hang (1 s by default; attach's
// --hang-timeout); 0 or less: no wait is a hang.
func (d *Diagnosis) SetHangFloor(ns int64) {
	d.hangFloor = ns
	if ns <= 0 {
		d.hangFloor = math.MaxInt64 / 4
	}
}

func (d *Diagnosis) floor() int64 {
	if d.hangFloor > 0 {
		return d.hangFloor
	}
	return hangFloor
}

func (d *Diagnosis) initAfter() int64 { return max(initFloor, hangWaitFac*d.maxInit) }

// hangGroup is one op (a collective's instance, a send/recv pair) some ranks wait in for their
// peers or run with all of them, as seen in flight.
type hangGroup struct {
	first   *timeline.Event
	oldest  int64
	waiting []int32  // ranks posted in it, waiting for their peers
	waitAux []uint32 // each waiting rank's peer-wait Aux (send or receive)
	inside  []int32  // ranks running it with all their peers (entered; not finished)
	stalled []int32  // of inside, those whose part the source saw make no progress (timeline.StatusStalled)
	// ended: only waits the watchdog ended (no longer in flight): the op the watchdog named,
	// and its waits, as they stood when it fired.
	ended bool
	thr   int64 // how long it must last to be a hang
	// missing are the members that never entered it (up to maxMissing); missingN counts them all.
	missing  []int32
	missingN int
	// holder+1 is the rank of the two stuck inside a send/receive that holds it (p2pHolders); 0:
	// not known.
	holder int32
	// Of a send/receive, what its events say of it in a user's terms (p2pName): its label (the
	// first of its events to carry one; 0: none), and each half's stream, +1 (0: no event of
	// that half seen).
	label                  uint32
	sendStream, recvStream uint32
}

// noteP2P notes what e, an event of a send/receive's group g, says of the transfer: its label,
// and the stream of the half it is (a peer wait's Aux says which).
func (g *hangGroup) noteP2P(e *timeline.Event) {
	if e.Peer < 0 {
		return
	}
	if g.label == 0 {
		g.label = e.Label
	}
	switch {
	case e.Kind == timeline.KindSend || e.Kind == timeline.KindPeerWait && e.Aux == timeline.PeerWaitSend:
		g.sendStream = e.Stream + 1
	case e.Kind == timeline.KindRecv || e.Kind == timeline.KindPeerWait && e.Aux == timeline.PeerWaitRecv:
		g.recvStream = e.Stream + 1
	}
}

// Pending looks at what is in flight at time now (a source's InFlight: ops under way, peer waits,
// communicator initialisations) as PyTorch's Flight Recorder analysis does: the ops some ranks
// have waited in for longer than HangAfter (or all their ranks have run for that long, and four
// times the longest that finished, without finishing), named by op, sequence number on the
// communicator and communicator, with the members that never entered them and the ranks stuck
// inside; cycles of ranks waiting on each other (deadlocks); and the ranks whose communicator
// initialisation has not completed after initAfter. Each hang is reported once; At is the
// earliest time the state seen now proves it (the oldest wait's start plus the threshold); one
// whose op completes after all is withdrawn (withdraw.go: it was a long wait). It returns the
// findings added.
func (d *Diagnosis) Pending(now int64, inflight []timeline.Event) []Finding {
	groups, order, initing, joining, ops := d.groupInFlight(now, inflight)
	if inflight != nil {
		d.noteLook(order) // not Result's look at the ended waits alone: a console's is the one to note
	}
	d.upgradeHangs(initing)
	thr := d.HangAfter()
	// A group is hung once its oldest wait is thr old; one that every rank entered and none
	// finished, once it has also run four times as long as the longest op that did finish.
	var hung []uint64
	for _, op := range order {
		g := groups[op]
		t := thr
		if len(g.waiting) == 0 {
			t = max(thr, hangWaitFac*d.maxOp)
		}
		if g.ended || now-g.oldest >= t {
			g.thr = t
			d.missingOf(g, joining)
			hung = append(hung, op)
		}
	}
	// The oldest first: on one communicator, the collectives queued behind a hung one are the
	// same hang (its ranks posted them ahead, as NCCL lets them), reported once until it moves.
	slices.SortStableFunc(hung, func(a, b uint64) int { return cmp.Compare(groups[a].oldest, groups[b].oldest) })
	d.link(groups, hung)
	p2pHolders(groups, hung)
	added := d.deadlocks(groups, hung, ops, thr)
	// A rank waiting in (or stuck inside) one hung op is the reason it never entered another:
	// only the ops that ranks not waiting anywhere never entered are the root of a hang (Flight
	// Recorder's analysis).
	busy := map[int32]bool{}
	for r := range d.timedOut {
		busy[r] = true
	}
	for _, op := range hung {
		for _, rs := range [2][]int32{groups[op].waiting, groups[op].inside} {
			for _, r := range rs {
				busy[r] = true
			}
		}
	}
	// A rank waiting for its peers in an op not (yet) old enough to be a hang is not the root
	// either, for now: a console looks while the hang builds up, and the ranks that entered their
	// waits later are waiting on the root too (a look once the run stopped sees those waits hung).
	waiting := map[int32]bool{}
	for _, op := range order {
		for _, r := range groups[op].waiting {
			waiting[r] = true
		}
	}
	var victims []uint64
	for _, op := range hung {
		g := groups[op]
		if _, done := d.hung[op]; done {
			continue
		}
		if c := g.first.Comm; g.first.Peer < 0 && c != 0 && d.hungComms[c] {
			d.hung[op] = -1 // behind a hang already named on its communicator
			continue
		}
		f := d.hangFinding(g, g.thr, initing)
		if i, ok := d.rankHangs[f.Rank]; ok && g.holder > 0 {
			d.hung[op] = i // the same rank holds another transfer: one finding
			continue
		}
		if i, ok := d.missingRank(&f, initing); ok {
			// The same missing rank: one finding, which counts the ops waiting on it.
			d.hung[op] = i
			continue
		}
		root, later := g.missingN == 0, false
		for _, m := range g.missing {
			root = root || (!busy[m] && !waiting[m])
			later = later || !busy[m]
		}
		if !root {
			if !later {
				victims = append(victims, op) // of a hang named below, perhaps
			} // else looked at again: the waits it is behind may prove a hang, or end
			continue
		}
		f.look = true
		d.hung[op] = len(d.findings)
		if f.Rank >= 0 && (f.Kind == MissingRank || f.Kind == Hang) && len(d.rankHangs) < maxRanks {
			d.rankHangs[f.Rank] = len(d.findings)
		}
		if g.first.Peer < 0 && g.first.Comm != 0 && len(d.hungComms) < 1<<16 {
			d.hungComms[g.first.Comm] = true
			d.commRoot[g.first.Comm] = len(d.findings)
		}
		d.findings = append(d.findings, f)
		added = append(added, f)
	}
	d.foldVictims(groups, victims, initing)
	return added
}

// foldVictims folds each hung op whose missing ranks are all busy in other hung ops (not a root)
// into the finding of its culprit rank, when one names that rank now ("also waited on by …"): the
// ops are looked at oldest first, so a pipeline's receive waiting on a rank stuck inside a
// collective may come before the collective's hang is named. The others are not reported.
func (d *Diagnosis) foldVictims(groups map[uint64]*hangGroup, victims []uint64, initing map[uint32][]int32) {
	for _, op := range victims {
		g := groups[op]
		f := d.hangFinding(g, g.thr, initing)
		if i, ok := d.missingRank(&f, initing); ok {
			d.hung[op] = i
			continue
		}
		d.hung[op] = -1
	}
}

// p2pHolders sets the holder of each hung send/receive whose two ranks are both stuck inside it
// (none waiting) where just one of the two is also stuck inside another such send/receive: a rank
// hung in its part of transfers (a hang fault of mode in, at a pipeline stage) stalls each it is
// in, the stage before's and the stage after's, and each of its peers is in one. Which rank of a
// lone stuck pair holds it stays unknown.
func p2pHolders(groups map[uint64]*hangGroup, hung []uint64) {
	stuck := func(g *hangGroup) bool { return g.first.Peer >= 0 && len(g.inside) == 2 && len(g.waiting) == 0 }
	in := map[int32]int{}
	for _, op := range hung {
		if g := groups[op]; stuck(g) {
			for _, r := range g.inside {
				in[r]++
			}
		}
	}
	for _, op := range hung {
		g := groups[op]
		if !stuck(g) {
			continue
		}
		a, b := g.inside[0], g.inside[1]
		switch {
		case in[a] > 1 && in[b] == 1:
			g.holder = a + 1
		case in[b] > 1 && in[a] == 1:
			g.holder = b + 1
		}
	}
}

// hangLink is what a hung op waits on: its communicator and the members that never entered it.
type hangLink struct {
	comm    uint32
	missing []int32
}

// maxLinks bounds the hung ops and waiting ranks RootOf can follow; maxWaitsIn the hung ops kept
// per rank (a pipeline's rank waits in a send, a receive and its group's collective at once).
const (
	maxLinks   = 1 << 16
	maxWaitsIn = 8
)

// link notes, for the hung ops, the ops each rank waits or is stuck in and the ranks each op
// waits on, as they stand now.
func (d *Diagnosis) link(groups map[uint64]*hangGroup, hung []uint64) {
	for _, op := range hung {
		g := groups[op]
		if _, ok := d.links[op]; ok || len(d.links) < maxLinks {
			d.links[op] = hangLink{comm: g.first.Comm, missing: slices.Clone(g.missing)}
		}
		for _, rs := range [2][]int32{g.waiting, g.inside} {
			for _, r := range rs {
				ws, ok := d.waitsIn[r]
				if (ok || len(d.waitsIn) < maxLinks) && len(ws) < maxWaitsIn && !slices.Contains(ws, op) {
					d.waitsIn[r] = append(ws, op)
				}
			}
		}
	}
}

// RootOf returns the finding that names the root of the hang op waits in: its own, when the
// diagnosis named op itself; else the nearest finding following who waits on whom (op waits on
// the ranks that never entered it, which wait in other hung ops, …), or the one that named the
// hang of the communicator an op is queued behind. This is the diagnosis's one answer to "which
// rank does everyone wait on", which a watchdog's alert about op quotes: the alert names the peer
// op waited for, which may itself be waiting on the root. False when no finding names it (yet).
// labels reads the labels of the ops the finding names, as Result's does (nil: not read).
func (d *Diagnosis) RootOf(op uint64, labels timeline.Labels) (Finding, bool) {
	f, ok := d.rootOf(op)
	f = resolved(f, labels)
	if ok {
		one := []Finding{f}
		d.place(one) // placed as Result places it
		f = one[0]
	}
	return f, ok
}

func (d *Diagnosis) rootOf(op uint64) (Finding, bool) {
	seen := map[uint64]bool{op: true}
	queue := []uint64{op}
	behind := -1 // the finding of a communicator's hang an op on the way is queued behind
	for len(queue) > 0 {
		op, queue = queue[0], queue[1:]
		if i, ok := d.hung[op]; ok && i >= 0 {
			return d.findings[i], true
		}
		l, ok := d.links[op]
		if !ok {
			continue
		}
		if i, ok := d.commRoot[l.comm]; ok && l.comm != 0 && behind < 0 {
			behind = i
		}
		for _, m := range l.missing {
			for _, next := range d.waitsIn[m] {
				if !seen[next] {
					seen[next] = true
					queue = append(queue, next)
				}
			}
		}
	}
	if behind >= 0 {
		return d.findings[behind], true
	}
	return Finding{}, false
}

// missingRank makes a hang whose culprit never finished joining some communicator (not only the
// hung op's: a rank stuck in its first communicator's initialisation never creates the next) a
// missing rank: the cause, of which the ops that wait on it are symptoms. When that rank is
// already the culprit of a hang or missing-rank finding, the hang is folded into it (its index,
// true): one finding per culprit rank, at the top, not one per op or communicator waiting on it.
func (d *Diagnosis) missingRank(f *Finding, initing map[uint32][]int32) (int, bool) {
	if f.Rank < 0 || (f.Kind != Hang && f.Kind != MissingRank) {
		return 0, false
	}
	if f.Kind == Hang {
		if comm, ok := initingComm(f.Rank, initing); ok {
			f.Kind = MissingRank
			f.Evidence += fmt.Sprintf("; rank %d never finished joining communicator %d", f.Rank, comm)
		}
	}
	i, ok := d.rankHangs[f.Rank]
	if !ok {
		return 0, false
	}
	old := &d.findings[i]
	old.Severity += f.Severity
	old.Onset = min(old.Onset, f.Onset)
	d.foldedOps[f.Rank]++
	what, _, _ := strings.Cut(f.Evidence, ":")
	if n := d.foldedOps[f.Rank]; n <= 3 {
		old.Evidence += "; also waited on by " + what
	} else if n == 4 {
		old.Evidence += " and more"
	}
	return i, true
}

// initingComm is the lowest communicator rank is still initialising after initAfter.
func initingComm(rank int32, initing map[uint32][]int32) (uint32, bool) {
	var comm uint32
	found := false
	for c, rs := range initing {
		if slices.Contains(rs, rank) && (!found || c < comm) {
			comm, found = c, true
		}
	}
	return comm, found
}

// upgradeHangs makes the hang findings whose culprit is now seen never to have finished joining a
// communicator missing ranks, as a later look at the same hang names them: a console looks as
// soon as the wait is a hang, before the initialisation is late enough to tell.
func (d *Diagnosis) upgradeHangs(initing map[uint32][]int32) {
	if len(initing) == 0 {
		return
	}
	for r, i := range d.rankHangs {
		f := &d.findings[i]
		if f.Kind != Hang {
			continue
		}
		comm, ok := initingComm(r, initing)
		if !ok {
			continue
		}
		f.Kind = MissingRank
		why := fmt.Sprintf("; rank %d never finished joining communicator %d", r, comm)
		if slices.Contains(initing[f.Comm], r) {
			why = fmt.Sprintf("; rank %d never finished joining the communicator", r)
		}
		// Where a look that saw it at once would have said it: before the ops folded in.
		if j := strings.Index(f.Evidence, "; also waited on by "); j >= 0 {
			f.Evidence = f.Evidence[:j] + why + f.Evidence[j:]
		} else {
			f.Evidence += why
		}
	}
}

// groupInFlight groups the waits and the ops running in flight (and the waits the watchdog
// ended) by op, in the order first seen, lists the ranks still initialising each communicator
// after initAfter (initing) and at all (joining: a member that never entered an op is known by
// it before it is late), and counts each rank's ops in flight (a wait the watchdog ended counts
// one).
func (d *Diagnosis) groupInFlight(now int64, inflight []timeline.Event) (groups map[uint64]*hangGroup, order []uint64, initing, joining map[uint32][]int32, ops map[int32]int) {
	ops = map[int32]int{}
	groups = map[uint64]*hangGroup{}
	initing = map[uint32][]int32{} // communicator → ranks still initialising it
	joining = map[uint32][]int32{}
	get := func(e *timeline.Event, ended bool) *hangGroup {
		g := groups[e.Op]
		if g == nil {
			g = &hangGroup{first: e, oldest: e.Start, ended: ended}
			groups[e.Op] = g
			order = append(order, e.Op)
		}
		g.ended = g.ended && ended
		g.oldest = min(g.oldest, e.Start)
		g.noteP2P(e)
		return g
	}
	for i := range inflight {
		e := &inflight[i]
		if e.Op != 0 && d.ended[e.Op] {
			continue // read in flight before its completion was folded: it is not
		}
		if e.Device >= 0 {
			ops[e.Device]++
		}
		switch e.Kind {
		case timeline.KindPeerWait:
			g := get(e, false)
			g.waiting, g.waitAux = append(g.waiting, e.Device), append(g.waitAux, e.Aux)
		case timeline.KindCollective, timeline.KindSend, timeline.KindRecv:
			if e.Op != 0 && (e.Status == timeline.StatusOK || e.Status == timeline.StatusStalled) {
				g := get(e, false)
				g.inside = append(g.inside, e.Device)
				if e.Status == timeline.StatusStalled {
					g.stalled = append(g.stalled, e.Device)
				}
			}
		case timeline.KindCommInit:
			joining[e.Comm] = append(joining[e.Comm], e.Device)
			if now-e.Start >= d.initAfter() {
				initing[e.Comm] = append(initing[e.Comm], e.Device)
			}
		}
	}
	for i := range d.endedWaits {
		e := &d.endedWaits[i]
		g := get(e, true)
		if !slices.Contains(g.waiting, e.Device) {
			g.waiting, g.waitAux = append(g.waiting, e.Device), append(g.waitAux, e.Aux)
			ops[e.Device]++
		}
	}
	for _, g := range groups {
		// A rank both waiting in an op and running it (a source that reports both) waits.
		g.inside = slices.DeleteFunc(g.inside, func(r int32) bool { return slices.Contains(g.waiting, r) })
	}
	return groups, order, initing, joining, ops
}

// missingOf fills in the members of g's op that never entered it: the peer of a send or
// receive, or the communicator's members (from its initialisations and cache hits, and those
// still initialising it: joining) that neither wait in it nor run it.
func (d *Diagnosis) missingOf(g *hangGroup, joining map[uint32][]int32) {
	e := g.first
	in := func(r int32) bool { return slices.Contains(g.waiting, r) || slices.Contains(g.inside, r) }
	var missing []int32
	if e.Peer >= 0 {
		if !in(e.Peer) {
			missing = []int32{e.Peer}
		}
	} else {
		members := map[int32]bool{}
		size := 0
		if ci := d.comms[e.Comm]; ci != nil {
			for _, m := range ci.members {
				members[m] = true
			}
			size = ci.size
		}
		for _, m := range joining[e.Comm] {
			members[m] = true
		}
		for m := range members {
			if !in(m) {
				missing = append(missing, m)
			}
		}
		slices.Sort(missing)
		if seen := len(g.waiting) + len(g.inside) + len(missing); size > 0 && seen < size {
			g.missingN = size - seen // members never seen at all
		}
	}
	g.missingN += len(missing)
	if len(missing) > maxMissing {
		missing = missing[:maxMissing]
	}
	g.missing = missing
}

// p2pName names the send/receive of g in a user's terms: the bytes, the ranks and their streams,
// the label the workload gave it, and its op id, which the events view's `/op N` finds: "64 MiB
// from rank 4 (stream 2) to rank 8 (stream 3), "stage 1→2 microbatch 3" (send/recv op 26 on
// communicator 2)". The label is a reference until Result resolves it (labelRef).
func p2pName(g *hangGroup) string {
	e := g.first
	src, dst := e.Device, e.Peer
	if e.Kind == timeline.KindRecv || e.Kind == timeline.KindPeerWait && e.Aux == timeline.PeerWaitRecv {
		src, dst = e.Peer, e.Device
	} else if e.Kind == timeline.KindPeerWait && e.Aux != timeline.PeerWaitSend {
		// Which half waits is not known: the ranks, not a direction.
		return fmt.Sprintf("transfer between ranks %d and %d%s%s (send/recv op %d on communicator %d)",
			min(src, dst), max(src, dst), sizeOf(e.Bytes), labelRef(g.label), e.Op, e.Comm)
	}
	end := func(r int32, stream uint32) string {
		if stream == 0 {
			return fmt.Sprintf("rank %d", r)
		}
		return fmt.Sprintf("rank %d (stream %d)", r, stream-1)
	}
	what := "transfer"
	if e.Bytes > 0 {
		what = units.Bytes(e.Bytes)
	}
	return fmt.Sprintf("%s from %s to %s%s (send/recv op %d on communicator %d)",
		what, end(src, g.sendStream), end(dst, g.recvStream), labelRef(g.label), e.Op, e.Comm)
}

// sizeOf is ", 64 MiB" for a transfer of known size; "" when it is not known.
func sizeOf(b int64) string {
	if b <= 0 {
		return ""
	}
	return ", " + units.Bytes(b)
}

// opName names the op of g's first event: "all_reduce #129 on communicator 19", "send/recv op 12
// on communicator 4" (a send/receive's finding says more: p2pName), and its sequence number (0:
// not known).
func (d *Diagnosis) opName(e *timeline.Event) (string, int) {
	if e.Peer >= 0 {
		return fmt.Sprintf("send/recv op %d on communicator %d", e.Op, e.Comm), 0
	}
	seq := 0
	if ci := d.comms[e.Comm]; ci != nil {
		seq = ci.seq + 1
	}
	if e.Kind == timeline.KindPeerWait && e.Aux > 0 {
		seq = int(e.Aux) // the source's own count (NCCL's, through attach): right also when the look began mid-job
	}
	op := "collective"
	if e.Sub != 0 {
		op = timeline.CollOp(e.Sub).String()
	}
	if seq == 0 {
		return fmt.Sprintf("%s (op %d) on communicator %d", op, e.Op, e.Comm), 0
	}
	return fmt.Sprintf("%s #%d on communicator %d", op, seq, e.Comm), seq
}

// hangFinding builds the finding for an op (a collective or a send/recv) waited in or run since
// g.oldest, found thr after it: the members that neither wait in it nor run it never entered it;
// those running it entered it with all their peers and are stuck inside.
func (d *Diagnosis) hangFinding(g *hangGroup, thr int64, initing map[uint32][]int32) Finding {
	e, at := g.first, g.oldest+thr
	slices.Sort(g.waiting)
	slices.Sort(g.inside)
	n := len(g.waiting) + len(g.inside)
	// Worst first: the time lost is the wait times the ranks waiting (a collective most of a
	// communicator waits in before a send one rank waits on).
	f := Finding{Kind: Hang, Rank: -1, Host: -1, Link: -1, Onset: g.oldest, At: at, Step: d.step, Comm: e.Comm, Severity: thr * int64(n),
		Missing: g.missing, MissingN: g.missingN, StuckN: len(g.inside)}
	what, seq := d.opName(e)
	if e.Peer >= 0 {
		what = p2pName(g)
	}
	f.Seq = seq
	if e.Peer < 0 && e.Sub != 0 {
		f.Coll = timeline.CollOp(e.Sub)
	}
	f.Stuck = g.inside[:min(len(g.inside), maxMissing)]
	switch {
	case len(g.missing) > 0:
		f.Rank = g.missing[0]
		f.Host = d.hostOf(f.Rank)
		f.Confidence = 1 / float64(len(g.missing))
		if slices.Contains(initing[e.Comm], f.Rank) {
			f.Kind = MissingRank
		}
	case len(g.stalled) > 0:
		// Every rank entered it and none finished; the source saw whose part made no progress
		// (timeline.StatusStalled): that rank's kernel holds it, the others wait on it inside.
		slices.Sort(g.stalled)
		f.Rank = g.stalled[0]
		f.Host = d.hostOf(f.Rank)
		f.Confidence = 1 / float64(len(g.stalled))
	case g.holder > 0:
		// A send/receive stuck with both halves running, one of whose ranks is stuck in another
		// with another peer, its peers each in one: the rank they share holds them.
		f.Rank = g.holder - 1
		f.Host = d.hostOf(f.Rank)
		f.Confidence = 1
	case len(g.inside) > 0:
		// Every rank entered it and none finished: which of them holds it is not in the
		// events (a stalled transfer stops them all alike). Their host, when they share one.
		f.Host = d.hostOf(g.inside[0])
		for _, r := range g.inside {
			if d.hostOf(r) != f.Host {
				f.Host = -1
			}
		}
		f.Confidence = 1 / float64(len(g.inside))
	}
	var parts []string
	if len(g.waiting) > 0 {
		// The wait when found: the finding is not rewritten as it goes on (the watchdog says how long).
		parts = append(parts, fmt.Sprintf("%s waited ≥ %s in it when found", units.Counted(len(g.waiting), "rank"), fmtNs(thr)))
	}
	if len(g.inside) > 0 {
		parts = append(parts, fmt.Sprintf("%s %s entered it and %s stuck inside: none finished in %s", units.Plural(len(g.inside), "rank"), rankList(f.Stuck, len(g.inside)), units.Plural(len(g.inside), "is", "are"), fmtNs(thr)))
	}
	switch {
	case f.MissingN > 0:
		parts = append(parts, fmt.Sprintf("%s %s never entered it", units.Plural(f.MissingN, "rank"), rankList(f.Missing, f.MissingN)))
	case len(g.stalled) > 0:
		parts = append(parts, fmt.Sprintf("no rank is missing from it; %s part made no progress (%s kernel in it never finished)%s",
			possessive(g.stalled), units.Plural(len(g.stalled), "its", "their"), victims(g.inside, g.stalled)))
	case len(g.inside) > 0:
		parts = append(parts, "no rank is missing from it")
	default:
		parts = append(parts, "no member is known to be missing")
	}
	if g.holder > 0 && len(g.stalled) == 0 {
		parts = append(parts, fmt.Sprintf("rank %d is stuck inside another send/receive too, with another peer, while its peers are each in one: it holds them", f.Rank))
	}
	f.Evidence = what + ": " + strings.Join(parts, "; ")
	if f.Kind == MissingRank {
		f.Evidence += fmt.Sprintf("; rank %d never finished joining the communicator", f.Rank)
	}
	return f
}

// victims names the ranks stuck inside an op that only wait on its stalled ranks' parts: a peer
// of a rank hung inside a send or receive runs its half and waits, and is no cause of the hang.
func victims(inside, stalled []int32) string {
	var vs []int32
	for _, r := range inside {
		if !slices.Contains(stalled, r) {
			vs = append(vs, r)
		}
	}
	if len(vs) == 0 {
		return ""
	}
	return fmt.Sprintf(": %s %s %s on it inside (%s, not %s)", units.Plural(len(vs), "rank"), rankList(vs[:min(len(vs), maxMissing)], len(vs)),
		units.Plural(len(vs), "waits", "wait"), units.Plural(len(vs), "a victim", "victims"), units.Plural(len(vs), "a cause", "causes"))
}

// possessive names ranks as owners: "rank 299's", "ranks 3 and 5's".
func possessive(rs []int32) string {
	if len(rs) == 1 {
		return fmt.Sprintf("rank %d's", rs[0])
	}
	return fmt.Sprintf("ranks %s'", rankList(rs[:min(len(rs), maxMissing)], len(rs)))
}

func rankList(rs []int32, n int) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = strconv.Itoa(int(r))
	}
	out := strings.Join(s, ", ")
	if n > len(rs) {
		out += fmt.Sprintf(" and %d more", n-len(rs))
	}
	return out
}

var (
	missingRe = regexp.MustCompile(`ranks \[([0-9 ]*)\] that never arrived`)
	peerRe    = regexp.MustCompile(`for rank (-?[0-9]+), which never posted`)
	// waitedRe reads the wait as units.Dur writes it: "812 ms", "10.0 s", "1m40s".
	waitedRe = regexp.MustCompile(`waited (?:([0-9.]+) ?(ns|µs|us|ms|s)\b|([0-9]+)m([0-9]{2})s)`)
)

// alert turns a watchdog alert into a hang finding, unless Pending found that hang first.
func (d *Diagnosis) alert(e *timeline.Event, labels timeline.Labels) {
	for _, i := range d.hung {
		if i >= 0 {
			return // Pending named the hang (and its root) before the watchdog
		}
	}
	msg := ""
	if labels != nil {
		msg = labels.Lookup(e.Label)
	}
	var missing []int32
	if m := missingRe.FindStringSubmatch(msg); m != nil {
		for _, f := range strings.Fields(m[1]) {
			if n, err := strconv.Atoi(f); err == nil {
				missing = append(missing, int32(n))
			}
		}
	} else if m := peerRe.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n >= 0 {
			missing = append(missing, int32(n))
		}
	}
	onset := e.Start
	if w, ok := waited(msg); ok {
		onset = e.Start - w
	}
	f := Finding{Kind: Hang, Rank: -1, Host: -1, Link: -1, Onset: onset, At: e.Start, Step: d.step, Comm: e.Comm,
		Severity: e.Start - onset, Missing: missing, MissingN: len(missing), Evidence: "watchdog: " + msg}
	if ci := d.comms[e.Comm]; ci != nil {
		f.Seq = ci.seq + 1
	}
	if len(missing) > 0 {
		f.Rank, f.Host, f.Confidence = missing[0], d.hostOf(missing[0]), 1/float64(len(missing))
	}
	d.hung[e.Op] = len(d.findings)
	d.findings = append(d.findings, f)
}

// LastSeen is the latest time an op in flight was seen running (its End): the time of a look at
// inflight. A caller that knows nothing will move any more (a deadlock) may look at any later
// time instead; one whose run a watchdog stopped may not: the ops that had just started would
// have finished.
func LastSeen(inflight []timeline.Event) int64 {
	var t int64
	for i := range inflight {
		t = max(t, inflight[i].End)
	}
	return t
}

// waited reads how long a watchdog's message says the op waited, in ns.
func waited(msg string) (int64, bool) {
	m := waitedRe.FindStringSubmatch(msg)
	if m == nil {
		return 0, false
	}
	if m[3] != "" {
		mins, _ := strconv.Atoi(m[3])
		secs, _ := strconv.Atoi(m[4])
		return int64(mins*60+secs) * 1e9, true
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	scale := map[string]float64{"ns": 1, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}[m[2]]
	return int64(v * scale), true
}
