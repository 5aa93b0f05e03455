package report

import "testing"

// A change the cells do not show is neither better nor worse: 0.01% → 0 reads 0.0% both sides
// (the what-if trial called it −100% worse), 276 ms less 500 ns reads 276 ms; a shown change keeps
// its verdict.
func TestRowVerdictNeedsAVisibleChange(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name       string
		u          Unit
		a, b       float64
		lessBetter bool
		want       string
	}{
		{"overlap", UnitPct, 0.01, 0, false, ""},
		{"step", UnitNs, 276e6, 276e6 - 500, true, ""},
		{"overlap", UnitPct, 0.2, 0, false, "worse"},
		{"step", UnitNs, 276e6, 270e6, true, "better"},
		{"busbw", UnitGBps, 100, 100.001, false, ""},
	} {
		r := row("s", c.name, c.u, f(c.a), f(c.b), c.lessBetter)
		if _, _, _, _, v := r.Cells(); v != c.want {
			t.Errorf("%s %g → %g: verdict %q; want %q", c.name, c.a, c.b, v, c.want)
		}
	}
}
