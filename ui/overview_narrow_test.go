package ui

import (
	"strings"
	"testing"
)

// At 80 columns the overview's rolled-up device table (4,096 GPUs: "▸h511" widens the first
// column) has no room for the GB/s column: it gives way whole, as the transfers view's least
// important columns do, rather than be cut to "G…" and "5…"; the table's heading note too. At 160
// columns it is there.
func TestOverviewColumnsGiveWayWhole(t *testing.T) {
	src := clusterSource(t, 4096)
	for _, c := range []struct {
		w, h  int
		total bool
	}{{80, 24, false}, {160, 40, true}} {
		m := sized(src, c.w, c.h)
		var table []string
		in := false
		for _, l := range strings.Split(text(m), "\n") {
			if strings.HasPrefix(l, "gpu ") {
				in = true
			}
			if in && (strings.HasPrefix(l, "gpu ") || strings.HasPrefix(l, "▸h")) {
				table = append(table, l)
			}
		}
		if len(table) < 2 {
			t.Fatalf("%dx%d: no device table:\n%s", c.w, c.h, text(m))
		}
		for _, l := range table {
			if strings.HasSuffix(strings.TrimRight(l, " "), "…") {
				t.Errorf("%dx%d: a table line cut mid-value: %q", c.w, c.h, l)
			}
		}
		if got := strings.Contains(table[0], "GB/s"); got != c.total {
			t.Errorf("%dx%d: GB/s column shown %v; want %v: %q", c.w, c.h, got, c.total, table[0])
		}
	}
}
