package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/ui"
)

// TestFlightRecorderInputs: a directory of Flight Recorder dumps is an input of analyze, compare
// and convert; the report's findings name the rank the hang waits on, and so do a conversion's.
func TestFlightRecorderInputs(t *testing.T) {
	dir := filepath.Join("..", "..", "importers", "flightrecorder", "testdata", "hang")
	type rep struct {
		Findings []struct {
			Kind string `json:"kind"`
			Rank *int32 `json:"rank"`
			Seq  int    `json:"seq"`
			Coll string `json:"coll"`
		} `json:"findings"`
	}
	check := func(what, out string) {
		t.Helper()
		var r rep
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		if len(r.Findings) != 1 || r.Findings[0].Kind != "hang" || r.Findings[0].Rank == nil || *r.Findings[0].Rank != 3 ||
			r.Findings[0].Seq != 5 || r.Findings[0].Coll != "all_reduce" {
			t.Errorf("%s: findings %+v; want one hang naming rank 3 at all_reduce #5", what, r.Findings)
		}
	}
	code, out, errs := runCLI(t, "analyze", "--json", dir)
	if code != exitOK {
		t.Fatalf("analyze: status %d, %s", code, errs)
	}
	check("analyze", out)
	xfr := filepath.Join(t.TempDir(), "fr.xfr")
	code, out, errs = runCLI(t, "convert", dir, xfr)
	if code != exitOK || !strings.Contains(out, "(flight-recorder, 4 per-rank files merged)") {
		t.Fatalf("convert: status %d, %q %s", code, out, errs)
	}
	code, out, errs = runCLI(t, "analyze", "--json", xfr)
	if code != exitOK {
		t.Fatalf("analyze the conversion: status %d, %s", code, errs)
	}
	check("analyze the conversion", out)
	if code, _, errs := runCLI(t, "compare", "--json", dir, xfr); code != exitOK {
		t.Errorf("compare: status %d, %s", code, errs)
	}
}

// TestFlightRecorderDirTitle: a directory of Flight Recorder dumps is titled by the directory the
// user gave, in the report (replay, analyze, and a conversion's) and in the console, not by the
// temporary recording it is imported into nor by the dumps found in it.
func TestFlightRecorderDirTitle(t *testing.T) {
	dir := filepath.Join("..", "..", "importers", "flightrecorder", "testdata", "hang")
	want := "xfertop report: " + dir + "\n"
	for _, args := range [][]string{{"replay", "--headless", dir}, {"analyze", dir}} {
		code, out, errs := runCLI(t, args...)
		if code != exitOK || !strings.HasPrefix(out, want) {
			t.Errorf("%s: status %d, first line %q; want %q (%s)", strings.Join(args, " "), code, strings.SplitN(out, "\n", 2)[0], want, errs)
		}
	}
	xfr := filepath.Join(t.TempDir(), "fr.xfr")
	if code, _, errs := runCLI(t, "convert", dir, xfr); code != exitOK {
		t.Fatalf("convert: status %d, %s", code, errs)
	}
	if code, out, _ := runCLI(t, "analyze", xfr); code != exitOK || !strings.HasPrefix(out, want) {
		t.Errorf("analyze the conversion: first line %q; want %q", strings.SplitN(out, "\n", 2)[0], want)
	}

	paths, err := rankInputs(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	opts := importers.Options{Source: givenSource([]string{dir})}
	err = openImport(context.Background(), paths, opts, session.ReplayConfig{}, 1<<20, importHooks{}, io.Discard,
		func(s ui.Source) error {
			src := s.(replaySource)
			m := console(src)
			scr := until(t, m, "the import replayed", func(string) bool { return src.Status().Import.Finished && src.Status().Done })
			// The header shows the last element of the path; the window's title the whole.
			if header := strings.SplitN(scr, "\n", 2)[0]; !strings.Contains(header, "replay hang ") {
				t.Errorf("the console's header: %q; want it to name the directory hang", header)
			}
			if title := m.View().WindowTitle; title != "xfertop: "+dir {
				t.Errorf("the window's title: %q; want %q", title, "xfertop: "+dir)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFlightRecorderNoDumpOfHungRank: the hung rank's dump missing, empty or not a dump, in a
// directory or with files given by name, gives a verdict naming it (no panic) in analyze, replay
// and the console; an unreadable dump is warned about.
func TestFlightRecorderNoDumpOfHungRank(t *testing.T) {
	src := filepath.Join("..", "..", "importers", "flightrecorder", "testdata", "hang")
	dump := func(t *testing.T, third string) string {
		t.Helper()
		dir := t.TempDir()
		for r := range 3 {
			b, err := os.ReadFile(filepath.Join(src, fmt.Sprintf("nccl_trace_rank_%d", r)))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("nccl_trace_rank_%d", r)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if third != "none" {
			if err := os.WriteFile(filepath.Join(dir, "nccl_trace_rank_3"), []byte(third), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	type rep struct {
		Findings []struct {
			Kind    string  `json:"kind"`
			Rank    *int32  `json:"rank"`
			Missing []int32 `json:"missing"`
		} `json:"findings"`
	}
	for _, c := range []struct{ name, third, warn string }{
		{"missing", "none", "no dump of rank 3"},
		{"empty", "", "nccl_trace_rank_3 (byte 0): empty file"},
		{"not a dump", "hello\n", "nccl_trace_rank_3 (byte 1): not a Flight Recorder dump"},
	} {
		dir := dump(t, c.third)
		byName := []string{"analyze", "--json"}
		for r := range 4 {
			if r < 3 || c.third != "none" {
				byName = append(byName, filepath.Join(dir, fmt.Sprintf("nccl_trace_rank_%d", r)))
			}
		}
		for _, args := range [][]string{{"analyze", "--json", dir}, {"replay", "--headless", "--json", dir}, byName} {
			t.Run(c.name+" "+args[0]+fmt.Sprint(len(args)), func(t *testing.T) {
				code, out, errs := runCLI(t, args...)
				var r rep
				if err := json.Unmarshal([]byte(out), &r); code != exitOK || err != nil {
					t.Fatalf("status %d (%v), %s", code, err, errs)
				}
				if len(r.Findings) == 0 || r.Findings[0].Kind != "hang" || r.Findings[0].Rank == nil || *r.Findings[0].Rank != 3 || fmt.Sprint(r.Findings[0].Missing) != "[3]" {
					t.Errorf("findings %+v; want a hang naming rank 3, missing [3]", r.Findings)
				}
				if !strings.Contains(errs, c.warn) {
					t.Errorf("stderr %q; want a warning containing %q", errs, c.warn)
				}
			})
		}
		t.Run(c.name+" console", func(t *testing.T) {
			paths, err := rankInputs(context.Background(), []string{dir})
			if err != nil {
				t.Fatal(err)
			}
			err = openImport(context.Background(), paths, importers.Options{Source: givenSource([]string{dir})}, session.ReplayConfig{}, 1<<20, importHooks{}, io.Discard,
				func(s ui.Source) error {
					src := s.(replaySource)
					m := console(src)
					until(t, m, "the import replayed", func(string) bool { return src.Status().Import.Finished && src.Status().Done })
					// The console folds what the replay emitted as it refreshes: the findings view is
					// looked at until it names the rank (never: the test fails with the screen).
					until(t, m, "the findings view naming rank 3, which left no dump", func(string) bool {
						return strings.Contains(press(m, "9"), "rank 3 never entered it as far as is known")
					})
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
