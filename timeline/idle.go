package timeline

import (
	"cmp"
	"slices"
	"sort"
)

// Cause is why a stream sat idle.
type Cause uint8

// Idle causes. HTA's split has host wait, kernel wait and other; the engine knows more and names
// event, barrier and peer waits.
const (
	CauseHostWait    Cause = iota // the host launched the next op only after the previous one ended
	CauseKernelWait               // a gap below the launch-overhead threshold
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

// Causes lists every cause in report order.
func Causes() []Cause {
	return []Cause{CauseHostWait, CauseKernelWait, CauseEventWait, CauseBarrierWait, CausePeerWait, CauseOther}
}


// DefaultKernelWaitNs is HTA's default consecutive_kernel_delay.
const DefaultKernelWaitNs = 30

// Gap is one idle stretch of a stream attributed to one cause.
type Gap struct {
	Device int32
	Stream uint32
	Start  int64
	Dur    int64
	Cause  Cause
}

type streamKey struct {
	dev    int32
	stream uint32
}

type opIv struct {
	start, end, queued int64
}

type waitIv struct {
	start, end int64
	cause      Cause
}

// IdleGaps returns every idle stretch between busy ops on each stream (gaps before a stream's first
// op and after its last are not idle time, as in HTA), attributed to causes by mode.
// kernelWaitNs is the threshold under which a gap is launch overhead.
func IdleGaps(events []Event, mode IdleMode, kernelWaitNs int64) []Gap {
	// Count first so each stream's slices are allocated once: over millions of events, growing
	// them by appending costs more than the analysis itself.
	type counts struct{ ops, waits int }
	n := map[streamKey]*counts{}
	for i := range events {
		e := &events[i]
		if e.Stream == 0 {
			continue
		}
		k := streamKey{e.Device, e.Stream}
		c := n[k]
		if c == nil {
			c = &counts{}
			n[k] = c
		}
		switch {
		case e.Kind.IsBusy():
			c.ops++
		case e.Kind == KindEventWait || e.Kind == KindBarrier || e.Kind == KindPeerWait:
			c.waits++
		}
	}
	ops := make(map[streamKey][]opIv, len(n))
	waits := make(map[streamKey][]waitIv, len(n))
	total := 0
	for k, c := range n {
		if c.ops > 0 {
			ops[k] = make([]opIv, 0, c.ops)
			total += c.ops
		}
		if c.waits > 0 {
			waits[k] = make([]waitIv, 0, c.waits)
		}
	}
	for i := range events {
		e := &events[i]
		if e.Stream == 0 {
			continue
		}
		k := streamKey{e.Device, e.Stream}
		switch {
		case e.Kind.IsBusy():
			ops[k] = append(ops[k], opIv{e.Start, e.End, e.Queued})
		case e.Kind == KindEventWait:
			waits[k] = append(waits[k], waitIv{e.Start, e.End, CauseEventWait})
		case e.Kind == KindBarrier:
			waits[k] = append(waits[k], waitIv{e.Start, e.End, CauseBarrierWait})
		case e.Kind == KindPeerWait:
			waits[k] = append(waits[k], waitIv{e.Start, e.End, CausePeerWait})
		}
	}
	keys := make([]streamKey, 0, len(ops))
	for k := range ops {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].dev != keys[j].dev {
			return keys[i].dev < keys[j].dev
		}
		return keys[i].stream < keys[j].stream
	})
	gaps := make([]Gap, 0, total)
	for _, k := range keys {
		os := ops[k]
		slices.SortFunc(os, func(a, b opIv) int { return cmp.Compare(a.start, b.start) })
		ws := waits[k]
		slices.SortFunc(ws, func(a, b waitIv) int { return cmp.Compare(a.start, b.start) })
		if mode == IdleHTA {
			// HTA pairs each op with the one started just before it and keeps the difference even
			// when ops overlap (a negative interval); reproduce that so the numbers agree.
			for i := 1; i < len(os); i++ {
				prev, o := os[i-1], os[i]
				if gap := o.start - prev.end; gap != 0 {
					c := CauseOther
					switch {
					case o.queued > prev.end:
						c = CauseHostWait
					case gap < kernelWaitNs:
						c = CauseKernelWait
					}
					gaps = append(gaps, Gap{Device: k.dev, Stream: k.stream, Start: prev.end, Dur: gap, Cause: c})
				}
			}
			continue
		}
		prevEnd := os[0].end
		for _, o := range os[1:] {
			if o.start > prevEnd {
				gaps = attribute(gaps, k, prevEnd, o.start, o.queued, ws, mode, kernelWaitNs)
			}
			prevEnd = max(prevEnd, o.end)
		}
	}
	return gaps
}

// attribute splits the gap [a, b) before an op launched at queued.
func attribute(gaps []Gap, k streamKey, a, b, queued int64, ws []waitIv, mode IdleMode, kernelWaitNs int64) []Gap {
	add := func(s, e int64, c Cause) {
		if e > s {
			gaps = append(gaps, Gap{Device: k.dev, Stream: k.stream, Start: s, Dur: e - s, Cause: c})
		}
	}
	leftover := CauseOther
	if b-a < kernelWaitNs {
		leftover = CauseKernelWait
	}
	if mode == IdleHTA {
		switch {
		case queued > a:
			add(a, b, CauseHostWait)
		default:
			add(a, b, leftover)
		}
		return gaps
	}
	// Recorded waits are the most specific cause; time they do not cover is host wait while the next
	// op had not been launched yet, then kernel wait or other.
	uncovered := func(s, e int64) {
		if q := min(max(queued, s), e); q > s {
			add(s, q, CauseHostWait)
			s = q
		}
		add(s, e, leftover)
	}
	cur := a
	i := sort.Search(len(ws), func(i int) bool { return ws[i].end > cur })
	for ; i < len(ws) && cur < b; i++ {
		w := ws[i]
		if w.start >= b {
			break
		}
		if w.start > cur {
			uncovered(cur, w.start)
			cur = w.start
		}
		if e := min(w.end, b); e > cur {
			add(cur, e, w.cause)
			cur = e
		}
	}
	uncovered(cur, b)
	return gaps
}

// DeviceTime is a device's temporal breakdown (HTA): over its span (first op start to last op end),
// idle is the time no op runs, compute the union of kernels, non-compute the rest of busy time.
type DeviceTime struct {
	Device     int32
	SpanNs     int64
	IdleNs     int64
	ComputeNs  int64
	NonCompNs  int64
	CommNs     int64 // union of communication (NCCL) ops
	OverlapNs  int64 // union of (compute ∩ communication)
	BusyNs     int64
	FirstStart int64
}

// Breakdown computes each device's temporal breakdown and communication/computation overlap.
func Breakdown(events []Event) []DeviceTime {
	type acc struct{ busy, comp, comm []Interval }
	per := map[int32]*acc{}
	for i := range events {
		e := &events[i]
		if !e.Kind.IsBusy() || e.Device < 0 || e.End <= e.Start {
			continue
		}
		a := per[e.Device]
		if a == nil {
			a = &acc{}
			per[e.Device] = a
		}
		iv := Interval{e.Start, e.End}
		a.busy = append(a.busy, iv)
		if e.Kind == KindKernel {
			a.comp = append(a.comp, iv)
		}
		if e.Kind.IsNCCL() {
			a.comm = append(a.comm, iv)
		}
	}
	out := make([]DeviceTime, 0, len(per))
	for d, a := range per {
		busy := Merge(a.busy)
		comp := Merge(a.comp)
		comm := Merge(a.comm)
		span := busy[len(busy)-1].End - busy[0].Start
		bl := Length(busy)
		cl := Length(comp)
		out = append(out, DeviceTime{Device: d, SpanNs: span, IdleNs: span - bl, ComputeNs: cl, NonCompNs: bl - cl,
			CommNs: Length(comm), OverlapNs: IntersectLength(comp, comm), BusyNs: bl, FirstStart: busy[0].Start})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out
}
