package analysis

import (
	"cmp"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// maxSetupInits bounds the communicator creations kept to work out the first step's setup time.
const maxSetupInits = 4096

// maxOpenSteps bounds the job steps kept open for more ranks' marks of them: past it, the one that
// ended earliest is taken as complete. Ranks of one job run within a few steps of each other.
const maxOpenSteps = 256

// steps folds completed steps. A step is the job's: the marks of one step number by several ranks
// (merged per-rank traces, each rank's profiler marking ProfilerStep#N) are one step, from the
// first rank's start to the last rank's end, as a collective's instance runs from the first rank's
// start to the last rank's end. A rank that marks a number again begins another step (a source that
// does not number its steps marks each 0). Communicator set-up in the first step is setup, not step
// time:
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
	from  int64               // steps that began earlier are not counted
	open  map[uint32]*jobStep // by step number: steps more ranks may still mark
	done  stepFold            // the steps taken as complete
	inits []creation          // communicator creations, earliest kept
	hits  map[uint32]int64    // each communicator's latest cache hit, at most maxSetupInits of them
	// firstInit is each device's earliest communicator creation (by device slot: farSlots);
	// steadyNs the shortest creation that was not its device's first, -1 while none was seen
	// (newSteps).
	firstInit []timeline.Interval
	slots     farSlots // the slots in firstInit of the device ids at or past MaxDevices
	steadyNs  int64
	win       *stepWindow // told of each step counted and each change to the setup; nil: none
}

func newSteps(from int64) steps {
	return steps{from: from, steadyNs: -1, hits: map[uint32]int64{}, open: map[uint32]*jobStep{}}
}

// rankKey names the rank that marked a step: its host and device (NoDevice when the step is the
// whole job's, as the simulator's are).
type rankKey struct {
	host uint16
	dev  int32
}

// jobStep is one step of the job: the span of its ranks' marks, and which ranks marked it.
type jobStep struct {
	timeline.Interval
	ranks map[rankKey]struct{}
}

// stepFold folds complete steps, the first held apart.
type stepFold struct {
	durs      Quantiles // every completed step but the first
	count     int64
	sum       int64 // of durs
	first     timeline.Interval
	haveFirst bool
	last      timeline.Interval // the step that ended latest
	haveLast  bool
}

// add folds one complete step.
func (f *stepFold) add(iv timeline.Interval) {
	f.count++
	if !f.haveLast || iv.End >= f.last.End {
		f.last, f.haveLast = iv, true
	}
	if !f.haveFirst {
		f.first, f.haveFirst = iv, true
		return
	}
	if iv.Start < f.first.Start {
		iv, f.first = f.first, iv
	}
	f.sum += iv.End - iv.Start
	f.durs.Add(float64(iv.End - iv.Start))
}

func (f *stepFold) clone() stepFold {
	c := *f
	c.durs = f.durs.clone()
	return c
}

// creation is one communicator creation on one device.
type creation struct {
	timeline.Interval
	comm uint32
	dev  int32
}

// creation notes a communicator creation on dev for the steady cost of a creation.
func (s *steps) creation(dev int32, iv timeline.Interval) {
	if dev < 0 {
		return
	}
	dev = s.slots.of(dev)
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
		s.changed()
		iv := timeline.Interval{Start: e.Start, End: e.End}
		if len(s.inits) < maxSetupInits {
			s.inits = append(s.inits, creation{Interval: iv, comm: e.Comm, dev: e.Device})
		}
		s.creation(e.Device, iv)
	case timeline.KindCommHit:
		s.changed()
		if t, ok := s.hits[e.Comm]; ok || len(s.hits) < maxSetupInits {
			s.hits[e.Comm] = max(t, e.Start)
		}
	case timeline.KindStep:
		if e.Status != timeline.StatusOK || e.Start < s.from {
			return
		}
		iv := timeline.Interval{Start: e.Start, End: e.End}
		s.mark(e.Aux, rankKey{e.Host, e.Device}, iv)
		if s.win != nil {
			s.win.mark(iv)
		}
	}
}

// changed tells the window that the setup may have changed.
func (s *steps) changed() {
	if s.win != nil {
		s.win.stale = true
	}
}

// firstFold is the fold's first step and count, without its durations: what setup needs.
func (s *steps) firstFold() stepFold {
	f := stepFold{count: s.done.count, first: s.done.first, haveFirst: s.done.haveFirst}
	for _, j := range s.open {
		f.count++
		if !f.haveFirst || j.Start < f.first.Start {
			f.first, f.haveFirst = j.Interval, true
		}
	}
	return f
}

// mark adds rank r's mark of step number n.
func (s *steps) mark(n uint32, r rankKey, iv timeline.Interval) {
	if j, ok := s.open[n]; ok {
		if _, again := j.ranks[r]; !again {
			j.ranks[r] = struct{}{}
			j.Start, j.End = min(j.Start, iv.Start), max(j.End, iv.End)
			return
		}
		delete(s.open, n) // the rank marks the number again: that step is complete
		s.done.add(j.Interval)
	}
	if len(s.open) >= maxOpenSteps {
		var oldest uint32
		var o *jobStep
		for k, j := range s.open {
			if o == nil || j.End < o.End || j.End == o.End && k < oldest {
				oldest, o = k, j
			}
		}
		delete(s.open, oldest)
		s.done.add(o.Interval)
	}
	s.open[n] = &jobStep{Interval: iv, ranks: map[rankKey]struct{}{r: {}}}
}

// all is the fold of every step seen, the open ones too.
func (s *steps) all() stepFold {
	f := s.done.clone()
	open := make([]timeline.Interval, 0, len(s.open))
	for _, j := range s.open {
		open = append(open, j.Interval)
	}
	// In time order, so that the sketch of many steps does not depend on the map's order.
	slices.SortFunc(open, func(a, b timeline.Interval) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End))
	})
	for _, iv := range open {
		f.add(iv)
	}
	return f
}

// setup is the part of the first step spent before its communicators were created.
func (s *steps) setup(f *stepFold) int64 {
	if !f.haveFirst {
		return 0
	}
	first := f.first
	end := first.Start
	for _, iv := range s.inits {
		if iv.Start < first.End {
			end = max(end, min(iv.End, first.End))
		}
	}
	span := end - first.Start
	if s.steadyNs < 0 || f.count < 2 {
		// No further creation seen (its steady cost is unknown), or no later step that could have
		// reused the communicators: all of it is setup.
		return span
	}
	// What stays in the step: on each device, the steady cost of its creations in the first step
	// whose communicators were never used again; the device that keeps the most sets it.
	kept := map[int32]int64{}
	var most int64
	for _, iv := range s.inits {
		if t, hit := s.hits[iv.comm]; iv.Start < first.End && iv.End > first.Start && (!hit || t < first.End) {
			kept[iv.dev] += min(iv.End-iv.Start, s.steadyNs)
			most = max(most, kept[iv.dev])
		}
	}
	return max(span-most, 0)
}

// Steps summarises completed steps (percentiles nearest-rank while exact, then within 1%).
// Durations are nil when no step completed, and so is SetupNs (measured in the first step, so
// unknown until it ends, not 0). The first step's communicator setup (SetupNs) is not
// in its duration, in any of them: LastNs is the latest step's duration, the first's without its
// setup when only one step completed.
type Steps struct {
	Count   int64  `json:"count"`
	MeanNs  *int64 `json:"mean_ns"`
	P50Ns   *int64 `json:"p50_ns"`
	P99Ns   *int64 `json:"p99_ns"`
	SetupNs *int64 `json:"setup_ns"`
	LastNs  *int64 `json:"last_ns"`
	// SteadyMeanNs is the mean of the steps after the first (the first, even without its setup,
	// runs colder: caches, a pipeline filling); nil with none after it. A comparison's verdict
	// rests on it, not on a mean that one shorter first step can move.
	SteadyMeanNs *int64 `json:"steady_mean_ns"`
}

func (s *steps) result() Steps {
	f := s.all()
	out := Steps{Count: f.count}
	if !f.haveFirst {
		return out
	}
	setup := s.setup(&f)
	out.SetupNs = &setup
	first := f.first.End - f.first.Start - setup
	q := &f.durs
	q.Add(float64(first))
	if f.count > 1 {
		steady := f.sum / (f.count - 1)
		out.SteadyMeanNs = &steady
	}
	mean := (f.sum + first) / f.count
	last := f.last.End - f.last.Start
	if f.last == f.first {
		last = first
	}
	out.MeanNs, out.LastNs, out.P50Ns, out.P99Ns = &mean, &last, q.quantileNs(50), q.quantileNs(99)
	return out
}
