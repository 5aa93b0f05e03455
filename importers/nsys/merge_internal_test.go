package nsys

import (
	"context"
	"fmt"
	"os"
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
			d, err := open(context.Background(), path, 0, false)
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

// TestCursorPagesChanged: a cursor reading its table's pages, which the survey read whole, meets a
// damaged page (the file was overwritten meanwhile): it fails with an error naming the file, the
// table and the page, never hands on what it misread.
func TestCursorPagesChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.sqlite")
	if err := nsystest.WriteLarge(path, 4096, 1); err != nil {
		t.Fatal(err)
	}
	d, err := open(context.Background(), path, 0, false)
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
	names, _ := pageCols(tables[1], d.tables[tableKernel])
	l, err := d.readLayout(tableKernel, names)
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.cursor(tables[1], 0, readPlan{mode: readStraight, layout: l})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	// Overwrite the root page's type in place: the cursor's file sees it.
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.WriteAt([]byte{0x07}, int64(l.root-1)*4096)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	more, err := c.next()
	want := fmt.Sprintf("page %d", l.root)
	if more || err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tableKernel) || !strings.Contains(err.Error(), want) {
		t.Fatalf("next = %v, %v; want an error naming %s, %s and %s", more, err, path, tableKernel, want)
	}
}

// TestTablesFitRowVals: every table's columns fit a rowVals, and its text column is one of them.
func TestTablesFitRowVals(t *testing.T) {
	for _, tb := range tables {
		if len(tb.cols) > maxCols || tb.text >= len(tb.cols) || tb.cols[0] != "rowid" {
			t.Errorf("%s: %d columns (at most %d), text column %d, first %q (want rowid)", tb.name, len(tb.cols), maxCols, tb.text, tb.cols[0])
		}
	}
}
