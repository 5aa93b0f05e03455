package pagescan

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzScan: a file whose pages were patched anywhere (the header, the schema, the b-tree pages,
// the records) never makes Scan panic or loop; and when both Scan and SQLite read the table, they
// read the same rows in the same order. The input is a list of patches, three bytes each: where (a
// little-endian offset into the file) and the byte written there.
func FuzzScan(f *testing.F) {
	seed := filepath.Join(f.TempDir(), "seed.sqlite")
	write(f, seed, "PRAGMA page_size = 512", "CREATE TABLE t (a INTEGER, b INTEGER, c BLOB, d INTEGER)",
		"WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 499) "+
			"INSERT INTO t SELECT i * 1000003, CASE WHEN i % 5 = 0 THEN NULL ELSE i % 8 END, CASE WHEN i % 97 = 0 THEN zeroblob(700) END, -i FROM s")
	data := readFile(f, seed)
	f.Add([]byte{})
	for _, off := range []int{16, 18, 20, 512 + 3, 1024 + 8, len(data) / 2, len(data) - 40} {
		f.Add([]byte{byte(off), byte(off >> 8), 0xFF})
		f.Add([]byte{byte(off), byte(off >> 8), 0x81})
	}
	dir := f.TempDir()
	cols := []string{"a", "b", "d"}
	rec := []int{0, 1, 3}
	f.Fuzz(func(t *testing.T, patches []byte) {
		file := slices.Clone(data)
		for i := 0; i+3 <= len(patches) && i < 3*64; i += 3 {
			file[int(binary.LittleEndian.Uint16(patches[i:]))%len(file)] = patches[i+2]
		}
		path := filepath.Join(dir, "t.sqlite")
		writeFile(t, path, file)
		want, root, sqlErr := viaSQL(t, path, "t", cols)
		if root == 0 {
			root = 2 // the seed's
		}
		got, err := viaPages(path, root, rec)
		if err != nil || sqlErr != nil {
			return
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d rows from the pages, %d from SQL; first difference:\n%s", len(got), len(want), firstDiff(got, want))
		}
	})
}

// FuzzHeader: any 100 bytes and file size give a Source or an error, never a panic; a file called
// truncated is shorter than its header's pages, and a Source's pages fit in the file.
func FuzzHeader(f *testing.F) {
	ok := make([]byte, headerSize)
	copy(ok, "SQLite format 3\x00")
	ok[16], ok[18], ok[19], ok[21] = 0x10, 1, 1, 64
	ok[31], ok[27], ok[95] = 9, 1, 1 // 9 pages, change counter 1 = valid-for 1
	f.Add(ok, int64(9*4096))
	f.Add(ok, int64(4096))
	f.Add(make([]byte, headerSize), int64(0))
	f.Fuzz(func(t *testing.T, h []byte, size int64) {
		if len(h) < headerSize || size < 0 {
			return
		}
		s, err := parseHeader(h[:headerSize], size)
		var te *TruncatedError
		switch {
		case errors.As(err, &te):
			if want := int64(te.Pages) * int64(te.PageSize); want <= te.Size || te.Size != size {
				t.Fatalf("truncated: %d of %d bytes (file %d); want a file shorter than its pages", te.Size, want, size)
			}
		case err == nil:
			if int64(s.pages)*int64(s.pageSize) > size {
				t.Fatalf("%d pages of %d bytes in a file of %d", s.pages, s.pageSize, size)
			}
		}
	})
}
