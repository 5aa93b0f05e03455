package nsys_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// threadRuns adds the runtime calls of threads threads, n each, stored thread by thread (as Nsight
// stores them) while their times interleave: thread k's call i at 5.0001 s + i µs + 37k ns. Their
// names are met in another order by start than stored, and a few calls give warnings (one lasting
// more than 24 h, left out; two ending before they start), so that converting them in another
// order than stored would intern other labels and warn in another order.
func threadRuns(threads, n int) []string {
	rows := nsystest.OldRows()
	var names []string
	for id := 10; id < 23; id++ {
		names = append(names, fmt.Sprintf("(%d,'cudaCall%d')", id, id))
	}
	rows = append(rows, "INSERT INTO StringIds VALUES "+strings.Join(names, ","))
	corr := 100
	for k := range threads {
		var vals []string
		for i := range n {
			start := 5000100000 + int64(i)*1000 + int64(k)*37
			end := start + 500
			switch {
			case k == 0 && i == 50:
				end = start + 25*3600*1e9
			case k == 1 && i == 5, k == 2 && i == 3:
				end = start - 100
			}
			vals = append(vals, fmt.Sprintf("(%d, %d, 1, %d, %d, %d, 0)", start, end, nsystest.GTID+int64(k), corr, 10+(i*7+k*3)%13))
			corr++
		}
		rows = append(rows, "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES "+strings.Join(vals, ","))
	}
	return rows
}

// TestRuntimeByRuns: runtime calls stored thread by thread, in a few runs in start order, are read
// by merging their runs, and import as through a reorder buffer (the file's pages read through
// caches): the same events in the same order, the same labels (names interned in the same order)
// and the same warnings in the same order. Stored in more runs than a store notes, they are read
// through a reorder buffer, the same again.
func TestRuntimeByRuns(t *testing.T) {
	for _, c := range []struct {
		threads int
		byRuns  int
	}{{6, 1}, {70, 0}} {
		t.Run(fmt.Sprintf("%d threads", c.threads), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runs.sqlite")
			writeExport(t, path, oldSchema, threadRuns(c.threads, 200)...)
			want, _, stored, err := nsys.ReadFilesStored([]string{path}, nsys.Options{}, true)
			if err != nil || stored != 0 {
				t.Fatalf("through caches: %v, %d tables from the survey's rows; want none", err, stored)
			}
			got, stored, runs, err := nsys.ReadFilesByRuns([]string{path}, nsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if runs != c.byRuns || stored == 0 {
				t.Errorf("%d tables read by their runs, %d from the survey's rows; want %d, some", runs, stored, c.byRuns)
			}
			if len(want.Warnings) < 3 {
				t.Fatalf("warnings %q: want the three rows' at least", want.Warnings)
			}
			sameImport(t, "by runs", got, want)
		})
	}
}
