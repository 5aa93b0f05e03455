package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/ui"
)

// TestConsoleCulpritIsReports: the console names each finding's culprit in the words the report
// does, from one formatter given the job's known layout: a source that does not say which ranks
// share a host by a count (NCCL RAS, Flight Recorder) gets "rank 3", or the host the source
// names it on ("rank 3 (host node1)": RAS's), never a host and GPU made up from the device count,
// and a simulated run on h100x8x4 gets its host and GPU in both.
func TestConsoleCulpritIsReports(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "slow.xfr")
	if code, _, errs := runCLI(t, "run", "--headless", "--scenario", "llm-train", "--topology", "h100x8x4", "--steps", "3",
		"--fault", "kind=gpu_slow,host=1,gpu=2,factor=0.5", "--record", rec); code != exitOK {
		t.Fatalf("run: status %d, %s", code, errs)
	}
	for _, c := range []struct {
		input string
		want  string // the first finding's culprit
	}{
		{filepath.Join("..", "..", "importers", "ras", "testdata", "hang.json"), "rank 3 (host node1)"}, // the host RAS names
		{filepath.Join("..", "..", "importers", "flightrecorder", "testdata", "hang"), "rank 3"},
		{rec, "rank 10 (host 1 GPU 2)"},
	} {
		t.Run(filepath.Base(c.input), func(t *testing.T) {
			code, out, errs := runCLI(t, "analyze", "--json", c.input)
			if code != exitOK {
				t.Fatalf("analyze: status %d, %s", code, errs)
			}
			var r struct {
				Findings []struct {
					Kind    string `json:"kind"`
					Culprit string `json:"culprit"`
				} `json:"findings"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Findings) == 0 || r.Findings[0].Culprit != c.want {
				t.Fatalf("the report's findings %+v; want the first culprit %q", r.Findings, c.want)
			}
			paths, err := rankInputs(context.Background(), []string{c.input})
			if err != nil {
				t.Fatal(err)
			}
			show := func(s ui.Source) error {
				m := console(s)
				until(t, m, "the replay done", func(string) bool { return s.Status().Done && (s.Status().Import == nil || s.Status().Import.Finished) })
				until(t, m, "the header showing a finding", func(string) bool { return strings.Contains(press(m, "9"), "⚠ ") })
				scr := press(m, "9")
				header, _, _ := strings.Cut(scr, " 1 Overview")
				if !strings.Contains(header, "⚠ "+r.Findings[0].Kind+": "+c.want+" — ") {
					t.Errorf("the header's finding does not name %q:\n%s", c.want, header)
				}
				for _, f := range r.Findings {
					if !strings.Contains(scr, "  "+f.Culprit+"  ") {
						t.Errorf("the findings view does not name the report's culprit %q:\n%s", f.Culprit, scr)
					}
				}
				if c.want == "rank 3" && strings.Contains(scr, "(host 0 GPU") {
					t.Errorf("the console places the culprit on a host no source named:\n%s", scr)
				}
				return nil
			}
			if strings.HasSuffix(c.input, ".xfr") {
				rs, err := session.StartReplay(context.Background(), session.ReplayConfig{Path: c.input}, 1<<22)
				if err != nil {
					t.Fatal(err)
				}
				defer rs.Stop()
				if err := show(replaySource{r: rs, info: ui.SourceInfo{Replay: true, Name: c.input, Meta: rs.Meta, Duration: rs.Duration}}); err != nil {
					t.Fatal(err)
				}
				return
			}
			err = openImport(context.Background(), paths, importers.Options{Source: givenSource([]string{c.input})}, session.ReplayConfig{}, 1<<20, importHooks{}, io.Discard, show)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
