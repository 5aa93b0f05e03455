package flightrecorder

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis/diagnosis"
)

// copyDumps copies the dumps of testdata/src but those of the ranks in leave into a new
// directory, and returns it.
func copyDumps(t *testing.T, src string, leave ...int) string {
	t.Helper()
	dir := t.TempDir()
	ents, err := os.ReadDir(filepath.Join("testdata", src))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		m := rankName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if r := m[2]; slices.ContainsFunc(leave, func(l int) bool { return fmt.Sprint(l) == r }) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("testdata", src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestNoDumpOfTheHungRank: when the rank that never entered the collective left no dump (none,
// an empty file, a file that is no dump, or only some files given by name), the verdict names it,
// as the one member not seen in it, and an unreadable dump is warned about, not skipped in silence.
func TestNoDumpOfTheHungRank(t *testing.T) {
	cases := []struct {
		name   string
		paths  func(t *testing.T) []string
		rank   int32
		miss   string
		warned string // a warning that must be given ("" none beyond the missing dump's)
	}{
		{"no dump of rank 3", func(t *testing.T) []string { return []string{copyDumps(t, "hang", 3)} }, 3, "[3]", ""},
		{"rank 3's dump is empty", func(t *testing.T) []string {
			dir := copyDumps(t, "hang", 3)
			write(t, filepath.Join(dir, "nccl_trace_rank_3"), "")
			return []string{dir}
		}, 3, "[3]", "nccl_trace_rank_3 (byte 0): empty file"},
		{"rank 3's dump is no dump", func(t *testing.T) []string {
			dir := copyDumps(t, "hang", 3)
			write(t, filepath.Join(dir, "nccl_trace_rank_3"), "hello\n")
			return []string{dir}
		}, 3, "[3]", "nccl_trace_rank_3 (byte 1): not a Flight Recorder dump"},
		{"rank 3's dump is cut short", func(t *testing.T) []string {
			dir := copyDumps(t, "hang", 3)
			b, err := os.ReadFile("testdata/hang/nccl_trace_rank_3")
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "nccl_trace_rank_3"), string(b[:len(b)/2]))
			return []string{dir}
		}, 3, "[3]", "nccl_trace_rank_3"},
		{"two files given by name", func(t *testing.T) []string {
			return []string{"testdata/hang/nccl_trace_rank_0", "testdata/hang/nccl_trace_rank_1"}
		}, 2, "[2 3]", ""},
		{"JSON: only rank 0's dump", func(t *testing.T) []string { return []string{copyDumps(t, "mismatch_json", 1)} }, 1, "[1]", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			im, err := ReadFiles(c.paths(t), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c.warned != "" && !slices.ContainsFunc(im.Warnings, func(w string) bool { return strings.Contains(w, c.warned) }) {
				t.Errorf("warnings %q; want one containing %q", im.Warnings, c.warned)
			}
			d := diagnosis.New(nil)
			for i := range im.Events {
				d.Add(&im.Events[i])
			}
			fs := d.Result(im.Strings)
			if len(fs) == 0 {
				t.Fatal("no finding; want a hang naming the rank without a dump")
			}
			f := fs[0]
			if f.Kind != diagnosis.Hang || f.Rank != c.rank || fmt.Sprint(f.Missing) != c.miss || f.Confidence <= 0 || f.Confidence > 1 ||
				!strings.Contains(f.Evidence, "never entered it as far as is known: no dump of rank") {
				t.Errorf("finding %s (rank %d missing %v confidence %.2f); want a hang naming rank %d, missing %s", f.String(), f.Rank, f.Missing, f.Confidence, c.rank, c.miss)
			}
		})
	}
}

// TestNoDumpOfOneRank removes each rank's dump in turn from every fixture job: the import goes
// on, and the first verdict names either the rank the whole job's verdict names or the rank
// without a dump, at a confidence in (0, 1], never a rank outside the job.
func TestNoDumpOfOneRank(t *testing.T) {
	for _, job := range []string{"hang", "mismatch_json", "pp_hang"} {
		whole := verdicts(t, filepath.Join("testdata", job))
		if len(whole) == 0 {
			t.Fatalf("%s: no finding", job)
		}
		ents, err := os.ReadDir(filepath.Join("testdata", job))
		if err != nil {
			t.Fatal(err)
		}
		for r := range len(ents) {
			t.Run(fmt.Sprintf("%s without rank %d", job, r), func(t *testing.T) {
				fs := verdicts(t, copyDumps(t, job, r))
				if len(fs) == 0 {
					t.Fatal("no finding")
				}
				for _, f := range fs {
					if f.Rank >= int32(len(ents)) || f.Confidence < 0 || f.Confidence > 1 || (f.Rank >= 0) != (f.Confidence > 0) {
						t.Errorf("finding %s: rank %d confidence %.2f", f.String(), f.Rank, f.Confidence)
					}
				}
				if f := fs[0]; f.Rank != whole[0].Rank && f.Rank != int32(r) {
					t.Errorf("first finding %s names rank %d; want rank %d (the job's culprit) or %d (no dump)", f.String(), f.Rank, whole[0].Rank, r)
				}
			})
		}
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
