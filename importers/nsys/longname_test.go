package nsys_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// TestNameLongerThanTheLimit: a name in StringIds (or an NVTX range's text) longer than 1 MiB is
// cut to its first 1 MiB, with one warning naming the file, table, row and limit; the rows that
// use it are kept. Whole, such a name made replay and convert fail writing their recording.
func TestNameLongerThanTheLimit(t *testing.T) {
	dir := t.TempDir()
	const long = 3 << 20
	tests := []struct {
		name, update, warn string
	}{
		{"StringIds", `UPDATE StringIds SET value = replace(hex(zeroblob(1572864)), '00', 'ab') WHERE id = 2`, "StringIds row 2"},
		{"NVTX text", `UPDATE NVTX_EVENTS SET text = replace(hex(zeroblob(1572864)), '00', 'cd') WHERE rowid = 2`, "NVTX_EVENTS row 2"},
	}
	base := filepath.Join(dir, "base.sqlite")
	writeExport(t, base, oldSchema, nsystest.OldRows()...)
	want, err := nsys.ReadFiles([]string{base}, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "long"+itoa(int64(i))+".sqlite")
			writeExport(t, p, oldSchema, append(nsystest.OldRows(), `UPDATE NVTX_EVENTS SET text = 'x', textId = NULL WHERE rowid = 2`, tc.update)...)
			im, err := nsys.ReadFiles([]string{p}, nsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			w := p + ": " + tc.warn + ": a name of " + itoa(long) + " bytes, longer than the 1 MiB limit of one name: cut to its first 1 MiB"
			if n := len(slices.DeleteFunc(slices.Clone(im.Warnings), func(s string) bool { return s != w })); n != 1 {
				t.Errorf("warnings %.300q; want %q once", im.Warnings, w)
			}
			longest := 0
			for i := range im.Strings.Len() {
				longest = max(longest, len(im.Strings.Lookup(uint32(i))))
			}
			if longest > 1<<20 {
				t.Errorf("the longest name is %d bytes; want it cut to %d", longest, 1<<20)
			}
			if len(im.Events) != len(want.Events) {
				t.Errorf("%d events; want %d, the untouched export's", len(im.Events), len(want.Events))
			}
		})
	}
}
