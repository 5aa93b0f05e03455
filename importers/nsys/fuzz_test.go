package nsys_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys"
)

// FuzzImport: an export mutated anywhere (its header, schema, b-tree pages or values) never makes
// the importer panic; it fails with an error naming the file, or imports events that end no
// earlier than they start and whose labels are in the string table.
func FuzzImport(f *testing.F) {
	seed := filepath.Join(f.TempDir(), "seed.sqlite")
	writeExport(f, seed, oldSchema, oldRows...)
	data, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	for _, off := range []int{16, 100, 4096 + 8, len(data) / 2, len(data) - 100} { // header, schema page, a table page
		d := append([]byte{}, data...)
		d[off] ^= 0xFF
		f.Add(d)
	}
	f.Add(data[:len(data)/3])
	f.Add([]byte("SQLite format 3\x00"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.sqlite")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		im, err := nsys.ReadFiles([]string{path}, nsys.Options{})
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, e := range im.Events {
			if e.End < e.Start || int(e.Label) >= im.Strings.Len() {
				t.Fatalf("bad event %+v", e)
			}
		}
	})
}

// FuzzRows: an export whose first page (the header and the schema) is intact and whose table pages
// are patched, so that mutations reach the rows' values (out of range, of another type, NULL) and
// the b-trees of the tables read, never makes the importer panic or emit an event out of order or
// ending before it starts; and when SQL alone imports the file too, it imports the same. The input is a list of patches, three bytes each: where (a little-endian
// offset into the pages after the first) and the byte written there; a byte-level mutation of a
// whole file would mostly shift its pages and be refused before any row is read.
func FuzzRows(f *testing.F) {
	seed := filepath.Join(f.TempDir(), "seed.sqlite")
	writeExport(f, seed, oldSchema, oldRows...)
	data, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	const page = 4096 // the SQLite default, which writeExport keeps
	f.Add([]byte{})
	for _, off := range []int{8, 100, 4000, len(data) / 3, len(data) / 2, len(data) - page - 50} {
		f.Add([]byte{byte(off), byte(off >> 8), 0xFF})
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, patches []byte) {
		file := append([]byte{}, data...)
		for i := 0; i+3 <= len(patches) && i < 3*64; i += 3 {
			off := page + int(binary.LittleEndian.Uint16(patches[i:]))%(len(data)-page)
			file[off] = patches[i+2]
		}
		path := filepath.Join(dir, "rows.sqlite")
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		im, err := nsys.ReadFiles([]string{path}, nsys.Options{})
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for i, e := range im.Events {
			if e.End < e.Start || int(e.Label) >= im.Strings.Len() || i > 0 && e.Start < im.Events[i-1].Start {
				t.Fatalf("bad event %d: %+v", i, e)
			}
		}
		// What the pages read, SQL reads: the import is the one SQL alone makes.
		if want, _, _, err := nsys.ReadFilesPaths([]string{path}, nsys.Options{}, nsys.Paths{SQLSurvey: true, SQLRows: true}); err == nil {
			sameImport(t, "from the pages", im, want)
		}
	})
}
