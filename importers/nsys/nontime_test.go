package nsys_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// TestTimeThatIsNoInteger: SQLite does not enforce column types, and reads a text or a real in an
// integer column as 0, the capture's epoch. A kernel whose start or end is not an integer is left
// out with a warning naming the file, table and row, as an out-of-range time is; the span and the
// events are the untouched export's but for that row.
func TestTimeThatIsNoInteger(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.sqlite")
	writeExport(t, base, oldSchema, nsystest.OldRows()...)
	want, err := nsys.ReadFiles([]string{base}, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, set string }{
		{"text start", `start = 'abc'`},
		{"text end", `"end" = 'abc'`},
		{"real start", `start = 5000002000.5`},
		{"blob end", `"end" = x'00ff'`},
		{"numeric text", `start = '5000002000x'`},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "bad"+itoa(int64(i))+".sqlite")
			writeExport(t, p, oldSchema, append(nsystest.OldRows(), `UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET `+tc.set+` WHERE rowid = 1`)...)
			im, err := nsys.ReadFiles([]string{p}, nsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			w := p + ": CUPTI_ACTIVITY_KIND_KERNEL row 1: start or end is not an integer"
			if !slices.ContainsFunc(im.Warnings, func(s string) bool { return strings.HasPrefix(s, w) && strings.HasSuffix(s, "row left out") }) {
				t.Errorf("warnings %q; want %q ... row left out", im.Warnings, w)
			}
			if len(im.Events) != len(want.Events)-1 {
				t.Errorf("%d events; want %d (the untouched export's but the bad row)", len(im.Events), len(want.Events)-1)
			}
			span := func(im *kineto.Imported) int64 {
				var hi int64
				for _, e := range im.Events {
					hi = max(hi, e.End)
				}
				return hi
			}
			if span(im) > span(want) {
				t.Errorf("events end at %d ns; want within the untouched export's %d", span(im), span(want))
			}
		})
	}
}
