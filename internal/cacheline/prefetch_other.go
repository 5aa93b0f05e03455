//go:build !amd64

package cacheline

import "unsafe"

// Prefetch is a hint that this architecture goes without.
func Prefetch(unsafe.Pointer, int) {}
