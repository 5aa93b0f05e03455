package main

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/ui"
)

// verdicts are a report's findings as a person reads them: kind, culprit and evidence.
func verdicts(fs []report.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Kind+": "+f.Culprit+" — "+f.Evidence)
	}
	return out
}

// consoleVerdicts are a console's findings, read as verdicts reads a report's.
func consoleVerdicts(fs []diagnosis.Finding, gpusPerHost int) []string {
	var out []string
	for i := range fs {
		out = append(out, fs[i].Kind.String()+": "+fs[i].Culprit()+" — "+fs[i].Evidence)
	}
	return out
}

// A run that a hang stopped (ranks stuck inside a collective, mode=in: their ops never end, so no
// event records them) gets one verdict from the diagnosis, however its events reach it: live, the
// replay of its recording (headless and in the console) and analyze of it name the ranks stuck
// inside, not the rank the watchdog's alert named (which the replay alone once named, as it never
// saw what the run had in flight when it stopped).
func TestStoppedRunOneVerdict(t *testing.T) {
	ft, err := fault.Parse("kind=hang,host=1,gpu=1,mode=in,at=1.2s")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "h.xfr")
	p, err := session.Prepare(session.Config{Scenario: "llm-train", Topology: "h100x8x4", Hosts: 4, Seed: 3, Steps: 40,
		Faults: []fault.Fault{ft}, Record: path})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out.Ended == nil {
		t.Fatal("the hang did not stop the run")
	}
	gph := p.Meta().GPUsPerHost
	live := verdicts(p.Report(out).Findings)
	if len(live) == 0 {
		t.Fatal("the live run has no finding")
	}
	rp, err := session.Replay(context.Background(), session.ReplayConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	rep, _, err := inputReport([]string{path}, importers.Options{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := session.StartReplay(context.Background(), session.ReplayConfig{Path: path}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Stop()
	for deadline := time.Now().Add(time.Minute); !rs.Done() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	m := console(replaySource{r: rs, info: ui.SourceInfo{Replay: true, Name: path, Meta: rs.Meta, Duration: rs.Duration}})
	for _, c := range []struct {
		path string
		got  []string
	}{
		{"replay --headless", verdicts(rp.Report().Findings)},
		{"analyze", verdicts(rep.Findings)},
		{"replay (console)", consoleVerdicts(m.Result().Findings, gph)},
	} {
		if !slices.Equal(c.got, live) {
			t.Errorf("%s: the verdicts\n%q\ndiffer from the live run's\n%q", c.path, c.got, live)
		}
	}
	// The run's exit status too: a watchdog alert or a deadlock ended it (3), and a replay or an
	// analysis of its recording says so with the same status, so that a CI job replaying
	// recordings to catch hangs sees them; a healthy recording stays 0.
	healthy := filepath.Join(t.TempDir(), "ok.xfr")
	if code, _, errs := runCLI(t, "run", "--headless", "--steps", "2", "--record", healthy); code != exitOK {
		t.Fatalf("healthy run: %d %s", code, errs)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"replay", "--headless", path}, exitAlert},
		{[]string{"replay", "--headless", "--json", path}, exitAlert},
		{[]string{"analyze", path}, exitAlert},
		{[]string{"replay", "--headless", healthy}, exitOK},
		{[]string{"analyze", healthy}, exitOK},
	} {
		code, out, errs := runCLI(t, c.args...)
		if code != c.code || out == "" {
			t.Errorf("%v: exit %d (want %d), %d bytes of report, stderr %q", c.args, code, c.code, len(out), errs)
		}
		if c.code == exitAlert && !strings.Contains(errs, "the recorded run ended early") {
			t.Errorf("%v: stderr %q does not say how the recorded run ended", c.args, errs)
		}
	}
}
