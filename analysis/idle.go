package analysis

import (
	"math"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// Cause is why a stream sat idle.
type Cause uint8

// Idle causes. HTA's split has host wait, kernel wait and other; the engine knows more and names
// event, barrier and peer waits.
const (
	CauseHostWait    Cause = iota // the host launched the next op only after the previous one ended
	CauseKernelWait               // a whole gap below the kernel-wait threshold: launch overhead
	CauseEventWait                // the stream waited for an event recorded by another stream
	CauseBarrierWait              // the stream waited at a barrier for other ranks
	CausePeerWait                 // a transfer or collective waited for its peers to post
	CauseOther
	causeCount
)

var causeNames = [causeCount]string{"host_wait", "kernel_wait", "event_wait", "barrier_wait", "peer_wait", "other"}

// String returns the cause's report key.
func (c Cause) String() string {
	if c < causeCount {
		return causeNames[c]
	}
	return "unknown"
}

// KnownIn reports whether a gap can be put down to c in a stream analysed in mode: splitting gaps
// as Holistic Trace Analysis does, a trace's gaps are host waits, kernel waits or other, and an
// event, barrier or peer wait there is not none but unknown (a trace records no waits).
func (c Cause) KnownIn(mode timeline.IdleMode) bool {
	if mode != timeline.IdleHTA {
		return true
	}
	switch c {
	case CauseEventWait, CauseBarrierWait, CausePeerWait:
		return false
	}
	return true
}

// Causes lists every cause in report order.
func Causes() []Cause {
	return []Cause{CauseHostWait, CauseKernelWait, CauseEventWait, CauseBarrierWait, CausePeerWait, CauseOther}
}

// DefaultKernelWaitNs is the gap under which idle time is launch overhead (kernel wait): 30 µs.
// Holistic Trace Analysis documents its consecutive_kernel_delay as 30 ns but compares it with
// durations in microseconds, so the threshold in effect there is 30 µs; xfertop uses the same.
const DefaultKernelWaitNs = 30_000

// maxPendingWaits bounds the wait events a stream holds until its next op arrives.
const maxPendingWaits = 256

// TopGapsKept is how many of the longest gaps the analysis keeps.
const TopGapsKept = 50

// Gap is one idle stretch of a stream attributed to one cause.
type Gap struct {
	Device int32  `json:"device"`
	Stream uint32 `json:"stream"`
	Start  int64  `json:"start_ns"`
	Dur    int64  `json:"dur_ns"`
	Cause  Cause  `json:"-"`
	// CauseName is Cause's report key.
	CauseName string `json:"cause"`
}

type streamKey struct {
	dev    int32
	stream uint32
}

type waitIv struct {
	start, end int64
	cause      Cause
}

// streamGaps is one stream's state: where its last op ended, and the waits recorded since.
//
// A 1,024-GPU run has some 5,000 streams, whose state does not stay in the caches while the
// engine runs beside the analysis, so the layout is by what an event touches: the first cache
// line holds all that an op reads or writes, the next two what a gap adds to (the time by cause
// and the longest gap's length, side by side), the rest what only a new longest gap or a result
// reads. States live in blocks of streamBlock (idleStreams), so that each starts a cache line;
// TestStreamStateLayout holds the offsets.
type streamGaps struct {
	prevEnd int64 // the latest end so far
	// prevGraph is the Queued of the last op when a graph replayed it (math.MinInt64 when none):
	// the ops of one graph launch all carry the launch's time.
	prevGraph int64
	prevStart int64
	waits     []waitIv // sorted by start
	idx       int32    // the stream's place in result order (idleGaps.order), -1 before it has one
	started   bool
	compute   bool // the stream ran kernels: its idle time is idle compute
	dirty     bool // an op arrived since its row was last built, and idx is in idleGaps.dirty
	priority  int8
	dev       int32 // the stream's key, which idleStreams.byID does not hold
	stream    uint32
	causes    [causeCount]causeSum
	_         [32]byte
	largest   [causeCount]Gap
	// pubLargest is the largest gaps last handed out, nil once one changed since: a new longest gap
	// is rare, so results share the slice rather than allocate one per stream each time.
	pubLargest []Gap
	_          [8]byte
}

// causeSum is a stream's idle time of one cause and its longest gap of that cause (largest's Dur).
type causeSum struct{ ns, longest int64 }

// byCause returns the stream's idle time by cause.
func (st *streamGaps) byCause() CauseNs {
	var c CauseNs
	for i := range c {
		c[i] = st.causes[i].ns
	}
	return c
}

// idleGaps folds each stream's gaps between busy ops (gaps before a stream's first op and after its
// last are not idle time, as in HTA) into totals by cause, per stream, and the longest gaps.
//
// Engine mode splits a gap by the wait events recorded on the stream; what they do not cover is
// host wait while the next op had not been launched, then kernel wait if the whole gap is below the
// threshold, or other. HTA mode classifies each whole gap as Holistic Trace Analysis does: host
// wait when the next op was launched after the previous ones ended, kernel wait below the
// threshold, other otherwise. In both modes a gap runs from the latest end so far to the next op's
// start, so ops that overlap have none (HTA, pairing each op with the one started just before it,
// sums such overlaps as negative idle time).
//
// Ops of a stream must arrive in start order, as every producer emits them (a stream runs its ops
// in order; importers sort). An op that arrives out of order is counted in Reordered.
type idleGaps struct {
	mode         timeline.IdleMode
	kernelWaitNs int64
	streams      map[streamKey]*streamGaps
	idleStreams
	byCause   CauseNs
	top       []Gap // longest first
	reordered int64
	rows      idleRows
	pub       StreamGaps  // the result last handed out, shared while nothing changed
	changed   bool        // an op arrived, or a gap was recorded, since pub was made
	win       *stepWindow // told of each gap, for the gaps inside steps; nil: none
}

func newIdleGaps(mode timeline.IdleMode, kernelWaitNs int64) *idleGaps {
	if kernelWaitNs <= 0 {
		kernelWaitNs = DefaultKernelWaitNs
	}
	return &idleGaps{mode: mode, kernelWaitNs: kernelWaitNs, streams: map[streamKey]*streamGaps{}}
}

func (g *idleGaps) add(e *timeline.Event) {
	if e.Stream == 0 {
		return
	}
	var c Cause
	switch {
	case e.Kind.IsBusy():
		if e.TimeUnknown() {
			// When it ran is unknown (timeline.AuxTimeUnknown): it is left out, as an op of 0 s
			// would split a gap at its creation time, a time it may not have run at.
			return
		}
		st := g.stream(e)
		g.changed = true
		if !st.dirty && st.idx >= 0 {
			st.dirty = true
			g.rows.dirty = append(g.rows.dirty, st.idx)
		}
		st.compute = st.compute || e.Kind == timeline.KindKernel
		g.op(st, e)
		return
	case e.Kind == timeline.KindEventWait:
		c = CauseEventWait
	case e.Kind == timeline.KindBarrier:
		c = CauseBarrierWait
	case e.Kind == timeline.KindPeerWait:
		c = CausePeerWait
	default:
		return
	}
	if g.mode == timeline.IdleHTA || e.End <= e.Start {
		return
	}
	st := g.stream(e)
	if st.started && e.End <= st.prevEnd {
		return // entirely before the stream's last op ended: it explains no gap to come
	}
	w := waitIv{e.Start, e.End, c}
	i := len(st.waits)
	for i > 0 && st.waits[i-1].start > w.start {
		i--
	}
	st.waits = slices.Insert(st.waits, i, w)
	if len(st.waits) > maxPendingWaits {
		st.waits = st.waits[1:]
	}
}

func (g *idleGaps) op(st *streamGaps, e *timeline.Event) {
	k := streamKey{e.Device, e.Stream}
	queued := e.Queued
	if e.Captured() {
		// An op a graph replayed after another op of the same launch was on the device with it:
		// the gap between them is the graph's own dependency, never the host's launch (whose call
		// may return after the graph's first ops ran, so its time can lie past the previous end).
		if queued == st.prevGraph {
			queued = math.MinInt64
		}
		st.prevGraph = e.Queued
	} else {
		st.prevGraph = math.MinInt64
	}
	if !st.started {
		// Before a stream's first op nothing is idle (as in HTA), except the waits recorded on it:
		// the stream had that op posted and waited for an event, a barrier or its peers (a send
		// whose receiver never came waits here until the watchdog fails it).
		st.started, st.prevEnd, st.prevStart = true, e.End, e.Start
		cur := int64(math.MinInt64) // waits may overlap: count each instant once, the earliest wait's
		for _, w := range st.waits {
			if s, end := max(w.start, cur), min(w.end, e.Start); end > s {
				g.record(st, k, s, end-s, w.cause)
				cur = end
			}
		}
		st.dropWaits(e.End)
		return
	}
	if e.Start < st.prevStart {
		g.reordered++
	}
	if g.mode == timeline.IdleHTA {
		// HTA's rules for the cause, but not its interval: HTA subtracts the end of the op started
		// just before, so overlapping ops (a trace's clock, a dump's host-side times) give it a
		// negative "idle time", and an op inside a longer one makes it count idle time while the
		// longer one still runs. A gap here is time no op of the stream ran: from the latest end so
		// far to the next start, and none when they overlap.
		if gap := e.Start - st.prevEnd; gap > 0 {
			c := CauseOther
			switch {
			case queued > st.prevEnd:
				c = CauseHostWait
			case gap < g.kernelWaitNs:
				c = CauseKernelWait
			}
			g.record(st, k, st.prevEnd, gap, c)
		}
		st.prevEnd, st.prevStart = max(st.prevEnd, e.End), max(st.prevStart, e.Start)
		return
	}
	if e.Start > st.prevEnd {
		g.attribute(st, k, st.prevEnd, e.Start, queued)
	}
	st.prevEnd, st.prevStart = max(st.prevEnd, e.End), max(st.prevStart, e.Start)
	st.dropWaits(st.prevEnd)
}

// dropWaits forgets waits that end by t.
func (st *streamGaps) dropWaits(t int64) {
	k := 0
	for _, w := range st.waits {
		if w.end > t {
			st.waits[k] = w
			k++
		}
	}
	st.waits = st.waits[:k]
}

// attribute splits the gap [a, b) before an op launched at queued.
func (g *idleGaps) attribute(st *streamGaps, k streamKey, a, b, queued int64) {
	leftover := CauseOther
	if b-a < g.kernelWaitNs {
		leftover = CauseKernelWait
	}
	// Recorded waits are the most specific cause; time they do not cover is host wait while the next
	// op had not been launched yet, then kernel wait or other.
	uncovered := func(s, e int64) {
		if q := min(max(queued, s), e); q > s {
			g.record(st, k, s, q-s, CauseHostWait)
			s = q
		}
		if e > s {
			g.record(st, k, s, e-s, leftover)
		}
	}
	cur := a
	for _, w := range st.waits {
		if cur >= b || w.start >= b {
			break
		}
		if w.end <= cur {
			continue
		}
		if w.start > cur {
			uncovered(cur, w.start)
			cur = w.start
		}
		if e := min(w.end, b); e > cur {
			g.record(st, k, cur, e-cur, w.cause)
			cur = e
		}
	}
	uncovered(cur, b)
}

func (g *idleGaps) record(st *streamGaps, k streamKey, start, dur int64, c Cause) {
	st.causes[c].ns += dur
	g.byCause[c] += dur
	g.changed = true
	if dur <= 0 {
		return
	}
	if g.win != nil {
		g.win.gap(start, start+dur, c)
	}
	gap := Gap{Device: k.dev, Stream: k.stream, Start: start, Dur: dur, Cause: c, CauseName: c.String()}
	if dur > st.causes[c].longest {
		st.causes[c].longest, st.largest[c], st.pubLargest = dur, gap, nil
	}
	longer := func(x, y Gap) bool {
		if x.Dur != y.Dur {
			return x.Dur > y.Dur
		}
		return x.Start < y.Start
	}
	if len(g.top) == TopGapsKept && !longer(gap, g.top[len(g.top)-1]) {
		return
	}
	i, _ := slices.BinarySearchFunc(g.top, gap, func(x, y Gap) int {
		if longer(x, y) {
			return -1
		}
		return 1
	})
	g.top = slices.Insert(g.top, i, gap)
	if len(g.top) > TopGapsKept {
		g.top = g.top[:TopGapsKept]
	}
}

// StreamIdle is one stream's idle time by cause.
type StreamIdle struct {
	Device   int32  `json:"device"`
	Stream   uint32 `json:"stream"`
	Priority int8   `json:"priority"`
	// Role is "compute" for a stream that ran kernels, "transfer" for one that only moved data.
	Role    string  `json:"role"`
	TotalNs int64   `json:"total_ns"`
	ByCause CauseNs `json:"by_cause"`
	// Largest is the stream's longest gap of each cause it had, in cause order.
	Largest []Gap `json:"largest"`
	// causesUnknown: the source records no kernels (markNoKernels); ByCause is written null.
	causesUnknown bool
}

// DeviceGaps is the gaps of one device's streams by cause, and the cause with the most time.
type DeviceGaps struct {
	Device   int32   `json:"device"`
	TotalNs  int64   `json:"total_ns"`
	ByCause  CauseNs `json:"by_cause"`
	TopCause string  `json:"top_cause"`
	// causesUnknown: the source records no kernels (markNoKernels); ByCause is written null.
	causesUnknown bool
}

// StreamGaps is idle time between ops on streams, summed over streams, by cause.
type StreamGaps struct {
	// TotalNs sums every stream's gaps: stream time, so several idle streams of one device each count.
	TotalNs int64            `json:"total_ns"`
	ByCause map[string]int64 `json:"by_cause"`
	Streams []StreamIdle     `json:"streams"`
	Devices []DeviceGaps     `json:"devices"`
	TopGaps []Gap            `json:"top_gaps"`
	// Reordered counts ops that reached the analysis out of start order on their stream.
	Reordered int64 `json:"reordered,omitempty"`
	// CausesUnknown: the source records no kernels, so what a gap waited for is unknown
	// (ByCause is then not a split of the gaps; markNoKernels).
	CausesUnknown bool `json:"causes_unknown,omitempty"`
}

func (g *idleGaps) result() StreamGaps {
	if !g.changed && g.pub.Streams != nil && len(g.rows.order) == len(g.streams) {
		// Nothing arrived since the last result: its rows are read-only, share them.
		return g.pub
	}
	out := StreamGaps{TopGaps: slices.Clone(g.top), Reordered: g.reordered}
	if out.TopGaps == nil {
		out.TopGaps = []Gap{}
	}
	out.ByCause = g.byCause.Map()
	out.TotalNs = g.byCause.Total()
	if len(g.rows.order) != len(g.streams) {
		g.rows.rebuild(g.streams)
	} else {
		g.rows.refresh()
	}
	// The rows handed out are copies: the next result rebuilds rows of its own in place.
	out.Streams = append(make([]StreamIdle, 0, len(g.rows.streams)), g.rows.streams...)
	out.Devices = append(make([]DeviceGaps, 0, len(g.rows.devices)), g.rows.devices...)
	g.pub, g.changed = out, false
	return out
}

// result is the stream's row. Its slice is new when a largest gap changed since it was last
// handed out: rows handed out are never written.
func (st *streamGaps) result(k streamKey) StreamIdle {
	role := "transfer"
	if st.compute {
		role = "compute"
	}
	if st.pubLargest == nil {
		n := 0
		for _, gap := range st.largest {
			if gap.Dur > 0 {
				n++
			}
		}
		st.pubLargest = make([]Gap, 0, n) // never nil: a stream without gaps lists none, not null
		for _, gap := range st.largest {
			if gap.Dur > 0 {
				st.pubLargest = append(st.pubLargest, gap)
			}
		}
	}
	byCause := st.byCause()
	return StreamIdle{Device: k.dev, Stream: k.stream, Priority: st.priority, Role: role, TotalNs: byCause.Total(), ByCause: byCause,
		Largest: st.pubLargest}
}

// deviceGaps is a device's row from the sum of its streams' gaps by cause.
func deviceGaps(dev int32, sums *CauseNs) DeviceGaps {
	top := ""
	var most int64
	for _, c := range Causes() {
		if sums[c] > most {
			top, most = c.String(), sums[c]
		}
	}
	return DeviceGaps{Device: dev, TotalNs: sums.Total(), ByCause: *sums, TopCause: top}
}
