package nsys_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// TestSurveyFromPages: the survey reads the tables from their pages where it can, and the import is
// then the one a survey with SQL alone makes (the same events, names, warnings, devices, GPU names
// and time 0): exports of both schema versions, large ones stored in and out of start order, the
// real samples, several files; and a table holding a value the pages are not read for (a real, a
// text) or an index is read with SQL, or in its rowid order, to the same import.
func TestSurveyFromPages(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, write func(path string)) []string {
		path := filepath.Join(dir, name)
		write(path)
		return []string{path}
	}
	old := func(extra ...string) func(string) {
		return func(path string) { writeExport(t, path, oldSchema, append(nsystest.OldRows(), extra...)...) }
	}
	large := func(n, block int) func(string) {
		return func(path string) {
			if err := nsystest.WriteLarge(path, n, block); err != nil {
				t.Fatal(err)
			}
		}
	}
	version := func(schema string) func(string) {
		return func(path string) { writeVersion(t, path, schema, sameEnum) }
	}
	const all = 6 // the activity tables of the old schema
	type tc struct {
		name  string
		paths []string
		pages int    // tables read from their pages
		warn  string // in a warning
	}
	cases := []tc{
		{"old schema", file("old.sqlite", old()), all, ""},
		{"2024", file("v2024.sqlite", version("schema-2024.sql")), 6, ""},
		{"2026", file("v2026.sqlite", version("schema-2026.sql")), 6, ""},
		{"large, in start order", file("in.sqlite", large(4096, 1)), all, ""},
		{"large, blocks of 64", file("b64.sqlite", large(4096, 64)), all, ""},
		{"large, reversed", file("rev.sqlite", large(1<<15, 1<<15)), all, ""},
		{"a real start", file("real.sqlite", old(`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5000030000.5, 5000031000, 1, 1, 14, 9, 0, 3, 2, 1)`)), all - 1, ""},
		{"a text device", file("text.sqlite", old(`INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (5000030000, 5000031000, 'x', 1, 14, 0, 0, 0, 512)`)), all - 1, ""},
		{"an out-of-range time", file("far.sqlite", old(`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (9000000000000000000, 9000000000000000001, 1, 0, 9, 1, 0)`)), all, ""},
		{"a start 100 h later", file("later.sqlite", old(`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (365000000000000, 365000000001000, 1, 1, 14, 9, 0, 3, 2, 1)`)), all,
			"1 event starts more than 24 h from the capture's other events: left out"},
		{"a start 100 h later, and a real", file("later-real.sqlite", old(`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (365000000000000, 365000000001000, 1, 1, 14, 9, 0, 3, 2, 1)`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (5000030000.5, 5000031000, 1, 1, 14, 0, 0, 0, 512)`)), all - 1, "1 event starts more than 24 h from the capture's other events: left out"},
		{"a covering index by start, descending", file("index.sqlite", old(`CREATE INDEX k ON CUPTI_ACTIVITY_KIND_KERNEL(start DESC, end, deviceId, streamId, correlationId, globalPid, demangledName, shortName)`)), all, ""},
	}
	two := append(append([]string{}, cases[0].paths...), cases[4].paths...)
	cases = append(cases, tc{"two files", two, 2 * all, ""})
	for _, name := range []string{"mfu_2gpu_after.sqlite", "mock.sqlite"} {
		if p := sharedExportOrEmpty(name); p != "" {
			cases = append(cases, tc{name, []string{p}, -1, ""})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, n, err := nsys.ReadFilesSurveyed(c.paths, nsys.Options{}, true)
			if err != nil || n != 0 {
				t.Fatalf("with SQL: %v, %d tables from pages", err, n)
			}
			got, n, err := nsys.ReadFilesSurveyed(c.paths, nsys.Options{}, false)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d tables read from their pages", n)
			if c.pages >= 0 && n != c.pages || n == 0 {
				t.Errorf("%d tables read from their pages, want %d", n, c.pages)
			}
			if c.warn != "" && !strings.Contains(strings.Join(got.Warnings, "\n"), c.warn) {
				t.Errorf("warnings %q: want one saying %q", got.Warnings, c.warn)
			}
			if len(got.Events) == 0 || !reflect.DeepEqual(got.Events, want.Events) || !reflect.DeepEqual(got.Warnings, want.Warnings) ||
				got.Devices != want.Devices || got.EpochUnixNs != want.EpochUnixNs || !reflect.DeepEqual(got.Extra, want.Extra) ||
				!reflect.DeepEqual(got.Strings, want.Strings) {
				t.Fatalf("from pages: %d events, %d devices, epoch %d, warnings %v, extra %v\nwith SQL: %d events, %d devices, epoch %d, warnings %v, extra %v",
					len(got.Events), got.Devices, got.EpochUnixNs, got.Warnings, got.Extra, len(want.Events), want.Devices, want.EpochUnixNs, want.Warnings, want.Extra)
			}
		})
	}
}
