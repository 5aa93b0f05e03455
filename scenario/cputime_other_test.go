//go:build !unix

package scenario_test

// processCPUNs is the CPU time the process has used so far; without getrusage it is not known.
func processCPUNs() (ns int64, ok bool) { return 0, false }
