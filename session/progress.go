package session

import (
	"sync/atomic"

	"github.com/xfertop/xfertop/timeline"
)

// progress counts a run's events and how far in time they reached, for readers on other
// goroutines (a progress line on a terminal). The producer writes it; anyone reads it.
type progress struct {
	events atomic.Int64
	now    atomic.Int64
	steps  atomic.Int64
}

func (p *progress) Emit(e *timeline.Event) {
	p.events.Add(1)
	if e.End > p.now.Load() {
		p.now.Store(e.End)
	}
	if e.Kind == timeline.KindStep && e.Status == timeline.StatusOK {
		p.steps.Add(1)
	}
}

// Progress is how far a run has got: events produced, simulated (or recorded) time reached in ns,
// and steps completed. It is safe to call while the run goes on.
func (p *Prepared) Progress() (events, nowNs, steps int64) {
	return p.progress.events.Load(), p.progress.now.Load(), p.progress.steps.Load()
}
