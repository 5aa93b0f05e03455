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
// arrived measurably last, LatenessNs after the median arrival; Straggler is timeline.NoDevice
// (and LatenessNs 0) when nobody was late (stragglers).
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

// barriers groups each barrier's rank events (same op id) into an instance, complete when every
// rank has arrived, and folds waits and stragglers.
type barriers struct {
	open    openSet[barrierInst]
	count   int64
	waitNs  int64
	maxWait int64
	late    stragglers
	recent  []BarrierInstance // a ring of the latest RecentBarriersKept, oldest at head
	head    int
	// recentPub is recent, oldest first, as last handed out; nil once a barrier finished since.
	recentPub []BarrierInstance
	ranks     []int32
	arrive    []int64
}

func newBarriers() *barriers {
	return &barriers{open: newOpenSet[barrierInst](), late: newStragglers()}
}

func (b *barriers) add(e *timeline.Event) {
	if e.Kind == timeline.KindBarrier {
		b.fold(e) // the test inlines into Analyzer.Emit (see transfers.add)
	}
}

func (b *barriers) fold(e *timeline.Event) {
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
	b.ranks, b.arrive = b.ranks[:0], b.arrive[:0]
	for _, a := range as {
		b.waitNs += a.WaitNs
		b.maxWait = max(b.maxWait, a.WaitNs)
		b.ranks = append(b.ranks, a.Rank)
		b.arrive = append(b.arrive, a.Arrive)
	}
	inst := BarrierInstance{Op: op, Label: in.label, Release: in.release}
	inst.Straggler, inst.LatenessNs, _ = b.late.add(b.ranks, b.arrive, false)
	// Keep it in the ring. Its arrivals are a new slice, never written after: results share them
	// (one barrier's arrivals are copied once, not by every result while it is recent).
	inst.Arrivals = slices.Clone(as)
	b.recentPub = nil
	if len(b.recent) < RecentBarriersKept {
		b.recent = append(b.recent, inst)
		return
	}
	b.recent[b.head] = inst
	b.head = (b.head + 1) % RecentBarriersKept
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
	out := Barriers{Count: b.count, WaitNs: b.waitNs, MaxWaitNs: b.maxWait, Stragglers: b.late.result(), Open: b.open.len(),
		Incomplete: b.open.given, Recent: b.recentPub}
	if out.Recent == nil {
		out.Recent = make([]BarrierInstance, 0, len(b.recent))
		for i := range b.recent { // oldest first
			out.Recent = append(out.Recent, b.recent[(b.head+i)%len(b.recent)])
		}
		b.recentPub = out.Recent
	}
	return out
}
