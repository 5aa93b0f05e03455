package sim

import (
	"fmt"
	"time"
)

// The solver re-solves the max-min rates of the flows still running at every flow's end. An
// all-to-all of n ranks is f = n(n-1) flows of uneven sizes (a mixture of experts' routing), which
// end one by one: f solves of, on average, half of them, some f²/2 flow updates. Measured on the
// moe-alltoall scenario (docs/performance.md, "The simulator at cluster scale: an all-to-all of
// 1,024 GPUs"): 16,069 solves and 117 M flow updates at 128 ranks, in 6.1-6.7 CPU seconds.
const (
	// flowUpdatesPerCPUSecond is what the solver gets through at 64 to 128 ranks (17-25 M).
	flowUpdatesPerCPUSecond = 17e6
	// warnFlowUpdates is a minute of it: above it an all-to-all is announced (Config.Warn).
	warnFlowUpdates = 60 * flowUpdatesPerCPUSecond
)

// allToAllCost is the estimated flow updates and CPU time of an all-to-all of flows flows.
func allToAllCost(flows int) (updates float64, cpu time.Duration) {
	f := float64(flows)
	updates = f * f / 2
	return updates, time.Duration(updates / flowUpdatesPerCPUSecond * float64(time.Second))
}

// warnAllToAll tells Config.Warn, once a run, of an all-to-all whose solves will take long.
func (s *Sim) warnAllToAll(ranks, flows int) {
	if s.cfg.Warn == nil || s.warned {
		return
	}
	updates, cpu := allToAllCost(flows)
	if updates < s.warnAbove {
		return
	}
	s.warned = true
	s.cfg.Warn(fmt.Sprintf("an all-to-all over %d ranks is %d flows of uneven sizes: each flow's end re-solves the rates of those still running, "+
		"some %.2g flow updates, about %s of CPU for this one collective (the simulator's cost grows with the fourth power of the ranks; see docs/performance.md)",
		ranks, flows, updates, roundCPU(cpu)))
}

// roundCPU says a long CPU time in the unit a person reads it in.
func roundCPU(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.0f days", d.Hours()/24)
	case d >= 2*time.Hour:
		return fmt.Sprintf("%.0f hours", d.Hours())
	default:
		return fmt.Sprintf("%.0f minutes", d.Minutes())
	}
}
