package ui

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/report"
)

// A what-if's comparison at 80×24 keeps what it is about: B's description (on a line of its own
// when A's and B's do not fit one), the algorithm B's collective changed to (its long name on a
// line of its own), and the verdict with its % (wrapped, not cut). Golden: compare-whatif-80x24.
func TestCompareWhatIfNarrow(t *testing.T) {
	d := pipelineCompare(t)
	v := func(x float64) *float64 { return &x }
	c := &report.Comparison{A: "measured: overlap.xfr", B: "predicted: NCCL algo=Ring proto=LL128, collectives on l40sx8 (1 hosts × 8 GPUs)", Command: "whatif",
		SteadyStepsA: 9, SteadyStepsB: 9}
	c.Rows = []report.Row{
		{Section: "steps", Name: report.SteadyRow, Unit: report.UnitNs, A: v(48.1e6), B: v(49.2e6)},
		{Section: "collectives", Name: "all_reduce ×8 ≤32 MiB NVLS_Simple → Ring_LL128 busbw", Unit: report.UnitGBps, A: v(111.76), B: v(55.06)},
	}
	for i := range c.Rows {
		r := &c.Rows[i]
		diff, pct := *r.B-*r.A, 100*(*r.B-*r.A) / *r.A
		r.Diff, r.DiffPct = &diff, &pct
	}
	c.SetNoiseFloor(1, "test")
	d.Cmp = c
	m := sizedCompare(d, 80, 24)
	checkGolden(t, "compare-whatif-80x24", m.View().Content, 80, 24)
	scr := text(m)
	for _, want := range []string{"B predicted: NCCL algo=Ring proto=LL128, collectives on l40sx8 (1 hosts × 8 GPUs)",
		"all_reduce ×8 ≤32 MiB NVLS_Simple → Ring_LL128 busbw", "B is 2.3% slower", "noise floor"} {
		if !strings.Contains(strings.Join(strings.Fields(scr), " "), want) {
			t.Errorf("%q is not on the screen at 80×24:\n%s", want, scr)
		}
	}
}
