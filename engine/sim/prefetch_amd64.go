package sim

import "unsafe"

// prefetch asks the CPU to bring the three 64-byte lines from p on into the caches, without
// waiting for them (PREFETCHT0): a hint, which changes no value.
//
//go:noescape
func prefetch(p unsafe.Pointer)
