// Package steps finds the iterations of a trace that marks no step: from annotation ranges (NVTX)
// that repeat once per iteration (Infer), or else from a sequence of GPU ops that repeats
// (InferSequence). Every importer's step figures go through it (importers.Stream),
// so the report, the console, compare and what-if count the same steps.
package steps

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// Range is one annotation range of a host process.
type Range struct {
	Start, End int64
	Label      uint32 // the range's interned name
	Name       string
	Host       uint16
	Pid        uint32
}

// Found is the steps inferred and how.
type Found struct {
	Steps []timeline.Interval
	Label uint32 // the name of the range they were found from
	Host  uint16
	How   string // for people: which range, how many times, how it was chosen
}

// markers are range names that mark one point of every iteration (matched without case): FSDP's
// root module's pre-forward hook, the training step functions frameworks annotate, an optimizer's
// step.
var markers = []string{"root_pre_forward", "train_step", "training_step", "iteration", "optimizer.step", "optimizer_step"}

// Infer finds the iterations of a trace from its annotation ranges, or reports that none can be
// found. The iteration is marked by a range named like an iteration marker that occurs twice or
// more on one host process (the one with the most of them); each iteration runs from one
// occurrence to the next (start to start). Ranges nested in another of their name are left out. A
// range that merely repeats is not taken: in a trace of a few layers of one iteration (the Nsight
// export in shared/data), the layers' ranges repeat as regularly as iterations would.
func Infer(ranges []Range) (Found, bool) {
	type key struct {
		name string
		host uint16
		pid  uint32
	}
	groups := map[key][]Range{}
	for _, r := range ranges {
		if IsMarker(r.Name) {
			k := key{r.Name, r.Host, r.Pid}
			groups[k] = append(groups[k], r)
		}
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.host, b.host), cmp.Compare(a.pid, b.pid))
	})
	var best Found
	var bestStarts []int64
	for _, k := range keys {
		rs := groups[k]
		starts := topLevel(rs)
		// The most occurrences (the process that recorded every iteration); the first in name
		// order on a tie.
		if len(starts) < 2 || len(starts) <= len(bestStarts) {
			continue
		}
		bestStarts = starts
		best = Found{Label: rs[0].Label, Host: k.host, Steps: make([]timeline.Interval, 0, len(starts)-1)}
		for i := 1; i < len(starts); i++ {
			best.Steps = append(best.Steps, timeline.Interval{Start: starts[i-1], End: starts[i]})
		}
		best.How = fmt.Sprintf("inferred from the NVTX range %q, %d times (named like an iteration marker): each step from one to the next", k.name, len(starts))
	}
	return best, bestStarts != nil
}

// Markers lists the names a range is looked for by, for messages.
func Markers() string { return strings.Join(markers, ", ") }

// IsMarker reports whether a range's name says it marks an iteration: Infer looks at no other
// range.
func IsMarker(name string) bool {
	lower := strings.ToLower(name)
	for _, m := range markers {
		if strings.Contains(lower, m) {
			return true
		}
	}
	return false
}

// topLevel is the starts of the ranges not nested in another of rs, in time order.
func topLevel(rs []Range) []int64 {
	slices.SortFunc(rs, func(a, b Range) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(b.End, a.End)) })
	var starts []int64
	end := int64(-1 << 63)
	for _, r := range rs {
		if r.Start < end {
			continue
		}
		starts = append(starts, r.Start)
		end = r.End
	}
	return starts
}
