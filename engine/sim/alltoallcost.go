package sim

import (
	"fmt"
	"time"
)

// What an all-to-all costs the simulator depends on how NCCL runs it (alltoall.go), measured on
// the moe-alltoall scenario (docs/performance.md, "The simulator at cluster scale: an all-to-all
// of 1,024 GPUs"):
//
//   - On one node every peer runs at once: f = n(n−1) flows of uneven sizes in one component, each
//     end re-solving the rates of those still running, some f²/2 flow updates (measured when
//     every all-to-all ran so: 117 M at 128 ranks, 6.1-6.7 CPU seconds). Cheap on the 8 or 72
//     GPUs of a node.
//   - Across nodes NCCL's batches bound what is in flight, so each end re-solves some 64 flows:
//     the cost is per flow, 3.4 CPU seconds for the 1,047,552 flows of 1,024 ranks, 63 for the
//     16.8 M of 4,096 (a whole moe-alltoall step each).
const (
	// flowUpdatesPerCPUSecond is what the solver gets through at 64 to 128 ranks on one component
	// (17-25 M).
	flowUpdatesPerCPUSecond = 17e6
	// batchedFlowsPerCPUSecond is the flows of an all-to-all across nodes the simulator runs per
	// CPU second, all its work included (265-300 k at 1,024 and 4,096 ranks).
	batchedFlowsPerCPUSecond = 250e3
	// warnCPU is the estimate above which an all-to-all is announced (Config.Warn).
	warnCPU = time.Minute
)

// allToAllCost is the estimated CPU time of an all-to-all of flows flows, all at once (one node)
// or in NCCL's batches (across nodes).
func allToAllCost(flows int, batched bool) time.Duration {
	f := float64(flows)
	if batched {
		return time.Duration(f / batchedFlowsPerCPUSecond * float64(time.Second))
	}
	return time.Duration(f * f / 2 / flowUpdatesPerCPUSecond * float64(time.Second))
}

// warnAllToAll tells Config.Warn, once a run, of an all-to-all whose solves will take long.
func (s *Sim) warnAllToAll(ranks, flows int, batched bool) {
	if s.cfg.Warn == nil || s.warned {
		return
	}
	cpu := allToAllCost(flows, batched)
	if cpu < s.warnAbove {
		return
	}
	s.warned = true
	how := "on one node every peer at once, each flow's end re-solving the rates of those still running (the cost grows with the fourth power of the ranks)"
	if batched {
		how = "in NCCL's batches of peers (the cost grows with the square of the ranks)"
	}
	s.cfg.Warn(fmt.Sprintf("an all-to-all over %d ranks is %d flows of uneven sizes, run %s: about %s of CPU for this one collective (see docs/performance.md)",
		ranks, flows, how, roundCPU(cpu)))
}

// roundCPU says a long CPU time in the unit a person reads it in.
func roundCPU(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.0f days", d.Hours()/24)
	case d >= 2*time.Hour:
		return fmt.Sprintf("%.0f hours", d.Hours())
	case d < time.Minute:
		return d.Round(time.Millisecond).String()
	case d < 90*time.Second:
		return "1 minute"
	default:
		return fmt.Sprintf("%.0f minutes", d.Minutes())
	}
}
