package flightrecorder

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDumpOfAnotherJob: a dump of an 8-rank job copied among a 4-rank job's is left out with a
// warning naming it and why, and the other ranks stay one process group (their collectives
// counted), not split into two.
func TestDumpOfAnotherJob(t *testing.T) {
	ops := []op{ar(1, ""), ar(2, ""), ar(3, "")}
	job := writeDumps(t, map[string][2]string{"0": {"default_pg", "[0, 1, 2, 3]"}}, map[int][]op{0: ops, 1: ops, 2: ops, 3: ops})
	other := writeDumps(t, map[string][2]string{"0": {"default_pg", "[0, 1, 2, 3, 4, 5, 6, 7]"}}, map[int][]op{2: ops})
	b, err := os.ReadFile(filepath.Join(other, "nccl_trace_rank_2.json"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(job, "nccl_trace_rank_2.json"), string(b))

	im, err := ReadFiles([]string{job}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "nccl_trace_rank_2.json: its process group 0 (default_pg) has 8 ranks, where 3 other dumps say it has 4: a dump of another job?"
	if !slices.ContainsFunc(im.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("warnings %q; want one containing %q", im.Warnings, want)
	}
	if _, ok := im.Extra["comm.2"]; ok || im.Extra["comm.1"] == "" {
		t.Errorf("process groups %q, %q; want one, the job's", im.Extra["comm.1"], im.Extra["comm.2"])
	}
	for _, e := range im.Events {
		if e.Device == 2 {
			t.Fatalf("an event of rank 2 (%v): its dump, of another job, was read", e)
		}
	}
	if !slices.ContainsFunc(im.Warnings, func(w string) bool { return strings.Contains(w, "no dump of rank 2") }) {
		t.Errorf("warnings %q; want rank 2 named as without a dump", im.Warnings)
	}
}

// TestSplitGroupsKept: groups split under one name (each pipeline's "pp" of its own ranks) are
// no sign of another job: nothing is left out.
func TestSplitGroupsKept(t *testing.T) {
	dir := t.TempDir()
	for r, pp := range map[int]string{0: "[0, 1]", 1: "[0, 1]", 2: "[2, 3]", 3: "[2, 3]"} {
		sub := writeDumps(t, map[string][2]string{"0": {"default_pg", "[0, 1, 2, 3]"}, "pp": {"pp", pp}}, map[int][]op{r: {ar(1, "")}})
		b, err := os.ReadFile(filepath.Join(sub, "nccl_trace_rank_"+string(rune('0'+r))+".json"))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "nccl_trace_rank_"+string(rune('0'+r))+".json"), string(b))
	}
	im, err := ReadFiles([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range im.Warnings {
		if strings.Contains(w, "another job") {
			t.Errorf("warning %q; want none: split groups are one job's", w)
		}
	}
}

// TestRankListHeldOnce: every dump carries its process groups' rank lists; the import holds each
// list once, whichever dump it came from, so that memory grows with ranks, not ranks².
func TestRankListHeldOnce(t *testing.T) {
	sets := newRankSets()
	var dumps []*dump
	for _, name := range []string{"nccl_trace_rank_0", "nccl_trace_rank_1", "nccl_trace_rank_2"} {
		d, err := readFile(filepath.Join("testdata", "hang", name), sets, Options{}.limits())
		if err != nil {
			t.Fatal(err)
		}
		dumps = append(dumps, d)
	}
	for name, pc := range dumps[0].pgs {
		for i, d := range dumps[1:] {
			other, ok := d.pgs[name]
			if !ok || len(pc.ranks) == 0 {
				continue
			}
			if &other.ranks[0] != &pc.ranks[0] {
				t.Errorf("process group %s: dump %d holds its own copy of the ranks %v; want the one list shared", name, i+1, other.ranks)
			}
		}
	}
	if len(sets.byList) == 0 || len(sets.byList) > len(dumps[0].pgs) {
		t.Errorf("%d rank lists held for %d process groups; want one per group", len(sets.byList), len(dumps[0].pgs))
	}
}

// TestHangAtScaleIsOneLine: a hang at many ranks names those that entered as a count and runs of
// ranks, not one by one, so that the evidence stays a line and its "why" can be read.
func TestHangAtScaleIsOneLine(t *testing.T) {
	const n = 200
	var members []string
	ranks := map[int][]op{}
	for r := range n {
		members = append(members, fmt.Sprint(r))
		ranks[r] = []op{ar(1, ""), ar(2, "started")}
	}
	ranks[117] = []op{ar(1, "")}
	fs := verdicts(t, writeDumps(t, map[string][2]string{"0": {"default_pg", "[" + strings.Join(members, ", ") + "]"}}, ranks))
	if len(fs) == 0 {
		t.Fatal("no finding")
	}
	f := fs[0]
	want := "199 ranks (0–116, 118–199) entered it (all waiting in it, not completed); rank 117 never entered it"
	if f.Rank != 117 || !strings.Contains(f.Evidence, want) || len(f.Evidence) > 600 {
		t.Errorf("finding (rank %d, %d bytes) %q; want rank 117, with %q, under 600 bytes", f.Rank, len(f.Evidence), f.Evidence, want)
	}
	// The whole list stays in the finding (and the JSON report) for a program to read.
	if len(f.Entered) != n-1 || len(f.Waiting) != n-1 || slices.Contains(f.Entered, 117) || f.Entered[0] != 0 || f.Entered[n-2] != n-1 {
		t.Errorf("entered %d ranks, waiting %d; want every rank but 117 in each, in order", len(f.Entered), len(f.Waiting))
	}
}
