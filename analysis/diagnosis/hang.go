package diagnosis

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/timeline"
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
func (d *Diagnosis) HangAfter() int64 { return max(hangFloor, hangWaitFac*d.maxWait) }

func (d *Diagnosis) initAfter() int64 { return max(initFloor, hangWaitFac*d.maxInit) }

// Pending looks at what is in flight at time now (a source's InFlight: ops under way, peer waits,
// communicator initialisations) as PyTorch's Flight Recorder analysis does: the collectives some
// ranks have waited in for longer than HangAfter, named by op, sequence number on the
// communicator and communicator, with the members that never entered them; and the ranks whose
// communicator initialisation has not completed after initAfter. Each hang is reported once; At is
// the earliest time the state seen now proves it (the oldest wait's start plus the threshold). It
// returns the findings added.
func (d *Diagnosis) Pending(now int64, inflight []timeline.Event) []Finding {
	type group struct {
		first   *timeline.Event
		oldest  int64
		waiting []int32
	}
	groups := map[uint64]*group{}
	var order []uint64
	initing := map[uint32][]int32{} // communicator → ranks still initialising it
	for i := range inflight {
		e := &inflight[i]
		switch e.Kind {
		case timeline.KindPeerWait:
			g := groups[e.Op]
			if g == nil {
				g = &group{first: e, oldest: e.Start}
				groups[e.Op] = g
				order = append(order, e.Op)
			}
			g.oldest = min(g.oldest, e.Start)
			g.waiting = append(g.waiting, e.Device)
		case timeline.KindCommInit:
			if now-e.Start >= d.initAfter() {
				initing[e.Comm] = append(initing[e.Comm], e.Device)
			}
		}
	}
	var added []Finding
	thr := d.HangAfter()
	// A rank waiting in one hung op is the reason it never entered another: only the ops that
	// ranks not waiting anywhere never entered are the root of a hang (Flight Recorder's analysis).
	waitingAnywhere := map[int32]bool{}
	for r := range d.timedOut {
		waitingAnywhere[r] = true
	}
	for _, g := range groups {
		for _, w := range g.waiting {
			waitingAnywhere[w] = true
		}
	}
	for _, op := range order {
		g := groups[op]
		if now-g.oldest < thr {
			continue
		}
		if _, done := d.hung[op]; done {
			continue
		}
		f := d.hangFinding(g.first, g.oldest, g.oldest+thr, g.waiting, initing)
		root := f.MissingN == 0
		for _, m := range f.Missing {
			root = root || !waitingAnywhere[m]
		}
		if !root {
			d.hung[op] = -1
			continue
		}
		d.hung[op] = len(d.findings)
		d.findings = append(d.findings, f)
		added = append(added, f)
	}
	return added
}

// hangFinding builds the finding for a collective (or send/recv) waited on since oldest by the
// ranks waiting; the members that are not waiting never entered it.
func (d *Diagnosis) hangFinding(e *timeline.Event, oldest, at int64, waiting []int32, initing map[uint32][]int32) Finding {
	slices.Sort(waiting)
	// Worst first: the time lost is the wait times the ranks waiting (a collective most of a
	// communicator waits in before a send one rank waits on).
	f := Finding{Kind: Hang, Rank: -1, Host: -1, Link: -1, Onset: oldest, At: at, Step: d.step, Comm: e.Comm, Severity: (at - oldest) * int64(len(waiting))}
	var missing []int32
	var what string
	if e.Peer >= 0 {
		missing = []int32{e.Peer}
		what = fmt.Sprintf("send/recv with rank %d (op %d)", e.Peer, e.Op)
	} else {
		f.Coll = timeline.CollOp(e.Sub)
		members := map[int32]bool{}
		size := 0
		if ci := d.comms[e.Comm]; ci != nil {
			for _, m := range ci.members {
				members[m] = true
			}
			f.Seq = ci.seq + 1
			size = ci.size
		}
		for _, m := range initing[e.Comm] {
			members[m] = true
		}
		for _, w := range waiting {
			delete(members, w)
		}
		for m := range members {
			missing = append(missing, m)
		}
		slices.Sort(missing)
		op := "collective"
		if e.Sub != 0 {
			op = f.Coll.String()
		}
		what = fmt.Sprintf("%s #%d on communicator %d", op, f.Seq, e.Comm)
		if f.Seq == 0 {
			what = fmt.Sprintf("%s (op %d) on communicator %d", op, e.Op, e.Comm)
		}
		if size > 0 && len(waiting)+len(missing) < size {
			f.MissingN = size - len(waiting) - len(missing) // members never seen at all
		}
	}
	f.MissingN += len(missing)
	if len(missing) > maxMissing {
		missing = missing[:maxMissing]
	}
	f.Missing = missing
	if len(missing) > 0 {
		f.Rank = missing[0]
		f.Host = d.hostOf(f.Rank)
		f.Confidence = 1 / float64(len(missing))
		for _, m := range initing[e.Comm] {
			if m == f.Rank {
				f.Kind = MissingRank
			}
		}
	}
	who := "no member is known to be missing"
	if f.MissingN > 0 {
		who = fmt.Sprintf("ranks %s never entered it", rankList(f.Missing, f.MissingN))
	}
	f.Evidence = fmt.Sprintf("%s: %d ranks waited %s in it; %s", what, len(waiting), fmtNs(at-oldest), who)
	if f.Kind == MissingRank {
		f.Evidence += fmt.Sprintf("; rank %d never finished joining the communicator", f.Rank)
	}
	return f
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
	waitedRe  = regexp.MustCompile(`waited ([0-9.]+) ms`)
)

// alert turns a watchdog alert into a hang finding, unless Pending found that hang first.
func (d *Diagnosis) alert(e *timeline.Event, labels timeline.Labels) {
	if len(d.hung) > 0 {
		return // Pending named the hang (and its root) before the watchdog
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
	if m := waitedRe.FindStringSubmatch(msg); m != nil {
		if ms, err := strconv.ParseFloat(m[1], 64); err == nil {
			onset = e.Start - int64(ms*1e6)
		}
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
