package main

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// XFERTOP_HEAPPROFILE writes a heap profile pprof reads (a gzipped protocol buffer) once stopped;
// an unset variable profiles nothing; a path that cannot be created is an error naming the
// variable.
func TestHeapProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.prof")
	stop, err := startHeapProfile(path, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if code := xfertop(t.Context(), []string{"run", "--headless", "--scenario", "overlap", "--steps", "2"}, io.Discard, io.Discard); code != exitOK {
		t.Fatalf("run exited %d", code)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("the profile is not gzipped: %v", err)
	}
	if b, err := io.ReadAll(zr); err != nil || len(b) == 0 {
		t.Fatalf("the profile reads %d bytes, %v", len(b), err)
	}

	stop, err = startHeapProfile("", time.Second)
	if err != nil || stop() != nil {
		t.Fatalf("unset: %v", err)
	}
	_, err = startHeapProfile(filepath.Join(t.TempDir(), "missing", "heap.prof"), time.Second)
	if err == nil || !strings.Contains(err.Error(), heapProfileEnv) {
		t.Fatalf("a path in a missing directory: %v; want an error naming %s", err, heapProfileEnv)
	}
}
