package main

import (
	"flag"
	"os"
)

// forceOverwriteHelp is the help of --force-overwrite, the same on every command that records.
const forceOverwriteHelp = "let --record replace an existing file (a recording may be the only copy of a live session, so it is not replaced unless asked)"

// registerForceOverwrite adds --force-overwrite to a command that records.
func registerForceOverwrite(fs *flag.FlagSet, force *bool) {
	fs.BoolVar(force, "force-overwrite", false, forceOverwriteHelp)
}

// checkRecordTarget refuses a --record path that already holds data unless --force-overwrite is
// given: a live run cannot be recorded again, and its recording is replaced the moment the run
// begins. An empty file (one the user made for it) and a path that is not there are fine.
func checkRecordTarget(path string, force bool) error {
	if path == "" || force {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		return nil // not there, not a file (the recorder says what is wrong), or empty
	}
	return usageError("--record %s: the file exists (%d bytes): give another name, or --force-overwrite to replace it", path, st.Size())
}
