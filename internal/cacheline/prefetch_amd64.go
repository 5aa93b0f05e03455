package cacheline

import "unsafe"

// Prefetch asks the CPU to bring the given number of 64-byte lines from p on into the caches,
// without waiting for them (PREFETCHT0): a hint, which changes no value and never faults. Ask for
// the lines that will be read alone: each takes one of the few misses the CPU can have under way.
//
//go:noescape
func Prefetch(p unsafe.Pointer, lines int)
