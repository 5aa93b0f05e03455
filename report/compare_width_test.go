package report

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
)

// A collective's long label (its algorithm changed: "→", "×" and "≤" are one column, three bytes)
// widens the name column instead of pushing the other rows right: every line of the table is as
// wide as the others, and every row's name starts in the same column.
func TestCompareTextLongNameAligned(t *testing.T) {
	a := withRun(4, 2e9, 800, 400, busRow("all_reduce", 8, 32<<20, "NVLS_Simple", 100))
	b := withRun(4, 2e9, 800, 400, busRow("all_reduce", 8, 32<<20, "Ring_LL128", 50))
	var out strings.Builder
	if err := CompareText(&out, Compare(a, b, "A", "B")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	var table []string
	for _, l := range lines {
		if strings.HasPrefix(l, "  ") && strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "  A:") && !strings.HasPrefix(l, "  B:") {
			table = append(table, l)
		}
	}
	if len(table) < 4 {
		t.Fatalf("no table in:\n%s", out.String())
	}
	w := ansi.StringWidth(table[0])
	for _, l := range table {
		if ansi.StringWidth(l) != w {
			t.Errorf("line %q is %d columns; the header is %d", l, ansi.StringWidth(l), w)
		}
		if strings.Contains(l, "busbw") || strings.Contains(l, "step time") {
			if !strings.HasPrefix(l, "    ") || l[4] == ' ' {
				t.Errorf("row %q does not start its name in column 4", l)
			}
		}
	}
}

// A collective whose ranks or size the source does not record is named in words, not "×— ≤—".
func TestCollNameUnknown(t *testing.T) {
	for _, c := range []struct {
		ranks int
		class int64
		want  string
	}{
		{0, 0, "send_recv (ranks and size unknown) busbw"},
		{8, 0, "send_recv ×8 (size unknown) busbw"},
		{0, 1 << 20, "send_recv (ranks unknown) ≤1 MiB busbw"},
		{8, 1 << 20, "send_recv ×8 ≤1 MiB busbw"},
	} {
		x := analysis.Collective{Op: "send_recv", Ranks: c.ranks, SizeClass: c.class}
		if got := collName(&x, &x); got != c.want {
			t.Errorf("ranks %d, size %d: %q; want %q", c.ranks, c.class, got, c.want)
		}
	}
}
