package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/report/nccltests"
	"github.com/xfertop/xfertop/timeline"
)

var refLog = filepath.Join("..", "..", "report", "nccltests", "testdata", "h100x8x2_all_reduce.log")

// TestNCCLTestsCommand: xfertop nccl-tests OP prints a table nccl-tests' own parser-compatible
// reader takes, with the sizes -b/-e/-f ask for, for every operation and its binary's name.
func TestNCCLTestsCommand(t *testing.T) {
	for _, name := range []string{"all_reduce", "all_gather_perf", "reduce_scatter", "alltoall", "broadcast", "sendrecv"} {
		code, out, errs := runCLI(t, "nccl-tests", name, "-b", "1K", "-e", "1M", "-f", "4", "-n", "2")
		if code != exitOK {
			t.Fatalf("nccl-tests %s: exit %d: %s", name, code, errs)
		}
		tab, err := nccltests.Parse(strings.NewReader(out), name)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		var sizes []int64
		for _, r := range tab.Rows {
			sizes = append(sizes, r.Size)
		}
		if len(sizes) != 6 || sizes[0] != 1024 || sizes[5] != 1<<20 || tab.Ranks != 8 || tab.Iters != 2 || tab.Factor != 4 {
			t.Errorf("%s: sizes %v ranks %d iters %d factor %d", name, sizes, tab.Ranks, tab.Iters, tab.Factor)
		}
	}
	// nccl-tests prints a row per size step, even where sizes round to the same one: 8 to 64 B of
	// an all-gather over 8 ranks are four 0 B rows; its header gives -b and -e as asked.
	code, out, errs := runCLI(t, "nccl-tests", "all_gather", "-b", "8", "-e", "1K", "-n", "2")
	if code != exitOK {
		t.Fatalf("nccl-tests all_gather -b 8: exit %d: %s", code, errs)
	}
	tab, err := nccltests.Parse(strings.NewReader(out), "all_gather")
	if err != nil {
		t.Fatal(err)
	}
	var sizes []string
	for _, r := range tab.Rows {
		sizes = append(sizes, fmt.Sprint(r.Size))
	}
	if got := strings.Join(sizes, " "); got != "0 0 0 0 128 256 512 1024" || tab.MinBytes != 8 || tab.MaxBytes != 1024 {
		t.Errorf("all_gather -b 8 -e 1K over 8 ranks: sizes %s, minBytes %d maxBytes %d; want 0 0 0 0 128 256 512 1024, 8 and 1024", got, tab.MinBytes, tab.MaxBytes)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"nccl-tests"}, exitUsage, "give one operation"},
		{[]string{"nccl-tests", "gather"}, exitUsage, `"gather" is not an nccl-tests operation`},
		{[]string{"nccl-tests", "all_reduce", "-b", "1M", "-e", "1K"}, exitUsage, "need -b <= -e"},
		{[]string{"nccl-tests", "all_reduce", "--topology", "tpu"}, exitUsage, "unknown topology"},
	} {
		code, _, errs := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d %q; want %d %q", tc.args, code, errs, tc.code, tc.msg)
		}
	}
}

// TestAnalyzeNCCLTestsLog: analyze tells an nccl-tests log by its content; alone it prints the
// log's table, with --topology the simulated sweep beside it, size by size.
func TestAnalyzeNCCLTestsLog(t *testing.T) {
	code, out, errs := runCLI(t, "analyze", refLog)
	if code != exitOK || !strings.Contains(out, "all_reduce, 16 ranks, 31 sizes, avg bus bandwidth 70.742 GB/s") ||
		!strings.Contains(out, "  8589934592    47535.00    180.71    338.82") {
		t.Fatalf("analyze log: exit %d %s\n%s", code, errs, out)
	}
	code, out, errs = runCLI(t, "analyze", refLog, "--topology", "h100x8x2")
	if code != exitOK {
		t.Fatalf("analyze --topology: exit %d: %s", code, errs)
	}
	lines := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 8 && !strings.HasPrefix(l, "#") {
			lines++
		}
	}
	if lines != 31 || !strings.Contains(out, "≥ 1 GiB") || !strings.Contains(out, "NVLSTree_Simple") {
		t.Errorf("comparison: %d rows; want 31 and the size ranges\n%s", lines, out)
	}
}

// TestAnalyzeNCCLTestsLogErrors: a malformed log is a data error naming file, line and column; a
// log whose operation cannot be told needs --op to be compared.
func TestAnalyzeNCCLTestsLogErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.log")
	src, err := os.ReadFile(refLog)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(src), "  47535  180.71", "  47535  18O.71", 1)
	if err := os.WriteFile(bad, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "analyze", bad)
	if code != exitData || !strings.Contains(errs, bad+`:54:64: algbw "18O.71" is not a number`) {
		t.Errorf("bad log: exit %d %q", code, errs)
	}
	noRanks := filepath.Join("..", "..", "report", "nccltests", "testdata", "h100x16_ib400_all_reduce.log")
	code, _, errs = runCLI(t, "analyze", noRanks, "--topology", "h100x8x2")
	if code != exitUsage || !strings.Contains(errs, "give --op") {
		t.Errorf("no ranks: exit %d %q", code, errs)
	}
	code, out, errs := runCLI(t, "analyze", noRanks, "--topology", "h100x8x2", "--op", "all_reduce")
	if code != exitOK || !strings.Contains(out, "ranks not in the log") {
		t.Errorf("--op all_reduce: exit %d %q\n%s", code, errs, out)
	}
	if sweepScenario(timeline.CollAllToAll) != "nccl-alltoall" || sweepScenario(timeline.CollReduceScatter) != "nccl-reduce-scatter" {
		t.Errorf("sweep scenarios: %s, %s", sweepScenario(timeline.CollAllToAll), sweepScenario(timeline.CollReduceScatter))
	}
}
