package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// Tolerances of the what-if of a recording made with a fault. The unchanged replay applies the
// recording's faults as the simulator's links had them: at 128 GPUs with one NIC at 0.3 of its
// rate it reproduces the faulty steps within 1.3% (the NCCL model times each collective alone,
// where the simulator shares the slowed NIC among concurrent flows). Before, it re-timed the
// collectives without the fault and called the fault's whole effect (-7.9%) its own error. With
// the fault healed (--heal) it predicts the healthy run within 0.12%.
const (
	faultReplayFloorPct = 2.0
	faultHealTolPct     = 1.0
)

// whatif of a recording with a slow NIC reproduces it with nothing changed (its noise floor is
// the method's error, not the fault's cost), and --heal predicts the simulator's healthy run.
func TestWhatIfReplaysTheRecordingsFaults(t *testing.T) {
	dir := t.TempDir()
	job := []string{"run", "--headless", "--scenario", "llm-train", "--topology", "h100x8x4", "--hosts", "16", "--steps", "4"}
	const nic = "kind=nic_slow,host=5,nic=3,factor=0.3,at=1.1s"
	healthy, faulty := filepath.Join(dir, "healthy.xfr"), filepath.Join(dir, "nic.xfr")
	for _, args := range [][]string{
		append(append([]string{}, job...), "--record", healthy),
		append(append([]string{}, job...), "--fault", nic, "--record", faulty),
	} {
		if code, _, errs := runCLI(t, args...); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
	}
	want, _ := steadyStep(t, healthy)
	measured, unchanged := steadyStep(t, faulty)
	if measured < 1.05*want {
		t.Fatalf("the slow NIC's run takes %.2f ms a step, the healthy one %.2f: the fault costs too little for this test", measured/1e6, want/1e6)
	}
	if err := (unchanged - measured) / measured * 100; math.Abs(err) > faultReplayFloorPct {
		t.Errorf("whatif nic.xfr (nothing changed): %.2f → %.2f ms a step (%+.2f%%): the unchanged replay should reproduce the faulty run within ±%.1f%%", measured/1e6, unchanged/1e6, err, faultReplayFloorPct)
	}
	_, healed := steadyStep(t, faulty, "--heal", "kind=nic_slow,host=5,nic=3")
	if err := (healed - want) / want * 100; math.Abs(err) > faultHealTolPct {
		t.Errorf("whatif nic.xfr --heal: %.2f → %.2f ms a step; the healthy run takes %.2f ms (%+.2f%%, tolerance ±%.1f%%)", measured/1e6, healed/1e6, want/1e6, err, faultHealTolPct)
	}
	code, out, errs := runCLI(t, "whatif", "--headless", faulty, "--heal", "all")
	if code != exitOK {
		t.Fatalf("whatif --heal all: exit %d: %s", code, errs)
	}
	for _, w := range []string{"B: predicted: the job with " + nic + " removed", "the recording was made with " + nic + "; the unchanged replay applies them", "B heals " + nic} {
		if !strings.Contains(out, w) {
			t.Errorf("whatif --heal all: no %q in\n%s", w, out)
		}
	}
	// --heal names one of the recording's faults; what it cannot take out is refused.
	slowHost := filepath.Join(dir, "host.xfr")
	if code, _, errs := runCLI(t, "run", "--headless", "--scenario", "llm-train", "--hosts", "2", "--steps", "2", "--set", "pp=1", "--set", "layers=2",
		"--fault", "kind=host_slow,host=1,delay=100us", "--record", slowHost); code != exitOK {
		t.Fatalf("run with a slow host: exit %d: %s", code, errs)
	}
	for _, tc := range []struct {
		rec, heal, want string
	}{
		{faulty, "kind=nic_slow,host=6", "no fault of the recording matches it (it has: " + nic + ")"},
		{healthy, "all", "the recording was made with no fault"},
		{faulty, "bogus", `"bogus" is not key=value`},
		{slowHost, "kind=host_slow", "a slow host's delay lies in the host's gaps between launches, which the replay keeps as measured"},
	} {
		code, _, errs := runCLI(t, "whatif", "--headless", tc.rec, "--heal", tc.heal)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("whatif %s --heal %s: exit %d, %q; want exit %d saying %q", filepath.Base(tc.rec), tc.heal, code, errs, exitUsage, tc.want)
		}
	}
}
