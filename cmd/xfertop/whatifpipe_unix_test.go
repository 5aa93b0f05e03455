//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// whatif reads its input twice: a pipe, which can be read once, is refused as a usage error that
// names it, before anything is read.
func TestWhatIfRefusesPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "trace.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	code, _, errs := runCLI(t, "whatif", "--json", fifo)
	if code != exitUsage || !strings.Contains(errs, fifo) || !strings.Contains(errs, "not a regular file") {
		t.Errorf("exit %d, stderr %q; want %d naming %s as not a regular file", code, errs, exitUsage, fifo)
	}
}
