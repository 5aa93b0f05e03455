package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xfertop/xfertop/recordings"
)

// testBinary is the command built once for every end-to-end test of the package.
var testBinary struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(senderEnv); spec != "" { // a sender process of BenchmarkListenCollector4096GPUs
		os.Exit(senderMain(spec))
	}
	code := m.Run()
	if testBinary.dir != "" {
		os.RemoveAll(testBinary.dir)
	}
	os.Exit(code)
}

// commandBinary builds the command (once) and returns its path.
func commandBinary(t *testing.T) string {
	t.Helper()
	testBinary.once.Do(func() {
		if testBinary.dir, testBinary.err = os.MkdirTemp("", "xfertop-e2e-"); testBinary.err != nil {
			return
		}
		testBinary.path = filepath.Join(testBinary.dir, "xfertop")
		if out, err := exec.Command("go", "build", "-o", testBinary.path, ".").CombinedOutput(); err != nil {
			testBinary.err = fmt.Errorf("build: %v: %s", err, out)
		}
	})
	if testBinary.err != nil {
		t.Fatal(testBinary.err)
	}
	return testBinary.path
}

// runBinary runs the built command to its end: exit status, standard output, standard error.
func runBinary(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, commandBinary(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// How standard error is compared.
const (
	exact  = iota
	prefix // the flag package follows its message with the flags' usage
	suffix // help ends with the exit statuses
)

// Every way the command ends, run as a user runs it: the exit status and the exact message.
func TestExitStatusAndMessage(t *testing.T) {
	dir := t.TempDir()
	emptyDir := t.TempDir()
	good := filepath.Join(dir, "good.xfr")
	if code, _, errs := runCLI(t, "run", "--headless", "--steps", "3", "--scenario", "overlap", "--record", good); code != exitOK {
		t.Fatal(errs)
	}
	rec, err := recordings.ReadFile(good, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var end int64
	for _, e := range rec.Events {
		end = max(end, e.End)
	}
	bad, badAt := corruptCopy(t, good)
	trace := filepath.Join(dir, "cut.json")
	if err := os.WriteFile(trace, []byte(`{"traceEvents": [ {"ph": "X"`), 0o644); err != nil {
		t.Fatal(err)
	}
	nsysRep := filepath.Join(dir, "run.nsys-rep")
	if err := os.WriteFile(nsysRep, []byte("\x00\x01 binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.xfr") // the header alone: a run killed before its first flush
	if err := os.WriteFile(empty, data[:16], 0o644); err != nil {
		t.Fatal(err)
	}
	notClosed := "xfertop: warning: " + empty + ": the recording was not closed cleanly (no index): it may end before the session did\n"
	// Files cut before or inside the recording header: empty, the magic's first 5 bytes, and a
	// job's directory holding an empty rank recording beside a good one.
	zero, cut, cutBin, emptyJSON := filepath.Join(dir, "zero.xfr"), filepath.Join(dir, "cut.xfr"), filepath.Join(dir, "cut.bin"), filepath.Join(dir, "empty.json")
	ranks := filepath.Join(dir, "ranks")
	if err := os.Mkdir(ranks, 0o755); err != nil {
		t.Fatal(err)
	}
	rank0 := filepath.Join(ranks, "t0.xfr")
	for p, b := range map[string][]byte{zero: nil, cut: data[:5], cutBin: data[:5], emptyJSON: nil, rank0: nil, filepath.Join(ranks, "t1.xfr"): data} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	userScenario, badDefault := filepath.Join(dir, "mine.yaml"), filepath.Join(dir, "bad.yaml")
	for p, d := range map[string]string{userScenario: "1ms", badDefault: "soon"} {
		src := "name: mine\nknobs:\n  t: {default: " + d + ", help: time}\nphases: [{compute: {duration: \"${t}\"}}]\n"
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const starts = `a recording starts with "XFERTOP\x00" and its format version)`
	isEmpty := func(p string) string {
		return p + `: the file is empty (0 bytes; a recording starts with a 16-byte header, "XFERTOP\x00" and its format version)` + "\n"
	}
	missing := filepath.Join(dir, "none.xfr")
	noDir := filepath.Join(dir, "no", "such", "dir.xfr")
	const diskFull = "xfertop run: --record /dev/full: no space left on device; the run was stopped at that point, and the recording keeps every chunk completed before it\n"
	corrupt := func(cmd string) string {
		hint := fmt.Sprintf("use --salvage to skip damaged chunks, or xfertop repair %s to cut the file there", bad)
		if cmd == "convert" {
			hint = fmt.Sprintf("xfertop repair %s cuts the file there; xfertop replay --salvage reads past it", bad)
		}
		return fmt.Sprintf("xfertop %s: %s: corrupt recording at byte offset %d: checksum mismatch (%s)\n", cmd, bad, badAt, hint)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
		match  int
		stdout string // a part of standard output; "" wants it empty
	}{
		{"success", []string{"run", "--headless", "--steps", "1"}, exitOK, "", exact, "xfertop report: pipeline"},
		{"replay from a time inside the recording", []string{"replay", good, "--headless", "--from", humanDuration(end / 2)}, exitOK, "", exact, "xfertop report: overlap"},

		{"unwritable --record: a missing directory", []string{"run", "--headless", "--steps", "1", "--record", noDir}, exitFailure,
			"xfertop run: --record " + noDir + ": cannot create the recording: no such file or directory\n", exact, ""},
		{"unwritable --record: a directory", []string{"run", "--headless", "--steps", "1", "--record", dir}, exitFailure,
			"xfertop run: --record " + dir + ": cannot create the recording: is a directory\n", exact, ""},
		{"disk full: the report of what ran, one message", []string{"run", "--headless", "--steps", "100000", "--record", "/dev/full"}, exitFailure,
			diskFull, exact, "run ended early: recording /dev/full failed: no space left on device"},

		{"usage: unknown flag", []string{"run", "--frobnicate"}, exitUsage, "xfertop run: flag provided but not defined: -frobnicate (see xfertop run --help)\n", exact, ""},
		{"usage: unknown flag, listen", []string{"listen", "--frobnicate"}, exitUsage, "xfertop listen: flag provided but not defined: -frobnicate (see xfertop listen --help)\n", exact, ""},
		{"usage: unknown flag, attach", []string{"attach", "--frobnicate"}, exitUsage, "xfertop attach: flag provided but not defined: -frobnicate (see xfertop attach --help)\n", exact, ""},
		{"usage: bad value", []string{"run", "--steps", "-1"}, exitUsage, "xfertop run: --steps -1: must not be negative (0: the scenario's own)\n", exact, ""},
		{"usage: a --set value that is not a duration", []string{"run", "--headless", "--set", "compute=soon"}, exitUsage,
			"xfertop run: --set compute=soon: \"soon\" is not a duration (examples: 150us, 21ms, 2s); it sets pipeline.compute at builtin:pipeline:26\n", exact, ""},
		{"usage: a --set value, scenario file", []string{"run", "--headless", "--scenario", userScenario, "--set", "t=soon"}, exitUsage,
			"xfertop run: --set t=soon: \"soon\" is not a duration (examples: 150us, 21ms, 2s); it sets compute.duration at " + userScenario + ":4\n", exact, ""},
		{"usage: a --set value not allowed", []string{"run", "--headless", "--set", "d2d_priority=urgent"}, exitUsage,
			"xfertop run: --set d2d_priority=urgent: must be one of high|normal; the knob is declared at builtin:pipeline:12\n", exact, ""},
		{"usage: a --compare value", []string{"run", "--headless", "--compare", "compute=1ms,soon"}, exitUsage,
			"xfertop run: --compare compute=soon: \"soon\" is not a duration (examples: 150us, 21ms, 2s); it sets pipeline.compute at builtin:pipeline:26\n", exact, ""},
		{"usage: a bad default in a scenario file is the file's", []string{"run", "--headless", "--scenario", badDefault}, exitUsage,
			"xfertop run: " + badDefault + ":4: compute.duration: \"soon\" is not a duration (examples: 150us, 21ms, 2s)\n", exact, ""},
		{"usage: unknown command", []string{"frob"}, exitUsage, "xfertop: unknown command \"frob\" (commands: run, replay, listen, analyze, nccl-tests, convert, compare, whatif, attach, plugin, diagnose, repair, scenarios, topologies, version, help)\n", exact, ""},
		{"usage: replay a directory", []string{"replay", emptyDir, "--headless"}, exitUsage, "xfertop replay: " + emptyDir + " is a directory without recordings (*.xfr), Flight Recorder dumps, NCCL Inspector logs or traces (*.json, *.json.gz): give a recording or trace files, or the directory of a job's per-rank recordings (XFERTOP_RECORD_DIR), dumps, logs or traces\n", exact, ""},
		{"usage: analyze a directory", []string{"analyze", emptyDir}, exitUsage, "xfertop analyze: " + emptyDir + " is a directory without recordings (*.xfr), Flight Recorder dumps, NCCL Inspector logs or traces (*.json, *.json.gz): give a recording or trace files, or the directory of a job's per-rank recordings (XFERTOP_RECORD_DIR), dumps, logs or traces\n", exact, ""},
		{"usage: convert a directory", []string{"convert", emptyDir, filepath.Join(dir, "o.json")}, exitUsage, "xfertop convert: " + emptyDir + " is a directory without recordings (*.xfr), Flight Recorder dumps, NCCL Inspector logs or traces (*.json, *.json.gz): give a recording or trace files, or the directory of a job's per-rank recordings (XFERTOP_RECORD_DIR), dumps, logs or traces\n", exact, ""},
		{"usage: replay a missing file", []string{"replay", missing}, exitUsage, "xfertop replay: " + missing + ": no such file\n", exact, ""},
		{"usage: --from past the end", []string{"replay", good, "--headless", "--from", "1000h"}, exitUsage,
			"xfertop replay: --from 1000h0m0s is past the end of " + good + ": the recording ends at " + humanDuration(end) + "\n", exact, ""},
		{"usage: convert to the wrong kind", []string{"convert", good, filepath.Join(dir, "o.txt")}, exitUsage,
			"xfertop convert: " + good + " is a recording; write it to a .json file (Chrome trace) or a .xfr recording, not \"" + filepath.Join(dir, "o.txt") + "\"\n", exact, ""},

		{"alert", []string{"run", "--headless", "--scenario", "deadlock"}, exitAlert,
			"xfertop run: the run ended early: watchdog: send op 1 from rank 0 waited 2.00 s for rank 1, which never posted its half (16 MiB); root of this hang (diagnosis): rank 1 (host 0 GPU 1)\n", exact, "[watchdog]"},

		{"data: corrupt recording, replay", []string{"replay", bad, "--headless"}, exitData, corrupt("replay"), exact, ""},
		{"data: corrupt recording, analyze", []string{"analyze", bad}, exitData, corrupt("analyze"), exact, ""},
		{"data: corrupt recording, convert", []string{"convert", bad, filepath.Join(dir, "o.json")}, exitData, corrupt("convert"), exact, ""},
		{"data: corrupt recording, --from", []string{"replay", bad, "--headless", "--from", "1ms"}, exitData, corrupt("replay"), exact, ""},
		{"data: a truncated trace, replay (imported first)", []string{"replay", trace, "--headless"}, exitData,
			"xfertop replay: " + trace + ": the JSON ends before it is complete, at byte offset 28 (is the file truncated?)\n", exact, ""},
		{"data: an Nsight Systems report", []string{"replay", nsysRep, "--headless"}, exitData,
			"xfertop replay: " + nsysRep + ": this is an Nsight Systems report; run `nsys export --type sqlite FILE` and open the .sqlite\n", exact, ""},
		{"data: no events, replay", []string{"replay", empty, "--headless"}, exitData, notClosed + "xfertop replay: " + empty + ": no events\n", exact, ""},
		{"data: no events, --from", []string{"replay", empty, "--headless", "--from", "1s"}, exitData, "xfertop replay: " + empty + ": no events\n", exact, ""},
		{"data: no events, analyze", []string{"analyze", empty}, exitData, notClosed + "xfertop analyze: " + empty + ": no events\n", exact, ""},
		{"data: an empty recording, replay", []string{"replay", zero, "--headless"}, exitData, "xfertop replay: " + isEmpty(zero), exact, ""},
		{"data: an empty recording, analyze", []string{"analyze", zero}, exitData, "xfertop analyze: " + isEmpty(zero), exact, ""},
		{"data: a recording cut in its header", []string{"replay", cut, "--headless"}, exitData,
			"xfertop replay: " + cut + ": truncated recording header (5 bytes of 16; " + starts + "\n", exact, ""},
		{"data: a recording cut in its header, told by its magic", []string{"convert", cutBin, filepath.Join(dir, "o.json")}, exitData,
			"xfertop convert: " + cutBin + ": truncated recording header (5 bytes of 16; " + starts + "\n", exact, ""},
		{"data: an empty rank recording in a job's directory", []string{"replay", ranks, "--headless"}, exitData, "xfertop replay: " + isEmpty(rank0), exact, ""},
		{"data: an empty trace", []string{"analyze", emptyJSON}, exitData, "xfertop analyze: " + emptyJSON + ": the file is empty (0 bytes)\n", exact, ""},
		{"data: malformed trace", []string{"analyze", trace}, exitData, "xfertop analyze: " + trace + ": the JSON ends before it is complete, at byte offset 28 (is the file truncated?)\n", exact, ""},

		{"help: run", []string{"run", "-h"}, exitOK, "", exact, exitHelp},
		{"help: run, among flags", []string{"run", "--steps", "2", "--help"}, exitOK, "", exact, exitHelp},
		{"help: replay", []string{"replay", "-h"}, exitOK, "", exact, exitHelp},
		{"help: analyze", []string{"analyze", "-h"}, exitOK, "", exact, exitHelp},
		{"help: convert", []string{"convert", "-h"}, exitOK, "", exact, exitHelp},
		{"help: compare", []string{"compare", "--help"}, exitOK, "", exact, exitHelp},
		{"help: listen", []string{"listen", "--help"}, exitOK, "", exact, exitHelp},
		{"help: attach", []string{"attach", "--help"}, exitOK, "", exact, exitHelp},
		{"help: nccl-tests", []string{"nccl-tests", "--help"}, exitOK, "", exact, exitHelp},
		{"help: scenarios", []string{"scenarios", "-h"}, exitOK, "", exact, exitHelp},
		{"help: plugin", []string{"plugin", "--help"}, exitOK, "", exact, "Usage: xfertop plugin\n"},
		{"help: plugin, -h", []string{"plugin", "-h"}, exitOK, "", exact, exitHelp},
		{"usage: plugin with an argument", []string{"plugin", "x"}, exitUsage, "xfertop plugin: takes no arguments\n", exact, ""},
		// Small files given a device that never ends: refused once past their bound, not read whole.
		{"topology /dev/zero", []string{"run", "--headless", "--topology", "/dev/zero"}, exitUsage, "xfertop run: --topology: read topology: /dev/zero: larger than 1 MiB, too large for a topology file\n", exact, ""},
		{"scenario /dev/zero", []string{"run", "--headless", "--scenario", "/dev/zero"}, exitUsage, "xfertop run: read scenario: /dev/zero: larger than 1 MiB, too large for a scenario file\n", exact, ""},
		{"token /dev/zero", []string{"listen", "--headless", "--auth-token-file", "/dev/zero", "--grpc", "127.0.0.1:0", "--http", ""}, exitUsage, "xfertop listen: --auth-token-file: /dev/zero: larger than 64 KiB, too large for a token file\n", exact, ""},
		{"tls /dev/zero", []string{"listen", "--headless", "--tls-cert", "/dev/zero", "--tls-key", "/dev/zero", "--grpc", "127.0.0.1:0", "--http", ""}, exitUsage, "xfertop listen: --tls-cert /dev/zero, --tls-key /dev/zero: /dev/zero: larger than 1 MiB, too large for a PEM certificate file\n", exact, ""},
		{"help: topologies", []string{"topologies", "--help"}, exitOK, "", exact, exitHelp},
		{"help: repair", []string{"repair", "--help"}, exitOK, "", exact, exitHelp},
		{"help", []string{"help"}, exitOK, "", exact, exitHelp},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, dev := range []string{"/dev/full", "/dev/zero"} {
				if strings.Contains(strings.Join(tc.args, " "), dev) {
					if _, err := os.Stat(dev); err != nil {
						t.Skip("no "+dev+" here: ", err)
					}
				}
			}
			code, out, errs := runBinary(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d; want %d", code, tc.code)
			}
			ok := errs == tc.stderr
			switch tc.match {
			case prefix:
				ok = strings.HasPrefix(errs, tc.stderr) && !strings.Contains(errs, "Exit status")
			case suffix:
				ok = strings.HasSuffix(errs, tc.stderr) && strings.HasPrefix(errs, "Usage: xfertop")
			}
			if !ok {
				t.Errorf("stderr:\n%s\nwant:\n%s", errs, tc.stderr)
			}
			if tc.stdout == "" && out != "" {
				t.Errorf("stdout should be empty, got:\n%s", out)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, out)
			}
		})
	}
}

// corruptCopy writes a copy of the recording at path with a byte flipped inside its first events
// chunk, and returns it and that chunk's offset (where the reader says the damage is).
func corruptCopy(t *testing.T, path string) (string, int64) {
	t.Helper()
	r, err := recordings.Open(path, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	at := int64(-1)
	for _, e := range r.Index() {
		if e.Events > 0 {
			at = e.Offset
			break
		}
	}
	data, err := os.ReadFile(path)
	if err != nil || at < 0 {
		t.Fatalf("no events chunk in %s: %v", path, err)
	}
	data[at+10] ^= 0xff
	bad := filepath.Join(filepath.Dir(path), "bad.xfr")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return bad, at
}

// humanDuration reads as a person writes a duration, and as --from takes it back.
func TestHumanDuration(t *testing.T) {
	tests := []struct {
		ns   int64
		want string
	}{
		{0, "0s"},
		{750, "750ns"},
		{21_500_123, "21.5ms"},
		{1_983_167_000, "1.983s"},
		{3_723_456_789_000, "1h2m3.457s"},
	}
	for _, tc := range tests {
		if got := humanDuration(tc.ns); got != tc.want {
			t.Errorf("humanDuration(%d) = %q; want %q", tc.ns, got, tc.want)
		}
		if d, err := time.ParseDuration(humanDuration(tc.ns)); err != nil || d.Round(time.Millisecond) != time.Duration(tc.ns).Round(time.Millisecond) {
			t.Errorf("--from does not take %q back: %v, %v", humanDuration(tc.ns), d, err)
		}
	}
}

// A disk that fills up during a run, on a real file system (a 1 MiB tmpfs): exit 1 with one message,
// the report of what ran, and a recording holding the run's first events in every complete chunk,
// with a torn tail where the disk filled.
func TestDiskFullOnTmpfs(t *testing.T) {
	dir := t.TempDir()
	mnt := filepath.Join(dir, "small")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a 1 MiB tmpfs here (mounting needs root): %v: %s; the /dev/full case of TestExitStatusAndMessage covers a full disk", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	path := filepath.Join(mnt, "run.xfr")
	args := []string{"run", "--headless", "--scenario", "pipeline", "--seed", "1", "--steps", "1500"} // ~4.7 MB compressed: the disk fills mid-run, not at the last flush
	code, out, errs := runBinary(t, append(args, "--record", path)...)
	want := "xfertop run: --record " + path + ": no space left on device; the run was stopped at that point, and the recording keeps every chunk completed before it\n"
	if code != exitFailure || errs != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant %d and:\n%s", code, errs, exitFailure, want)
	}
	if !strings.Contains(out, "xfertop report: pipeline") || !strings.Contains(out, "run ended early: recording "+path+" failed: no space left on device") {
		t.Errorf("the report of what ran is missing:\n%s", out)
	}
	got, err := recordings.ReadFile(path, recordings.Options{})
	if err != nil {
		t.Fatalf("the recording of a full disk does not read: %v", err)
	}
	if len(got.Warnings) != 1 || !strings.HasPrefix(got.Warnings[0], path+": torn tail at byte offset ") {
		t.Errorf("warnings %q; want one torn tail", got.Warnings)
	}
	// The same run, recorded where there is room: the full disk's recording is its beginning.
	whole := filepath.Join(dir, "whole.xfr")
	if code, _, errs := runBinary(t, append(args, "--record", whole)...); code != exitOK {
		t.Fatalf("the same run with room: exit %d: %s", code, errs)
	}
	all, err := recordings.ReadFile(whole, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) == 0 || len(got.Events) >= len(all.Events) || !reflect.DeepEqual(got.Events, all.Events[:len(got.Events)]) {
		t.Errorf("the full disk's recording holds %d events; want a non-empty beginning of the run's %d", len(got.Events), len(all.Events))
	}
	if code, _, errs := runBinary(t, "replay", path, "--headless"); code != exitOK || errs != "xfertop: warning: "+got.Warnings[0]+"\n" {
		t.Errorf("replay of the full disk's recording: exit %d, stderr %q", code, errs)
	}
}

// SIGINT and SIGTERM stop every command with status 130 and say so; a run prints the report of
// what ran and closes its recording. Each command is signalled once it is known to be running: the
// run and replay after their first line on standard error (printed after the signal handler is
// installed), analyze once it has opened the FIFO it reads (which never ends).
func TestInterrupted(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.xfr")
	if code, _, errs := runCLI(t, "run", "--headless", "--steps", "3", "--record", good); code != exitOK {
		t.Fatal(errs)
	}
	fifo := filepath.Join(dir, "trace.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFO here: ", err)
	}
	const notice = "xfertop: standard output is not a terminal: printing the headless report (use --headless to say so)\n"
	tests := []struct {
		name   string
		args   []string
		sig    syscall.Signal
		record string // a recording the run makes, to be closed cleanly
		fifo   bool   // ready once the FIFO is opened
		stderr string
		stdout string
	}{
		{"run, SIGINT", []string{"run", "--steps", "1000000", "--speed", "1"}, syscall.SIGINT, filepath.Join(dir, "int.xfr"), false,
			notice + "xfertop run: interrupted by SIGINT (Ctrl-C)\n", "run ended early: interrupted by SIGINT (Ctrl-C) at "},
		{"run, SIGTERM", []string{"run", "--steps", "1000000", "--speed", "1"}, syscall.SIGTERM, filepath.Join(dir, "term.xfr"), false,
			notice + "xfertop run: interrupted by SIGTERM\n", "run ended early: interrupted by SIGTERM at "},
		{"replay, SIGTERM", []string{"replay", good, "--speed", "0.0001"}, syscall.SIGTERM, "", false,
			notice + "xfertop replay: interrupted by SIGTERM\n", ""},
		{"analyze, SIGINT", []string{"analyze", fifo}, syscall.SIGINT, "", true,
			"xfertop analyze: interrupted by SIGINT (Ctrl-C)\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.record != "" {
				args = append(args, "--record", tc.record)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, commandBinary(t), args...)
			var out bytes.Buffer
			cmd.Stdout = &out
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			errs := bufio.NewReader(stderr)
			var first string
			if tc.fifo {
				w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // returns once the command has opened it
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
			} else if first, err = errs.ReadString('\n'); err != nil {
				t.Fatalf("no first line: %v", err)
			}
			if tc.record != "" {
				waitForData(t, tc.record) // so the signal comes in the middle of the run
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(errs)
			_ = cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
				t.Errorf("exit %d (%v); want %d", code, cmd.ProcessState, exitInterrupted)
			}
			if got := first + string(rest); got != tc.stderr {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, tc.stderr)
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, out.String())
			}
			if strings.Contains(out.String()+first+string(rest), "context canceled") {
				t.Errorf("Go's words for a cancel reach the user:\n%s%s%s", out.String(), first, rest)
			}
			if tc.record != "" {
				r, err := recordings.ReadFile(tc.record, recordings.Options{})
				if err != nil || len(r.Warnings) > 0 || len(r.Outcome) == 0 {
					t.Errorf("the interrupted run's recording is not closed cleanly: %v, warnings %v", err, r.Warnings)
				}
			}
		})
	}
}

// waitForData polls until the recording at path holds events: the recorder flushes every
// recordings.DefaultFlushEvery, so the run is well under way.
func waitForData(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err := os.Stat(path); err == nil && st.Size() > 1024 {
			return
		}
	}
	t.Fatalf("%s never held events", path)
}
