package analysis

import (
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// RecentBarriersKept is how many finished barriers the analysis keeps for display.
const RecentBarriersKept = 200

// Arrival is one rank at a barrier; its wait is release − arrival.
type Arrival struct {
	Rank   int32 `json:"rank"`
	Arrive int64 `json:"arrive_ns"`
	WaitNs int64 `json:"wait_ns"`
}

// BarrierInstance is one finished barrier: its ranks in rank order and its straggler, the rank that
// arrived last, LatenessNs after the median arrival.
type BarrierInstance struct {
	Op         uint64    `json:"op"`
	Label      uint32    `json:"-"`
	Release    int64     `json:"release_ns"`
	Arrivals   []Arrival `json:"arrivals"`
	Straggler  int32     `json:"straggler"`
	LatenessNs int64     `json:"lateness_ns"`
}

type barrierInst struct {
	ranks    int
	label    uint32
	release  int64
	arrivals []Arrival
}

type rankLate struct {
	times int64
	late  Quantiles
}

// barriers groups each barrier's rank events (same op id) into an instance, complete when every
// rank has arrived, and folds waits and stragglers.
type barriers struct {
	open    openSet[barrierInst]
	count   int64
	waitNs  int64
	maxWait int64
	last    map[int32]*rankLate
	recent  []BarrierInstance // a ring of the latest RecentBarriersKept, oldest at head
	head    int
	scratch []int64
}

func newBarriers() *barriers {
	return &barriers{open: newOpenSet[barrierInst](), last: map[int32]*rankLate{}}
}

func (b *barriers) add(e *timeline.Event) {
	if e.Kind != timeline.KindBarrier {
		return
	}
	in := b.open.get(e.Op)
	if in == nil {
		in = b.open.open(e.Op)
		*in = barrierInst{ranks: int(e.Ranks), label: e.Label, arrivals: in.arrivals[:0]}
	}
	in.release = max(in.release, e.End)
	in.arrivals = append(in.arrivals, Arrival{Rank: e.Device, Arrive: e.Start, WaitNs: e.Dur()})
	if len(in.arrivals) >= max(in.ranks, 1) || e.Op == 0 {
		b.finish(e.Op, in)
		b.open.done(e.Op, in)
	}
}

func (b *barriers) finish(op uint64, in *barrierInst) {
	as := in.arrivals
	slices.SortFunc(as, func(x, y Arrival) int { return int(x.Rank) - int(y.Rank) })
	b.count++
	lateIdx := 0
	arr := b.scratch[:0]
	for i, a := range as {
		b.waitNs += a.WaitNs
		b.maxWait = max(b.maxWait, a.WaitNs)
		arr = append(arr, a.Arrive)
		if a.Arrive > as[lateIdx].Arrive {
			lateIdx = i
		}
	}
	b.scratch = arr
	inst := BarrierInstance{Op: op, Label: in.label, Release: in.release, Straggler: as[lateIdx].Rank}
	inst.LatenessNs = as[lateIdx].Arrive - timeline.Percentile(arr, 50)
	if len(as) > 1 {
		r := b.last[inst.Straggler]
		if r == nil {
			r = &rankLate{}
			b.last[inst.Straggler] = r
		}
		r.times++
		r.late.Add(float64(inst.LatenessNs))
	}
	// Keep it in the ring, reusing the arrivals slice of the one it replaces.
	if len(b.recent) < RecentBarriersKept {
		inst.Arrivals = slices.Clone(as)
		b.recent = append(b.recent, inst)
		return
	}
	old := &b.recent[b.head]
	inst.Arrivals = append(old.Arrivals[:0], as...)
	*old = inst
	b.head = (b.head + 1) % RecentBarriersKept
}

// Straggler is a rank that arrived last at barriers: how often, and how late (last arrival − median
// arrival) at the median.
type Straggler struct {
	Rank         int32  `json:"rank"`
	TimesLast    int64  `json:"times_last"`
	LatenessNs50 *int64 `json:"lateness_ns_p50"`
}

// Barriers summarises barrier waits; each rank's wait is release − its arrival.
type Barriers struct {
	Count      int64             `json:"count"`
	WaitNs     int64             `json:"wait_ns_total"`
	MaxWaitNs  int64             `json:"max_wait_ns"`
	Stragglers []Straggler       `json:"stragglers"`
	Open       int               `json:"open"`
	Incomplete int64             `json:"incomplete"`
	Recent     []BarrierInstance `json:"-"`
}

func (b *barriers) result() Barriers {
	out := Barriers{Count: b.count, WaitNs: b.waitNs, MaxWaitNs: b.maxWait, Stragglers: []Straggler{}, Open: b.open.len(),
		Incomplete: b.open.given, Recent: make([]BarrierInstance, 0, len(b.recent))}
	for i := range b.recent { // oldest first; the arrivals are copied: the ring reuses them
		in := b.recent[(b.head+i)%len(b.recent)]
		in.Arrivals = slices.Clone(in.Arrivals)
		out.Recent = append(out.Recent, in)
	}
	for rank, r := range b.last {
		out.Stragglers = append(out.Stragglers, Straggler{Rank: rank, TimesLast: r.times, LatenessNs50: r.late.quantileNs(50)})
	}
	slices.SortFunc(out.Stragglers, func(x, y Straggler) int {
		if x.TimesLast != y.TimesLast {
			return cmpInt(y.TimesLast, x.TimesLast)
		}
		return int(x.Rank) - int(y.Rank)
	})
	return out
}
