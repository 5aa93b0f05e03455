package recordings

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// RepairResult says what Repair found and did.
type RepairResult struct {
	Size int64 // the file's size before the repair
	// Kept is where the file now ends: after its header and every sound chunk before the first
	// damaged one. Kept == Size when nothing was cut.
	Kept int64
	// Damage is what was wrong at offset Kept (nil when nothing was cut).
	Damage error
	// Torn reports that nothing sound followed the damage: the file was cut off while being written.
	// When false, complete chunks follow it from offset Resync; the backup still holds them, and
	// reading the backup with Options.Salvage recovers them.
	Torn   bool
	Resync int64
	// Backup is the copy of the original file written before cutting ("" when nothing was cut).
	Backup string
	// Indexed reports whether the file had a valid index and trailer (it was closed cleanly); a
	// repaired file has none, and is read by scanning its chunks.
	Indexed bool
}

// BackupSuffix is appended to a recording's path to name the copy Repair makes before cutting.
const BackupSuffix = ".bak"

// Repair truncates the recording at path to its last sound chunk: a torn tail (a process killed, a
// disk full while writing) or the first damaged chunk and everything after it are cut, after the
// original is copied to path+BackupSuffix (which must not exist: an earlier backup is never
// overwritten). A sound file is left alone. The repaired file reads without errors or torn-tail
// warnings; what the cut dropped after mid-file damage can still be salvaged from the backup.
func Repair(path string) (RepairResult, error) {
	r, err := Open(path, Options{})
	if err != nil {
		return RepairResult{}, err
	}
	res := RepairResult{Size: r.size, Kept: r.size, Indexed: r.Indexed()}
	for r.Next() {
	}
	bad := r.firstBad
	if cerr := r.Close(); cerr != nil {
		return res, cerr
	}
	if bad == nil {
		return res, nil
	}
	res.Kept, res.Damage, res.Torn, res.Resync = bad.off, bad.err, bad.next < 0, bad.next
	res.Backup = path + BackupSuffix
	if err := copyNew(res.Backup, path); err != nil {
		return res, fmt.Errorf("%s: nothing was changed: %w", path, err)
	}
	if err := truncateSync(path, res.Kept); err != nil {
		return res, fmt.Errorf("%s: cutting it to %d bytes: %w (the original is in %s)", path, res.Kept, err, res.Backup)
	}
	return res, nil
}

// copyNew copies src to a new file dst, synced, refusing to overwrite an existing dst.
func copyNew(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("backup %s already exists: move it away first", dst)
		}
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return fmt.Errorf("backup %s: %w", dst, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		os.Remove(dst)
		return fmt.Errorf("backup %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		os.Remove(dst)
		return fmt.Errorf("backup %s: %w", dst, err)
	}
	syncDir(dst)
	return nil
}

func truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir makes a new directory entry durable (best effort: not every system can sync a directory).
func syncDir(path string) {
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
