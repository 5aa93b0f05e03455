package importers

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// An input given twice, under one name or two, or a copy of another, is refused naming both; files
// that only share a size, or their ends, are not.
func TestCheckDuplicates(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*sampleBytes/16) // longer than both ends
	middle := bytes.Clone(big)
	middle[len(middle)/2] ^= 1 // same size and ends, another middle
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := write("a.json", []byte(`{"traceEvents":[]}`)), write("b.json", []byte(`{"traceEvents":[1]}`))
	acopy, c := write("a-copy.json", []byte(`{"traceEvents":[]}`)), write("c.json", []byte(`{"traceEvents":[2]}`))
	g, gm, gcopy := write("g.json", big), write("g-middle.json", middle), write("g-copy.json", big)
	e1, e2 := write("e1.json", nil), write("e2.json", nil)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.json")
	if err := os.Link(b, hard); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		paths []string
		want  *DuplicateError
	}{
		{"different files", []string{a, b, c}, nil},
		{"same size, different bytes", []string{b, c}, nil},
		{"same size and ends, another middle", []string{g, gm}, nil},
		{"two empty files: the importer says they are empty", []string{e1, e2}, nil},
		{"one path twice", []string{a, b, a}, &DuplicateError{File: a, Other: a}},
		{"a symbolic link to another input", []string{a, link}, &DuplicateError{File: link, Other: a}},
		{"a hard link to another input", []string{hard, b}, &DuplicateError{File: b, Other: hard}},
		{"a copy", []string{a, b, acopy}, &DuplicateError{File: acopy, Other: a, Copy: true}},
		{"a copy of a file longer than its ends", []string{g, gm, gcopy}, &DuplicateError{File: gcopy, Other: g, Copy: true}},
		{"a missing file is left to the importer", []string{a, filepath.Join(dir, "nosuch")}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkDuplicates(tc.paths)
			var de *DuplicateError
			if tc.want == nil {
				if err != nil {
					t.Fatalf("checkDuplicates(%v) = %v; want nil", tc.paths, err)
				}
				return
			}
			if !errors.As(err, &de) || *de != *tc.want {
				t.Fatalf("checkDuplicates(%v) = %#v; want %#v", tc.paths, err, tc.want)
			}
		})
	}
}
