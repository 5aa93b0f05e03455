//go:build !amd64

package sim

import "unsafe"

// prefetch is a hint that this architecture goes without.
func prefetch(unsafe.Pointer) {}
