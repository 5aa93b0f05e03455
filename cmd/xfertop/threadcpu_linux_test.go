package main

import "syscall"

// threadCPU is the CPU time the calling OS thread has used (user + system), in ns; the caller locks
// its goroutine to the thread. Frame time on a loaded machine includes waiting for a core; this is
// the frame's own cost.
func threadCPU() int64 {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
