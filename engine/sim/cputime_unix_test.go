//go:build unix

package sim_test

import "syscall"

// cpuNs is the CPU time (user + system) the process has used so far, ns; ok is false where the
// system does not say.
func cpuNs() (ns int64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
