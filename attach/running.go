package attach

import (
	"sync"

	"github.com/xfertop/xfertop/timeline"
)

// published is the Server's collectives in flight as the merge goroutine last published them (after
// each block of events it applies, and on each tick), for readers on other goroutines.
type published struct {
	mu    sync.Mutex
	evs   []timeline.Event
	spare []timeline.Event
}

// InFlight appends to dst the collectives the job's ranks have posted and not yet reported ended
// (each drawn as a collective from its posting to when it was last seen open), and returns it. Safe
// for concurrent use; appends without allocating once dst has room.
func (s *Server) InFlight(dst []timeline.Event) []timeline.Event {
	s.running.mu.Lock()
	defer s.running.mu.Unlock()
	return append(dst, s.running.evs...)
}

// publishRunning makes the join's open collectives, seen at now (session ns), what InFlight
// returns. It runs on the merge goroutine, the Join's only user.
func (s *Server) publishRunning(now int64) {
	p := &s.running
	p.spare = s.join.InFlight(p.spare[:0], now)
	p.mu.Lock()
	p.evs, p.spare = p.spare, p.evs
	p.mu.Unlock()
}
