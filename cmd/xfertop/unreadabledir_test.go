package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A directory that cannot be read is a failure naming it and why (exit 1), as an unreadable file
// is, not a directory "without recordings" (exit 2).
func TestUnreadableDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "npdir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// chmod 000 does not stop root, which the tests may run as: the read is made to fail as it
	// does for another user.
	readDir = func(name string) ([]os.DirEntry, error) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	t.Cleanup(func() { readDir = os.ReadDir })
	for _, cmd := range []string{"analyze", "replay", "convert"} {
		args := []string{cmd, dir}
		if cmd == "convert" {
			args = append(args, filepath.Join(t.TempDir(), "out.json"))
		}
		code, _, errs := runCLI(t, args...)
		if code != exitFailure || !strings.Contains(errs, "open "+dir+": permission denied") {
			t.Errorf("%s on an unreadable directory: exit %d, %q; want exit 1 naming it: permission denied", cmd, code, errs)
		}
	}
}
