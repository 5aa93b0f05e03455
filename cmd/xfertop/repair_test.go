package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/recordings"
)

// xfertop repair on hand-damaged copies of a real recording: the exact message, the backup, and a
// repaired file that replays without errors; damage read without --salvage names the way out.
func TestRepairCommand(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "g.xfr")
	// Enough steps for several events chunks, so that a cut keeps some.
	if code, _, errs := runCLI(t, "run", "--headless", "--steps", "60", "--scenario", "overlap", "--record", good); code != exitOK {
		t.Fatal(errs)
	}
	data, _ := os.ReadFile(good)
	flipped := append([]byte(nil), data...)
	flipped[len(data)/2] ^= 0xff
	bad := filepath.Join(dir, "bad.xfr")
	_ = os.WriteFile(bad, flipped, 0o644)
	var ce *recordings.CorruptionError
	if _, err := recordings.ReadFile(bad, recordings.Options{}); !errors.As(err, &ce) {
		t.Fatalf("flipped file reads as %v; want a CorruptionError", err)
	}
	torn := filepath.Join(dir, "torn.xfr")
	_ = os.WriteFile(torn, data[:len(data)*3/4], 0o644)
	tornAt := tornOffset(t, torn)

	code, _, errs := runCLI(t, "replay", bad, "--headless")
	if want := fmt.Sprintf("(use --salvage to skip damaged chunks, or xfertop repair %s to cut the file there)", bad); code != exitData || !strings.Contains(errs, want) {
		t.Errorf("replay of damage: exit %d, stderr %q; want the hint %q", code, errs, want)
	}
	for _, tc := range []struct {
		path, out string
	}{
		{good, fmt.Sprintf("%s: sound (%d bytes, closed cleanly): nothing to repair\n", good, len(data))},
		{torn, fmt.Sprintf("%s: cut the torn tail: %d bytes at byte offset %d (unexpected EOF); kept %d of %d bytes; the original is in %s.bak\n",
			torn, int64(len(data)*3/4)-tornAt, tornAt, tornAt, len(data)*3/4, torn)},
		{bad, fmt.Sprintf("%s: cut at the damaged chunk at byte offset %d (checksum mismatch): kept %d of %d bytes; the original is in %s.bak\n",
			bad, ce.Offset, ce.Offset, len(data), bad)},
		{torn, fmt.Sprintf("%s: every chunk is sound, but the recording was not closed cleanly (no index: replay reads it from the start): nothing to cut\n", torn)},
	} {
		code, out, errs := runCLI(t, "repair", tc.path)
		if code != exitOK || !strings.HasPrefix(out, tc.out) {
			t.Errorf("xfertop repair %s: exit %d, stdout %q, stderr %q; want %q", tc.path, code, out, errs, tc.out)
		}
		if code, out, errs := runCLI(t, "replay", tc.path, "--headless"); code != exitOK || out == "" || strings.Contains(errs, "torn tail") {
			t.Errorf("replay after repair of %s: exit %d, stderr %q", tc.path, code, errs)
		}
	}
	if code, _, errs := runCLI(t, "repair", torn); code != exitOK || errs != "" {
		t.Errorf("repair of a repaired file: exit %d, stderr %q", code, errs)
	}
	_ = os.WriteFile(torn, data[:len(data)*3/4-50], 0o644)
	if code, _, errs := runCLI(t, "repair", torn); code != exitFailure || !strings.Contains(errs, ".bak already exists: move it away first") {
		t.Errorf("repair with a backup in the way: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := runCLI(t, "repair", filepath.Join(dir, "none.xfr")); code != exitUsage || !strings.Contains(errs, "none.xfr: no such file") {
		t.Errorf("repair of a missing file: exit %d, stderr %q", code, errs)
	}
	if code, out, _ := runCLI(t, "repair", "-h"); code != exitOK || !strings.Contains(out, "Usage: xfertop repair FILE.xfr") || !strings.Contains(out, "Exit status:") {
		t.Errorf("repair -h: exit %d, stdout %q", code, out)
	}
	if code, _, errs := runCLI(t, "repair"); code != exitUsage || !strings.Contains(errs, "usage: xfertop repair FILE.xfr") {
		t.Errorf("repair without a file: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := runCLI(t, "repair", filepath.Join("testdata", "hta_small.json")); code != exitData || !strings.Contains(errs, "not an xfertop recording") {
		t.Errorf("repair of a JSON file: exit %d, stderr %q", code, errs)
	}
}

// tornOffset returns where the reader says the torn tail of path starts.
func tornOffset(t *testing.T, path string) int64 {
	rec, err := recordings.ReadFile(path, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range rec.Warnings {
		var off int64
		if i := strings.Index(w, "torn tail at byte offset "); i >= 0 {
			if _, err := fmt.Sscanf(w[i:], "torn tail at byte offset %d", &off); err == nil {
				return off
			}
		}
	}
	t.Fatalf("%s: no torn tail in %v", path, rec.Warnings)
	return 0
}
