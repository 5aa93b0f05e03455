package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
)

// versionCmd prints the module's version and the commit it was built from, as the Go toolchain
// stamped them into the binary (a build outside a module or a VCS checkout says so).
func versionCmd(args []string, stdout io.Writer) error {
	if isHelp(args) {
		fmt.Fprint(stdout, "Usage: xfertop version\n\nPrints xfertop's version, the commit it was built from and the Go toolchain.\n"+exitHelp)
		return nil
	}
	if len(args) > 0 {
		return usageError("version takes no arguments (got %q)", args[0])
	}
	fmt.Fprintln(stdout, versionLine())
	return nil
}

// versionLine is "xfertop VERSION (commit REV[, modified], BUILT) GO".
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "xfertop (no build information in this binary)"
	}
	version := info.Main.Version
	if version == "" {
		version = "(unknown)"
	}
	var rev, at, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "xfertop %s", version)
	if rev != "" {
		fmt.Fprintf(&b, " (commit %.12s%s", rev, dirty)
		if at != "" {
			fmt.Fprintf(&b, ", %s", at)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " %s", info.GoVersion)
	return b.String()
}

// undefinedFlag returns the first argument that looks like a flag and is not one of allowed, for
// the commands that take names rather than a flag set: "--bogus" is then named as an unknown flag
// instead of counted as an extra argument.
func undefinedFlag(args []string, allowed ...string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 && !slices.Contains(allowed, a) {
			return a
		}
	}
	return ""
}
