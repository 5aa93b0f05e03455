package nsys

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/importers/nsys/nsystest"
	"github.com/xfertop/xfertop/timeline"
)

// TestCursorRefusesDisorder: a cursor told that its table is in start order (or within its reorder
// buffer) when it is not, as it would be if the survey had read other rows than it reads, fails
// with an error naming the file and the table rather than hand on an event out of start order.
func TestCursorRefusesDisorder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rev.sqlite")
	const n = 4 * reorderRows // kernels stored in reverse: beyond the buffer too
	if err := nsystest.WriteLarge(path, n, n); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		mode  int
		pages bool
		fail  bool
	}{
		{"straight", readStraight, false, true},
		{"reorder buffer", readReorder, false, true},
		{"straight, from the pages", readStraight, true, true},
		{"reorder buffer, from the pages", readReorder, true, true},
		{"sorted", readSorted, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer d.close()
			m := &importer{im: &kineto.Imported{Strings: timeline.NewStrings()}, labels: map[string]uint32{"": 0}, launches: newLaunchTimes()}
			f := newFileReader(m, 0, d)
			defer f.close()
			if err := f.readEnums(); err != nil {
				t.Fatal(err)
			}
			f.maxLocal = 7
			plan := readPlan{mode: tc.mode, hold: reorderRows}
			if tc.pages {
				names, _ := pageCols(tables[1], d.tables[tableKernel])
				if plan.layout, err = d.readLayout(tableKernel, names); err != nil {
					t.Fatal(err)
				}
			}
			c, err := f.cursor(tables[1], 0, plan)
			if err != nil {
				t.Fatal(err)
			}
			defer c.close()
			if (c.pages != nil) != tc.pages {
				t.Fatalf("from the pages: %v, want %v", c.pages != nil, tc.pages)
			}
			events := 0
			for {
				more, err := c.next()
				if err != nil {
					if !tc.fail || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tableKernel) {
						t.Fatalf("after %d events: %v", events, err)
					}
					return
				}
				if !more {
					break
				}
				events++
			}
			if tc.fail || events != n {
				t.Fatalf("%d events, no error; want an error: %v", events, tc.fail)
			}
		})
	}
}
