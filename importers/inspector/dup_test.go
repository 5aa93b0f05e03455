package inspector

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepeatedRecords: records repeating one communicator, rank and coll_sn (a log appended to
// itself) are left out with one warning counting them, the first of each kept; the import takes
// time linear in the records (each repeat was one more part of an instance already complete,
// which the analysis folded in time growing with the square of the repeats).
func TestRepeatedRecords(t *testing.T) {
	b, err := os.ReadFile("testdata/v2.28/node0-pid1000.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	first := lines[0]
	var doubled []byte
	doubled = append(doubled, b...)
	doubled = append(doubled, bytes.Repeat(first, 1000)...)
	doubled = append(doubled, b...)
	for _, c := range []struct {
		name   string
		data   []byte
		events int
		warn   string
	}{
		{"untouched", b, 2, ""},
		{"appended twice, the first line 1000 times more", doubled, 2, "1002 records repeat the communicator, rank and coll_sn of an earlier one (the first: communicator "},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "node0-pid1000.log")
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			im, err := ReadFiles([]string{p}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			warns := strings.Join(im.Warnings, "\n")
			if len(im.Events) != c.events || (c.warn == "") != !strings.Contains(warns, "repeat the communicator") || !strings.Contains(warns, c.warn) {
				t.Errorf("%d events, warnings %q; want %d events and %q", len(im.Events), im.Warnings, c.events, c.warn)
			}
		})
	}
}
