package analysis

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"unsafe"

	"github.com/xfertop/xfertop/internal/cacheline"
	"github.com/xfertop/xfertop/timeline"
)

// deviceTime folds one device's busy ops into HTA's temporal breakdown: the union of busy time, of
// compute kernels and of communication, and the intersection of the last two (overlap). State is
// bounded: when a set grows past maxIntervals, everything before a cut time is committed to totals
// and forgotten. An op that arrives later and starts before the cut counts only from the cut (its
// earlier part is LateNs): exact for streams in time order, as every producer emits them.
type deviceTime struct {
	// What every op reads or writes comes first, then the sets, so that an op's work is the first
	// deviceLines cache lines (the analyzer asks for them ahead: Analyzer.Emit);
	// TestDeviceTimeLayout holds it.
	first, last   int64
	cutAt         int64
	liveOverlapNs int64 // |comp ∩ comm| of the sets, kept as ops are added
	lateNs        int64
	limit         int   // set size that triggers a commit (maxIntervals when 0)
	row           int32 // the device's place in breakdown.rows, -1 before it has one
	seen          bool
	// busyApart: an op other than a kernel added busy time. Until then busy time is the kernels'
	// alone and busy is not kept (busySet is comp): a device that only computes keeps one set
	// of intervals, not two equal ones (half the work and memory per kernel).
	busyApart        bool
	resValid         bool // res is the last result, valid until the next add
	queued           bool // its row is stale, and listed in breakdown.dirty
	_                [4]byte
	comp, comm, busy intervalSet

	busyNs, compNs, commNs int64 // committed before cutAt
	overlapNs              int64
	buf, bufB              []timeline.Interval // scratch for commits
	// res is the last result, valid until the next add: a console asks every frame, and most of
	// its devices may not have run anything new since.
	res DeviceTime
	// win is where the steps ran, stepBusyNs the busy time committed inside them (as the window
	// knew them at the commit); win nil: not asked.
	win        *stepWindow
	stepBusyNs int64
	pcts       []float64 // overlap percentages handed out, by pointer: never written once appended
	_          [40]byte  // to a whole number of cache lines, so that each device's state starts one
}

// pctBufLen is how many overlap percentages a device's buffer holds: a device's results take
// pointers into it, so a full one stays alive only while a result refers to it.
const pctBufLen = 32

// overlapPct is pctOf(ov, comm) for a result. The last pointer handed out is reused while its value
// holds, and a new value takes the next slot of the device's buffer: a *float64 allocated per
// device per frame had been most of a result's allocations at 512 devices.
func (d *deviceTime) overlapPct(ov, comm int64) *float64 {
	if comm <= 0 {
		return nil
	}
	p := pct(ov, comm)
	if last := d.res.OverlapPct; last != nil && *last == p {
		return last
	}
	if len(d.pcts) == cap(d.pcts) {
		d.pcts = make([]float64, 0, pctBufLen)
	}
	d.pcts = append(d.pcts, p)
	return &d.pcts[len(d.pcts)-1]
}

func (d *deviceTime) add(e *timeline.Event) {
	s, end := e.Start, e.End
	if !d.seen {
		d.first, d.last, d.seen = s, end, true
	}
	if s < d.first || end > d.last {
		// The span grows even by an op that adds no busy time (a failed send that ran for none):
		// a result asked for before it is stale.
		d.first, d.last = min(d.first, s), max(d.last, end)
		d.resValid = false
	}
	if s < d.cutAt {
		d.lateNs += min(end, d.cutAt) - s
		s = d.cutAt
	}
	if end <= s {
		return
	}
	d.resValid = false
	if e.Kind != timeline.KindKernel && !d.busyApart {
		d.busy, d.busyApart = d.comp.clone(), true
	}
	if d.busyApart {
		d.busy.add(s, end)
	}
	// The overlap grows by what an add newly covers in one set that the other covers already.
	if e.Kind == timeline.KindKernel {
		d.liveOverlapNs += d.comp.newOverlap(&d.comm, s, end)
		d.comp.add(s, end)
	}
	if e.Kind.IsNCCL() {
		d.liveOverlapNs += d.comm.newOverlap(&d.comp, s, end)
		d.comm.add(s, end)
	}
	if lim := max(d.limit, maxIntervals); d.busySet().size() > lim || d.comp.size() > lim || d.comm.size() > lim {
		d.commit()
	}
}

// busySet is the union of the busy ops in the sets: comp while only kernels added busy time.
func (d *deviceTime) busySet() *intervalSet {
	if d.busyApart {
		return &d.busy
	}
	return &d.comp
}

// commitLagNs is how much of the latest session time a commit leaves in the sets: producers emit
// an op when it completes, so an op still running may have started up to its duration before the
// latest end seen; ops longer than this (or covering more than hardMaxIntervals disjoint
// intervals) can still arrive late.
const commitLagNs = 1_000_000_000

// hardMaxIntervals bounds a set whatever the lag.
const hardMaxIntervals = 16 * maxIntervals

// commit moves the older half of the sets into the totals, keeping the last commitLagNs unless a
// set outgrew hardMaxIntervals.
func (d *deviceTime) commit() {
	busy := d.busySet()
	busy.flat()
	d.comp.flat()
	d.comm.flat()
	set := busy
	for _, u := range []*intervalSet{&d.comp, &d.comm} {
		if len(u.ivs) > len(set.ivs) {
			set = u
		}
	}
	t := set.ivs[len(set.ivs)/2].Start
	if len(set.ivs) <= hardMaxIntervals {
		t = min(t, d.last-commitLagNs)
	}
	if t > d.cutAt && t > busy.ivs[0].Start {
		d.buf = busy.cut(t, d.buf)
		d.busyNs += timeline.Length(d.buf)
		if d.win != nil {
			for _, iv := range d.buf {
				d.stepBusyNs += d.win.inside(iv.Start, iv.End, false)
			}
		}
		if d.busyApart { // else comp was cut as busy, just now
			d.buf = d.comp.cut(t, d.buf)
		}
		d.bufB = d.comm.cut(t, d.bufB)
		d.compNs += timeline.Length(d.buf)
		d.commNs += timeline.Length(d.bufB)
		cut := timeline.IntersectLength(d.buf, d.bufB)
		d.overlapNs += cut
		d.liveOverlapNs -= cut
		d.cutAt = t
	}
	// When the lag kept most of a set, try again only once it has doubled.
	d.limit = max(maxIntervals, min(2*max(busy.size(), d.comp.size(), d.comm.size()), hardMaxIntervals))
}

// DeviceTime is one device's temporal breakdown (HTA) over its span, the first op's start to the
// last op's end: idle is the time no op runs, compute the union of kernels, non-compute the rest of
// busy time; communication is the union of NCCL ops (sends, receives, collectives) and overlap the
// union of compute ∩ communication. Percentages are of the span; OverlapPct is of communication
// time and nil (unknown) when the device did not communicate.
type DeviceTime struct {
	Device int32 `json:"device"`
	// NoKernels: the source records no kernels (RecordsKernels), so idle, compute, non-compute and
	// overlap are unknown; written null. (Beside Device: in its padding, so the size holds.)
	NoKernels  bool     `json:"-"`
	SpanNs     int64    `json:"span_ns"`
	BusyNs     int64    `json:"busy_ns"`
	IdleNs     int64    `json:"idle_ns"`
	ComputeNs  int64    `json:"compute_ns"`
	NonCompNs  int64    `json:"non_compute_ns"`
	CommNs     int64    `json:"comm_ns"`
	OverlapNs  int64    `json:"overlap_ns"`
	IdlePct    float64  `json:"idle_pct"`
	ComputePct float64  `json:"compute_pct"`
	NonCompPct float64  `json:"non_compute_pct"`
	OverlapPct *float64 `json:"overlap_pct"`
	LateNs     int64    `json:"late_ns"`
	// IdleCause is the top cause of the device's streams' idle gaps (StreamGaps.Devices), given
	// only where the device itself sat idle (IdleNs > 0): gaps a stream had while another of the
	// device's streams ran are no idle time of the device, and a device never idle has no idle
	// cause. "" then, or when its streams had no gap.
	IdleCause string `json:"idle_cause"`
}

func (d *deviceTime) result(dev int32) DeviceTime {
	if d.resValid {
		return d.res
	}
	busy := d.busyNs + d.busySet().length()
	comp := d.compNs + d.comp.length()
	comm := d.commNs + d.comm.length()
	ov := d.overlapNs + d.liveOverlapNs
	span := d.last - d.first
	r := DeviceTime{Device: dev, SpanNs: span, BusyNs: busy, IdleNs: span - busy, ComputeNs: comp, NonCompNs: busy - comp,
		CommNs: comm, OverlapNs: ov, LateNs: d.lateNs}
	if span > 0 {
		r.IdlePct, r.ComputePct, r.NonCompPct = pct(r.IdleNs, span), pct(comp, span), pct(r.NonCompNs, span)
	}
	r.OverlapPct = d.overlapPct(ov, comm) // shared by the results that reuse r: never written
	d.res, d.resValid = r, true
	return r
}

// idleInSteps is the device's idle time inside the steps, setup left out (stepWindow).
func (d *deviceTime) idleInSteps() int64 {
	span := d.win.inside(d.first, d.last, true)
	return max(0, span-d.stepBusyNs-d.win.insideAll(d.busySet().flat()))
}

// breakdown keeps a deviceTime per device.
type breakdown struct {
	devs  []*deviceTime // by slot (slots); nil where a device ran nothing
	slots farSlots      // the slots of the device ids at or past MaxDevices
	win   *stepWindow   // where the steps ran; nil: idle inside steps is not asked
	// The rows of the last result, kept so that a result rebuilds only the rows of the devices
	// that ran an op since (a console asks every frame, over up to 4,096 devices): a row per
	// device that ran something, by id; stale when a device was added since.
	rows  []DeviceTime
	stale bool
	dirty []int32 // the places in rows of the devices whose rows are stale (deviceTime.queued)
	// Sums of the rows' IdleNs, CommNs and OverlapNs.
	idleNs, commNs, overlapNs int64
	block                     []deviceTime // the states not yet taken of the last block (newDevice)
}

// deviceBlock is how many device states newDevice allocates at once: 64 of 704 bytes, 44 KiB,
// which the allocator gives a page-aligned span of its own, so that each state starts a cache
// line (a state alone, past 512 bytes, would start 8 bytes into one, after the allocator's
// header, and an op's lines would be one more).
const deviceBlock = 64

// newDevice returns a fresh device state.
func (b *breakdown) newDevice() *deviceTime {
	if len(b.block) == 0 {
		b.block = make([]deviceTime, deviceBlock)
	}
	d := &b.block[0]
	b.block = b.block[1:]
	*d = deviceTime{cutAt: math.MinInt64, win: b.win, row: -1} // nothing committed yet: no time is late
	return d
}

func (b *breakdown) add(e *timeline.Event) {
	if e.Kind.IsBusy() {
		b.fold(e) // the test inlines into Analyzer.Emit (see transfers.add)
	}
}

// prefetch asks for the state of e's device ahead of add: what an op reads and writes, the sets
// and their tails, deviceLines lines. (A device id past MaxDevices is not its slot: the lines
// asked for are then another device's, which costs a wasted prefetch, no more.)
func (b *breakdown) prefetch(e *timeline.Event) {
	if e.Kind.IsBusy() && e.Device >= 0 && int(e.Device) < len(b.devs) {
		if d := b.devs[e.Device]; d != nil {
			cacheline.Prefetch(unsafe.Pointer(d), deviceLines)
		}
	}
}

// deviceLines is how many cache lines of a device's state an op touches: its fields and its
// three sets, tails included (TestDeviceTimeLayout).
const deviceLines = 7

// prefetchEnds asks for where a set of e's device whose tail is full will move it in its array,
// which add writes when the set gains an interval: the array lies apart from the device's state,
// whose lines prefetch asked for earlier.
func (b *breakdown) prefetchEnds(e *timeline.Event) {
	if e.Kind.IsBusy() && e.Device >= 0 && int(e.Device) < len(b.devs) {
		if d := b.devs[e.Device]; d != nil {
			for _, u := range [...]*intervalSet{&d.comp, &d.comm, &d.busy} {
				if n := len(u.ivs); u.nt == tailLen && n < cap(u.ivs) {
					cacheline.Prefetch(unsafe.Pointer(&u.ivs[:n+1][n]), 1)
				}
			}
		}
	}
}

func (b *breakdown) fold(e *timeline.Event) {
	// A failed op (a send the watchdog gave up on) still marks how long its device was in play,
	// even when it ran for no time: the wait before it is idle device time, not nothing.
	if e.Device < 0 || (e.End <= e.Start && e.Status == timeline.StatusOK) {
		return
	}
	s := e.Device
	if s >= MaxDevices {
		s = b.slots.of(s)
	}
	for int(s) >= len(b.devs) {
		b.devs = append(b.devs, nil)
	}
	d := b.devs[s]
	if d == nil {
		d = b.newDevice()
		b.devs[s] = d
		b.stale = true
	}
	d.add(e)
	if !d.resValid && !d.queued && d.row >= 0 {
		d.queued = true
		b.dirty = append(b.dirty, d.row)
	}
}

// Breakdown is the temporal breakdown per device, and the pooled figures over all devices.
type Breakdown struct {
	Devices []DeviceTime `json:"devices"`
	// IdleNs is the sum over devices of each device's idle time (device time, not stream time).
	IdleNs int64 `json:"idle_ns"`
	// OverlapPct pools every device: Σ overlap / Σ communication, nil when nothing communicated.
	OverlapPct *float64 `json:"overlap_pct"`
	// InSteps is the idle time that lies inside the job's steps: IdleNs and the stream gaps by
	// cause without the first step's communicator setup and the time outside steps. Nil when the
	// run completed no step, or the steps are too scattered to keep (maxStepSpans).
	InSteps *IdleInSteps `json:"in_steps"`
	// NoKernels: the source records no kernels (RecordsKernels) and none turned up, so the
	// devices' idle, compute and overlap figures are unknown.
	NoKernels bool `json:"no_kernels,omitempty"`
}

// IdleInSteps is idle time inside the job's steps, the first step's setup left out: what is
// compared per step.
type IdleInSteps struct {
	// DeviceNs sums over devices each device's idle time inside the steps.
	DeviceNs int64 `json:"device_ns"`
	// StreamNs sums the stream gaps inside the steps; ByCause splits it.
	StreamNs int64            `json:"stream_ns"`
	ByCause  map[string]int64 `json:"by_cause"`
	// StreamErrorNs is how far StreamNs may be from the exact figure: 0 when it is exact (up to
	// maxPendingGaps gaps), else past that bound, where the gaps are summed in time bins and a
	// bin a step's edge crosses is split by its share inside (gapBins).
	StreamErrorNs int64 `json:"stream_error_ns"`
}

func (b *breakdown) result() Breakdown {
	if b.stale {
		b.rebuild()
	}
	for _, i := range b.dirty {
		r := &b.rows[i]
		b.idleNs, b.commNs, b.overlapNs = b.idleNs-r.IdleNs, b.commNs-r.CommNs, b.overlapNs-r.OverlapNs
		slot, _ := b.slots.lookup(r.Device)
		d := b.devs[slot]
		*r, d.queued = d.result(r.Device), false
		b.idleNs, b.commNs, b.overlapNs = b.idleNs+r.IdleNs, b.commNs+r.CommNs, b.overlapNs+r.OverlapNs
	}
	b.dirty = b.dirty[:0]
	// The rows handed out are copies: the next result rebuilds its own in place.
	out := Breakdown{Devices: append(make([]DeviceTime, 0, len(b.rows)), b.rows...), IdleNs: b.idleNs}
	out.OverlapPct = pctOf(b.overlapNs, b.commNs)
	if w := b.win; w != nil && w.any && !w.over {
		in := &IdleInSteps{}
		for _, d := range b.devs {
			if d != nil {
				in.DeviceNs += d.idleInSteps()
			}
		}
		gaps, bound, _ := w.gapsInside()
		in.StreamNs, in.ByCause, in.StreamErrorNs = gaps.Total(), gaps.Map(), bound
		out.InSteps = in
	}
	return out
}

// rebuild makes a row for every device that ran something: when a device was added.
func (b *breakdown) rebuild() {
	b.rows, b.dirty, b.stale = b.rows[:0], b.dirty[:0], false
	b.idleNs, b.commNs, b.overlapNs = 0, 0, 0
	far := -1 // the first row of a device past MaxDevices
	for slot, d := range b.devs {
		if d == nil {
			continue
		}
		if slot >= MaxDevices && far < 0 {
			far = len(b.rows)
		}
		r := d.result(b.slots.id(int32(slot)))
		d.row, d.queued = int32(len(b.rows)), false
		b.rows = append(b.rows, r)
		b.idleNs, b.commNs, b.overlapNs = b.idleNs+r.IdleNs, b.commNs+r.CommNs, b.overlapNs+r.OverlapNs
	}
	if far >= 0 {
		// The slots past MaxDevices are in the order the ids were first seen: the rows are by id.
		rest := b.rows[far:]
		slices.SortFunc(rest, func(x, y DeviceTime) int { return cmp.Compare(x.Device, y.Device) })
		for i := range rest {
			slot, _ := b.slots.lookup(rest[i].Device)
			b.devs[slot].row = int32(far + i)
		}
	}
}

// pct is 100·a/b rounded to two decimals.
func pct(a, b int64) float64 { return round2(100 * float64(a) / float64(b)) }

// pctOf is pct, or nil (unknown) when b is 0.
func pctOf(a, b int64) *float64 {
	if b <= 0 {
		return nil
	}
	p := pct(a, b)
	return &p
}

func round2(x float64) float64 {
	if x < 0 {
		return -round2(-x)
	}
	return float64(int64(x*100+0.5)) / 100
}

// Ran reports whether the device ran anything the breakdown could measure: a device of the job
// that ran nothing (a rank hung before its first op) has a row of unknown figures, not zeros.
func (d DeviceTime) Ran() bool { return d.SpanNs > 0 || d.BusyNs > 0 }

// MarshalJSON writes a device that ran nothing with its figures null (unknown), not 0.
func (d DeviceTime) MarshalJSON() ([]byte, error) {
	type plain DeviceTime // without the method
	if d.Ran() && d.NoKernels {
		return d.marshalNoKernels()
	}
	if d.Ran() {
		return json.Marshal(plain(d))
	}
	return json.Marshal(deviceTimeNullable{Device: d.Device})
}

// deviceTimeNullable is DeviceTime as JSON with each figure that may be unknown a pointer (null):
// a device that ran nothing, or one of a source without kernels.
type deviceTimeNullable struct {
	Device     int32    `json:"device"`
	SpanNs     *int64   `json:"span_ns"`
	BusyNs     *int64   `json:"busy_ns"`
	IdleNs     *int64   `json:"idle_ns"`
	ComputeNs  *int64   `json:"compute_ns"`
	NonCompNs  *int64   `json:"non_compute_ns"`
	CommNs     *int64   `json:"comm_ns"`
	OverlapNs  *int64   `json:"overlap_ns"`
	IdlePct    *float64 `json:"idle_pct"`
	ComputePct *float64 `json:"compute_pct"`
	NonCompPct *float64 `json:"non_compute_pct"`
	OverlapPct *float64 `json:"overlap_pct"`
	LateNs     *int64   `json:"late_ns"`
	IdleCause  *string  `json:"idle_cause"`
}
