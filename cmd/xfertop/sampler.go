package main

import "time"

// sampleEvery calls look now, then every interval on a goroutine of its own, until the returned
// stop is called; stop calls look a last time and returns once the goroutine has ended. The
// opt-in samplers (XFERTOP_MEMSTATS, XFERTOP_HEAPPROFILE) share it.
func sampleEvery(every time.Duration, look func()) (stop func()) {
	look()
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				look()
			case <-quit:
				look()
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
