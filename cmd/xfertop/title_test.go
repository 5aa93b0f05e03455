package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGivenSourceOfManyFiles: many files given (a glob of a job's per-rank traces) are named in
// the title by their pattern and count, not listed one by one; a few are left to the importer.
func TestGivenSourceOfManyFiles(t *testing.T) {
	ranks := func(dir string, n int) []string {
		var ps []string
		for r := range n {
			ps = append(ps, fmt.Sprintf("%srank-%d.json.gz", dir, r))
		}
		return ps
	}
	tests := []struct {
		name  string
		paths []string
		want  string
	}{
		{"128 traces in a directory", ranks("kin/", 128), "kin/rank-*.json.gz (128 files)"},
		{"bare names", ranks("", 12), "rank-*.json.gz (12 files)"},
		{"a few files", ranks("kin/", 3), ""},
		{"names sharing digits", []string{"t/r1.json", "t/r10.json", "t/r11.json", "t/r12.json", "t/r13.json"}, "t/r1*.json (5 files)"},
		{"several directories", append(ranks("a/", 3), ranks("b/", 3)...), "a/rank-0.json.gz, a/rank-1.json.gz, a/rank-2.json.gz, … (6 files)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := givenSource(tc.paths); got != tc.want {
				t.Errorf("givenSource(%d paths) = %q; want %q", len(tc.paths), got, tc.want)
			}
		})
	}
}

// TestDirectoryOfTraces: a directory of a job's per-rank traces is read as its trace files, and
// the report is titled by the directory.
func TestDirectoryOfTraces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for r := range 2 {
		body := fmt.Sprintf(`{"distributedInfo":{"rank":%d},"traceEvents":[{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":1700000000000000,"dur":5,"args":{"device":0,"stream":7,"correlation":1}}]}`, r)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank-%d.json", r)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := xfertop(context.Background(), []string{"analyze", dir}, &out, &errb); code != exitOK {
		t.Fatalf("analyze DIR of traces: exit %d, %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "xfertop report: "+dir+"\n") || !strings.Contains(out.String(), "(2 devices)") {
		t.Errorf("report:\n%s\nwant it titled by %s, of 2 devices", out.String(), dir)
	}
}
