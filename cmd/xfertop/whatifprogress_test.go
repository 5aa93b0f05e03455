package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/whatif"
)

// The what-if's second pass, the long one (minutes at 1,024 GPUs), draws its progress on one line
// where it is given a writer (standard error on a terminal): what it replays, its steps, a bar
// up to 100%, cleared at the end. Before, only the first pass's "reading" line showed, and the
// replay ran with nothing on screen.
func TestWhatIfReplayShowsProgress(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "job.xfr")
	if code, _, errs := runCLI(t, "run", "--headless", "--scenario", "llm-train", "--hosts", "2", "--steps", "3", "--set", "pp=1", "--set", "layers=2", "--record", rec); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	ctx := context.Background()
	first, err := planInput(ctx, []string{rec}, importLimits{}, true, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		progress bool
	}{{"a terminal", true}, {"not a terminal", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			var w io.Writer
			if tc.progress {
				w = &buf
			}
			if _, err := replayInput(ctx, []string{rec}, importLimits{}, first, whatif.Options{}, nothingChanged, false, w); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if !tc.progress {
				if out != "" {
					t.Errorf("replay without a progress writer wrote %q", out)
				}
				return
			}
			want := "\rxfertop: replaying " + rec + " (3 steps, twice: unchanged and changed) "
			if !strings.HasPrefix(out, want) || !strings.Contains(out, "100%") || !strings.HasSuffix(out, "\r\x1b[K") {
				t.Errorf("replay progress = %q; want it to begin %q, reach 100%% and be cleared", out, want)
			}
		})
	}
}
