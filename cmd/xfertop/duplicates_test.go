package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// An input given twice is refused with exit status 4 naming both files, for every format: the same
// path twice, a copy, a directory of a job's files and one of them again, and a rank's recording
// copied (even changed) beside it. Merged, it would count its events twice.
func TestDuplicateInputsRefused(t *testing.T) {
	dir := t.TempDir()
	copyFile := func(from, to string, change bool) string {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if change { // the same rank, other bytes: a copy that was repaired or touched
			data = append(data, 0)
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return to
	}
	kin := filepath.Join("testdata", "hta_small.json")
	kinCopy := copyFile(kin, filepath.Join(dir, "hta-copy.json"), false)
	export := filepath.Join(dir, "a.sqlite")
	if err := nsystest.WriteLarge(export, 64, 16); err != nil {
		t.Fatal(err)
	}
	ranks := filepath.Join(dir, "ranks")
	if err := os.Mkdir(ranks, 0o755); err != nil {
		t.Fatal(err)
	}
	r0 := filepath.Join(ranks, "rank0-h-10.xfr")
	writeRankRecording(t, r0, 0, 10, 5e9)
	writeRankRecording(t, filepath.Join(ranks, "rank1-h-11.xfr"), 1, 11, 5e9)
	copies := filepath.Join(dir, "copies")
	if err := os.Mkdir(copies, 0o755); err != nil {
		t.Fatal(err)
	}
	c0 := copyFile(r0, filepath.Join(copies, "rank0-copy.xfr"), false)
	changed := filepath.Join(dir, "changed")
	if err := os.Mkdir(changed, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(r0, filepath.Join(changed, "rank0-h-10.xfr"), false)
	ch0 := copyFile(r0, filepath.Join(changed, "rank0-touched.xfr"), true)
	fr := filepath.Join("..", "..", "importers", "flightrecorder", "testdata", "hang")
	ras := filepath.Join("..", "..", "importers", "ras", "testdata", "hang.json")
	insp := filepath.Join("..", "..", "importers", "inspector", "testdata", "v2.32")
	tests := []struct {
		name string
		args []string
		has  []string
	}{
		{"kineto: one path twice", []string{"analyze", kin, kin}, []string{kin + " is given twice"}},
		{"kineto: a copy", []string{"analyze", kin, kinCopy}, []string{kinCopy + " holds the same bytes as " + kin}},
		{"nsys: one export twice", []string{"analyze", export, export}, []string{export + " is given twice"}},
		{"rank recordings: a copy in the job's directory", []string{"replay", "--headless", ranks, c0}, []string{c0 + " holds the same bytes as " + r0}},
		{"rank recordings: a changed copy of a rank", []string{"analyze", changed}, []string{ch0 + ": rank 0 again: ", "already is rank 0"}},
		{"convert: a directory and a rank in it", []string{"convert", ranks, r0, filepath.Join(dir, "out.xfr")}, []string{r0 + " is given twice"}},
		{"flight recorder: a directory and a dump in it", []string{"analyze", fr, filepath.Join(fr, "nccl_trace_rank_0")}, []string{"nccl_trace_rank_0 is given twice"}},
		{"ras: one document twice", []string{"analyze", ras, ras}, []string{ras + " is given twice"}},
		{"whatif: one trace twice", []string{"whatif", "--headless", kin, kin}, []string{kin + " is given twice"}},
		{"whatif: a copy", []string{"whatif", "--headless", kin, kinCopy}, []string{kinCopy + " holds the same bytes as " + kin}},
		{"whatif: a rank's recording copied", []string{"whatif", "--headless", r0, c0}, []string{c0 + " holds the same bytes as " + r0}},
		{"inspector: a directory and a log in it", []string{"analyze", insp, filepath.Join(insp, "node0-pid1000.log")}, []string{"node0-pid1000.log is given twice"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tc.args...)
			ok := code == exitData
			for _, h := range tc.has {
				ok = ok && strings.Contains(errs, h)
			}
			if !ok {
				t.Errorf("%v: status %d, stderr %q, stdout %.200q; want %d naming %q", tc.args, code, errs, out, exitData, tc.has)
			}
		})
	}
}
