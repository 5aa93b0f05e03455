package diagnosis

import (
	"strings"
	"testing"
)

// What a finding says it cost the step is the step's growth, no more than what its transfers,
// launches or kernels lost, and never more than the step; unknown without a step to compare with.
func TestCostPhrase(t *testing.T) {
	for _, c := range []struct {
		name                      string
		what                      string
		excess, work, base, bound int64
		cost                      int64
		state                     costState
		say                       string
	}{
		{name: "all on the critical path", what: "its transfers", excess: 30 * ms, work: 200 * ms, base: 170 * ms, cost: 30 * ms, state: costKnown,
			say: "costs the step 30.0 ms, 15.0% of it (its transfers took 30.0 ms longer; the step grew 30.0 ms over the shortest step before it)"},
		{name: "mostly hidden", what: "its transfers", excess: 26800 * 1000, work: 50 * ms, base: 49 * ms, cost: ms, state: costKnown,
			say: "costs the step 1.0 ms, 2.0% of it (the step grew 1.0 ms over the shortest step before it; its transfers took 26.8 ms longer, the rest hidden behind other work)"},
		{name: "hidden: the step did not grow", what: "its launches", excess: 29900 * 1000, work: 169 * ms, base: 170 * ms, cost: 0, state: costKnown,
			say: "costs the step nothing measurable: its launches came 29.9 ms later in all, hidden behind other work"},
		{name: "more lost than the step lasts, unknown base", what: "their transfers", excess: 193 * ms, work: 97 * ms, cost: 97 * ms, state: costUnknown,
			say: "their transfers took 193.0 ms longer; what that cost the step is unknown (no step before it to compare with)"},
		// llm-train's first step on 16 hosts: 150.8 ms of work after its setup, 165.4 ms in a
		// whole step; the NIC's step lasts 185.8 ms, its transfers 47.2 ms longer.
		{name: "bounded by the growth over a first step's work after its setup", what: "their transfers", excess: 47200 * 1000, work: 185800 * 1000,
			bound: 150800 * 1000, cost: 35 * ms, state: costBound,
			say: "their transfers took 47.2 ms longer; what that cost the step is at most 35.0 ms, 18.8% of it (the step grew 35.0 ms over the shortest step before it, 150.8 ms, counted from the end of its communicators' setup"},
		{name: "bounded by the transfers when the growth is more", what: "their transfers", excess: 10 * ms, work: 185800 * 1000,
			bound: 150800 * 1000, cost: 10 * ms, state: costBound, say: "what that cost the step is at most 10.0 ms, 5.4% of it"},
		{name: "no growth over a lower bound: nothing", what: "its kernels", excess: 10 * ms, work: 150 * ms, bound: 150800 * 1000, cost: 0, state: costKnown,
			say: "costs the step nothing measurable: its kernels took 10.0 ms longer, hidden behind other work"},
		{name: "a clean base wins over a bound", what: "their transfers", excess: 47200 * 1000, work: 185800 * 1000, base: 165400 * 1000,
			bound: 150800 * 1000, cost: 20400 * 1000, state: costKnown, say: "costs the step 20.4 ms, 11.0% of it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			say, cost, st := costPhrase(c.what, c.excess, c.work, c.base, c.bound)
			if cost != c.cost || st != c.state || !strings.Contains(say, c.say) {
				t.Errorf("costPhrase = %q, %d, %d; want %d, %d and %q", say, cost, st, c.cost, c.state, c.say)
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
