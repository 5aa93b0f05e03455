package analysis

import "github.com/xfertop/xfertop/timeline"

// maxSetupInits bounds the communicator creations kept to work out the first step's setup time.
const maxSetupInits = 4096

// steps folds completed steps. Communicator set-up in the first step is setup, not step time:
// the first step (the earliest to start) counts from the end of the last communicator creation
// that began before it ended, and that time is reported apart as SetupNs. Communicators created in
// later steps (a cache too small or off, a fault) stay in their steps: that cost is what the cache
// exists to avoid. So that the first step is charged as the later ones are, a creation in it whose
// communicator no later step uses (no cache hit after it: the cache is off, or evicted first) keeps
// its steady cost in the step, as the later steps' re-creations do; only the rest of it, the
// process's one-time set-up (a device's first communicator pays NCCL's bootstrap), is setup. The
// steady cost of a creation is the cheapest one that was not its device's first (steadyNs); while
// none was seen it is unknown, as is reuse in a run of one step, and every creation in the first
// step is setup. Every figure (mean,
// percentiles, the last step) takes the first step without its setup, so they agree. The answer
// does not depend on the order events arrive in (a replay, an importer sorting by start): the
// first step is held apart until the result is read.
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
	inits    []creation        // communicator creations, earliest kept
	hits     map[uint32]int64  // each communicator's latest cache hit, at most maxSetupInits of them
	last     timeline.Interval // the step that ended latest
	haveLast bool
	// firstInit is each device's earliest communicator creation (by device id, < MaxDevices);
	// steadyNs the shortest creation that was not its device's first, -1 while none was seen
	// (newSteps).
	firstInit []timeline.Interval
	steadyNs  int64
}

func newSteps(from int64) steps { return steps{from: from, steadyNs: -1, hits: map[uint32]int64{}} }

// creation is one communicator creation on one device.
type creation struct {
	timeline.Interval
	comm uint32
	dev  int32
}

// creation notes a communicator creation on dev for the steady cost of a creation.
func (s *steps) creation(dev int32, iv timeline.Interval) {
	if dev < 0 || dev >= MaxDevices {
		return
	}
	for int(dev) >= len(s.firstInit) {
		s.firstInit = append(s.firstInit, timeline.Interval{Start: 0, End: -1}) // none: it ends before it starts
	}
	f := &s.firstInit[dev]
	later := iv
	switch {
	case f.End < f.Start:
		*f = iv
		return
	case iv.Start < f.Start:
		later, *f = *f, iv
	}
	if d := later.End - later.Start; s.steadyNs < 0 || d < s.steadyNs {
		s.steadyNs = d
	}
}

func (s *steps) add(e *timeline.Event) {
	switch e.Kind {
	case timeline.KindCommInit:
		iv := timeline.Interval{Start: e.Start, End: e.End}
		if len(s.inits) < maxSetupInits {
			s.inits = append(s.inits, creation{Interval: iv, comm: e.Comm, dev: e.Device})
		}
		s.creation(e.Device, iv)
	case timeline.KindCommHit:
		if t, ok := s.hits[e.Comm]; ok || len(s.hits) < maxSetupInits {
			s.hits[e.Comm] = max(t, e.Start)
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
	span := end - s.first.Start
	if s.steadyNs < 0 || s.count < 2 {
		// No further creation seen (its steady cost is unknown), or no later step that could have
		// reused the communicators: all of it is setup.
		return span
	}
	// What stays in the step: on each device, the steady cost of its creations in the first step
	// whose communicators were never used again; the device that keeps the most sets it.
	kept := map[int32]int64{}
	var most int64
	for _, iv := range s.inits {
		if t, hit := s.hits[iv.comm]; iv.Start < s.first.End && iv.End > s.first.Start && (!hit || t < s.first.End) {
			kept[iv.dev] += min(iv.End-iv.Start, s.steadyNs)
			most = max(most, kept[iv.dev])
		}
	}
	return max(span-most, 0)
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
