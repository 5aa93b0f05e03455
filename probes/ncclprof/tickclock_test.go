package main

import (
	"runtime"
	"strings"
	"testing"
)

// The conversion from ticks to CLOCK_MONOTONIC nanoseconds, from pairs of a known counter rate:
// records before and after the latest pair, a rate refined over a longer span, the kernel's
// slewing followed, and ticks that are nanoseconds already.
func TestTickClock(t *testing.T) {
	// 3 ticks per ns, the counter at 1e6 when CLOCK_MONOTONIC read 5e9.
	at := func(ns int64) tickPair { return tickPair{tick: uint64(1e6 + 3*(ns-5e9)), ns: ns} }
	c := newTickClock(false, at(5e9), at(5e9+10e6))
	for _, ns := range []int64{5e9 + 10e6, 5e9 + 9e6, 5e9 + 11e6, 5e9} {
		if got := c.ns(at(ns).tick); got != ns {
			t.Errorf("ticks %d: %d ns; want %d", at(ns).tick, got, ns)
		}
	}
	if got := c.duration(3000); got != 1000 {
		t.Errorf("3000 ticks: %d ns; want 1000", got)
	}
	// The kernel slews CLOCK_MONOTONIC 100 ppm slower from 6 s on: the rate follows within the
	// pairs kept, and a record a millisecond from the latest pair is off by no more than 1 ns.
	slewed := func(ns int64) tickPair { // ns past 6e9 take 1.0001 times the ticks
		if ns <= 6e9 {
			return at(ns)
		}
		p := at(6e9)
		p.tick += uint64(float64(ns-6e9) * 3 * 1.0001)
		p.ns = ns
		return p
	}
	for ns := int64(5e9 + 20e6); ns <= 30e9; ns += 2e6 {
		c.observe(slewed(ns))
	}
	for _, ns := range []int64{30e9 - 1e6, 30e9} {
		if got, want := c.ns(slewed(ns).tick), ns; got < want-1 || got > want+1 {
			t.Errorf("after slewing, ticks %d: %d ns; want %d ± 1", slewed(ns).tick, got, want)
		}
	}
	// A pair whose ticks went backwards (another CPU's counter, say) is not taken.
	before := c.ref
	c.observe(tickPair{tick: before.tick - 10, ns: before.ns + 5})
	if c.ref != before {
		t.Errorf("a pair with earlier ticks moved the reference to %+v", c.ref)
	}
	id := newTickClock(true, tickPair{}, tickPair{})
	id.observe(tickPair{tick: 7, ns: 99})
	if id.ns(123456789) != 123456789 || id.duration(42) != 42 {
		t.Errorf("monotonic ticks converted to %d, %d", id.ns(123456789), id.duration(42))
	}
}

func TestUseTSC(t *testing.T) {
	amd64 := runtime.GOARCH == "amd64"
	for _, c := range []struct {
		env, source string
		want        bool
		err         string
	}{
		{"", "tsc\n", amd64, ""},
		{"", "kvm-clock\n", false, ""},
		{"", "", false, ""},
		{"monotonic", "tsc", false, ""},
		{"MONOTONIC", "tsc", false, ""},
		{"rdtsc", "tsc", false, `XFERTOP_CLOCK="rdtsc": give tsc or monotonic`},
	} {
		got, err := useTSC(func(k string) string {
			if k == EnvClock {
				return c.env
			}
			return ""
		}, func() string { return c.source })
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) || (err == nil && got != c.want) {
			t.Errorf("XFERTOP_CLOCK=%q, clocksource %q: %v, %v; want %v, %q", c.env, c.source, got, err, c.want, c.err)
		}
	}
	// This machine's own clocksource, as the plugin reads it: a choice, never an error.
	src := kernelClocksource()
	if got, err := useTSC(func(string) string { return "" }, kernelClocksource); err != nil || got != (amd64 && strings.TrimSpace(src) == "tsc") {
		t.Errorf("clocksource %q here: %v, %v", src, got, err)
	}
}
