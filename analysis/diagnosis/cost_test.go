package diagnosis

import (
	"strings"
	"testing"
)

// What a finding says it cost the step is the step's growth, no more than what its transfers,
// launches or kernels lost, and never more than the step; unknown without a step to compare with.
func TestCostPhrase(t *testing.T) {
	for _, c := range []struct {
		name               string
		what               string
		excess, work, base int64
		cost               int64
		say                string
	}{
		{name: "all on the critical path", what: "its transfers", excess: 30 * ms, work: 200 * ms, base: 170 * ms, cost: 30 * ms,
			say: "costs the step 30.0 ms, 15.0% of it (its transfers took 30.0 ms longer; the step grew 30.0 ms over the shortest step before it)"},
		{name: "mostly hidden", what: "its transfers", excess: 26800 * 1000, work: 50 * ms, base: 49 * ms, cost: ms,
			say: "costs the step 1.0 ms, 2.0% of it (the step grew 1.0 ms over the shortest step before it; its transfers took 26.8 ms longer, the rest hidden behind other work)"},
		{name: "hidden: the step did not grow", what: "its launches", excess: 29900 * 1000, work: 169 * ms, base: 170 * ms, cost: 0,
			say: "costs the step nothing measurable: its launches came 29.9 ms later in all, hidden behind other work"},
		{name: "more lost than the step lasts, unknown base", what: "their transfers", excess: 193 * ms, work: 97 * ms, cost: 97 * ms,
			say: "their transfers took 193.0 ms longer; what that cost the step is unknown"},
	} {
		t.Run(c.name, func(t *testing.T) {
			say, cost := costPhrase(c.what, c.excess, c.work, c.base)
			if cost != c.cost || !strings.Contains(say, c.say) {
				t.Errorf("costPhrase = %q, %d; want %d and %q", say, cost, c.cost, c.say)
			}
			if cost > c.work || strings.Contains(say, "lost,") {
				t.Errorf("cost %d over the step %d, or a transfer time as lost: %q", cost, c.work, say)
			}
		})
	}
}

// A host slow to launch from step 1 on whose lateness the step does not show (the work is
// GPU-bound: it runs as long as before) costs nothing: its severity is 0, not its launch lateness.
func TestSlowHostHiddenCostsNothing(t *testing.T) {
	s := newStepper(8)
	for st := range 5 {
		late := st >= 2
		s.kernels(16, 50, func(r, i int) int64 { return int64(float64(ms) * jitter(r, i)) }, func(r int) int64 {
			if r == 9 && late {
				return 30_000
			}
			return 10_000
		})
		s.endStep(100 * ms)
	}
	fs := s.d.Result(s.strs)
	if len(fs) != 1 || fs[0].Kind != SlowHost || fs[0].Rank != 9 {
		t.Fatalf("findings %v; want one slow host, rank 9", fs)
	}
	if fs[0].Severity != 0 || !strings.Contains(fs[0].Evidence, "costs the step nothing measurable") {
		t.Errorf("severity %d, evidence %q; want 0, nothing measurable", fs[0].Severity, fs[0].Evidence)
	}
}
