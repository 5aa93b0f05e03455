package nsys_test

import (
	"path/filepath"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// TestEventsFromTheSurveysRows: an export held whole in memory has its tables' events made from
// the rows the survey read (each row read from its pages once), and the import is the one made by
// reading every row from the pages again (the file read through caches, nothing kept): the same
// events, names, warnings, devices and time 0; for exports of both schemas, stored in and out of
// start order, and the samples.
func TestEventsFromTheSurveysRows(t *testing.T) {
	dir := t.TempDir()
	inputs := map[string]string{}
	for name, block := range map[string]int{"in order": 1, "blocks of 64": 64} {
		path := filepath.Join(dir, name+".sqlite")
		if err := nsystest.WriteLarge(path, 4096, block); err != nil {
			t.Fatal(err)
		}
		inputs[name] = path
	}
	inputs["old schema"] = filepath.Join(dir, "old.sqlite")
	writeExport(t, inputs["old schema"], oldSchema, nsystest.OldRows()...)
	inputs["2026"] = filepath.Join(dir, "v2026.sqlite")
	writeVersion(t, inputs["2026"], "schema-2026.sql", sameEnum)
	for _, name := range []string{"mfu_2gpu_after.sqlite", "mock.sqlite"} {
		if p := sharedExportOrEmpty(name); p != "" {
			inputs[name] = p
		}
	}
	for name, path := range inputs {
		t.Run(name, func(t *testing.T) {
			want, pages, stored, err := nsys.ReadFilesStored([]string{path}, nsys.Options{}, true)
			if err != nil || pages == 0 || stored != 0 {
				t.Fatalf("through caches: %v, %d tables' events from their pages, %d from the survey's rows; want some, none", err, pages, stored)
			}
			got, pages2, stored, err := nsys.ReadFilesStored([]string{path}, nsys.Options{}, false)
			if err != nil {
				t.Fatal(err)
			}
			if stored != pages2 || pages2 != pages {
				t.Errorf("whole: %d tables' events from the survey's rows, of %d read from pages; want all %d", stored, pages2, pages)
			}
			sameImport(t, "from the survey's rows", got, want)
		})
	}
}
