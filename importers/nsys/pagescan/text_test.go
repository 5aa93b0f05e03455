package pagescan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"
)

// rowsViaSQL reads cols of table with SQL in a full scan's order, each row its rowid and its values:
// "NULL", the integer, or a text quoted (those named in text are read as text).
func rowsViaSQL(path, table string, cols []string, text map[string]bool) ([]string, uint32, error) {
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
	s, _, err = c.Prepare("SELECT rowid, " + strings.Join(cols, ", ") + " FROM " + table + " NOT INDEXED")
	if err != nil {
		return nil, root, err
	}
	defer s.Close()
	var out []string
	for s.Step() {
		var b strings.Builder
		fmt.Fprint(&b, s.ColumnInt64(0))
		for i, name := range cols {
			switch {
			case s.ColumnType(i+1) == sqlite3.NULL:
				b.WriteString(" NULL")
			case text[name]:
				fmt.Fprintf(&b, " %q", s.ColumnRawText(i+1))
			default:
				fmt.Fprintf(&b, " %d", s.ColumnInt64(i+1))
			}
		}
		out = append(out, b.String())
	}
	return out, root, s.Err()
}

// rowsViaPages reads the record columns cols of the table at root with a Cursor, as rowsViaSQL
// writes them.
func rowsViaPages(path string, root uint32, cols []Column) ([]string, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := f.Rows(root, cols)
	if err != nil {
		return nil, err
	}
	var out []string
	for c.Next() {
		r := c.Row()
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
		out = append(out, b.String())
	}
	return out, c.Err()
}

// TestTextColumns: a text column is read as SQL reads it (texts of every length that fit on the
// page, empty ones, NULLs, beside integers), and what SQL would convert or fetch from elsewhere
// (an integer, a real or a blob in a text column, a text on overflow pages, a text in an integer
// column) is refused, never misread.
func TestTextColumns(t *testing.T) {
	many := "WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 9999) " +
		"INSERT INTO t SELECT i, CASE WHEN i % 7 = 0 THEN NULL WHEN i % 11 = 0 THEN '' ELSE 'aten::mm, seq = ' || i || substr('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 1, i % 40) END, -i FROM s"
	for _, tc := range []struct {
		name  string
		stmts []string
		err   error
	}{
		{"texts", []string{"CREATE TABLE t (a INTEGER, s TEXT, b INTEGER)", many}, nil},
		{"512-byte pages", []string{"PRAGMA page_size = 512", "CREATE TABLE t (a INTEGER, s TEXT, b INTEGER)", many}, nil},
		{"a text on overflow pages", []string{"CREATE TABLE t (a INTEGER, s TEXT, b INTEGER)", "INSERT INTO t VALUES (1, 'x', 2)",
			"INSERT INTO t VALUES (3, printf('%.*c', 9000, 'y'), 4)"}, ErrUnsupported},
		{"an integer in a text column", []string{"CREATE TABLE t (a INTEGER, s, b INTEGER)", "INSERT INTO t VALUES (1, 'x', 2), (3, 4, 5)"}, ErrUnsupported},
		{"a real in a text column", []string{"CREATE TABLE t (a INTEGER, s, b INTEGER)", "INSERT INTO t VALUES (1, 0.5, 2)"}, ErrUnsupported},
		{"a blob in a text column", []string{"CREATE TABLE t (a INTEGER, s, b INTEGER)", "INSERT INTO t VALUES (1, x'0102', 2)"}, ErrUnsupported},
		{"a text in an integer column", []string{"CREATE TABLE t (a, s TEXT, b INTEGER)", "INSERT INTO t VALUES ('1', 'x', 2)"}, ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.sqlite")
			write(t, path, tc.stmts...)
			want, root, err := rowsViaSQL(path, "t", []string{"a", "s", "b"}, map[string]bool{"s": true})
			if err != nil {
				t.Fatal(err)
			}
			got, err := rowsViaPages(path, root, []Column{{Pos: 0}, {Pos: 1, Text: true}, {Pos: 2}})
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), "page ") {
					t.Fatalf("Rows = %v; want %v naming the page", err, tc.err)
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

// FuzzText: as FuzzScan, with a text column read beside integers: a patched file never makes the
// Cursor panic or loop, and when both the Cursor and SQLite read the table, they read the same rows.
func FuzzText(f *testing.F) {
	seed := filepath.Join(f.TempDir(), "seed.sqlite")
	write(f, seed, "PRAGMA page_size = 512", "CREATE TABLE t (a INTEGER, s TEXT, c BLOB, d INTEGER)",
		"WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 299) "+
			"INSERT INTO t SELECT i * 1000003, CASE WHEN i % 5 = 0 THEN NULL ELSE 'name ' || i END, CASE WHEN i % 97 = 0 THEN zeroblob(700) END, -i FROM s")
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
		want, root, sqlErr := rowsViaSQL(path, "t", []string{"a", "s", "d"}, map[string]bool{"s": true})
		if root == 0 {
			root = 2 // the seed's
		}
		got, err := rowsViaPages(path, root, []Column{{Pos: 0}, {Pos: 1, Text: true}, {Pos: 3}})
		if err != nil || sqlErr != nil {
			return
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d rows from the pages, %d from SQL; first difference:\n%s", len(got), len(want), firstDiff(got, want))
		}
	})
}
