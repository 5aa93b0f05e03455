package sim

import "context"

// WatchdogQueue returns the length and capacity of the watchdog's queue of deadlines, for tests.
func WatchdogQueue(s *Sim) (n, capacity int) { return len(s.wdQueue) - s.wdHead, cap(s.wdQueue) }

// RunUntil runs s up to simulated time t (inclusive) and publishes what is running then, for tests
// of InFlight: a console reading it while Run runs sees the same.
func RunUntil(s *Sim, t int64) error {
	err := s.run(context.Background(), t)
	s.publish()
	return err
}
