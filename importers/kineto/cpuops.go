package kineto

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// CPUOps reads the CPU operators of PyTorch profiler traces (category cpu_op, or Operator in
// older traces) and returns, for each process id, the union of their intervals in time order, in
// the import's time (epochUnixNs is the import's EpochUnixNs, its time 0). It is what Holistic
// Trace Analysis's critical path weighs on the host besides the runtime calls: the time inside
// operators, not the gaps between top-level ones. The import itself keeps no CPU operator, so this
// reads the traces again.
func CPUOps(paths []string, opts Options, epochUnixNs int64) (map[uint32][]timeline.Interval, error) {
	ops := map[uint32][]timeline.Interval{}
	for _, src := range fileSources(paths) {
		r, err := src.open()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.name, err)
		}
		_, err = decode(src.name, r, Options{MaxInputBytes: opts.MaxInputBytes, MaxTokenBytes: opts.MaxTokenBytes}, func(e *rawEvent, _ *header) error {
			if e.Ph != 'X' || !e.HasTs || !e.HasDur || e.BadTs || e.BadDur || e.Dur < 0 || (e.Cat != "cpu_op" && e.Cat != "Operator") {
				return nil
			}
			pid, ok := parseInt(e.Pid)
			if !ok || pid < 0 || pid > 1<<32-1 {
				return nil
			}
			start := e.Ts - epochUnixNs
			ops[uint32(pid)] = append(ops[uint32(pid)], timeline.Interval{Start: start, End: start + e.Dur})
			return nil
		})
		r.Close()
		if err != nil {
			return nil, err
		}
	}
	for pid, ivs := range ops {
		ops[pid] = union(ivs)
	}
	return ops, nil
}

// union merges intervals into disjoint ones in time order.
func union(ivs []timeline.Interval) []timeline.Interval {
	slices.SortFunc(ivs, func(a, b timeline.Interval) int { return cmp.Compare(a.Start, b.Start) })
	out := ivs[:0]
	for _, iv := range ivs {
		if n := len(out); n > 0 && iv.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, iv.End)
			continue
		}
		out = append(out, iv)
	}
	return out
}
