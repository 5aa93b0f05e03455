package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A job's Flight Recorder dumps and NCCL Inspector logs given together (importers/testdata/joint)
// are analysed as one job, exit status 0: Flight Recorder's hang verdict names rank 3 with the host
// Inspector gave it, and the collectives are Inspector's measurements, once. Dumps given with a
// trace are refused, exit status 4.
func TestAnalyzeJoinedFormats(t *testing.T) {
	fr := filepath.Join("..", "..", "importers", "flightrecorder", "testdata", "hang")
	insp := filepath.Join("..", "..", "importers", "testdata", "joint", "inspector")
	r := analyzeJSON(t, fr, insp)
	if len(r.Findings) == 0 || r.Findings[0].Culprit != "rank 3 (host node1)" || r.Findings[0].HostName == nil || *r.Findings[0].HostName != "node1" || r.Findings[0].Kind != "hang" {
		t.Errorf("findings %+v; want the hang's culprit rank 3 on node1 first", r.Findings)
	}
	if len(r.Collectives) != 2 || len(r.CollPartial) != 0 {
		t.Errorf("collectives %+v, partial %+v; want Inspector's all_gather and all_reduce rows, complete", r.Collectives, r.CollPartial)
	}
	code, out, errs := runCLI(t, "analyze", fr, insp)
	if code != exitOK || !strings.Contains(out, "hang: rank 3 (host node1) — all_reduce #5") || !strings.Contains(errs, "joined by rank: Flight Recorder") {
		t.Errorf("analyze: exit %d\n%s\n%s; want the hang on node1 and the join said", code, out, errs)
	}
	trace := filepath.Join("testdata", "hta_small.json")
	if code, _, errs := runCLI(t, "analyze", fr, trace); code != exitData || !strings.Contains(errs, "not joined by rank") {
		t.Errorf("dumps with a trace: exit %d (%s); want %d, refused", code, errs, exitData)
	}
}

// The job's Flight Recorder dumps, NCCL Inspector logs and NCCL RAS report analysed together,
// as people read the report (testdata/analyze_joined_ras.golden; go test -update rewrites it):
// one verdict, rank 3 on node1 dead and never entering all_reduce #5, with RAS's count of rank 1
// one behind as its evidence (Flight Recorder has rank 1 inside #5, waiting: no culprit of its
// own), then rank 2's error; exit status 0. The same dumps with an 8-rank job's RAS report are refused, exit status 4,
// naming both files.
func TestAnalyzeJoinedRASGolden(t *testing.T) {
	fr := filepath.Join("..", "..", "importers", "flightrecorder", "testdata", "hang")
	insp := filepath.Join("..", "..", "importers", "testdata", "joint", "inspector")
	ras := filepath.Join("..", "..", "importers", "ras", "testdata", "hang.json")
	code, out, errs := runCLI(t, "analyze", fr, insp, ras)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	golden := filepath.Join("testdata", "analyze_joined_ras.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if out != string(want) {
		t.Errorf("report differs from %s (go test -update rewrites it):\n%s", golden, out)
	}
	b, err := os.ReadFile(ras)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "ras8.json")
	if err := os.WriteFile(other, []byte(strings.Replace(string(b), `"size": 4`, `"size": 8`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "analyze", fr, other); code != exitData || !strings.Contains(errs, other) || !strings.Contains(errs, "nccl_trace_rank_0") ||
		!strings.Contains(errs, "not of one job: their job size differs (4 ranks, 8 ranks)") {
		t.Errorf("dumps with an 8-rank job's RAS report: exit %d (%s); want %d, refused naming both", code, errs, exitData)
	}
}
