package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// replay imports a trace to a temporary recording first: its messages name the trace the user
// gave, never that recording's path.
func TestReplayNamesTheTrace(t *testing.T) {
	trace := filepath.Join("testdata", "hta_small.json")
	for _, args := range [][]string{
		{"replay", "--headless", "--from", "1000h", trace},
		{"replay", "--headless", "--json", "--from", "1000h", trace},
	} {
		code, _, errs := runCLI(t, args...)
		if want := "xfertop replay: --from 1000h0m0s is past the end of " + trace + ": "; code != exitUsage || !strings.HasPrefix(errs, want) || strings.Contains(errs, "xfertop-import-") {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", args, code, errs, exitUsage, want)
		}
	}
}
