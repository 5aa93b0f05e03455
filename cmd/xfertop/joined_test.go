package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A job's Flight Recorder dumps and NCCL Inspector logs given together (importers/testdata/joint)
// are analysed as one job, exit status 0: Flight Recorder's hang verdict names rank 3 with the host
// Inspector gave it, and the collectives are Inspector's measurements, once. Dumps given with an
// NCCL RAS report are still refused, exit status 4.
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
	ras := filepath.Join("..", "..", "importers", "ras", "testdata", "hang.json")
	if code, _, errs := runCLI(t, "analyze", fr, ras); code != exitData || !strings.Contains(errs, "not joined by rank") {
		t.Errorf("dumps with a RAS report: exit %d (%s); want %d, refused", code, errs, exitData)
	}
}
