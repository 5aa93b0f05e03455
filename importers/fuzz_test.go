package importers

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/recordings"
)

// FuzzDetectBytes: any name and first bytes get one format or one error naming the file, never
// both and never a panic; the beginning of a recording's magic, or an empty or unrecognised file
// named .xfr, is a recording; an empty file named otherwise is ErrEmpty.
func FuzzDetectBytes(f *testing.F) {
	for _, seed := range []struct{ name, head string }{
		{"run.xfr", recordings.Magic + "\x02\x00"}, {"run.xfr", ""}, {"x.json", "XFERT"}, {"x.json", ""},
		{"t.json", `{"traceEvents":[]}`}, {"r.sqlite", sqliteMagic}, {"t.json.gz", "\x1f\x8b\x08"},
		{"run.nsys-rep", "\x00\x01"}, {"a.XFR", "hello"}, {"a.png", "\x89PNG\r\n\x1a\n\x00"},
	} {
		f.Add(seed.name, []byte(seed.head))
	}
	// The beginnings of what a real job wrote (importers/testdata/realjob): a Kineto trace gzipped,
	// Flight Recorder pickle and JSON dumps, an NCCL RAS status, a recording.
	real, err := filepath.Glob("testdata/realjob/*/torch2/*.json*")
	if err != nil {
		f.Fatal(err)
	}
	more, _ := filepath.Glob("testdata/realjob/*/*/fr/*")
	xfr, _ := filepath.Glob("testdata/realjob/*/*/xfr/*.xfr")
	ras, _ := filepath.Glob("testdata/realjob/*/watch/*")
	for _, p := range slices.Concat(real, more, xfr, ras) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(filepath.Base(p), b[:min(len(b), DetectBytesNeeded)])
	}
	f.Fuzz(func(t *testing.T, name string, head []byte) {
		if len(head) > DetectBytesNeeded {
			head = head[:DetectBytesNeeded]
		}
		got, err := DetectBytes(name, head)
		if (got == FormatUnknown) != (err != nil) {
			t.Fatalf("DetectBytes(%q, %q) = %v, %v: want a format or an error", name, head, got, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), name+": ") {
			t.Errorf("DetectBytes(%q, %q): error %q does not name the file", name, head, err)
		}
		xfr := strings.HasSuffix(strings.ToLower(name), ".xfr")
		switch {
		case recordings.IsMagicPrefix(head) && got != FormatRecording:
			t.Errorf("DetectBytes(%q, %q) = %v: the beginning of a recording's magic is a recording", name, head, got)
		case len(head) == 0 && xfr && got != FormatRecording:
			t.Errorf("DetectBytes(%q, empty) = %v, %v: an empty .xfr is a recording (cut before its header)", name, got, err)
		case len(head) == 0 && !xfr && !errors.Is(err, ErrEmpty):
			t.Errorf("DetectBytes(%q, empty) = %v, %v; want ErrEmpty", name, got, err)
		case got == FormatRecording && !xfr && !recordings.IsMagicPrefix(head):
			t.Errorf("DetectBytes(%q, %q) = recording, neither by its name nor by its magic", name, head)
		}
	})
}
