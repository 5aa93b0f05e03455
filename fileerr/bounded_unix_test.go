//go:build unix

package fileerr

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadBoundedFIFO: a FIFO states no size, so only a bound applied while reading refuses one
// fed more than the bound (as /dev/zero or a writer that never stops would be).
func TestReadBoundedFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "topo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here: ", err)
	}
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		_, _ = w.Write(bytes.Repeat([]byte("a"), 4096)) // stops early when the reader closes
	}()
	_, err := ReadBounded(fifo, "topology file", 1024)
	if err == nil || !strings.Contains(err.Error(), "larger than 1 KiB, too large for a topology file") {
		t.Fatalf("ReadBounded(FIFO of 4096 bytes) = %v; want it refused past 1 KiB", err)
	}
}
