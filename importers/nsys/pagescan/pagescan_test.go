package pagescan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"
)

// write creates an SQLite file at path with the statements stmts.
func write(t testing.TB, path string, stmts ...string) {
	t.Helper()
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range stmts {
		if err := c.Exec(q); err != nil {
			t.Fatalf("%.100s: %v", q, err)
		}
	}
}

// viaSQL reads cols of table with SQL, in a full scan's order: each row its rowid and its values
// as "NULL" or the integer.
func viaSQL(t testing.TB, path, table string, cols []string) ([]string, uint32, error) {
	t.Helper()
	c, err := sqlite3.OpenFlags("file:"+path+"?immutable=1", sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
	if err != nil {
		return nil, 0, err
	}
	defer c.Close()
	var root uint32
	s, _, err := c.Prepare("SELECT rootpage FROM sqlite_master WHERE name = ?")
	if err != nil {
		return nil, 0, err
	}
	s.BindText(1, table)
	if s.Step() {
		root = uint32(s.ColumnInt64(0))
	}
	s.Close()
	q := "SELECT rowid, " + strings.Join(cols, ", ") + " FROM " + table + " NOT INDEXED"
	s, _, err = c.Prepare(q)
	if err != nil {
		return nil, root, err
	}
	defer s.Close()
	var out []string
	for s.Step() {
		var b strings.Builder
		fmt.Fprint(&b, s.ColumnInt64(0))
		for i := range cols {
			if s.ColumnType(i+1) == sqlite3.NULL {
				b.WriteString(" NULL")
			} else {
				fmt.Fprintf(&b, " %d", s.ColumnInt64(i+1))
			}
		}
		out = append(out, b.String())
	}
	return out, root, s.Err()
}

// viaPages reads the record columns cols of the table at root from the pages, as viaSQL writes
// them.
func viaPages(path string, root uint32, cols []int) ([]string, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	err = f.Scan(root, cols, func(r *Row) error {
		var b strings.Builder
		fmt.Fprint(&b, r.Rowid)
		for i := range cols {
			if r.Null[i] {
				b.WriteString(" NULL")
			} else {
				fmt.Fprintf(&b, " %d", r.Ints[i])
			}
		}
		out = append(out, b.String())
		return nil
	})
	return out, err
}

// TestAgreesWithSQL: the rows read from the pages are those SQLite reads, in its order: integers
// of every width, NULLs, columns added after the rows were written, tables of one page and of
// several levels, pages from 512 bytes to 64 KiB, records that spill to overflow pages after the
// columns read; and what the scanner does not read is refused, not misread.
func TestAgreesWithSQL(t *testing.T) {
	ints := []int64{0, 1, -1, 127, -128, 128, 32767, -32768, 1 << 23, -(1 << 23), 1<<31 - 1, -(1 << 31), 1 << 40,
		-(1 << 47), 1<<47 - 1, 1 << 62, math.MaxInt64, math.MinInt64}
	var values []string
	for i, v := range ints {
		values = append(values, fmt.Sprintf("(%d, %d, NULL, %d)", v, i, -v/3))
	}
	many := "WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 99999) " +
		"INSERT INTO t SELECT 5000000000 + i * 2000, i % 8, CASE WHEN i % 7 = 0 THEN NULL ELSE i END, -i FROM s"
	// Six kinds of value in a, in turn, and five in c: rows repeat 30 headers.
	repeat := "WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 9999) " +
		"INSERT INTO t SELECT CASE i % 6 WHEN 0 THEN 0 WHEN 1 THEN 1 WHEN 2 THEN NULL WHEN 3 THEN 300 WHEN 4 THEN 1 << 40 ELSE -5 END, " +
		"i, CASE i % 5 WHEN 0 THEN NULL WHEN 1 THEN 70000 ELSE i % 3 END, -i FROM s"
	for _, tc := range []struct {
		name  string
		stmts []string
		cols  []string // columns read with SQL
		rec   []int    // and their positions in the record
		err   error    // nil, ErrUnsupported, or a *CorruptError
	}{
		{"widths", []string{"CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER, d INTEGER)", "INSERT INTO t VALUES " + strings.Join(values, ", ")},
			[]string{"a", "b", "c", "d"}, []int{0, 1, 2, 3}, nil},
		{"out of record order", []string{"CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER, d INTEGER)", "INSERT INTO t VALUES " + strings.Join(values, ", ")},
			[]string{"d", "a", "c"}, []int{3, 0, 2}, nil},
		{"many rows, 4 KiB pages", []string{"CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER, d INTEGER)", many},
			[]string{"a", "b", "c", "d"}, []int{0, 1, 2, 3}, nil},
		{"many rows, 512-byte pages", []string{"PRAGMA page_size = 512", "CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER, d INTEGER)", many},
			[]string{"a", "c"}, []int{0, 2}, nil},
		{"many rows, 64 KiB pages", []string{"PRAGMA page_size = 65536", "CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER, d INTEGER)", many},
			[]string{"b", "d"}, []int{1, 3}, nil},
		{"headers that repeat, more than a Cursor keeps", []string{"CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER, d INTEGER)", repeat},
			[]string{"a", "b", "c", "d"}, []int{0, 1, 2, 3}, nil},
		{"rows deleted", []string{"CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER, d INTEGER)", many, "DELETE FROM t WHERE a % 3 = 0"},
			[]string{"a", "d"}, []int{0, 3}, nil},
		{"column added", []string{"CREATE TABLE t (a INTEGER)", "INSERT INTO t VALUES (1), (2)", "ALTER TABLE t ADD COLUMN b INTEGER",
			"INSERT INTO t VALUES (3, 4)"}, []string{"a", "b"}, []int{0, 1}, nil},
		{"spilled after the columns read", []string{"CREATE TABLE t (a INTEGER, b INTEGER, c BLOB)",
			"INSERT INTO t VALUES (1, 2, zeroblob(100000)), (3, 4, zeroblob(5000)), (5, 6, NULL)"}, []string{"a", "b"}, []int{0, 1}, nil},
		{"spilled before a column read", []string{"CREATE TABLE t (a INTEGER, c BLOB, b INTEGER)",
			"INSERT INTO t VALUES (1, zeroblob(100000), 2)"}, []string{"a", "b"}, []int{0, 2}, ErrUnsupported},
		{"a real", []string{"CREATE TABLE t (a, b)", "INSERT INTO t VALUES (1, 2), (1.5, 3)"}, []string{"a", "b"}, []int{0, 1}, ErrUnsupported},
		{"a text", []string{"CREATE TABLE t (a, b)", "INSERT INTO t VALUES (1, 2), ('x', 3)"}, []string{"a", "b"}, []int{0, 1}, ErrUnsupported},
		{"without rowid", []string{"CREATE TABLE t (a INTEGER PRIMARY KEY, b INTEGER) WITHOUT ROWID", "INSERT INTO t VALUES (1, 2)"},
			[]string{"a", "b"}, []int{0, 1}, ErrUnsupported},
		{"WAL", []string{"PRAGMA journal_mode = WAL", "CREATE TABLE t (a INTEGER)", "INSERT INTO t VALUES (1)"},
			[]string{"a"}, []int{0}, ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.sqlite")
			write(t, path, tc.stmts...)
			want, root, err := viaSQL(t, path, "t", tc.cols)
			if err != nil && tc.err == nil {
				t.Fatal(err)
			}
			got, err := viaPages(path, root, tc.rec)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Scan = %v; want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%d rows from the pages, %d from SQL; first difference:\n%s", len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("row %d: got %q, want %q", i, got[i], want[i])
		}
	}
	return "one is a prefix of the other"
}

// TestDamage: a file whose pages were damaged is refused with an error naming the page, never
// read past its end or in a loop.
func TestDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.sqlite")
	write(t, path, "CREATE TABLE t (a INTEGER, b INTEGER)",
		"WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 9999) INSERT INTO t SELECT i, -i FROM s")
	_, root, err := viaSQL(t, path, "t", []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		patch func(page []byte) // the root page, an interior one
		want  string
	}{
		{"page type", func(p []byte) { p[0] = 0x07 }, "page type 0x7"},
		{"child beyond the file", func(p []byte) { copy(p[8:], []byte{0x7F, 0, 0, 0}) }, "beyond the"},
		{"child is the root", func(p []byte) { copy(p[8:], []byte{0, 0, 0, byte(root)}) }, "a loop"},
		{"cells do not fit", func(p []byte) { p[3], p[4] = 0xFF, 0xFF }, "cells do not fit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := readFile(t, path)
			tc.patch(data[int(root-1)*4096:])
			bad := filepath.Join(t.TempDir(), "bad.sqlite")
			writeFile(t, bad, data)
			_, err := viaPages(bad, root, []int{0, 1})
			var ce *CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Scan = %v; want a *CorruptError saying %q", err, tc.want)
			}
		})
	}
}

// TestHugeSerialType: a record whose header gives the columns before the one read sizes that add up
// past 2^64 is refused as damaged, not read at the offset the sum wraps around to.
func TestHugeSerialType(t *testing.T) {
	s := Cursor{need: 4, slot: []int{-1, -1, -1, 0}, text: []bool{false}, fresh: make([]place, 1), row: Row{Ints: make([]int64, 1), Null: make([]bool, 1), Text: make([][]byte, 1)}}
	huge := []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE} // 2^64-2: a blob of 2^63-7 bytes
	hdr := append(append(append([]byte{}, huge...), huge...), 40, 1)     // a blob of 14 bytes, a 1-byte integer
	rec := append(append([]byte{byte(len(hdr) + 1)}, hdr...), 7)         // the three blobs' sizes add up to 2^64
	if err := s.record(rec, false); err == nil || errors.Is(err, ErrUnsupported) {
		t.Fatalf("record = %v, value %d; want damage", err, s.row.Ints[0])
	}
}

// TestTruncatedHeader: a file shorter than the page count its header gives is truncated, with
// both sizes; a page count not valid for the file's version (a writer that did not keep it up to
// date: the change counter differs) says nothing, and a whole file is fine.
func TestTruncatedHeader(t *testing.T) {
	header := func(pages uint32, counter, validFor uint32) []byte {
		h := make([]byte, headerSize)
		copy(h, "SQLite format 3\x00")
		h[16], h[17] = 0x10, 0x00 // 4,096-byte pages
		h[18], h[19], h[21], h[22], h[23] = 1, 1, 64, 32, 32
		binary.BigEndian.PutUint32(h[24:], counter)
		binary.BigEndian.PutUint32(h[28:], pages)
		binary.BigEndian.PutUint32(h[92:], validFor)
		return h
	}
	for _, c := range []struct {
		name string
		h    []byte
		size int64
		want string
	}{
		{name: "cut short", h: header(595, 7, 7), size: 1_000_000, want: "truncated: 1000000 bytes of the 2437120 its header gives (595 pages of 4096 bytes; is the copy complete?)"},
		{name: "whole", h: header(595, 7, 7), size: 595 * 4096},
		{name: "page count not valid", h: header(595, 7, 6), size: 1_000_000},
		{name: "no page count", h: header(0, 7, 7), size: 1_000_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseHeader(c.h, c.size)
			var te *TruncatedError
			if got := errors.As(err, &te); got != (c.want != "") || (got && err.Error() != c.want) {
				t.Fatalf("parseHeader = %v; want %q", err, c.want)
			}
		})
	}
}
