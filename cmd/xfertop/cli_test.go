package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/scenario"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := xfertop(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestExitStatuses(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: bad\nphases:\n  - compute:\n      duration: soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(t.TempDir(), "kept.xfr") // an earlier session's recording
	if err := os.WriteFile(existing, []byte("an earlier recording"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		code    int
		errHas  string
		outHas  string
		outNone bool
	}{
		{"default headless", []string{"run", "--headless", "--steps", "2"}, exitOK, "", "xfertop report: pipeline", false},
		{"no args runs the default", []string{"--steps", "1"}, exitOK, "", "xfertop report: pipeline", false},
		{"unknown flag", []string{"run", "--frobnicate"}, exitUsage, "flag provided but not defined: -frobnicate", "", true},
		{"bad flag value", []string{"run", "--steps", "x"}, exitUsage, `invalid value "x" for flag -steps`, "", true},
		{"negative speed", []string{"run", "--speed", "-1"}, exitUsage, "--speed -1", "", true},
		{"record over a recording", []string{"run", "--headless", "--steps", "1", "--record", existing}, exitUsage, "--record " + existing + ": the file exists", "", true},
		{"record over a recording, listen", []string{"listen", "--headless", "--record", existing}, exitUsage, "--force-overwrite to replace it", "", true},
		{"record over a recording, attach", []string{"attach", "--headless", "--record", existing}, exitUsage, "--force-overwrite to replace it", "", true},
		{"record over a recording, forced", []string{"run", "--headless", "--steps", "1", "--record", existing, "--force-overwrite"}, exitOK, "", "xfertop report", false},
		{"version", []string{"--version"}, exitOK, "", "xfertop ", false},
		{"version command", []string{"version"}, exitOK, "", " go1.", false},
		{"unknown flag of topologies", []string{"topologies", "h100x8", "--bogus"}, exitUsage, "flag provided but not defined: --bogus", "", true},
		{"unknown flag of repair", []string{"repair", "--bogus", "x.xfr"}, exitUsage, "flag provided but not defined: --bogus", "", true},
		{"NaN speed", []string{"run", "--speed", "NaN"}, exitUsage, "--speed NaN: must be 0 (unpaced) or a positive number", "", true},
		{"infinite speed", []string{"run", "--speed", "Inf"}, exitUsage, "--speed +Inf: must be 0", "", true},
		{"negative steps", []string{"run", "--steps", "-1"}, exitUsage, "--steps -1: must not be negative", "", true},
		{"negative duration", []string{"run", "--duration", "-1s"}, exitUsage, "--duration -1s: must not be negative", "", true},
		{"fit on the simulator", []string{"run", "--fit"}, exitUsage, "--fit: only the cuda backend", "", true},
		{"negative fault onset", []string{"run", "--fault", "kind=nic_slow,host=0,nic=0,factor=0.3,at=-1s"}, exitUsage, `at "-1s": must not be negative`, "", true},
		{"bad shutdown budget without endpoint", []string{"run", "--otlp-shutdown-timeout", "-1s"}, exitUsage, "--otlp-shutdown-timeout -1s: must be positive", "", true},
		{"campaign of too few steps", []string{"diagnose", "--campaign", "1", "--steps", "2"}, exitUsage, "--steps 2: give 3 or more", "", true},
		{"campaign negative healthy", []string{"diagnose", "--campaign", "1", "--healthy", "-5"}, exitUsage, "--healthy -5: give a number of healthy runs", "", true},
		{"campaign negative hosts", []string{"diagnose", "--campaign", "1", "--hosts", "-2"}, exitUsage, "--hosts -2: must not be negative", "", true},
		{"attach negative ranks per host", []string{"attach", "--gpus-per-host", "-1"}, exitUsage, "--gpus-per-host -1: must not be negative", "", true},
		{"attach no linger", []string{"attach", "--linger", "0s"}, exitUsage, "--linger 0s: must be positive", "", true},
		{"dump over --max-input-bytes", []string{"analyze", "--max-input-bytes", "100", filepath.Join("..", "..", "importers", "flightrecorder", "testdata", "hang")}, exitData, "nccl_trace_rank_0 (byte 100): more than 100 bytes (--max-input-bytes", "", true},
		{"log over --max-input-bytes", []string{"analyze", "--max-input-bytes", "100", filepath.Join("..", "..", "importers", "inspector", "testdata", "v2.32")}, exitData, "node0-pid1000.log: more than 100 bytes in the file (--max-input-bytes)", "", true},
		{"recording over --max-input-bytes, analyze", []string{"analyze", "--max-input-bytes", "100", filepath.Join("..", "..", "recordings", "testdata", "v1-pipeline.xfr")}, exitData, "v1-pipeline.xfr: 28147 bytes, more than --max-input-bytes (100)", "", true},
		{"recording over --max-input-bytes, replay", []string{"replay", "--headless", "--max-input-bytes", "100", filepath.Join("..", "..", "recordings", "testdata", "v1-pipeline.xfr")}, exitData, "v1-pipeline.xfr: 28147 bytes, more than --max-input-bytes (100)", "", true},
		{"recording under --max-input-bytes, replay", []string{"replay", "--headless", "--max-input-bytes", "1MiB", filepath.Join("..", "..", "recordings", "testdata", "v1-pipeline.xfr")}, exitOK, "", "xfertop report", false},
		{"replay NaN speed", []string{"replay", "--headless", "--speed", "NaN", "x.xfr"}, exitUsage, "--speed NaN: must be 0 (unpaced) or a positive number", "", true},
		{"replay Inf speed", []string{"replay", "--headless", "--speed", "+Inf", "x.xfr"}, exitUsage, "--speed +Inf: must be 0 (unpaced) or a positive number", "", true},
		{"replay negative from", []string{"replay", "--headless", "--from", "-1s", "x.xfr"}, exitUsage, "--from -1s: must not be negative", "", true},
		{"unknown scenario", []string{"run", "--scenario", "warp"}, exitUsage, `unknown scenario "warp"`, "", true},
		{"unknown knob", []string{"run", "--set", "warp=9"}, exitUsage, `unknown knob "warp"`, "", true},
		{"bad knob value", []string{"run", "--set", "d2d_priority=urgent"}, exitUsage, `--set d2d_priority=urgent: must be one of high|normal`, "", true},
		{"malformed set", []string{"run", "--set", "novalue"}, exitUsage, "want key=value", "", true},
		{"malformed file", []string{"run", "--scenario", bad}, exitUsage, bad + `:4: compute.duration: "soon" is not a duration`, "", true},
		{"missing file", []string{"run", "--scenario", "/no/such.yaml"}, exitUsage, "read scenario: open /no/such.yaml", "", true},
		{"negative window", []string{"run", "--window", "-5"}, exitUsage, "--window -5: must be positive (or 0: sized to the job)", "", true},
		{"unknown topology", []string{"run", "--topology", "tpu"}, exitUsage, `unknown topology "tpu"`, "", true},
		{"unknown command", []string{"frob"}, exitUsage, `unknown command "frob"`, "", true},
		{"bad fault", []string{"run", "--fault", "kind=nic_slow,host=1"}, exitUsage, "nic_slow needs host, nic, factor", "", true},
		{"fault out of range", []string{"run", "--headless", "--fault", "kind=gpu_slow,host=5,gpu=0,factor=0.5"}, exitUsage, "gpu_slow: host 5 is out of range", "", true},
		{"fault finding", []string{"run", "--headless", "--scenario", "llm-train", "--topology", "h100x8x4", "--steps", "3", "--fault", "kind=gpu_slow,host=1,gpu=5,factor=0.6,at=1.1s"}, exitOK, "", "slow GPU: rank 13 (host 1 GPU 5)", false},
		{"diagnose a file", []string{"diagnose", "job.xfr"}, exitUsage, "run `xfertop analyze job.xfr` (its findings)", "", true},
		{"campaign of none", []string{"diagnose", "--campaign", "0"}, exitUsage, "--campaign 0: give the number of fault trials", "", true},
		{"campaign bad kind", []string{"diagnose", "--campaign", "1", "--kinds", "slowness"}, exitUsage, `--kinds: "slowness" is not a fault kind`, "", true},
		{"campaign", []string{"diagnose", "--campaign", "2", "--healthy", "1", "--scenario", "nccl-all-reduce", "--topology", "h100x8x2", "--steps", "3", "--kinds", "gpu_slow"}, exitOK, "", "healthy runs: 1, with any finding: 0", false},
		{"bad shutdown budget", []string{"run", "--otlp", "127.0.0.1:4317", "--otlp-shutdown-timeout", "0s"}, exitUsage, "--otlp-shutdown-timeout 0s: must be positive", "", true},
		// Nothing listens on port 1: the run ends without waiting out the budget, and says why.
		{"refusing collector", []string{"run", "--headless", "--steps", "2", "--otlp", "127.0.0.1:1", "--otlp-shutdown-timeout", "1m"}, exitOK, "", "the collector refuses connections", false},
		// Flags that cannot work are refused, naming the flag, rather than taken silently.
		{"NaN sample", []string{"run", "--otlp-sample", "NaN"}, exitUsage, "--otlp-sample NaN: give a fraction between 0 and 1", "", true},
		{"NaN rate", []string{"run", "--otlp", "127.0.0.1:1", "--otlp-max-rate", "NaN"}, exitUsage, "--otlp-max-rate NaN: give a number", "", true},
		{"NaN rate without endpoint", []string{"run", "--otlp-max-rate", "NaN"}, exitUsage, "--otlp-max-rate NaN", "", true},
		{"zero NVML interval", []string{"run", "--nvml", "--nvml-interval", "0"}, exitUsage, "--nvml-interval 0s: must be positive", "", true},
		{"nanosecond tick", []string{"run", "--tick", "1ns"}, exitUsage, "--tick 1ns: must be at least 10ms", "", true},
		{"nanosecond tick, replay", []string{"replay", "--tick", "1ns", "x.xfr"}, exitUsage, "--tick 1ns: must be at least 10ms", "", true},
		{"no span queue", []string{"listen", "--queue-spans", "0"}, exitUsage, "--queue-spans 0: must be positive", "", true},
		{"negative span queue", []string{"listen", "--queue-spans", "-5"}, exitUsage, "--queue-spans -5: must be positive", "", true},
		{"negative spans per request", []string{"listen", "--max-spans-per-request", "-1"}, exitUsage, "--max-spans-per-request -1: must be positive", "", true},
		{"negative reorder wait", []string{"listen", "--reorder-wait", "-1s"}, exitUsage, "--reorder-wait -1s: must not be negative", "", true},
		{"no connections", []string{"listen", "--max-conns", "0"}, exitUsage, "--max-conns 0: must be positive", "", true},
		{"no idle time", []string{"listen", "--conn-idle-timeout", "0s"}, exitUsage, "--conn-idle-timeout 0s: must be positive", "", true},
		{"attach tick", []string{"attach", "--tick", "1ns"}, exitUsage, "--tick 1ns: must be at least 10ms", "", true},
		{"no worst devices", []string{"run", "--headless", "--top", "0"}, exitUsage, "--top 0: must be at least 1", "", true},
		{"no worst devices, replay", []string{"replay", "--headless", "--top", "-1", "x.xfr"}, exitUsage, "--top -1: must be at least 1", "", true},
		{"no worst devices, analyze", []string{"analyze", "--top", "0", "x.xfr"}, exitUsage, "--top 0: must be at least 1", "", true},
		{"no worst devices, listen", []string{"listen", "--top", "0"}, exitUsage, "--top 0: must be at least 1", "", true},
		{"no worst devices, attach", []string{"attach", "--top", "0"}, exitUsage, "--top 0: must be at least 1", "", true},
		// 16 devices: every row, --top or not.
		{"top on a small run", []string{"run", "--headless", "--steps", "1", "--scenario", "allreduce-sweep", "--topology", "h100x8x2", "--top", "2"}, exitOK, "", "Devices (HTA temporal breakdown: % of each device's span; overlap: % of its communication time):", false},
		// A failed export is a warning after the report, and with --otlp-required its own status.
		{"refusing collector warns", []string{"run", "--headless", "--steps", "2", "--otlp", "127.0.0.1:1"}, exitOK,
			// Whether a metric export was tried before the end varies: only the warning's head is fixed.
			"xfertop: warning: the OTLP export to 127.0.0.1:1 failed: ", "xfertop report", false},
		{"refusing collector required", []string{"run", "--headless", "--steps", "2", "--otlp", "127.0.0.1:1", "--otlp-required"}, exitExport,
			"xfertop run: the OTLP export to 127.0.0.1:1 failed: ", "xfertop report", false},
		{"refusing collector required, replay", []string{"replay", "--headless", filepath.Join("testdata", "hta_small.json"), "--otlp", "127.0.0.1:1", "--otlp-required"}, exitExport,
			"xfertop replay: the OTLP export to 127.0.0.1:1 failed: ", "", false},
		{"watchdog alert", []string{"run", "--headless", "--scenario", "deadlock"}, exitAlert, "", "[watchdog] watchdog: send op", false},
		{"scenarios", []string{"scenarios"}, exitOK, "", "--set d2d_priority=high (high|normal)", false},
		{"help", []string{"help"}, exitOK, "", "-scenario string", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d; want %d (stderr %q)", code, tc.code, errs)
			}
			if tc.errHas != "" && !strings.Contains(errs, tc.errHas) {
				t.Errorf("stderr %q lacks %q", errs, tc.errHas)
			}
			if tc.outHas != "" && !strings.Contains(out, tc.outHas) {
				t.Errorf("stdout lacks %q:\n%s", tc.outHas, out)
			}
			if tc.outNone && out != "" {
				t.Errorf("stdout should be empty on error, got %q", out)
			}
		})
	}
}

func TestJSONReport(t *testing.T) {
	code, out, errs := runCLI(t, "run", "--headless", "--json", "--scenario", "crosshost", "--steps", "3", "--seed", "5")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if r["scenario"] != "crosshost" || r["topology"] != "h100x8x2" || r["devices"] != 16.0 || r["seed"] != 5.0 {
		t.Errorf("header fields: %v %v %v %v", r["scenario"], r["topology"], r["devices"], r["seed"])
	}
	if steps := r["steps"].(map[string]any); steps["count"] != 3.0 {
		t.Errorf("steps %v; want 3", steps)
	}
	// A user file and a --set override together, with a topology override.
	f := filepath.Join(t.TempDir(), "mine.yaml")
	src := "name: mine\ntopology: h100x8\nknobs:\n  n: {default: \"2\", help: copies}\nphases:\n  - copy: {dir: h2d, bytes: 1GiB, count: \"${n}\"}\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "run", "--headless", "--json", "--scenario", f, "--set", "n=3", "--topology", "h100x4", "--steps", "1")
	if code != exitOK {
		t.Fatalf("user file: exit %d: %s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	h2d := r["transfers"].(map[string]any)["by_kind"].(map[string]any)["h2d"].(map[string]any)
	if h2d["count"] != 12.0 || h2d["gbps"].(float64) < 18 {
		t.Errorf("4 devices × 3 copies sharing nothing: %v", h2d)
	}
}

// README's table of built-in scenarios lists every one.
func TestReadmeListsEveryBuiltin(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range scenario.BuiltinNames() {
		if !strings.Contains(string(readme), "| `"+name+"`") {
			t.Errorf("README's scenario table lacks %s", name)
		}
	}
}

// The help says what each command does: run and replay open the console (a report only with
// --headless), and analyze, replay and convert read Nsight Systems exports.
func TestHelpSaysWhatCommandsDo(t *testing.T) {
	code, out, _ := runCLI(t, "help")
	if code != exitOK {
		t.Fatalf("help: exit %d", code)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "xfertop" {
			lines[strings.Trim(f[1], "[]")] = l
		}
	}
	for _, cmd := range []string{"run", "replay"} {
		if l := lines[cmd]; !strings.Contains(l, "console") || strings.Contains(l, "and print") {
			t.Errorf("help on %s: %q; want it to say it opens the console", cmd, l)
		}
	}
	if !strings.Contains(out, "Nsight Systems exports (.sqlite") {
		t.Errorf("help does not say analyze reads Nsight Systems exports:\n%s", out)
	}
}
