package diagnosis

import (
	"math"
	"unsafe"

	"github.com/xfertop/xfertop/analysis/hostmap"
	"github.com/xfertop/xfertop/internal/cacheline"
	"github.com/xfertop/xfertop/timeline"
)

// Bounds on the state kept: per rank a few numbers and one figure per tracked kernel label and
// data-op class; labels and classes beyond these are not compared (counted in Dropped).
const (
	maxRanks  = 1 << 16
	maxLabels = 64
	maxKeys   = 64
	// maxPairsPerRank bounds the (class, peer) pairs kept per rank on average.
	maxPairsPerRank = 16
	maxAlerts       = 16
	// maxEnded bounds the waits the watchdog ended that are kept: one per rank of the largest
	// job (a hang in a 4,096-GPU llm-train run ends about 7,200), several each of a smaller one.
	maxEnded  = maxRanks
	maxRecent = 1024
)

// Thresholds. A rank is a suspect when it is worse than its peers' median by both a relative
// margin (so that a tiny, real difference is not a fault) and many robust deviations (so that
// noise is not: the MAD, floored at a fraction of the median for runs with no noise at all).
const (
	minPeers   = 3     // fewer ranks doing the same thing: no comparison
	zLimit     = 8     // robust deviations above the peers' median
	madFloor   = 0.005 // of the median
	gpuRatio   = 1.05  // kernels 5% slower than the same kernels on peers
	hostRatio  = 1.05  // the step's launches spread 5% longer than peers'
	opRatio    = 1.3   // a rank's transfers of one class 30% slower than peers'
	maxOutlier = 0.25  // a class where more ranks than this are slow is a role, not a fault
	strong     = 1.5   // a ratio this high is a finding after one step; weaker ones after two
)

// Diagnosis folds events into findings.
type Diagnosis struct {
	// hosts places ranks on hosts: the analysis's one host map, which its owner feeds.
	hosts *hostmap.Map
	// shared says ranks of the job share GPUs (an emulated op was seen: the cuda backend's --fit):
	// they contend for one GPU and one host's CPUs, so a rank slower than its peers says how they
	// were shared, not that a link, GPU or host of the topology is slow. No slow verdict is made.
	shared bool
	// alerts waits for labels to read its messages (Result): at most maxAlerts are kept.
	alerts []timeline.Event

	step      int   // the last step seen ended (its number)
	stepStart int64 // when the step being accumulated began
	nSteps    int

	ranks  []rankAcc
	labels map[uint32]int32 // kernel label → slot
	// labelCache holds label → slot + 1 for the labels seen, by label modulo its size (labels
	// are interned in order, so a run's few dozen fall in distinct entries): most kernels need
	// no lookup in labels. Slots are never taken back, so an entry never goes stale.
	labelCache [cacheSize]labelSlot
	kSum       [][]float64 // slot → per-rank sum of durations this step
	kCnt       [][]int32
	// kMin is per slot the shortest call on any rank this step; kSlow per slot and rank the
	// start + 1 of its first call that took gpuRatio× the shortest seen before it ended (0: none):
	// where a GPU's slowness began within the step (a finding's onset).
	kMin  []float64
	kSlow [][]int64
	// flaps is each rank's links' down and up windows over the run (busy.go).
	flaps []flapAcc
	// self is each rank's own kernel history, for the kernels no peer runs (selfslow.go).
	self selfState
	// selfLink is each send/receive pair's and link's own history, for the transfers too few to
	// compare with peers (selflink.go).
	selfLink selfLinkState
	// linePeak is each link class's line rate per device (PCIe, NVLink, NIC), bytes/ns; 0:
	// unknown (SetLinkPeaks): what a link without peers is judged against (hiddenlink.go).
	linePeak [3]float64
	// setup is the communicators' creations in the step being accumulated and busy the union
	// of its busy time: the step's work is the step less the wait for its setup (stepWork).
	// workBase is the shortest work of a step so far (0: none), against which a step's growth is
	// measured; steadyBase the same over the clean steps only, whose work is a whole step's
	// (not a first step whose setup ops ran between, counted from the end of its last creation
	// and shorter than the later steps'): what a finding's cost to the step is measured against.
	// Where no clean step came before, workBase, a lower bound of a step, bounds it.
	setup                setupAcc
	busy                 busyUnion
	workBase, steadyBase int64
	keys                 map[opKey]int32
	oSum                 [][]float64
	oCnt                 [][]int32
	oBase                []float64 // per class, the lowest peer median of earlier steps (0: none)
	keyList              []opKey
	// lastKey and lastSlot remember the class of the last op: a collective's ranks report one
	// after another, so most ops need no lookup in keys (slots are never taken back).
	lastKey  opKey
	lastSlot int32 // -1: none yet
	pairs    map[pairKey]pairAcc
	// barriers are this step's barrier instances by op id.
	barriers map[uint64]*barrierInst
	// Dropped counts events not compared: past the bounds on ranks, labels or classes.
	Dropped int64

	// win is the link window being gathered: each link's rate while busy in it.
	win busyWindow
	// portSlow are this step's switch ports (leaf + 1) that moved slower while busy than their
	// peers, in how many windows and at what lowest share of their median (maxPorts at most).
	portSlow map[uint32]portAcc

	cand     map[candKey]*candidate
	findings []Finding
	reported map[candKey]int // index in findings

	comms map[uint32]*commInfo
	// commCache holds the communicators by id modulo its size, as labelCache the labels (a
	// communicator once in comms stays there): a collective looks its communicator up twice.
	commCache [cacheSize]commSlot
	members   int // membership entries kept, over all communicators
	maxWait   int64
	maxInit   int64
	maxOp     int64 // the longest collective, send or receive that finished
	// endedWaits are the waits the watchdog ended (up to maxEnded): no longer in flight, they
	// still say who waited on whom when it fired, for a wait cycle.
	endedWaits []timeline.Event
	// endedLost are the ranks with a wait the watchdog ended that was not kept (past maxEnded):
	// what they waited in, and how many ops they had under way, are unknown, so no wait cycle
	// goes through them. endedLostAll: more such ranks than maxRanks, so no cycle at all.
	endedLost    map[int32]bool
	endedLostAll bool
	// recent are the last maxRecent waits that ended normally (recentN counted in all), and
	// maxEvicted the longest of those no longer kept.
	recent     []timeline.Event
	recentN    int
	maxEvicted int64
	hung       map[uint64]int // op id → index in findings
	// rankHangs are the hang and missing-rank findings by their culprit rank (index in findings),
	// and foldedOps the further hung ops folded into each.
	rankHangs map[int32]int
	foldedOps map[int32]int
	cycles    map[string]bool // the deadlocks reported, by their ranks
	// hungComms are the communicators with a hang named, until one of their collectives ends.
	hungComms map[uint32]bool
	// links say who waits on whom among the hung ops, to follow a wait to the root of its hang
	// (RootOf): the hung op each rank waits or is stuck in, and each hung op's communicator and
	// missing members; commRoot is the finding that named each communicator's hang.
	waitsIn   map[int32][]uint64
	links     map[uint64]hangLink
	commRoot  map[uint32]int
	hangFloor int64 // SetHangFloor; 0: hangFloor
	// looked are the ops of the last look at what was in flight (Pending), and ended those of
	// them that completed since: a console reads the ops running before it folds the events that
	// came meanwhile, so a look may be handed an op whose completion the diagnosis already has.
	looked, ended map[uint64]bool
	// timedOut are the ranks whose wait the watchdog ended: they were waiting, though no longer
	// in flight.
	timedOut map[int32]bool
	alerted  bool
	alertAt  int64

	// seq matches ranks by the sequence numbers of their collectives (sequence.go).
	seq *seqs
	// sourced are the alerts a source raised with a cause (timeline.AlertRankDead, …), one per
	// cause, rank, communicator and message: made findings at Result.
	sourced []timeline.Event
}

// rankAcc is a rank's state. What launch reads and writes for every op (launches to active) is
// in its first cache line, which Prefetch asks for.
type rankAcc struct {
	launches   int32
	qmin, qmax int64
	// lastQ is the last launch seen; minGap the least time between two launches seen one after
	// the other (0: none yet). Two distinct launches of one host thread are at least its cost per
	// launch apart, whatever else it waits on: a host slow to launch raises it (slowWholeHost).
	lastQ, minGap int64
	// first is when the rank's first kernel, transfer or copy of the step started (active: one
	// was seen): a finding's onset is no earlier than the first op its culprit ran in the step.
	first  int64
	active bool
	// peak is the most a link of the rank carried in one window this step, bytes/ns, by
	// class (PCIe, NVLink, NIC) and direction.
	peak [3][2]float64
	// busyB and busyT are the bytes its links moved this step and the time they were busy doing
	// it, by class and direction: its rate while busy over the step (selflink.go).
	busyB, busyT [3][2]int64
	// hiddenWin is, by class and direction, the first link window of the step (its index + 1; 0:
	// none) in which the link moved below its hidden-link reference while busy (hiddenlink.go):
	// when a degraded link was first seen, rather than the rank's first op of the step.
	hiddenWin [3][2]int64
	// selfOps, selfExcess and selfCross are slowOps's, slowExcess's and slowCross's for the
	// sends and receives too few to compare with peers, against their own earlier steps.
	selfOps, selfCross int32
	selfExcess         int64
	selfRef            float64
	// busySlow counts, per link class, the step's windows in which the rank's link moved slower
	// while busy than its peers' in the same window (busy.go); busyLow is the lowest share of
	// their median it moved at then.
	busySlow [3]int32
	busyWin  [3]int64 // the window last counted in busySlow
	busyOne  [3]int64 // the first window counted in busySlow (its index)
	busyLow  [3]float64
	// busyExtra is, per class and direction, the time its link was busy in those windows beyond
	// what its peers' median rate takes for the same bytes: what its slowness added.
	busyExtra [3][2]int64
	// a2a: the rank took part in an all-to-all this step (alltoall.go).
	a2a bool
	// the rank's transfers slower than their class's reference this step: how many, the time
	// beyond the reference, how many crossed hosts, and the reference time of those transfers.
	ops        int32 // transfers compared
	slowOps    int32
	slowExcess int64
	slowCross  int32
	slowRef    float64
	// The fields above make a whole number of cache lines (448 bytes; TestRankAccLayout), so that
	// what launch reads, which Prefetch asks for, is one line: at 400 bytes three ranks in four
	// had it across two, and the second one missed when launch came. A field added pads to 64.
}

// opKey is a class of data movement that peers do alike: kind, op, size, ranks and whether it
// crosses hosts.
type opKey struct {
	kind  timeline.Kind
	sub   uint8
	cross bool
	ranks uint16
	bytes int64
}

type candKey struct {
	kind Kind
	rank int32
	port uint32 // a switch port's leaf (timeline.PackPort) + 1; 0: none
	host int32  // a whole host's suspect (rank -1): the host; else 0
	ties uint64 // a slow link of no known rank: the tied ranks (suspect.ties); else 0
}

type candidate struct {
	steps int   // consecutive steps it was a suspect in
	onset int64 // the start of the first of them
	// first: the first of them was the first step compared and the evidence began at the
	// culprit's first op there, the first traffic it carried after the communicators' setup:
	// the fault may predate it.
	first bool
	// base is the shortest clean step's work before the first of them (0: none): what the step
	// would have taken without it, against which its cost is measured. bound is the shortest
	// step's work before them, clean or not (0: none): no more than a whole step's, so a step's
	// growth over it is at least what it cost the step.
	base, bound int64
}

type commInfo struct {
	size    int
	members []int32
	hosts   int32 // the first member's host, -2 once members on two hosts were seen
	seq     int
	lastOp  uint64
}

// New returns a diagnosis for a job whose devices hosts places (the analysis's one host map; nil:
// every device's host unknown). The caller feeds the map the events before the diagnosis.
func New(hosts *hostmap.Map) *Diagnosis {
	if hosts == nil {
		hosts = hostmap.ByID(0)
	}
	return &Diagnosis{hosts: hosts, labels: map[uint32]int32{}, keys: map[opKey]int32{}, lastSlot: -1, pairs: map[pairKey]pairAcc{}, barriers: map[uint64]*barrierInst{},
		cand: map[candKey]*candidate{}, reported: map[candKey]int{}, comms: map[uint32]*commInfo{}, hung: map[uint64]int{}, rankHangs: map[int32]int{}, foldedOps: map[int32]int{}, cycles: map[string]bool{}, hungComms: map[uint32]bool{}, waitsIn: map[int32][]uint64{}, links: map[uint64]hangLink{}, commRoot: map[uint32]int{}, timedOut: map[int32]bool{}, looked: map[uint64]bool{}, ended: map[uint64]bool{}, stepStart: -1, seq: newSeqs(),
		win: busyWindow{idx: math.MinInt64}, portSlow: map[uint32]portAcc{}}
}

// hostOf is dev's host as the host map places it; -1 when it is not known.
func (d *Diagnosis) hostOf(dev int32) int32 { return d.hosts.HostOr(dev) }

// rank returns dev's accumulator, growing the table; nil past the bound.
func (d *Diagnosis) rank(dev int32) *rankAcc {
	if dev < 0 || dev >= maxRanks {
		d.Dropped++
		return nil
	}
	if int(dev) >= len(d.ranks) {
		n := max(int(dev)+1, 2*len(d.ranks))
		n = min(n, maxRanks)
		grown := make([]rankAcc, n)
		copy(grown, d.ranks)
		for i := len(d.ranks); i < n; i++ {
			grown[i].qmin = -1
		}
		d.ranks = grown
	}
	return &d.ranks[dev]
}

// Emit adds an event (the timeline.Sink interface).
func (d *Diagnosis) Emit(e *timeline.Event) { d.Add(e) }

// Add folds one event.
func (d *Diagnosis) Add(e *timeline.Event) {
	if d.stepStart < 0 {
		d.stepStart = e.Start
	}
	switch e.Kind {
	case timeline.KindKernel:
		if r := d.rank(e.Device); r != nil {
			d.launch(r, e)
			d.addKernel(e)
		}
	case timeline.KindCollective, timeline.KindSend, timeline.KindRecv:
		d.seq.add(e)
		if e.Status == timeline.StatusPending || e.Status == timeline.StatusShadow {
			// Not completed when its source last saw it (entered, but no measure of anything), or
			// measured by another source of the job: its times are that source's.
			return
		}
		if e.Status == timeline.StatusTimeout {
			if e.Device >= 0 && len(d.timedOut) < maxRanks {
				d.timedOut[e.Device] = true
			}
			return
		}
		if e.Status == timeline.StatusOK && !e.TimeUnknown() {
			d.maxOp = max(d.maxOp, e.Dur())
		}
		if e.Status == timeline.StatusOK && e.Op != 0 {
			d.completed(e.Op)
		}
		if r := d.rank(e.Device); r != nil {
			d.launch(r, e)
			switch {
			case e.TimeUnknown():
				// How long it took is unknown (timeline.AuxTimeUnknown): it says the rank
				// entered the op (d.seq) but is no time to compare with its peers'.
			case !e.Emulated():
				// An op that stood in for the topology's (--fit on shared GPUs) took the time of
				// a copy or of a wait on a GPU its ranks share: comparing it with its peers would
				// blame a link or GPU of the topology that it never used.
				d.addOp(e)
			default:
				d.shared = true
			}
			if e.Kind == timeline.KindCollective && (e.Sub == uint8(timeline.CollAllToAll) || e.Sub == uint8(timeline.CollRaggedAllToAll)) {
				r.a2a = true
			}
		}
		if e.Kind == timeline.KindCollective {
			d.collSeq(e)
		}
	case timeline.KindMemcpy:
		if r := d.rank(e.Device); r != nil {
			d.launch(r, e)
		}
	case timeline.KindLinkBytes:
		d.addLink(e)
	case timeline.KindPeerWait:
		if e.Status == timeline.StatusOK && (!d.alerted || e.End != d.alertAt) {
			d.waitEnded(e)
		} else {
			d.timeOut(e)
		}
	case timeline.KindCommInit:
		d.maxInit = max(d.maxInit, e.Dur())
		d.setup.add(e)
		d.join(e)
	case timeline.KindCommHit:
		d.join(e)
	case timeline.KindMark:
		d.seq.add(e)
	case timeline.KindAlert:
		if e.Sub != 0 {
			d.addSourced(e)
			return
		}
		if e.Status == timeline.StatusTimeout && len(d.alerts) < maxAlerts {
			d.alerts = append(d.alerts, *e)
			// The waits the watchdog ends are reported right after it, ending at its time (or,
			// from a trace ordered by start time, before it).
			d.alerted, d.alertAt = true, e.Start
			d.timeOutRecent(e.Start)
		}
	case timeline.KindBarrier:
		d.addBarrier(e)
	case timeline.KindStep:
		d.endStep(e)
	}
}

// launch notes when the host enqueued an op of the rank (unknown: negative Queued).
// Prefetch asks for the state of the rank of e, an event Add is given next, ahead of Add: on a
// cluster of a thousand ranks it is rarely in the caches when the rank's next op comes. A hint,
// which changes nothing.
func (d *Diagnosis) Prefetch(e *timeline.Event) {
	switch e.Kind {
	case timeline.KindKernel, timeline.KindCollective, timeline.KindSend, timeline.KindRecv, timeline.KindMemcpy:
		if e.Device >= 0 && int(e.Device) < len(d.ranks) {
			cacheline.Prefetch(unsafe.Pointer(&d.ranks[e.Device]), 1) // what launch reads
		}
	}
}

func (d *Diagnosis) launch(r *rankAcc, e *timeline.Event) {
	d.busy.add(e.Start, e.End)
	if !r.active || e.Start < r.first {
		r.first, r.active = e.Start, true
	}
	if e.Queued < 0 {
		return
	}
	if r.launches > 0 {
		if gap := e.Queued - r.lastQ; gap != 0 {
			gap = max(gap, -gap)
			if r.minGap == 0 || gap < r.minGap {
				r.minGap = gap
			}
		}
	}
	r.lastQ = e.Queued
	r.launches++
	if r.qmin < 0 || e.Queued < r.qmin {
		r.qmin = e.Queued
	}
	r.qmax = max(r.qmax, e.Queued)
}

// cacheSize is the number of entries of labelCache and commCache.
const cacheSize = 64

type labelSlot struct {
	label uint32
	slot  int32 // + 1; 0: the entry is empty
}

type commSlot struct {
	id uint32
	ci *commInfo
}

// comm returns the communicator id (nil: none seen).
func (d *Diagnosis) comm(id uint32) *commInfo {
	c := &d.commCache[id%cacheSize]
	if c.ci != nil && c.id == id {
		return c.ci
	}
	ci := d.comms[id]
	if ci != nil {
		*c = commSlot{id, ci}
	}
	return ci
}

func (d *Diagnosis) addKernel(e *timeline.Event) {
	var slot int32
	ok := false
	if c := &d.labelCache[e.Label%cacheSize]; c.slot > 0 && c.label == e.Label {
		slot, ok = c.slot-1, true
	} else if slot, ok = d.labels[e.Label]; ok {
		*c = labelSlot{e.Label, slot + 1}
	}
	if !ok {
		if len(d.labels) >= maxLabels {
			d.Dropped++
			return
		}
		slot = int32(len(d.labels))
		d.labels[e.Label] = slot
		d.kSum = append(d.kSum, nil)
		d.kCnt = append(d.kCnt, nil)
		d.kMin = append(d.kMin, 0)
		d.kSlow = append(d.kSlow, nil)
	}
	d.kSum[slot], d.kCnt[slot] = growTo(d.kSum[slot], d.kCnt[slot], len(d.ranks))
	if len(d.kSlow[slot]) < len(d.ranks) {
		d.kSlow[slot] = append(d.kSlow[slot], make([]int64, len(d.ranks)-len(d.kSlow[slot]))...)
	}
	dur := float64(e.Dur())
	d.kSum[slot][e.Device] += dur
	d.kCnt[slot][e.Device]++
	d.addSelf(slot, e, dur)
	switch m := d.kMin[slot]; {
	case m == 0 || dur < m:
		d.kMin[slot] = dur
	case dur >= gpuRatio*m && d.kSlow[slot][e.Device] == 0:
		d.kSlow[slot][e.Device] = e.Start + 1
	}
}

func growTo(s []float64, c []int32, n int) ([]float64, []int32) {
	if len(s) >= n {
		return s, c
	}
	s2, c2 := make([]float64, n), make([]int32, n)
	copy(s2, s)
	copy(c2, c)
	return s2, c2
}

// crosses reports whether an op moves data between hosts.
func (d *Diagnosis) crosses(e *timeline.Event) bool {
	if e.Kind != timeline.KindCollective {
		return e.Peer >= 0 && d.hostOf(e.Peer) != d.hostOf(e.Device)
	}
	if p := d.hosts.PerHost(); p > 0 && int(e.Ranks) > p {
		return true
	}
	if ci := d.comm(e.Comm); ci != nil {
		return ci.hosts == -2
	}
	return false
}

func (d *Diagnosis) addOp(e *timeline.Event) {
	k := opKey{kind: e.Kind, sub: e.Sub, cross: d.crosses(e), ranks: e.Ranks, bytes: e.Bytes}
	if e.Kind != timeline.KindCollective {
		k.sub, k.ranks = 0, 2
	}
	slot, ok := d.lastSlot, d.lastSlot >= 0 && k == d.lastKey
	if !ok {
		slot, ok = d.keys[k]
	}
	if !ok {
		if len(d.keys) >= maxKeys {
			d.Dropped++
			return
		}
		slot = int32(len(d.keys))
		d.keys[k] = slot
		d.keyList = append(d.keyList, k)
		d.oSum, d.oCnt, d.oBase = append(d.oSum, nil), append(d.oCnt, nil), append(d.oBase, 0)
	}
	d.lastKey, d.lastSlot = k, slot
	if e.Kind != timeline.KindCollective {
		// A send or receive is compared per peer: a rank whose transfers with one peer are slow
		// and with another are not is slow in those alone (a pipeline's middle stage next to a
		// slow link), where a mean over both peers would call all of them slow.
		pk := pairKey{slot: slot, dev: e.Device, peer: e.Peer}
		a, ok := d.pairs[pk]
		if !ok && len(d.pairs) >= maxPairsPerRank*max(len(d.ranks), 1) {
			d.Dropped++
			return
		}
		a.sum += float64(e.Dur())
		a.cnt++
		d.pairs[pk] = a
		return
	}
	d.oSum[slot], d.oCnt[slot] = growTo(d.oSum[slot], d.oCnt[slot], len(d.ranks))
	d.oSum[slot][e.Device] += float64(e.Dur())
	d.oCnt[slot][e.Device]++
}

// pairKey is one rank's sends or receives of one class with one peer.
type pairKey struct {
	slot      int32
	dev, peer int32
}

type pairAcc struct {
	sum float64
	cnt int32
}

func (d *Diagnosis) addLink(e *timeline.Event) {
	if dir, ok := timeline.UnpackFabricLink(e.Sub); ok {
		d.addPortBusy(e, dir)
		return
	}
	link, dir, ok := timeline.UnpackLink(e.Sub)
	if !ok || e.End <= e.Start {
		return
	}
	c := -1
	switch link {
	case timeline.PeakPCIe:
		c = 0
	case timeline.PeakNVLink:
		c = 1
	case timeline.PeakNIC:
		c = 2
	}
	r := d.rank(e.Device)
	if c < 0 || r == nil || dir < 0 || dir > 1 {
		return
	}
	d.addBusy(e, c, dir)
	d.addSelfBusy(r, e, c, dir)
	// A window's rate counts only when the window is whole: a run's last, cut short, would read low.
	if e.End-e.Start < timeline.LinkWindowNs {
		return
	}
	r.peak[c][dir] = max(r.peak[c][dir], float64(e.Bytes)/float64(e.End-e.Start))
}

// waitEnded notes a peer wait that ended normally: the longest is how long a wait may last (a
// wait the watchdog ended is no measure of a normal one). The last maxRecent are kept, so that
// an alert read after the waits it ended (a trace ordered by start time) can still take them out.
func (d *Diagnosis) waitEnded(e *timeline.Event) {
	if len(d.recent) < maxRecent {
		d.recent = append(d.recent, *e)
	} else {
		i := d.recentN % maxRecent
		d.maxEvicted = max(d.maxEvicted, d.recent[i].Dur())
		d.recent[i] = *e
	}
	d.recentN++
	d.maxWait = max(d.maxWait, e.Dur())
}

// timeOut notes a peer wait the watchdog ended: its rank was waiting (though no longer in
// flight), and the wait says on whom.
func (d *Diagnosis) timeOut(e *timeline.Event) {
	if e.Device < 0 {
		return
	}
	if len(d.timedOut) < maxRanks {
		d.timedOut[e.Device] = true
	}
	if len(d.endedWaits) < maxEnded {
		d.endedWaits = append(d.endedWaits, *e)
		return
	}
	// Not kept: a look would count this rank's ops one short and could take a rank with a
	// second wait (a pipeline stage's send beside its receive) for one stuck in a single one.
	switch {
	case d.endedLost == nil:
		d.endedLost = map[int32]bool{e.Device: true}
	case len(d.endedLost) < maxRanks:
		d.endedLost[e.Device] = true
	default:
		d.endedLostAll = true
	}
}

// timeOutRecent takes the recent waits that ended at an alert's time t out of the normal ones.
func (d *Diagnosis) timeOutRecent(t int64) {
	d.maxWait = d.maxEvicted
	for i := range d.recent {
		e := &d.recent[i]
		if e.Kind == timeline.KindPeerWait && e.End == t {
			d.timeOut(e)
			e.Kind = timeline.KindNone
			continue
		}
		if e.Kind == timeline.KindPeerWait {
			d.maxWait = max(d.maxWait, e.Dur())
		}
	}
}

// join notes that a device is a member of a communicator.
func (d *Diagnosis) join(e *timeline.Event) {
	if e.Comm == 0 || e.Device < 0 {
		return
	}
	ci := d.comms[e.Comm]
	if ci == nil {
		if len(d.comms) >= 1<<16 {
			return
		}
		ci = &commInfo{hosts: -1}
		d.comms[e.Comm] = ci
	}
	ci.size = max(ci.size, int(e.Ranks))
	h := d.hostOf(e.Device)
	switch {
	case ci.hosts == -1:
		ci.hosts = h
	case ci.hosts >= 0 && ci.hosts != h:
		ci.hosts = -2
	}
	for _, m := range ci.members {
		if m == e.Device {
			return
		}
	}
	if d.members < 1<<20 {
		ci.members = append(ci.members, e.Device)
		d.members++
	}
}

// collSeq counts a communicator's collectives: its parts of one instance end together.
func (d *Diagnosis) collSeq(e *timeline.Event) {
	if ci := d.comm(e.Comm); ci != nil && ci.lastOp != e.Op {
		ci.lastOp = e.Op
		ci.seq++
	}
	if len(d.hungComms) > 0 {
		delete(d.hungComms, e.Comm) // it moves again: a later hang on it is a new one
	}
}

// Result returns the findings so far, worst first; labels reads the watchdog's alert messages
// (nil: they are not read). The slice is the caller's.
func (d *Diagnosis) Result(labels timeline.Labels) []Finding {
	if len(d.endedWaits) > 0 {
		// The waits the watchdog ended (or that ended with the job, never joined by their
		// peers: attach, merged recordings) are in the stream: what was waiting on whom then
		// names the hang's root, or a wait cycle, alike live and in a replay, which has nothing
		// in flight to look at.
		now := d.alertAt
		for i := range d.endedWaits {
			now = max(now, d.endedWaits[i].End)
		}
		d.Pending(now, nil)
	}
	for _, e := range d.alerts {
		d.alert(&e, labels)
	}
	d.alerts = d.alerts[:0]
	out := make([]Finding, 0, len(d.findings))
	for _, f := range d.findings {
		if !f.withdrawn {
			out = append(out, resolved(f, labels))
		}
	}
	out = append(out, d.seq.findings(labels, d.hostOf)...)
	out = mergeSourced(out, d.sourcedFindings(labels))
	d.place(out)
	sortFindings(out)
	return out
}

// place gives each finding that names a rank that rank's host and GPU as the host map has them
// now (Finding.Place): a rank heard from after the finding was made (attach's ranks name their
// hosts as they join) is placed as every other consumer of the map places it.
func (d *Diagnosis) place(fs []Finding) {
	for i := range fs {
		fs[i].Place(d.hosts)
	}
}

// Steps is how many steps were evaluated.
func (d *Diagnosis) Steps() int { return d.nSteps }
