package main

import (
	"syscall"
	"unsafe"
)

// threadCPU is the CPU time the calling OS thread has used (CLOCK_THREAD_CPUTIME_ID), in ns; the
// caller locks its goroutine to the thread. Frame time on a loaded machine includes waiting for a
// core; this is the frame's own cost. (getrusage's RUSAGE_THREAD is no good per frame: the kernel
// splits the thread's run time into user and system by ticks and holds each back so that neither
// goes down, so short frames read as 0 and a later one takes their time.)
func threadCPU() int64 {
	const clockThreadCPUTime = 3
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return ts.Nano()
}

// processCPU is the CPU time (user + system) this process has used, its children's (sender
// processes, the Collector) not included, in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
