package nsys_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// sharedExport is the path of an export in ../shared/data/nsys beside the repository, or "" with
// the test skipped when that directory is absent (it is not part of the project).
func sharedExport(t testing.TB, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	p := filepath.Join(root, "..", "shared", "data", "nsys", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is absent (the sample Nsight Systems exports live outside the project): %v", p, err)
	}
	return p
}

// sharedExportOrEmpty is sharedExport's path, or "" when it is absent.
func sharedExportOrEmpty(name string) string {
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "data", "nsys", name)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// query opens an export read-only for the test's own SQL.
func query(t testing.TB, path string) *sqlite3.Conn {
	t.Helper()
	c, err := sqlite3.OpenFlags("file:"+path+"?immutable=1", sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rows runs q and returns its rows as int64s (NULL as -1).
func rows(t testing.TB, c *sqlite3.Conn, q string) [][]int64 {
	t.Helper()
	s, _, err := c.Prepare(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer s.Close()
	var out [][]int64
	for s.Step() {
		r := make([]int64, s.ColumnCount())
		for i := range r {
			if s.ColumnType(i) == sqlite3.NULL {
				r[i] = -1
			} else {
				r[i] = s.ColumnInt64(i)
			}
		}
		out = append(out, r)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// The synthetic export's tables and rows (nsystest): a process 4242 on host 0, thread 7.
const (
	oldSchema = nsystest.OldSchema
	gpid      = nsystest.GPID
	gtid      = nsystest.GTID
)

// oldRows fills oldSchema: a process whose CUDA device 0 is GPU 3 and device 1 GPU 5.
var oldRows = nsystest.OldRows()

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// writeExport creates an SQLite file at path from DDL and rows.
func writeExport(t testing.TB, path, ddl string, inserts ...string) {
	t.Helper()
	if err := nsystest.Write(path, ddl, inserts...); err != nil {
		t.Fatal(err)
	}
}
