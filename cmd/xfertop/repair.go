package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/xfertop/xfertop/recordings"
)

const repairHelp = `Usage: xfertop repair FILE.xfr

Cuts a recording's torn or damaged tail back to its last sound chunk, as a database repairs its
write-ahead log. The original is first copied to FILE.xfr.bak (an existing backup is never
overwritten); after damage in the middle, the chunks past it stay in the backup, where
xfertop replay FILE.xfr.bak --salvage reads them. A sound recording is left alone.
`

// repairCmd cuts a recording's torn or damaged tail back to its last sound chunk, after backing it up.
func repairCmd(args []string, stdout io.Writer) error {
	if isHelp(args) {
		fmt.Fprint(stdout, repairHelp, exitHelp)
		return nil
	}
	if f := undefinedFlag(args); f != "" {
		return usageError("flag provided but not defined: %s (usage: xfertop repair FILE.xfr)", f)
	}
	if len(args) != 1 {
		return usageError("usage: xfertop repair FILE.xfr  (cuts a torn or damaged tail to the last sound chunk; the original is kept as FILE.xfr.bak)")
	}
	path := args[0]
	if err := inputFile(path, "a recording"); err != nil {
		return err
	}
	res, err := recordings.Repair(path)
	if err != nil {
		return err // exitStatus: not a recording is a data error, the rest (a backup in the way, I/O) failures
	}
	switch {
	case res.Backup == "" && res.Indexed:
		fmt.Fprintf(stdout, "%s: sound (%d bytes, closed cleanly): nothing to repair\n", path, res.Size)
	case res.Backup == "":
		fmt.Fprintf(stdout, "%s: every chunk is sound, but the recording was not closed cleanly (no index: replay reads it from the start): nothing to cut\n", path)
	case res.Torn:
		fmt.Fprintf(stdout, "%s: cut the torn tail: %d bytes at byte offset %d (%v); kept %d of %d bytes; the original is in %s\n",
			path, res.Size-res.Kept, res.Kept, res.Damage, res.Kept, res.Size, res.Backup)
	default:
		fmt.Fprintf(stdout, "%s: cut at the damaged chunk at byte offset %d (%v): kept %d of %d bytes; the original is in %s\n",
			path, res.Kept, res.Damage, res.Kept, res.Size, res.Backup)
		fmt.Fprintf(stdout, "complete chunks follow the damage from byte offset %d: xfertop replay %s --salvage reads them\n", res.Resync, res.Backup)
	}
	return nil
}

// salvageHint is what the command adds to a corrupt recording's error: the flags and commands that
// get past it (the recordings package names only the file, the offset and the fault). replay and
// analyze have --salvage; the others do not.
func salvageHint(cmd string, err error) string {
	var ce *recordings.CorruptionError
	if !errors.As(err, &ce) {
		return ""
	}
	if cmd == "replay" || cmd == "analyze" {
		return fmt.Sprintf(" (use --salvage to skip damaged chunks, or xfertop repair %s to cut the file there)", ce.File)
	}
	return fmt.Sprintf(" (xfertop repair %s cuts the file there; xfertop replay --salvage reads past it)", ce.File)
}
