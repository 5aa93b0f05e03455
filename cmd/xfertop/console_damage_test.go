package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/ui"
)

// TestConsoleReplayOfDamage: the console's replay of a recording damaged mid-file shows the error
// with the way past it (--salvage, repair), as the headless message does, and the damage is the
// command's error once the console is closed: exit 4, not 0.
func TestConsoleReplayOfDamage(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "g.xfr")
	if code, _, errs := runCLI(t, "run", "--headless", "--steps", "60", "--scenario", "overlap", "--record", good); code != exitOK {
		t.Fatal(errs)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	bad := filepath.Join(dir, "bad.xfr")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	hint := "(use --salvage to skip damaged chunks, or xfertop repair " + bad + " to cut the file there)"
	var shown error
	err = openReplay(context.Background(), session.ReplayConfig{Path: bad, Speed: 1e9}, 0, func(src ui.Source) error {
		// The bound only keeps a broken replay from hanging the test.
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if shown = src.Status().Err; shown != nil {
				return nil
			}
		}
		return nil
	})
	if shown == nil || !strings.Contains(shown.Error(), hint) {
		t.Errorf("the console shows %v; want the damage and %q", shown, hint)
	}
	var ce *recordings.CorruptionError
	if !errors.As(err, &ce) || exitStatus(err) != exitData {
		t.Errorf("openReplay = %v (exit %d); want the damage, exit %d", err, exitStatus(err), exitData)
	}
}
