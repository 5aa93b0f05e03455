package analysis

import "github.com/xfertop/xfertop/timeline"

// maxSetupInits bounds the communicator creations kept to work out the first step's setup time.
const maxSetupInits = 4096

// steps folds completed steps. Communicators created during the first step are setup, not step
// time: the first step (the earliest to start) counts from the end of the last communicator
// creation that began before it ended, and that time is reported apart as SetupNs. Communicators
// created in later steps (a cache too small, a fault) stay in their steps: that cost is what the
// cache exists to avoid. Every figure (mean, percentiles, the last step) takes the first step
// without its setup, so they agree. The answer does not depend on the order events arrive in (a
// replay, an importer sorting by start): the first step is held apart until the result is read.
//
// Analysed from a time on (a replay started or sought there), a step that began before it is not
// counted: the communicators created at its start may lie before that time, unseen, and its
// duration would then hold its setup.
type steps struct {
	from     int64     // steps that began earlier are not counted
	durs     Quantiles // every completed step but the first
	count    int64
	sum      int64 // of durs
	first    *timeline.Interval
	inits    []timeline.Interval // communicator creations, earliest kept
	last     timeline.Interval   // the step that ended latest
	haveLast bool
}

func (s *steps) add(e *timeline.Event) {
	switch e.Kind {
	case timeline.KindCommInit:
		if len(s.inits) < maxSetupInits {
			s.inits = append(s.inits, timeline.Interval{Start: e.Start, End: e.End})
		}
	case timeline.KindStep:
		if e.Status != timeline.StatusOK || e.Start < s.from {
			return
		}
		s.count++
		iv := timeline.Interval{Start: e.Start, End: e.End}
		if !s.haveLast || e.End >= s.last.End {
			s.last, s.haveLast = iv, true
		}
		if s.first == nil {
			s.first = &iv
			return
		}
		if iv.Start < s.first.Start {
			iv, *s.first = *s.first, iv
		}
		s.sum += iv.End - iv.Start
		s.durs.Add(float64(iv.End - iv.Start))
	}
}

// setup is the part of the first step spent before its communicators were created.
func (s *steps) setup() int64 {
	if s.first == nil {
		return 0
	}
	end := s.first.Start
	for _, iv := range s.inits {
		if iv.Start < s.first.End {
			end = max(end, min(iv.End, s.first.End))
		}
	}
	return end - s.first.Start
}

// Steps summarises completed steps (percentiles nearest-rank while exact, then within 1%).
// Durations are nil when no step completed. The first step's communicator setup (SetupNs) is not
// in its duration, in any of them: LastNs is the latest step's duration, the first's without its
// setup when only one step completed.
type Steps struct {
	Count   int64  `json:"count"`
	MeanNs  *int64 `json:"mean_ns"`
	P50Ns   *int64 `json:"p50_ns"`
	P99Ns   *int64 `json:"p99_ns"`
	SetupNs int64  `json:"setup_ns"`
	LastNs  *int64 `json:"last_ns"`
}

func (s *steps) result() Steps {
	out := Steps{Count: s.count}
	if s.first == nil {
		return out
	}
	out.SetupNs = s.setup()
	first := s.first.End - s.first.Start - out.SetupNs
	q := s.durs.clone()
	q.Add(float64(first))
	mean := (s.sum + first) / s.count
	last := s.last.End - s.last.Start
	if s.last == *s.first {
		last = first
	}
	out.MeanNs, out.LastNs, out.P50Ns, out.P99Ns = &mean, &last, q.quantileNs(50), q.quantileNs(99)
	return out
}
