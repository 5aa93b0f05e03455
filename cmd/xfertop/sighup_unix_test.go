//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGHUP (the terminal closed) stops a replay as SIGTERM does: exit 130, saying so, and the
// recording a trace was imported to (as big as the trace) is removed, not left in the temporary
// directory. The signal is sent once the replay has begun: its first line on standard error comes
// after the import.
func TestSIGHUPRemovesImport(t *testing.T) {
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, commandBinary(t), "replay", filepath.Join("testdata", "hta_small.json"), "--speed", "0.00001")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	// A test run under nohup (or a runner that ignores SIGHUP) would pass the ignored signal on to
	// the command, which then goes on as nohup asks (signalContext leaves it alone): a handler
	// here while the command starts makes exec give it SIGHUP's default disposition.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	errs := bufio.NewReader(stderr)
	first, err := errs.ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "xfertop-import-*", "*.xfr")); len(left) != 1 {
		t.Fatalf("the replay's imported recording is not in %s (%v): the case shows nothing", tmp, left)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(errs)
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Errorf("exit %d (%v); want %d", code, cmd.ProcessState, exitInterrupted)
	}
	if got := first + string(rest); !strings.HasSuffix(got, "xfertop replay: interrupted by SIGHUP (the terminal closed)\n") {
		t.Errorf("stderr:\n%s", got)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left in the temporary directory after SIGHUP: %v", left)
	}
}
