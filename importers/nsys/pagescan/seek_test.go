package pagescan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// formatRow writes a row as rowsViaSQL does.
func formatRow(r *Row, cols []Column) string {
	var b strings.Builder
	fmt.Fprint(&b, r.Rowid)
	for i, col := range cols {
		switch {
		case r.Null[i]:
			b.WriteString(" NULL")
		case col.Text:
			fmt.Fprintf(&b, " %q", r.Text[i])
		default:
			fmt.Fprintf(&b, " %d", r.Ints[i])
		}
	}
	return b.String()
}

// readEvery reads the table at root through a Source (the whole file in memory, or read through
// a cache) with overflow pages read: the rows of a scan, each row found by its rowid, and the
// largest rowid.
func readEvery(path string, root uint32, cols []Column, whole bool, rowids []int64) (scan, found []string, maxRowid int64, err error) {
	limit := int64(0)
	if whole {
		limit = 1 << 30
	}
	s, err := OpenSource(path, limit)
	if err != nil {
		return nil, nil, 0, err
	}
	defer s.Close()
	if s.Whole() != whole {
		return nil, nil, 0, fmt.Errorf("Whole() = %v, want %v", s.Whole(), whole)
	}
	f := s.File()
	defer f.Close()
	c, err := f.Rows(root, cols)
	if err != nil {
		return nil, nil, 0, err
	}
	c.Overflow = true
	for c.Next() {
		scan = append(scan, formatRow(c.Row(), cols))
	}
	if err := c.Err(); err != nil {
		return nil, nil, 0, err
	}
	for _, id := range rowids {
		ok, err := c.Find(id)
		if err != nil {
			return nil, nil, 0, err
		}
		if ok {
			found = append(found, formatRow(c.Row(), cols))
		}
	}
	if c.Next() {
		return nil, nil, 0, fmt.Errorf("Next after Find moved to a row")
	}
	maxRowid, err = f.MaxRowid(root)
	return scan, found, maxRowid, err
}

// rowidsOf are the rowids of rows written as rowsViaSQL writes them, with the one before and after
// each (absent ones, mostly).
func rowidsOf(rows []string) []int64 {
	var ids []int64
	for _, r := range rows {
		var id int64
		fmt.Sscan(r, &id)
		ids = append(ids, id-1, id, id+1)
	}
	return ids
}

// TestOverflowFindMax: with Overflow, a record that spills to overflow pages is read whole (texts
// of every length to 100,000 bytes, on pages of 512 bytes to 64 KiB), as SQL reads it; Find reads
// each row by its rowid as the scan read it (and no row for a rowid the table lacks); MaxRowid is
// SQL's max(rowid); the whole file in memory reads as the file through a cache.
func TestOverflowFindMax(t *testing.T) {
	rows := "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 3000) " +
		"INSERT INTO t SELECT i * 3, i, CASE WHEN i % 7 = 0 THEN NULL WHEN i % 50 = 0 THEN printf('%.*c', i * 33, 'x') ELSE 'name ' || i END, -i FROM s"
	for _, tc := range []struct {
		name  string
		stmts []string
	}{
		{"4 KiB pages", []string{"CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, s TEXT, b INTEGER)", rows}},
		{"512-byte pages", []string{"PRAGMA page_size = 512", "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, s TEXT, b INTEGER)", rows}},
		{"64 KiB pages", []string{"PRAGMA page_size = 65536", "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, s TEXT, b INTEGER)", rows}},
		{"empty", []string{"CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, s TEXT, b INTEGER)"}},
		{"one row", []string{"CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, s TEXT, b INTEGER)", "INSERT INTO t VALUES (7, 1, printf('%.*c', 5000, 'z'), 2)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.sqlite")
			write(t, path, tc.stmts...)
			cols := []Column{{Pos: 1}, {Pos: 2, Text: true}, {Pos: 3}}
			want, root, err := rowsViaSQL(path, "t", []string{"a", "s", "b"}, map[string]bool{"s": true})
			if err != nil {
				t.Fatal(err)
			}
			var wantMax int64
			if len(want) > 0 {
				fmt.Sscan(want[len(want)-1], &wantMax)
			}
			for _, whole := range []bool{false, true} {
				scan, found, max, err := readEvery(path, root, cols, whole, rowidsOf(want))
				if err != nil {
					t.Fatalf("whole %v: %v", whole, err)
				}
				if !slices.Equal(scan, want) {
					t.Fatalf("whole %v: %d rows scanned, %d from SQL; first difference:\n%s", whole, len(scan), len(want), firstDiff(scan, want))
				}
				if !slices.Equal(found, want) {
					t.Fatalf("whole %v: %d rows found, %d from SQL; first difference:\n%s", whole, len(found), len(want), firstDiff(found, want))
				}
				if max != wantMax {
					t.Fatalf("whole %v: MaxRowid %d, want %d", whole, max, wantMax)
				}
			}
		})
	}
}

// FuzzFind: a patched file (as FuzzScan patches it) never makes a scan with overflow pages, Find
// or MaxRowid panic or loop; when SQL and the pages both read the table, the scan reads SQL's rows,
// and a row found by its rowid is one of them (a damaged b-tree whose keys are out of order may
// hide a row from a descent, as from SQLite's own).
func FuzzFind(f *testing.F) {
	seed := filepath.Join(f.TempDir(), "seed.sqlite")
	write(f, seed, "PRAGMA page_size = 512", "CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT, d INTEGER)",
		"WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 299) "+
			"INSERT INTO t SELECT i * 5, CASE WHEN i % 5 = 0 THEN NULL WHEN i % 31 = 0 THEN printf('%.*c', 900 + i, 'o') ELSE 'name ' || i END, -i FROM s")
	data := readFile(f, seed)
	f.Add([]byte{})
	for _, off := range []int{16, 20, 512 + 3, 1024 + 8, len(data) / 2, len(data) - 40} {
		f.Add([]byte{byte(off), byte(off >> 8), 0xFF})
		f.Add([]byte{byte(off), byte(off >> 8), 0x81})
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, patches []byte) {
		file := slices.Clone(data)
		for i := 0; i+3 <= len(patches) && i < 3*64; i += 3 {
			file[int(binary.LittleEndian.Uint16(patches[i:]))%len(file)] = patches[i+2]
		}
		path := filepath.Join(dir, "t.sqlite")
		writeFile(t, path, file)
		want, root, sqlErr := rowsViaSQL(path, "t", []string{"s", "d"}, map[string]bool{"s": true})
		if root == 0 {
			root = 2 // the seed's
		}
		cols := []Column{{Pos: 1, Text: true}, {Pos: 2}}
		for _, whole := range []bool{false, true} {
			scan, found, _, err := readEvery(path, root, cols, whole, rowidsOf(want))
			if err != nil || sqlErr != nil {
				continue
			}
			if !slices.Equal(scan, want) {
				t.Fatalf("whole %v: %d rows scanned, %d from SQL; first difference:\n%s", whole, len(scan), len(want), firstDiff(scan, want))
			}
			for _, r := range found {
				if !slices.Contains(want, r) {
					t.Fatalf("whole %v: found %s, not a row SQL reads", whole, r)
				}
			}
		}
	})
}

// TestUTF16Refused: the texts of a database in UTF-16 are refused (SQL converts them), its
// integers read.
func TestUTF16Refused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.sqlite")
	write(t, path, "PRAGMA encoding = 'UTF-16le'", "CREATE TABLE t (a INTEGER, s TEXT)", "INSERT INTO t VALUES (1, 'x'), (2, 'y')")
	_, root, err := rowsViaSQL(path, "t", []string{"a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rowsViaPages(path, root, []Column{{Pos: 0}, {Pos: 1, Text: true}}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("a UTF-16 text read: %v, want ErrUnsupported", err)
	}
	if got, err := rowsViaPages(path, root, []Column{{Pos: 0}}); err != nil || !slices.Equal(got, []string{"1 1", "2 2"}) {
		t.Fatalf("integers: %q, %v", got, err)
	}
}

// TestMappedFileCutShort: a file read whole (mapped) that is cut short while it is read makes a
// read that reaches past its new end raise a panic (on a goroutine that asked for faults as
// panics) that Fault turns into an error naming the file, never crash the process; Fault leaves
// other panics alone.
func TestMappedFileCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.sqlite")
	write(t, path, "CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT, b INTEGER)",
		"WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 20000) INSERT INTO t SELECT i, 'name ' || i, i FROM s")
	_, root, err := rowsViaSQL(path, "t", []string{"b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenSource(path, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Mapped() {
		t.Skip("the file was read, not mapped")
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	f := s.File()
	defer f.Close()
	guarded := func(read func()) (err error) {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if r := recover(); r != nil {
				if err = s.Fault(r); err == nil {
					panic(r)
				}
			}
		}()
		read()
		return nil
	}
	c, err := f.Rows(root, []Column{{Pos: 1, Text: true}, {Pos: 2}})
	if err != nil {
		t.Fatal(err)
	}
	scanErr := guarded(func() {
		for c.Next() {
		}
	})
	findErr := guarded(func() { _, _ = c.Find(19999) })
	maxErr := guarded(func() { _, _ = f.MaxRowid(root) })
	for _, err := range []error{scanErr, findErr, maxErr} {
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "cut short") {
			t.Errorf("%v; want an error saying that %s was cut short", err, path)
		}
	}
	if s.Fault("another panic") != nil {
		t.Error("Fault took another panic for a fault on the file")
	}
}
