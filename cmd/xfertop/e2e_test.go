package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// tmuxSession drives the real binary in a tmux pane, as a person at a terminal would.
type tmuxSession struct {
	t    *testing.T
	name string
}

func startTmux(t *testing.T, w, h int, command string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (CI installs it from Debian): the end-to-end console test needs a terminal")
	}
	s := &tmuxSession{t: t, name: fmt.Sprintf("xfertop-e2e-%d", time.Now().UnixNano())}
	newSession := func() ([]byte, error) {
		return exec.Command("tmux", "new-session", "-d", "-s", s.name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), command).CombinedOutput()
	}
	out, err := newSession()
	if err != nil && strings.Contains(string(out), "server exited unexpectedly") {
		// The previous test's session was the server's last: it was still exiting. Once more.
		time.Sleep(200 * time.Millisecond)
		out, err = newSession()
	}
	if err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "kill-session", "-t", s.name).Run() })
	return s
}

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	for _, k := range keys {
		if out, err := exec.Command("tmux", "send-keys", "-t", s.name, k).CombinedOutput(); err != nil {
			s.t.Fatalf("send-keys %q: %v: %s", k, err, out)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

func (s *tmuxSession) screen() string {
	out, _ := exec.Command("tmux", "capture-pane", "-p", "-t", s.name).Output()
	return string(out)
}

func (s *tmuxSession) format(f string) string {
	out, _ := exec.Command("tmux", "display-message", "-p", "-t", s.name, f).Output()
	return strings.TrimSpace(string(out))
}

// restored asserts the terminal was given back: the alternate screen left, mouse reporting off.
func (s *tmuxSession) restored() {
	s.t.Helper()
	if s.format("#{alternate_on}") != "0" || s.format("#{mouse_any_flag}") != "0" {
		s.t.Errorf("terminal not restored: alternate screen %s, mouse reporting %s", s.format("#{alternate_on}"), s.format("#{mouse_any_flag}"))
	}
}

// waitFor polls the screen until it contains want.
func (s *tmuxSession) waitFor(want string, within time.Duration) string {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		scr := s.screen()
		if strings.Contains(scr, want) {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the screen never showed %q; it shows:\n%s", want, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func buildBinary(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (CI installs it from Debian): the end-to-end console test needs a terminal")
	}
	return commandBinary(t)
}

// The real binary, live: every view switched to, pause, help, quit; the terminal comes back, and
// the recording made meanwhile is closed and replays.
func TestConsoleEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	rec := filepath.Join(t.TempDir(), "console.xfr")
	s := startTmux(t, 120, 36, bin+" --scenario pipeline --record "+rec+"; echo XFERTOP_EXIT=$?; sleep 30")
	s.waitFor("1 Overview", 10*time.Second)
	if s.format("#{alternate_on}") != "1" {
		t.Error("the console did not switch to the alternate screen")
	}
	s.waitFor("Moved", 5*time.Second)
	views := []struct{ key, want string }{
		{"2", "following"}, {"3", "GB/s"}, {"4", "no barriers"}, {"5", "cause"}, {"6", "Communicator cache"},
		{"7", "promise_fulfilled"}, {"Tab", "worst GPUs"}, {"9", "No findings"}, {"Tab", "NVLink"},
	}
	for _, v := range views {
		s.keys(v.key)
		s.waitFor(v.want, 5*time.Second)
	}
	s.keys("2", "Space")
	paused := s.waitFor("paused", 3*time.Second)
	time.Sleep(400 * time.Millisecond)
	if s.screen() != paused {
		t.Error("the paused view kept changing")
	}
	s.keys("Space")
	s.waitFor("running", 3*time.Second)
	s.keys("?")
	s.waitFor("collapse device", 3*time.Second)
	s.keys("?", "q")
	after := s.waitFor("XFERTOP_EXIT=0", 10*time.Second)
	if strings.Contains(after, "1 Overview") {
		t.Errorf("the console is still on screen after quitting:\n%s", after)
	}
	s.restored()
	out, err := exec.Command(bin, "replay", rec, "--headless", "--json").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"scenario": "pipeline"`) || strings.Contains(string(out), "warning") {
		t.Errorf("the console's recording does not replay cleanly: %v\n%s", err, out)
	}
}

// A replay of a shipped sample opens at once and answers replay keys.
func TestReplayConsoleEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	sample, _ := filepath.Abs(filepath.Join("..", "..", "recordings", "samples", "straggler.xfr"))
	if _, err := os.Stat(sample); err != nil {
		t.Fatal(err)
	}
	s := startTmux(t, 120, 36, bin+" replay "+sample+" --speed 0.05; echo XFERTOP_EXIT=$?; sleep 30")
	s.waitFor("replay", 10*time.Second)
	s.keys("]")
	s.waitFor("speed 0.1×", 3*time.Second)
	s.keys("4")
	s.waitFor("rank 3", 10*time.Second)
	s.keys("q")
	s.waitFor("XFERTOP_EXIT=0", 10*time.Second)
}

// Below the minimum size the console says what it needs instead of drawing garbage, and a resize
// brings it back.
func TestConsoleTooSmallEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	s := startTmux(t, 60, 20, bin+"; echo XFERTOP_EXIT=$?; sleep 30")
	s.waitFor("needs at least 80×24", 10*time.Second)
	_ = exec.Command("tmux", "resize-window", "-t", s.name, "-x", "100", "-y", "30").Run()
	s.waitFor("1 Overview", 5*time.Second)
	s.keys("C-c")
	s.waitFor("XFERTOP_EXIT=0", 10*time.Second)
}

// SIGINT or SIGTERM to the console, live or replaying: it stops, gives the terminal back, says
// why and exits 130; a live run's recording is closed. (Bubble Tea's own signal handler used to
// race with the context here and hang the console.)
func TestConsoleSignalEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	sample, _ := filepath.Abs(filepath.Join("..", "..", "recordings", "samples", "straggler.xfr"))
	tests := []struct {
		name, args, sig, wait, record string
	}{
		{"live, SIGTERM", "--record", "TERM", "Moved", "run"},
		{"live, SIGINT", "--record", "INT", "Moved", "run"},
		{"replay, SIGTERM", "replay " + sample + " --speed 0.05", "TERM", "replay", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rec, pidFile := filepath.Join(dir, "console.xfr"), filepath.Join(dir, "pid")
			args := tc.args
			if tc.record != "" {
				args += " " + rec
			}
			s := startTmux(t, 120, 36, "sh -c 'echo $$ > "+pidFile+"; exec "+bin+" "+args+"'; echo XFERTOP_EXIT=$?; sleep 30")
			s.waitFor(tc.wait, 10*time.Second)
			pid, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("kill", "-"+tc.sig, strings.TrimSpace(string(pid))).CombinedOutput(); err != nil {
				t.Fatalf("kill: %v: %s", err, out)
			}
			after := s.waitFor("XFERTOP_EXIT=130", 10*time.Second)
			cmd := "run"
			if tc.record == "" {
				cmd = "replay"
			}
			if want := "xfertop " + cmd + ": interrupted by SIG" + tc.sig; !strings.Contains(after, want) || strings.Contains(after, "1 Overview") {
				t.Errorf("the screen shows:\n%s\nwant %q and no console", after, want)
			}
			s.restored()
			if tc.record == "" {
				return
			}
			out, err := exec.Command(bin, "replay", rec, "--headless").CombinedOutput()
			if err != nil || strings.Contains(string(out), "warning") {
				t.Errorf("the console's recording does not replay cleanly: %v\n%s", err, out)
			}
		})
	}
}

// compare A B on a terminal opens the compare view: both recordings' figures side by side and
// their timelines aligned on a step; n chooses the next step, ? shows its keys, q quits and
// the terminal is given back (no alternate screen, no mouse reporting).
func TestCompareConsoleEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.xfr"), filepath.Join(dir, "b.xfr")
	for p, v := range map[string]string{a: "high", b: "normal"} {
		if out, err := exec.Command(bin, "run", "--headless", "--steps", "3", "--set", "d2d_priority="+v, "--record", p).CombinedOutput(); err != nil {
			t.Fatalf("record %s: %v: %s", p, err, out)
		}
	}
	s := startTmux(t, 100, 32, bin+" compare "+a+" "+b+"; echo XFERTOP_EXIT=$?; sleep 30")
	scr := s.waitFor("step 2 of 3", 10*time.Second)
	if s.format("#{alternate_on}") != "1" || s.format("#{mouse_any_flag}") != "1" {
		t.Errorf("the compare view is not on the alternate screen with the mouse on: %s, %s", s.format("#{alternate_on}"), s.format("#{mouse_any_flag}"))
	}
	for _, want := range []string{"1 Compare", "step time p50", "worse", "A gpu 0", "B gpu 12"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the compare view lacks %q:\n%s", want, scr)
		}
	}
	s.keys("n")
	s.waitFor("step 3 of 3", 3*time.Second)
	s.keys("?")
	s.waitFor("previous step", 3*time.Second)
	s.keys("?", "q")
	after := s.waitFor("XFERTOP_EXIT=0", 10*time.Second)
	if strings.Contains(after, "1 Compare") {
		t.Errorf("the compare view is still on screen after quitting:\n%s", after)
	}
	s.restored()
}

// replay of a large Nsight Systems export on a terminal opens the console while the export is
// imported: the progress bar shows under the header, the replay plays what is imported, and when
// the import ends the bar says so; q quits, and the import's temporary recording is gone.
func TestImportConsoleEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	dir, tmp := t.TempDir(), t.TempDir()
	export := filepath.Join(dir, "big.sqlite")
	if err := nsystest.WriteLarge(export, 1_000_000, 64); err != nil { // 2.1 M rows, 82 MB
		t.Fatal(err)
	}
	s := startTmux(t, 160, 40, "TMPDIR="+tmp+" "+bin+" replay "+export+"; echo XFERTOP_EXIT=$?; sleep 30")
	scr := s.waitFor("importing", 20*time.Second)
	if !regexp.MustCompile(`importing  [█░]{20}  \d+%  [\d.]+ [kM]? ?/ 4\.20 M row reads`).MatchString(scr) {
		t.Errorf("no progress bar under the header:\n%s", scr)
	}
	s.waitFor("backend nsys", time.Minute) // the export's description, with its first events
	s.waitFor("imported 4.20 M / 4.20 M row reads (2.10 M events)", time.Minute)
	s.keys("q")
	s.waitFor("XFERTOP_EXIT=0", 10*time.Second)
	s.restored()
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the import left %s in the temporary directory", left[0].Name())
	}
}

// --json on a terminal prints the JSON report, as it asks, instead of opening the console: for a
// run, a replay and a comparison alike.
func TestJSONOnTerminalEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	rec := filepath.Join(t.TempDir(), "run.xfr")
	if code, _, errs := runBinary(t, "run", "--headless", "--steps", "1", "--scenario", "overlap", "--record", rec); code != exitOK {
		t.Fatal(errs)
	}
	tests := []struct {
		name string
		args string
	}{
		{"run", "run --json --steps 1 --scenario overlap"},
		{"replay", "replay --json " + rec},
		{"run --compare", "run --json --steps 1 --compare d2d_priority=high,normal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startTmux(t, 120, 40, bin+" "+tc.args+"; echo XFERTOP_EXIT=$?; sleep 30")
			scr := s.waitFor("XFERTOP_EXIT=0", 30*time.Second)
			// The JSON's closing brace, then the shell's line: no console came between.
			if !strings.Contains(scr, "\n}\nXFERTOP_EXIT=0") || strings.Contains(scr, "1 Overview") {
				t.Errorf("the screen does not end with the JSON report:\n%s", scr)
			}
		})
	}
}
