package nsys_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/recordings/importers/nsys"
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
