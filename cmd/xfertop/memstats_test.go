package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// XFERTOP_MEMSTATS's sampler writes a header and a line per interval (and one when stopped), with
// a live heap and goroutines counted, and leaves no goroutine behind.
func TestMemStatsSamples(t *testing.T) {
	defer goleak.VerifyNone(t)
	path := filepath.Join(t.TempDir(), "mem.tsv")
	stop, err := startMemStats(path, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if strings.Count(string(data), "\n") >= 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if lines[0] != memStatsHeader || len(lines) < 5 {
		t.Fatalf("file:\n%s\nwant the header and at least 4 samples", data)
	}
	cols := strings.Split(memStatsHeader, "\t")
	for i, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != len(cols) {
			t.Fatalf("sample %d %q: %d columns; want %d", i, l, len(f), len(cols))
		}
		for j, v := range f {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatalf("sample %d: %s = %q: %v", i, cols[j], v, err)
			}
			if (cols[j] == "goroutines" || cols[j] == "go_total") && n == 0 {
				t.Errorf("sample %d: %s = 0", i, cols[j])
			}
		}
	}
}

// No path, no file and no goroutine; a file that cannot be created is an error naming the variable.
func TestMemStatsOff(t *testing.T) {
	defer goleak.VerifyNone(t)
	stop, err := startMemStats("", time.Millisecond)
	if err != nil || stop() != nil {
		t.Fatalf("empty path: %v", err)
	}
	_, err = startMemStats(filepath.Join(t.TempDir(), "missing", "mem.tsv"), time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), memStatsEnv) {
		t.Fatalf("err = %v; want one naming %s", err, memStatsEnv)
	}
}
