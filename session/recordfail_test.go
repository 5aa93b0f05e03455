package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A recording that cannot be created is a RecordingError (the command exits 1 on it), not a
// ConfigError (exit 2): the flags were right, the file system refused.
func TestRecordCreateFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir.xfr")
	_, err := Prepare(Config{Steps: 1, Record: path})
	var re *RecordingError
	var ce *ConfigError
	if !errors.As(err, &re) || errors.As(err, &ce) || !re.Create || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Prepare = %v (%T); want a RecordingError on creation wrapping ENOENT", err, err)
	}
	if want := "cannot create recording " + path + ": no such file or directory"; err.Error() != want {
		t.Errorf("error %q; want %q", err, want)
	}
}

// When the disk is full the run stops at once instead of going on unrecorded: on /dev/full every
// write fails, so a 100 000-step run ends after its first batch reaches the recorder, with a
// RecordingError as both the outcome and the error.
func TestRecordDiskFullStopsTheRun(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system: ", err)
	}
	const steps = 100_000
	p, err := Prepare(Config{Scenario: "pipeline", Steps: steps, Record: "/dev/full"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background())
	var re *RecordingError
	if !errors.As(err, &re) || !errors.Is(err, syscall.ENOSPC) || re.Create {
		t.Fatalf("Run = %v (%T); want a RecordingError wrapping ENOSPC", err, err)
	}
	if want := "recording /dev/full failed: no space left on device"; err.Error() != want {
		t.Errorf("error %q; want %q", err, want)
	}
	if !errors.As(out.Ended, &re) {
		t.Errorf("outcome ended by %v; want the recording's failure", out.Ended)
	}
	if r := p.Report(out); out.Steps >= steps || r.Events == 0 || r.Ended != "recording /dev/full failed: no space left on device" {
		t.Errorf("%d of %d steps ran, %d events reported, ended %q: the run should stop early and report what ran", out.Steps, steps, r.Events, r.Ended)
	}
}
