//go:build unix

package recordings_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time this process has used (user + system, all threads, the garbage
// collector's included). On a shared machine, events per CPU-second tell a codec's cost apart from
// the time spent waiting for a core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
