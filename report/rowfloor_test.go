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
