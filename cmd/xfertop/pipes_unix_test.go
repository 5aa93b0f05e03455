//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// feed writes data into the FIFO at path once a reader opens it.
func feed(t *testing.T, path string, data []byte) {
	go func() {
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		_, _ = w.Write(data)
	}()
}

// A pipe (a FIFO, a shell's <(cmd)) or standard input is read as its bytes in a file would be:
// its format is told and it is read in full, messages name the pipe (never the temporary file that
// holds it), and the temporary file goes when the command ends. whatif, which reads its input
// twice, refuses a pipe by its name.
func TestPipeInputs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	trace := filepath.Join("testdata", "hta_small.json")
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "trace.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, want, _ := runCLI(t, "analyze", trace)
	want = strings.Replace(want, trace, fifo, 1)

	feed(t, fifo, data)
	if code, out, errs := runCLI(t, "analyze", fifo); code != exitOK || out != want {
		t.Errorf("analyze FIFO: exit %d, stderr %q, report:\n%s\nwant the file's:\n%s", code, errs, out, want)
	}
	feed(t, fifo, data[:3000])
	if code, _, errs := runCLI(t, "analyze", fifo); code != exitData || !strings.HasPrefix(errs, "xfertop analyze: "+fifo+": the JSON ends before it is complete, at byte offset 3000") {
		t.Errorf("analyze of a cut FIFO: exit %d, stderr %q; want %d naming %s", code, errs, exitData, fifo)
	}
	feed(t, fifo, data)
	out := filepath.Join(dir, "out.xfr")
	if code, stdout, errs := runCLI(t, "convert", fifo, out); code != exitOK || !strings.Contains(stdout, "from "+fifo+" (kineto)") {
		t.Errorf("convert FIFO: exit %d, %q %q", code, stdout, errs)
	}
	if code, _, errs := runCLI(t, "whatif", "--json", fifo); code != exitUsage || !strings.Contains(errs, fifo+" is a pipe") {
		t.Errorf("whatif FIFO: exit %d, stderr %q; want %d naming the pipe", code, errs, exitUsage)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// Standard input, in a process of its own.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		stdin []byte
		code  int
		has   string
	}{
		{data, exitOK, "xfertop report: -\n"},
		{data[:3000], exitData, "xfertop analyze: standard input: the JSON ends before it is complete, at byte offset 3000"},
		{nil, exitData, "xfertop analyze: standard input: the file is empty"},
	} {
		cmd := exec.CommandContext(ctx, commandBinary(t), "analyze", "-")
		cmd.Stdin = bytes.NewReader(tc.stdin)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		_ = cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != tc.code || !strings.Contains(o.String()+e.String(), tc.has) || strings.Contains(e.String(), tmp) {
			t.Errorf("analyze - (%d bytes): exit %d, stderr %q; want %d and %q", len(tc.stdin), code, e.String(), tc.code, tc.has)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// A pipe is looked at before it is copied: one that is no format xfertop reads (here zeros that
// never end, as `xfertop analyze - < /dev/zero` gives) is refused at once, and nothing of it is
// written to the temporary directory; one too large for the bound is refused naming the bound.
func TestSpoolSniffsFirst(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	defer func(n int64) { maxSpoolBytes = n }(maxSpoolBytes)
	maxSpoolBytes = 1 << 20 // without the sniff, the zeros are copied up to this and refused as too large
	fifo := filepath.Join(t.TempDir(), "in")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	feed(t, fifo, make([]byte, 4<<20))
	ctx, names := withInputNames(context.Background())
	defer names.cleanup()
	_, err := spoolPipes(ctx, []string{fifo})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitData || !strings.Contains(err.Error(), "none of the formats xfertop reads") {
		t.Fatalf("spoolPipes(zeros) = %v; want exit %d, not a format xfertop reads", err, exitData)
	}
	_ = filepath.Walk(tmp, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			t.Errorf("%s holds %d bytes of the refused pipe", p, fi.Size())
		}
		return nil
	})

	// Text past the bound: refused naming it. A FIFO of its own: the zeros' writer may still hold
	// the first one open, writing what its refused reader left, and this reader would read that.
	fifo2 := filepath.Join(t.TempDir(), "in2")
	if err := syscall.Mkfifo(fifo2, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	feed(t, fifo2, append([]byte("["), bytes.Repeat([]byte(" "), 2<<20)...))
	_, err = spoolPipes(ctx, []string{fifo2})
	if !errors.As(err, &ee) || ee.code != exitData || !strings.Contains(err.Error(), fifo2+": the pipe holds more than 1 MiB") {
		t.Fatalf("spoolPipes(2 MiB) = %v; want it refused past 1 MiB", err)
	}
}

// The spool is bounded by half the temporary directory's free space when that is below
// maxSpoolBytes, and says so.
func TestSpoolLimitByFreeSpace(t *testing.T) {
	dir := t.TempDir()
	free, ok := freeBytes(dir)
	if !ok {
		t.Skip("free space not known here")
	}
	defer func(n int64) { maxSpoolBytes = n }(maxSpoolBytes)
	maxSpoolBytes = 1 << 62
	limit, why := spoolLimit(dir)
	if limit <= 0 || limit > free/2+free/100 || !strings.Contains(why, "half the free space of the temporary directory "+dir) {
		t.Errorf("spoolLimit = %d, %q; want about %d (half of %d free) and the reason", limit, why, free/2, free)
	}
	maxSpoolBytes = 1 << 10
	if limit, why := spoolLimit(dir); limit != 1<<10 || why != "" {
		t.Errorf("spoolLimit with a bound below the free space = %d, %q; want the bound", limit, why)
	}
}
