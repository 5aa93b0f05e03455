package report

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
)

// Inside the noise floor no row is better or worse and the verdict says no difference; beyond it
// the verdict names the direction and the size. Critical-path rows are unknown for a run without
// steps.
func TestSetNoiseFloor(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		a, b  float64
		floor float64
		want  string
		named bool // the row keeps its verdict
	}{
		{100, 98, 3, "no difference beyond the ±3.0% noise floor", false},
		{100, 90, 3, "B is 10.0% faster", true},
		{100, 120, 3, "B is 20.0% slower", true},
	} {
		c := &Comparison{Rows: []Row{row("steps", SteadyRow, UnitNs, f(tc.a*1e6), f(tc.b*1e6), true)}, SteadyStepsA: 3, SteadyStepsB: 3}
		c.SetNoiseFloor(tc.floor, "test")
		if !strings.HasPrefix(c.Verdict, tc.want) {
			t.Errorf("%v → %v, floor %v: verdict %q; want %q…", tc.a, tc.b, tc.floor, c.Verdict, tc.want)
		}
		if (c.Rows[0].Better != nil) != tc.named {
			t.Errorf("%v → %v, floor %v: row verdict %v; want one: %v", tc.a, tc.b, tc.floor, c.Rows[0].Better, tc.named)
		}
	}
	c := &Comparison{}
	AddCriticalPaths(c, CriticalPath{}, CriticalPath{Steps: 1, StepNs: 5, ByCategory: map[string]float64{"compute": 5}})
	if len(c.Rows) != 7 || c.Rows[0].A != nil || *c.Rows[0].B != 5 || *c.Rows[2].B != 5 {
		t.Errorf("critical path rows %+v", c.Rows)
	}
	c.SetNoiseFloor(1, "test")
	if c.Verdict != "no verdict: neither run has a step time" {
		t.Errorf("verdict without steps in A: %q", c.Verdict)
	}
}

// The critical path's line: per step with the warm-up left out, or the whole input's; none when
// the report has no critical path.
func TestCriticalText(t *testing.T) {
	cats := map[string]float64{"compute": 30, "launch": 10}
	for _, tc := range []struct {
		p    *CriticalPath
		want string
	}{
		{nil, ""},
		{&CriticalPath{Steps: 2, FirstLeft: true, StepNs: 40, ByCategory: cats}, "\nCritical path: 40 ns per step (mean of 2, the first step left out): compute 30 ns (75%), communication 0 s (0%), copies 0 s (0%), launch 10 ns (25%), waits 0 s (0%)\n"},
		{&CriticalPath{Steps: 1, Whole: true, StepNs: 40, ByCategory: cats}, "\nCritical path: 40 ns, the whole input's (it has no steps): compute 30 ns (75%), communication 0 s (0%), copies 0 s (0%), launch 10 ns (25%), waits 0 s (0%)\n"},
		{&CriticalPath{Steps: 2, FirstLeft: true, StepNs: 40, ByCategory: cats, Largest: []PathContributor{
			{Category: "compute", What: "rank 3's kernels (host 0)", Ns: 30},
			{Category: "launch", What: "rank 3's runtime calls", Ns: 10},
		}}, "\nCritical path: 40 ns per step (mean of 2, the first step left out): compute 30 ns (75%), communication 0 s (0%), copies 0 s (0%), launch 10 ns (25%), waits 0 s (0%)\n  largest on it, per step: compute 30 ns in rank 3's kernels (host 0); launch 10 ns in rank 3's runtime calls\n"},
		{&CriticalPath{Steps: 1, Whole: true, StepNs: 40, ByCategory: cats, Definition: "hta"}, "\nCritical path (HTA's definition): 40 ns, the whole input's (it has no steps): compute 30 ns (75%), communication 0 s (0%), copies 0 s (0%), launch 10 ns (25%), waits 0 s (0%)\n"},
	} {
		var b strings.Builder
		criticalText(&b, tc.p)
		if b.String() != tc.want {
			t.Errorf("criticalText(%+v) = %q; want %q", tc.p, b.String(), tc.want)
		}
	}
}

// The verdict rests on the steps after the first: a shorter first step alone (B's mean lower, its
// steady steps slower) is no "B is faster", and with fewer than two steps after the first there
// is no verdict, saying so (not "no steps").
func TestVerdictOnSteadySteps(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		a, b analysis.Steps
		want string
	}{
		{"first step shorter, steady slower", analysis.Steps{Count: 4, MeanNs: i(162e6), P50Ns: i(165e6), SteadyMeanNs: i(165e6)},
			analysis.Steps{Count: 4, MeanNs: i(159e6), P50Ns: i(167e6), SteadyMeanNs: i(167e6)}, "B is 1.2% slower"},
		{"two steps", analysis.Steps{Count: 2, MeanNs: i(158e6), SteadyMeanNs: i(165e6)}, analysis.Steps{Count: 2, MeanNs: i(151e6), SteadyMeanNs: i(167e6)},
			"no verdict: fewer than two steps after the first (A 1, B 1)"},
		{"one step", analysis.Steps{Count: 1, MeanNs: i(158e6)}, analysis.Steps{Count: 1, MeanNs: i(151e6)},
			"no verdict: fewer than two steps after the first (A 0, B 0)"},
	} {
		c := Compare(&Report{Steps: tc.a}, &Report{Steps: tc.b}, "A", "B")
		c.SetNoiseFloor(1, "test")
		if !strings.HasPrefix(c.Verdict, tc.want) {
			t.Errorf("%s: verdict %q; want %q…", tc.name, c.Verdict, tc.want)
		}
	}
}
