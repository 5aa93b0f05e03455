package session

import (
	"sync/atomic"

	"github.com/xfertop/xfertop/timeline"
)

// progress counts a run's events and how far in time they reached, for readers on other
// goroutines (a progress line on a terminal). The producer counts in plain fields and publishes
// them to the atomics every publishEvents events and when the run ends (publish): an atomic add
// and store on every event cost more than the rest of this sink.
type progress struct {
	events atomic.Int64
	now    atomic.Int64
	steps  atomic.Int64

	n, t, st int64 // the producer's own counts, ahead of the published ones
}

// publishEvents is how many events the published progress may lag behind the run.
const publishEvents = 256

func (p *progress) Emit(e *timeline.Event) {
	p.n++
	p.t = max(p.t, e.End)
	if e.Kind == timeline.KindStep && e.Status == timeline.StatusOK {
		p.st++
	}
	if p.n%publishEvents == 0 {
		p.publish()
	}
}

// publish makes the producer's counts what readers see; the producer calls it.
func (p *progress) publish() {
	p.events.Store(p.n)
	p.now.Store(p.t)
	p.steps.Store(p.st)
}

// Progress is how far a run has got: events produced, simulated (or recorded) time reached in ns,
// and steps completed. It is safe to call while the run goes on.
func (p *Prepared) Progress() (events, nowNs, steps int64) {
	return p.progress.events.Load(), p.progress.now.Load(), p.progress.steps.Load()
}
