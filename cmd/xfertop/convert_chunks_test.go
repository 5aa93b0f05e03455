package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/xfertop/xfertop/recordings"
)

// TestConvertIndependentOfChunking: where a recording's chunks were cut (by the recorder's batch
// size, or by its flush timer, whenever the scheduler ran it) changes nothing in what convert
// writes from it. One recorded run is rewritten with its events cut into chunks of 1, 7, 1,000 and
// all at once, each chunk preceded by the strings its events first use (as the recorder writes
// them); every copy converts to the same Chrome trace and the same recording, byte for byte.
func TestConvertIndependentOfChunking(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "run.xfr")
	if code, stdout, errs := runCLI(t, "run", "--headless", "--scenario", "pipeline", "--steps", "6", "--record", orig); code != exitOK {
		t.Fatalf("run: status %d\n%s%s", code, stdout, errs)
	}
	rec, err := recordings.ReadFile(orig, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) < 2000 {
		t.Fatalf("the run recorded %d events; the test needs at least 2,000 to cut them many ways", len(rec.Events))
	}
	convert := func(in, ext string) []byte {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out"+ext)
		if code, stdout, errs := runCLI(t, "convert", in, out); code != exitOK {
			t.Fatalf("convert %s %s: status %d\n%s%s", in, out, code, stdout, errs)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	wantJSON, wantXfr := convert(orig, ".json"), convert(orig, ".xfr")
	for _, per := range []int{1, 7, 1000, len(rec.Events)} {
		t.Run(fmt.Sprintf("chunks of %d", per), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rechunked.xfr")
			writeRechunked(t, path, rec, per)
			if n := eventChunks(t, path); n != (len(rec.Events)+per-1)/per {
				t.Fatalf("rewritten with %d events a chunk: %d chunks of events", per, n)
			}
			if got := convert(path, ".json"); !bytes.Equal(got, wantJSON) {
				t.Errorf("Chrome trace differs from the original recording's at byte %d of %d", firstDiff(wantJSON, got), len(wantJSON))
			}
			if got := convert(path, ".xfr"); !bytes.Equal(got, wantXfr) {
				t.Errorf("recording differs from the original recording's at byte %d of %d", firstDiff(wantXfr, got), len(wantXfr))
			}
		})
	}
}

// writeRechunked writes rec to path with per events in each chunk, each chunk preceded by the
// string table entries first used by its events.
func writeRechunked(t *testing.T, path string, rec *recordings.Recording, per int) {
	t.Helper()
	w, err := recordings.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMeta(rec.Meta); err != nil {
		t.Fatal(err)
	}
	all := rec.Strings.All()
	known := uint32(1) // id 0 is the empty string, never written
	for i := 0; i < len(rec.Events); i += per {
		part := rec.Events[i:min(i+per, len(rec.Events))]
		top := known
		for _, e := range part {
			top = max(top, e.Label+1)
		}
		if top > known {
			if err := w.WriteStrings(known, all[known:top]); err != nil {
				t.Fatal(err)
			}
			known = top
		}
		if err := w.WriteEvents(part); err != nil {
			t.Fatal(err)
		}
	}
	if int(known) < len(all) { // strings no event label names (kept all the same)
		if err := w.WriteStrings(known, all[known:]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteDropped(rec.Dropped); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteOutcome(rec.Outcome); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
