package main

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/whatif"
)

// TestWholeGraphWarning: an input without steps past wholeGraphOps is told that the what-if holds
// all of it at once, with the ops and the memory that takes; one with steps, or a small one, is not.
func TestWholeGraphWarning(t *testing.T) {
	kernels := func(n int) []timeline.Event {
		evs := make([]timeline.Event, n)
		for i := range evs {
			evs[i] = timeline.Event{Kind: timeline.KindKernel, Start: int64(i) * 10, End: int64(i)*10 + 5, Stream: 7}
		}
		return evs
	}
	withSteps := append([]timeline.Event{{Kind: timeline.KindStep, Start: 0, End: 600_000}, {Kind: timeline.KindStep, Start: 600_000, End: 2_000_000}}, kernels(wholeGraphOps+1)...)
	for _, c := range []struct {
		name string
		evs  []timeline.Event
		want string
	}{
		{"no steps, large", kernels(wholeGraphOps + 1), "t.json marks no steps: the what-if holds its whole graph at once, 100001 ops (about 219.3 MiB of memory)"},
		{"no steps, small", kernels(wholeGraphOps), ""},
		{"steps", withSteps, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p whatif.Plan
			p.Events(c.evs)
			got := wholeGraphWarning("t.json", &p)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("wholeGraphWarning = %q; want %q", got, c.want)
			}
		})
	}
}
