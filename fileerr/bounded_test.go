package fileerr

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadBounded: a file up to the bound is read whole; one past it, a directory or a missing
// file is refused, naming the file and the bound.
func TestReadBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte("a"), n), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	atMax, over := write("at.yaml", 1024), write("over.yaml", 1025)
	for _, tc := range []struct {
		name, path string
		n          int
		err        string
	}{
		{"at the bound", atMax, 1024, ""},
		{"one byte over", over, 0, over + ": larger than 1 KiB, too large for a topology file"},
		{"directory", dir, 0, dir + " is a directory, not a topology file"},
		{"missing", filepath.Join(dir, "none"), 0, "no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ReadBounded(tc.path, "topology file", 1024)
			if tc.err == "" {
				if err != nil || len(b) != tc.n {
					t.Fatalf("ReadBounded(%s) = %d bytes, %v; want %d bytes", tc.path, len(b), err, tc.n)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ReadBounded(%s) = %v; want %q", tc.path, err, tc.err)
			}
		})
	}
}
