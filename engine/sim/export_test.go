package sim

// WatchdogQueue returns the length and capacity of the watchdog's queue of deadlines, for tests.
func WatchdogQueue(s *Sim) (n, capacity int) { return len(s.wdQueue) - s.wdHead, cap(s.wdQueue) }
