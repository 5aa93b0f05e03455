package analysis

import "github.com/xfertop/xfertop/timeline"

// steps folds completed steps. Communicators created during the first step are setup, not step
// time: the first step counts from the end of the last communicator creation that began inside it
// (or before it), and that time is reported apart as SetupNs. Communicators created in later steps
// (a cache too small, a fault) stay in their steps: that cost is what the cache exists to avoid.
type steps struct {
	durs      Quantiles
	count     int64
	sum       int64
	setupEnd  int64 // the latest comm_init end seen before the first step completed
	firstDone bool
	setupNs   int64
}

func (s *steps) add(e *timeline.Event) {
	switch e.Kind {
	case timeline.KindCommInit:
		if !s.firstDone {
			s.setupEnd = max(s.setupEnd, e.End)
		}
	case timeline.KindStep:
		if e.Status != timeline.StatusOK {
			return
		}
		d := e.Dur()
		if !s.firstDone {
			s.firstDone = true
			if s.setupEnd > e.Start {
				s.setupNs = min(s.setupEnd, e.End) - e.Start
				d -= s.setupNs
			}
		}
		s.count++
		s.sum += d
		s.durs.Add(float64(d))
	}
}

// Steps summarises completed steps (percentiles nearest-rank while exact, then within 1%).
// Durations are nil when no step completed.
type Steps struct {
	Count   int64  `json:"count"`
	MeanNs  *int64 `json:"mean_ns"`
	P50Ns   *int64 `json:"p50_ns"`
	P99Ns   *int64 `json:"p99_ns"`
	SetupNs int64  `json:"setup_ns"`
}

func (s *steps) result() Steps {
	out := Steps{Count: s.count, SetupNs: s.setupNs, P50Ns: s.durs.quantileNs(50), P99Ns: s.durs.quantileNs(99)}
	if s.count > 0 {
		m := s.sum / s.count
		out.MeanNs = &m
	}
	return out
}
