package main

import (
	"strings"
	"testing"
)

// To a file or a pipe (not a terminal) the campaign's progress is whole lines: no carriage
// returns for a log to keep.
func TestDiagnoseProgressToAFile(t *testing.T) {
	code, _, errs := runCLI(t, "diagnose", "--campaign", "2", "--healthy", "1", "--scenario", "nccl-all-reduce", "--topology", "h100x8x2", "--steps", "3", "--kinds", "gpu_slow")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(errs, "\r") || !strings.Contains(errs, "3/3 runs, ") {
		t.Errorf("progress %q; want lines, ending at 3/3 runs, and no carriage return", errs)
	}
}

// A hang trial's line shows no slowdown (the run stopped early: its length says nothing of its
// pace), and the kinds the scenario cannot show are said before the trials.
func TestDiagnoseHangAndUnshown(t *testing.T) {
	code, _, errs := runCLI(t, "diagnose", "--campaign", "2", "--healthy", "0", "--kinds", "hang", "-v")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(errs, "slowdown -") || strings.Count(errs, "hung the run (slowdown —)") != 2 {
		t.Errorf("trials:\n%s\nwant each hang to have hung the run, with no slowdown", errs)
	}
	code, out, errs := runCLI(t, "diagnose", "--campaign", "1", "--healthy", "0")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := "\nllm-train on h100x8x4 cannot show pcie_gen (it moves nothing over PCIe): left out of the kinds drawn\n"; !strings.Contains(out, want) {
		t.Errorf("output:\n%s\nwant the line %q", out, want)
	}
}

// The help says what the campaign draws by default: the kinds a scenario cannot show are left
// out of it, and a quarter of the trials are healthy runs.
func TestDiagnoseHelpDefaults(t *testing.T) {
	code, out, errs := runCLI(t, "diagnose", "--help")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	help := strings.Join(strings.Fields(out+errs), " ")
	for _, want := range []string{
		"less the kinds the scenario cannot show there",
		"a quarter of the trials, at least 1",
		`(default "llm-train")`, `(default "h100x8x4")`, "(default 4)",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("diagnose --help:\n%s\nwant %q", out+errs, want)
		}
	}
}

// --set sets the scenario's knobs for every run of the campaign, as run's does, and the first line
// names them; a knob the scenario does not have, or a value it refuses, is a usage error naming it.
func TestDiagnoseSetKnobs(t *testing.T) {
	code, out, errs := runCLI(t, "diagnose", "--campaign", "1", "--healthy", "1", "--topology", "h100x8x2", "--hosts", "16", "--steps", "3",
		"--kinds", "gpu_slow", "--set", "ep=4", "-v")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := "diagnosis campaign: llm-train (ep=4) on h100x8x2 (16 hosts × 8 GPUs)"; !strings.HasPrefix(out, want) {
		t.Errorf("output:\n%s\nwant it to begin %q", out, want)
	}
	if !strings.Contains(errs, "seed 1: healthy -> no finding") {
		t.Errorf("trials:\n%s\nwant the healthy run (seed 1) without a finding", errs)
	}
	for _, c := range []struct{ set, want string }{
		{"ep=5", "--set ep=5: ep 5 must divide dp 4"},
		{"nope=1", `--set nope=1: unknown knob "nope"`},
		{"ep", `want key=value, got "ep"`},
	} {
		code, _, errs := runCLI(t, "diagnose", "--campaign", "1", "--topology", "h100x8x2", "--hosts", "16", "--set", c.set)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("--set %s: exit %d, %q; want %d and %q", c.set, code, errs, exitUsage, c.want)
		}
	}
}
