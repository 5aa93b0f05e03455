package report

import (
	"strings"
	"testing"
)

// A row that the unchanged replay already moves beyond the comparison's floor gets that move as
// its own floor: no verdict within it, a verdict beyond it; a collective's row is found whatever
// algorithm the change gave it; a row whose A is 0 gets no verdict within the unchanged replay's
// absolute change.
func TestSetRowFloors(t *testing.T) {
	a := withRun(4, 2e9, 800, 0, busRow("all_reduce", 8, 32<<20, "NVLS_Simple", 100))
	unchangedRun := withRun(4, 2e9, 800, 30, busRow("all_reduce", 8, 32<<20, "NVLS_Simple", 70)) // the model: −30%
	base := Compare(a, unchangedRun, "A", "unchanged")
	for _, c := range []struct {
		name    string
		b       *Report
		row     string
		verdict bool
	}{
		{"nothing changed", unchangedRun, "all_reduce ×8 ≤32 MiB NVLS_Simple busbw", false},
		{"within the row's floor", withRun(4, 2e9, 800, 0, busRow("all_reduce", 8, 32<<20, "Ring_Simple", 75)), "all_reduce ×8 ≤32 MiB NVLS_Simple → Ring_Simple busbw", false},
		{"beyond it", withRun(4, 2e9, 800, 0, busRow("all_reduce", 8, 32<<20, "Ring_Simple", 40)), "all_reduce ×8 ≤32 MiB NVLS_Simple → Ring_Simple busbw", true},
		{"A is 0, within the unchanged change", withRun(4, 2e9, 800, 20), "stream gaps per step: host_wait", false},
		{"A is 0, beyond it", withRun(4, 2e9, 800, 400), "stream gaps per step: host_wait", true},
	} {
		cmpd := Compare(a, c.b, "A", "B")
		cmpd.SetNoiseFloor(1, "test")
		cmpd.SetRowFloors(base)
		r := findRow(cmpd, c.row)
		if r == nil {
			t.Fatalf("%s: no row %q", c.name, c.row)
		}
		if (r.Better != nil) != c.verdict {
			t.Errorf("%s: %q verdict %v; want one: %v", c.name, c.row, r.Better, c.verdict)
		}
	}
	cmpd := Compare(a, unchangedRun, "A", "B")
	cmpd.SetNoiseFloor(1, "test")
	cmpd.SetRowFloors(base)
	var b strings.Builder
	if err := CompareText(&b, cmpd); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "rows with a floor of their own (the unchanged replay's change on them): all_reduce ×8 ≤32 MiB NVLS_Simple busbw ±30.0%") {
		t.Errorf("the text does not list the row's floor:\n%s", b.String())
	}
}

// Only rows whose direction means better or worse get the word: not idle, overlap or the
// critical path's make-up; and a row whose cells read alike (0.0% → 0.0%) changes by 0%.
func TestDirectedOnly(t *testing.T) {
	a := withRun(4, 2e9, 800, 400, busRow("all_reduce", 8, 32<<20, "NVLS_Simple", 100))
	b := withRun(4, 2e9, 1600, 800, busRow("all_reduce", 8, 32<<20, "NVLS_Simple", 50))
	pa, pb := 0.01, 0.03
	a.Overlap.CommComputePct, b.Overlap.CommComputePct = &pa, &pb
	c := Compare(a, b, "A", "B")
	AddCriticalPaths(c, CriticalPath{Steps: 2, StepNs: 100, ByCategory: map[string]float64{"compute": 10, "communication": 5}},
		CriticalPath{Steps: 2, StepNs: 200, ByCategory: map[string]float64{"compute": 90, "communication": 50}})
	c.DirectedOnly()
	for _, want := range []struct {
		name    string
		verdict bool
	}{
		{"device idle per step (Σ devices)", false},
		{"stream gaps per step: host_wait", false},
		{"communication overlapped with compute", false},
		{"compute on it per step", false},
		{"all_reduce ×8 ≤32 MiB NVLS_Simple busbw", true},
		{"length per step", true},
		{"exposed communication per step", true},
	} {
		r := findRow(c, want.name)
		if r == nil {
			t.Fatalf("no row %q", want.name)
		}
		if (r.Better != nil) != want.verdict {
			t.Errorf("%s: verdict %v; want one: %v", want.name, r.Better, want.verdict)
		}
	}
	if r := findRow(c, "communication overlapped with compute"); r.DiffPct == nil || *r.DiffPct != 0 {
		t.Errorf("0.0%% → 0.0%%: change %v; want 0", r.DiffPct)
	}
}

// The verdict is taken against the floor of the row it is measured on: B, the unchanged replay
// itself, is as far from A on the mean step time after the first as the unchanged replay is (its
// own floor), beyond the comparison's floor (taken on another row): no verdict, not "faster".
func TestVerdictAgainstItsRowsFloor(t *testing.T) {
	steady := func(r *Report, ns int64) *Report { r.Steps.SteadyMeanNs = &ns; return r }
	a := steady(withRun(4, 2e9, 800, 0), 201_000_000)
	unchangedRun := steady(withRun(4, 2e9, 800, 0), 185_000_000) // −7.96%
	base := Compare(a, unchangedRun, "A", "unchanged")
	for _, c := range []struct {
		name string
		b    *Report
		want string
	}{
		{"B is the unchanged replay", unchangedRun, "no difference beyond the ±8.0% noise floor of that row"},
		{"B moves it as far the other way", steady(withRun(4, 2e9, 800, 0), 217_000_000), "no difference beyond the ±8.0% noise floor of that row"},
		{"B beyond it", steady(withRun(4, 2e9, 800, 0), 150_000_000), "B is 25.4% faster"},
	} {
		cmpd := Compare(a, c.b, "A", "B")
		cmpd.SetNoiseFloor(7.3, "the unchanged replay's error on the mean step time, the first step in")
		cmpd.SetRowFloors(base)
		if !strings.HasPrefix(cmpd.Verdict, c.want) {
			t.Errorf("%s: verdict %q; want %q…", c.name, cmpd.Verdict, c.want)
		}
		if r := findRow(cmpd, SteadyRow); c.b == unchangedRun && r.Better != nil {
			t.Errorf("%s: the row %q has a verdict (%v) within its own floor", c.name, SteadyRow, *r.Better)
		}
	}
}

// A row the unchanged replay moves by more than half is not reproduced by the replay: marked so
// (its change column says it, no six-digit percentage, no verdict) and listed apart from the rows
// with a floor of their own; a row moved less keeps its floor and its percentage.
func TestRowsNotReproduced(t *testing.T) {
	a := withRun(4, 2e9, 800, 3_000, busRow("all_reduce", 8, 32<<20, "NVLS_Simple", 100))
	unchangedRun := withRun(4, 2e9, 1_000, 17_700_000, busRow("all_reduce", 8, 32<<20, "NVLS_Simple", 70))
	base := Compare(a, unchangedRun, "A", "unchanged")
	c := Compare(a, withRun(4, 2e9, 1_100, 17_600_000, busRow("all_reduce", 8, 32<<20, "NVLS_Simple", 20)), "A", "B")
	c.SetNoiseFloor(1, "test")
	c.SetRowFloors(base)
	for _, want := range []struct {
		row string
		not bool
	}{
		{"stream gaps per step: host_wait", true},
		{"device idle per step (Σ devices)", false},
		{"all_reduce ×8 ≤32 MiB NVLS_Simple busbw", false},
		{SteadyRow, false},
	} {
		r := findRow(c, want.row)
		if r == nil {
			t.Fatalf("no row %q", want.row)
		}
		_, _, _, pct, verdict := r.Cells()
		if r.NotReproduced != want.not || (pct == "not reproduced") != want.not || want.not && (verdict != "" || r.Better != nil) {
			t.Errorf("%q: not reproduced %v, change %q, verdict %q; want not reproduced: %v", want.row, r.NotReproduced, pct, verdict, want.not)
		}
	}
	var b strings.Builder
	if err := CompareText(&b, c); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"rows not reproduced by the replay (the unchanged replay alone moves them by more than 50%: no prediction on them): stream gaps per step: host_wait\n",
		"rows with a floor of their own (the unchanged replay's change on them): device idle per step (Σ devices) ±25.0%; all_reduce ×8 ≤32 MiB NVLS_Simple busbw ±30.0%\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "586566.7%") || strings.Contains(text, "589900") {
		t.Errorf("the text gives the row not reproduced its six-digit change:\n%s", text)
	}
}
