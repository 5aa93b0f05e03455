//go:build cgo

package main

import (
	"os"
	"testing"
	"time"
)

// The callbacks' ticks, converted, fall between CLOCK_MONOTONIC reads taken just before and just
// after them: on the TSC where the plugin would use it, as the sender calibrates it (the first
// rate from pairs 10 ms apart, then a pair per drain), extrapolated up to 20 ms past its pair.
// The bound (20 µs) is the conversion's, far above its expected error (tens of ns), far below a
// wrong rate's (a 1 % error is 200 µs at 20 ms).
func TestTickClockAgainstMonotonic(t *testing.T) {
	tsc, err := useTSC(os.Getenv, kernelClocksource)
	if err != nil {
		t.Fatal(err)
	}
	if !tsc {
		t.Log("the kernel does not keep time with the TSC here: ticks are CLOCK_MONOTONIC ns")
	}
	c := startClock(tsc)
	defer startClock(false)
	const tol = 20_000
	for i := 0; i < 20; i++ {
		if i%5 == 0 {
			c.observe(clockPair())
		}
		time.Sleep(time.Millisecond)
		before, conv, after := bracketClock(c)
		if conv < before-tol || conv > after+tol {
			t.Fatalf("read %d: ticks converted to %d ns, between CLOCK_MONOTONIC reads %d and %d (%+d ns)", i, conv, before, after, conv-before)
		}
	}
}
