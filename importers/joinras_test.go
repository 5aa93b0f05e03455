package importers

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// jointRAS is the NCCL RAS report of the job: rank 3 (node1, pid 201) considered dead, rank 2
// (node1) with an asynchronous error, rank 1 (node0) one AllReduce behind.
const jointRAS = "ras/testdata/hang.json"

// A job's Flight Recorder dumps joined with its NCCL RAS report, with or without its Inspector
// logs, make one verdict of rank 3: RAS considers it dead, and Flight Recorder saw it never enter
// all_reduce #5, which ranks 0–2 wait in. The finding is the dead rank (the cause), keeps the
// hang's collective and sequence number (what it held up), names rank 3's host (node1, from RAS
// alone when no Inspector log is given), and RAS's dead rank is not a second finding. RAS's count
// of rank 1, one AllReduce behind, is not a second culprit either: Flight Recorder has rank 1
// inside all_reduce #5, waiting with the others, so the count lagged (the kernel not yet launched
// when RAS looked), and it joins rank 3's finding as evidence. Rank 2's error stays a finding of
// its own, with its host.
func TestJoinFlightRecorderRAS(t *testing.T) {
	for _, c := range []struct {
		name    string
		paths   []string
		backend string
	}{
		{"dumps+ras", []string{jointFR, jointRAS}, "flight-recorder+nccl-ras"},
		{"ras+dumps", []string{jointRAS, jointFR}, "flight-recorder+nccl-ras"},
		{"dumps+inspector+ras", []string{jointFR, jointInspector, jointRAS}, "flight-recorder+nccl-inspector+nccl-ras"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, h, res := analyzeInputs(t, c.paths...)
			if res.Format != FormatJoined || h.Meta.Backend != c.backend || res.Importer != c.backend || h.Meta.Devices != 4 {
				t.Errorf("format %v, backend %q, importer %q, %d devices; want the joined format %q of 4 devices", res.Format, h.Meta.Backend, res.Importer, h.Meta.Devices, c.backend)
			}
			if len(r.Findings) == 0 {
				t.Fatal("no findings; want rank 3's")
			}
			f := r.Findings[0]
			if f.Kind != diagnosis.DeadRank || f.Rank != 3 || f.Seq != 5 || f.Coll != timeline.CollAllReduce {
				t.Errorf("first finding %+v; want rank 3 dead, holding up all_reduce #5", f)
			}
			for _, want := range []string{"rank 3 on node1 pid 201 GPU 1 is considered dead", "all_reduce #5 on process group 0 (default_pg)", "rank 3 never entered it",
				"RAS counts rank 1 one all_reduce behind the others: it had not launched #5's kernel when RAS looked"} {
				if !strings.Contains(f.Evidence, want) {
					t.Errorf("evidence %q lacks %q", f.Evidence, want)
				}
			}
			if strings.Contains(f.Evidence, "busy elsewhere") {
				t.Errorf("evidence %q still guesses what rank 3 was doing; RAS says it is dead", f.Evidence)
			}
			if got := hostNames(r); got[3] != "node1" || got[1] != "node0" {
				t.Errorf("hosts %v; want rank 3 on node1, rank 1 on node0", got)
			}
			kinds := map[diagnosis.Kind][]int32{}
			for _, f := range r.Findings {
				kinds[f.Kind] = append(kinds[f.Kind], f.Rank)
			}
			if len(kinds[diagnosis.DeadRank]) != 1 || len(kinds[diagnosis.RankError]) != 1 || kinds[diagnosis.RankError][0] != 2 || len(r.Findings) != 2 {
				t.Errorf("findings by kind %v; want rank 3 dead once, rank 2's error, and nothing else (rank 1's count behind is no culprit)", kinds)
			}
			w := strings.Join(res.Warnings, "\n")
			for _, s := range []string{"joined by rank: Flight Recorder", "NCCL RAS (" + jointRAS + ")", "placed at the end of the other sources' span"} {
				if !strings.Contains(w, s) {
					t.Errorf("warnings %q lack %q", w, s)
				}
			}
		})
	}
}

// A RAS report of an 8-rank job given with the 4-rank job's dumps is refused, naming both files
// and both sizes; so is one given with the dumps and their Inspector logs.
func TestJoinRASRefusesOtherJob(t *testing.T) {
	b, err := os.ReadFile(jointRAS)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "ras8.json")
	if err := os.WriteFile(other, []byte(strings.Replace(string(b), `"size": 4`, `"size": 8`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, paths := range [][]string{{jointFR, other}, {jointFR, jointInspector, other}} {
		_, errRead := Read(paths, Options{})
		_, errStream := Stream(paths, Options{}, &Collect{})
		for name, err := range map[string]error{"Read": errRead, "Stream": errStream} {
			if err == nil || !strings.Contains(err.Error(), jointFR) || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), "4 ranks, 8 ranks") {
				t.Errorf("%s %v: %v; want refused, naming the dumps and the report and their sizes", name, paths, err)
			}
		}
	}
}

// The RAS report joined with the Inspector logs alone (no dumps) is joined too: Inspector's
// measurements, RAS's findings, each rank's host.
func TestJoinInspectorRAS(t *testing.T) {
	r, h, res := analyzeInputs(t, jointInspector, jointRAS)
	if res.Format != FormatJoined || h.Meta.Backend != "nccl-inspector+nccl-ras" {
		t.Fatalf("format %v, backend %q; want the join of Inspector and RAS", res.Format, h.Meta.Backend)
	}
	if len(r.Findings) == 0 || r.Findings[0].Kind != diagnosis.DeadRank || r.Findings[0].Rank != 3 || r.Findings[0].HostName() != "node1" {
		t.Errorf("findings %+v; want RAS's dead rank 3 on node1 first", r.Findings)
	}
	if len(r.Collectives.Rows) != 2 {
		t.Errorf("collectives %+v; want Inspector's two rows", r.Collectives.Rows)
	}
}

// The report's findings of the joined Flight Recorder dumps and RAS report, as `xfertop analyze`
// prints them (testdata/joint/ras_findings.golden; go test -update rewrites it): rank 3 dead,
// holding up all_reduce #5, with RAS's count of rank 1 one behind as its evidence, and rank 2's
// error; no hang of rank 1 at 100% beside the dead rank, as before.
func TestJoinRASFindingsGolden(t *testing.T) {
	r, h, _ := analyzeInputs(t, jointFR, jointRAS)
	var b strings.Builder
	if err := report.Text(&b, report.Build(r, h.Meta, report.Run{})); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	i, j := strings.Index(text, "FINDINGS"), strings.Index(text, "\nALERTS")
	if i < 0 || j < i {
		t.Fatalf("no FINDINGS section before ALERTS in the report:\n%s", text)
	}
	got := text[i:j]
	golden := filepath.Join("testdata", "joint", "ras_findings.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("findings:\n%s\nwant (%s):\n%s", got, golden, want)
	}
	if strings.Contains(got, "hang: rank 1") {
		t.Errorf("rank 1, inside the collective the others wait in, named as a hang's culprit:\n%s", got)
	}
}
