package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names a file to which xfertop writes a CPU profile of the whole process (for `go
// tool pprof`): opt-in, for measuring a command as a user runs it (docs/performance.md), where a
// test's benchmark would leave out the command's own start-up, printing and exit.
const cpuProfileEnv = "XFERTOP_CPUPROFILE"

// startCPUProfile starts profiling into path until the returned stop is called; stop ends the
// profile and closes the file. An empty path profiles nothing.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s=%s: %w", cpuProfileEnv, path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s: %w", cpuProfileEnv, err)
		}
		return nil
	}, nil
}
