package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlightRecorderInputs: a directory of Flight Recorder dumps is an input of analyze, compare
// and convert; the report's findings name the rank the hang waits on, and so do a conversion's.
func TestFlightRecorderInputs(t *testing.T) {
	dir := filepath.Join("..", "..", "importers", "flightrecorder", "testdata", "hang")
	type rep struct {
		Findings []struct {
			Kind string `json:"kind"`
			Rank *int32 `json:"rank"`
			Seq  int    `json:"seq"`
			Coll string `json:"coll"`
		} `json:"findings"`
	}
	check := func(what, out string) {
		t.Helper()
		var r rep
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		if len(r.Findings) != 1 || r.Findings[0].Kind != "hang" || r.Findings[0].Rank == nil || *r.Findings[0].Rank != 3 ||
			r.Findings[0].Seq != 5 || r.Findings[0].Coll != "all_reduce" {
			t.Errorf("%s: findings %+v; want one hang naming rank 3 at all_reduce #5", what, r.Findings)
		}
	}
	code, out, errs := runCLI(t, "analyze", "--json", dir)
	if code != exitOK {
		t.Fatalf("analyze: status %d, %s", code, errs)
	}
	check("analyze", out)
	xfr := filepath.Join(t.TempDir(), "fr.xfr")
	code, out, errs = runCLI(t, "convert", dir, xfr)
	if code != exitOK || !strings.Contains(out, "(flight-recorder, 4 per-rank files merged)") {
		t.Fatalf("convert: status %d, %q %s", code, out, errs)
	}
	code, out, errs = runCLI(t, "analyze", "--json", xfr)
	if code != exitOK {
		t.Fatalf("analyze the conversion: status %d, %s", code, errs)
	}
	check("analyze the conversion", out)
	if code, _, errs := runCLI(t, "compare", "--json", dir, xfr); code != exitOK {
		t.Errorf("compare: status %d, %s", code, errs)
	}
}
