//go:build unix

package scenario_test

import "syscall"

// processCPUNs is the CPU time (user + system) the process has used so far, ns; ok is false where the
// system does not say.
func processCPUNs() (ns int64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
