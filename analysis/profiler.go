package analysis

import (
	"maps"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// ProfilerCost is the NCCL profiler plugin's own cost in one rank's process, as the plugin measured
// it (timeline.SampleProfilerCallbackPs and SampleProfilerOverheadPPM, its latest samples).
type ProfilerCost struct {
	Device int32 `json:"device"`
	// Callbacks is the callbacks that did work (queued a record, or dropped one) so far.
	Callbacks     int64   `json:"callbacks"`
	NsPerCallback float64 `json:"ns_per_callback"`
	// OverheadPct is the callbacks' time as a percentage of the time of the NCCL operations
	// (collectives, sends, receives) the plugin observed; nil until it observed one.
	OverheadPct *float64 `json:"overhead_pct"`
}

// profilerCost keeps each rank's latest cost samples.
type profilerCost struct {
	devs    map[int32]*ProfilerCost
	pub     []ProfilerCost
	changed bool
}

func (p *profilerCost) add(e *timeline.Event) {
	if e.Kind == timeline.KindDeviceSample {
		p.fold(e) // the test inlines into Analyzer.Emit (see transfers.add)
	}
}

func (p *profilerCost) fold(e *timeline.Event) {
	m := timeline.SampleMetric(e.Sub)
	if m != timeline.SampleProfilerCallbackPs && m != timeline.SampleProfilerOverheadPPM {
		return
	}
	if p.devs == nil {
		p.devs = map[int32]*ProfilerCost{}
	}
	c := p.devs[e.Device]
	if c == nil {
		c = &ProfilerCost{Device: e.Device}
		p.devs[e.Device] = c
	}
	p.changed = true
	c.Callbacks = max(c.Callbacks, int64(e.Op))
	if m == timeline.SampleProfilerCallbackPs {
		c.NsPerCallback = round2(float64(e.Bytes) / 1000)
		return
	}
	pct := round2(float64(e.Bytes) / 1e4)
	c.OverheadPct = &pct
}

func (p *profilerCost) result() []ProfilerCost {
	if !p.changed {
		return p.pub
	}
	p.pub = p.pub[:0:0] // a new slice: a result handed out is read-only
	for _, d := range slices.Sorted(maps.Keys(p.devs)) {
		p.pub = append(p.pub, *p.devs[d])
	}
	p.changed = false
	return p.pub
}

// ProfilerCostSummary is the profiler plugin's cost over the ranks that reported one: the median
// and the worst rank of its time per callback and of its share of the NCCL operations' time.
type ProfilerCostSummary struct {
	Ranks            int   // ranks that reported a cost
	CallbacksTotal   int64 // over those ranks
	NsPerCallbackP50 float64
	NsPerCallbackMax float64
	NsWorstRank      int32
	// OverheadRanks is how many ranks have observed an NCCL operation, and so have an overhead;
	// OverheadPctP50 and OverheadPctMax are nil when none has.
	OverheadRanks     int
	OverheadPctP50    *float64
	OverheadPctMax    *float64
	OverheadWorstRank int32
}

// SummarizeProfilerCost summarises the rows of Result.ProfilerCost (the median of an even count is
// the lower middle one: a rank's own figure).
func SummarizeProfilerCost(rows []ProfilerCost) ProfilerCostSummary {
	s := ProfilerCostSummary{Ranks: len(rows)}
	if len(rows) == 0 {
		return s
	}
	ns := make([]float64, 0, len(rows))
	var pct []float64
	for _, r := range rows {
		s.CallbacksTotal += r.Callbacks
		ns = append(ns, r.NsPerCallback)
		if r.NsPerCallback > s.NsPerCallbackMax || len(ns) == 1 {
			s.NsPerCallbackMax, s.NsWorstRank = r.NsPerCallback, r.Device
		}
		if r.OverheadPct != nil {
			pct = append(pct, *r.OverheadPct)
			if s.OverheadPctMax == nil || *r.OverheadPct > *s.OverheadPctMax {
				v := *r.OverheadPct
				s.OverheadPctMax, s.OverheadWorstRank = &v, r.Device
			}
		}
	}
	slices.Sort(ns)
	s.NsPerCallbackP50 = ns[(len(ns)-1)/2]
	if len(pct) > 0 {
		slices.Sort(pct)
		v := pct[(len(pct)-1)/2]
		s.OverheadPctP50 = &v
	}
	s.OverheadRanks = len(pct)
	return s
}
