package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeviceCheckerOnRealJob runs scripts/device/check_attach.py on what a real job issued and
// what attach reported for it on a GPU (importers/testdata/realjob: an H200, torch 2.11, NCCL
// 2.28.9), one rank and two: both must match. On one rank NCCL ran all_to_all_single's
// ncclAlltoAll as a local copy, and the plugin saw no send or receive for it.
func TestDeviceCheckerOnRealJob(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found: scripts/device/check_attach.py (run on GPU machines) is not checked here")
	}
	const job = "../../importers/testdata/realjob/h200-torch2.11-nccl2.28.9"
	for _, c := range []struct {
		step string
		says []string
	}{
		{"torch", []string{"MATCH: attach reported what the job issued (1 rank(s))", "all_to_all                   16384      3         0         0"}},
		{"torch2", []string{"MATCH: attach reported what the job issued (2 rank(s))", "send                         16384      6        12        12"}},
	} {
		t.Run(c.step, func(t *testing.T) {
			issued, err := filepath.Glob(filepath.Join(job, c.step, "issued-job-rank*.json"))
			if err != nil || len(issued) == 0 {
				t.Fatalf("no issued lists under %s: %v", filepath.Join(job, c.step), err)
			}
			args := append([]string{"../../scripts/device/check_attach.py", "--report", filepath.Join(job, c.step, "attach.json")}, issued...)
			out, err := exec.Command("python3", args...).CombinedOutput()
			if err != nil {
				t.Errorf("check_attach.py: %v\n%s", err, out)
			}
			for _, s := range c.says {
				if !strings.Contains(string(out), s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
		})
	}
}
