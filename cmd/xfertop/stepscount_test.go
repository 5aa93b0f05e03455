package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// TestStepsTextEqualsJSON: the text report's step count is the JSON's, for an Nsight export that
// marks a step (ProfilerStep#12), one that marks none and holds no repeating sequence (no step:
// the text once said "the whole input is one" beside a JSON count of 0), and a Kineto trace.
func TestStepsTextEqualsJSON(t *testing.T) {
	dir := t.TempDir()
	marked := filepath.Join(dir, "marked.sqlite")
	if err := nsystest.Write(marked, nsystest.OldSchema, nsystest.OldRows()...); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range nsystest.OldRows() {
		if !strings.Contains(r, "NVTX_EVENTS") {
			rows = append(rows, r)
		}
	}
	unmarked := filepath.Join(dir, "unmarked.sqlite")
	if err := nsystest.Write(unmarked, nsystest.OldSchema, rows...); err != nil {
		t.Fatal(err)
	}
	count := regexp.MustCompile(`(?m)^Steps: (\d+)`)
	for _, tc := range []struct {
		name, path string
		want       int64
	}{
		{"nsys, a marked step", marked, 1},
		{"nsys, no step", unmarked, 0},
		{"kineto", filepath.Join("testdata", "hta_small.json"), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := analyzeJSON(t, tc.path)
			if tc.want >= 0 && r.Steps.Count != tc.want {
				t.Errorf("JSON steps.count = %d; want %d", r.Steps.Count, tc.want)
			}
			_, text, _ := runCLI(t, "analyze", tc.path)
			m := count.FindStringSubmatch(text)
			if m == nil {
				t.Fatalf("the text has no step count:\n%s", text)
			}
			if n, _ := strconv.ParseInt(m[1], 10, 64); n != r.Steps.Count {
				t.Errorf("text Steps: %d; JSON steps.count %d", n, r.Steps.Count)
			}
			if strings.Contains(text, "the whole input is one") {
				t.Errorf("the text calls the whole input a step beside a count of %d:\n%s", r.Steps.Count, text)
			}
		})
	}
}
