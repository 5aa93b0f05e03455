//go:build !unix

package sim_test

// cpuNs is the CPU time the process has used so far; without getrusage it is not known.
func cpuNs() (ns int64, ok bool) { return 0, false }
