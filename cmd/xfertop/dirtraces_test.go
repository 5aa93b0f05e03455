package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDirectoryOfTracesWithEmptyRank: in a directory of per-rank traces, an empty rank file is
// left out with a warning naming it, as one cut short is, not in silence; a directory whose every
// trace is empty says so (exit 4) rather than that it holds no traces.
func TestDirectoryOfTracesWithEmptyRank(t *testing.T) {
	trace := func(rank int) string {
		return fmt.Sprintf(`{"distributedInfo":{"rank":%d,"world_size":3},"traceEvents":[`+
			`{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1000,"dur":5,"args":{"device":%d,"stream":7}}]}`, rank, rank)
	}
	mixed, empties := t.TempDir(), t.TempDir()
	files := map[string]string{
		filepath.Join(mixed, "trace_rank1.json"): trace(1),
		filepath.Join(mixed, "trace_rank2.json"): trace(2),
		filepath.Join(mixed, "trace_rank3.json"): "",
		filepath.Join(empties, "a.json"):         "",
		filepath.Join(empties, "b.json"):         "",
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		dir, out, errs string
		code           int
	}{
		{mixed, "2 events", filepath.Join(mixed, "trace_rank3.json") + ": the file is empty (0 bytes): left out", exitOK},
		{empties, "", empties + ": every trace in it (2 *.json, *.json.gz files) is empty (0 bytes)", exitData},
	}
	for _, tc := range tests {
		code, out, errs := runCLI(t, "analyze", tc.dir)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.errs) {
			t.Errorf("analyze %s: exit %d, stderr %q; want exit %d, %q on stderr and %q in the report:\n%s", tc.dir, code, errs, tc.code, tc.errs, tc.out, out)
		}
	}
}
