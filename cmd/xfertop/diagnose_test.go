package main

import (
	"strings"
	"testing"
)

// To a file or a pipe (not a terminal) the campaign's progress is whole lines: no carriage
// returns for a log to keep.
func TestDiagnoseProgressToAFile(t *testing.T) {
	code, _, errs := runCLI(t, "diagnose", "--campaign", "2", "--healthy", "1", "--scenario", "nccl-all-reduce", "--topology", "h100x8x2", "--steps", "3", "--kinds", "gpu_slow")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(errs, "\r") || !strings.Contains(errs, "3/3 runs, ") {
		t.Errorf("progress %q; want lines, ending at 3/3 runs, and no carriage return", errs)
	}
}
