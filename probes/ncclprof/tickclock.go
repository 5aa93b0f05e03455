package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// tickClock converts the ring's timestamps to CLOCK_MONOTONIC nanoseconds. The callbacks stamp
// records with the CPU's time-stamp counter (a clock read is about half a callback's cost
// otherwise); the sender reads (ticks, CLOCK_MONOTONIC) pairs as it drains and converts each
// record against the latest pair, at the rate measured between that pair and one at least
// rateSpan older. A record is at most a drain old when converted, so the rate's error (and the
// kernel's slewing of CLOCK_MONOTONIC) moves it by nanoseconds; events stay on NCCL's and the
// host's clock. Without the TSC the ticks are CLOCK_MONOTONIC nanoseconds and convert as they are.
type tickClock struct {
	identity  bool
	nsPerTick float64
	ref       tickPair   // the latest pair
	hist      []tickPair // pairs about rateSpan apart, oldest first; the rate is measured from hist[0]
}

// tickPair is one reading of both clocks at (nearly) one instant.
type tickPair struct {
	tick uint64
	ns   int64
}

// rateSpan is how far apart the pairs kept for the rate are; rateKeep how many are kept, so the
// rate is measured over rateSpan to rateKeep×rateSpan and follows the kernel's slewing.
const (
	rateSpan = 1_000_000_000
	rateKeep = 8
)

// newTickClock starts a clock from two pairs read apart (a and b, b later); identity: the ticks
// are nanoseconds already.
func newTickClock(identity bool, a, b tickPair) *tickClock {
	c := &tickClock{identity: identity, nsPerTick: 1}
	if identity {
		return c
	}
	c.hist = append(c.hist, a)
	c.observe(b)
	return c
}

// observe takes a new pair: the reference for the records drained after it.
func (c *tickClock) observe(p tickPair) {
	if c.identity || p.tick <= c.hist[len(c.hist)-1].tick {
		return
	}
	c.ref = p
	c.nsPerTick = float64(p.ns-c.hist[0].ns) / float64(p.tick-c.hist[0].tick)
	if p.ns-c.hist[len(c.hist)-1].ns >= rateSpan {
		if len(c.hist) == rateKeep {
			c.hist = append(c.hist[:0], c.hist[1:]...)
		}
		c.hist = append(c.hist, p)
	}
}

// ns converts ticks to CLOCK_MONOTONIC nanoseconds.
func (c *tickClock) ns(tick uint64) int64 {
	if c.identity {
		return int64(tick)
	}
	return c.ref.ns + int64(float64(int64(tick-c.ref.tick))*c.nsPerTick)
}

// duration converts a span of ticks to nanoseconds.
func (c *tickClock) duration(ticks int64) int64 {
	if c.identity {
		return ticks
	}
	return int64(float64(ticks) * c.nsPerTick)
}

// EnvClock names the records' clock: "tsc" or "monotonic"; unset, the TSC where the kernel keeps
// time with it.
const EnvClock = "XFERTOP_CLOCK"

// useTSC says whether the callbacks should stamp records with the TSC: on x86-64, where the
// kernel's clocksource is the TSC (it checks that the counter is invariant and synchronised across
// CPUs, and falls back to another source when it is not), unless XFERTOP_CLOCK says otherwise.
func useTSC(getenv func(string) string, clocksource func() string) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(getenv(EnvClock))); v {
	case "monotonic":
		return false, nil
	case "tsc":
		if runtime.GOARCH != "amd64" {
			return false, fmt.Errorf("%s=tsc: the TSC is read on x86-64 only (this is %s)", EnvClock, runtime.GOARCH)
		}
		return true, nil
	case "":
		return runtime.GOARCH == "amd64" && strings.TrimSpace(clocksource()) == "tsc", nil
	default:
		return false, fmt.Errorf("%s=%q: give tsc or monotonic", EnvClock, getenv(EnvClock))
	}
}

// kernelClocksource is the kernel's current clocksource ("" when it cannot be read).
func kernelClocksource() string {
	b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	if err != nil {
		return ""
	}
	return string(b)
}
