package sim

import (
	"unsafe"

	"github.com/xfertop/xfertop/internal/cacheline"
)

// prefetch asks the CPU for the three 64-byte lines from p on (a queued command, an op slot) a
// launch's cost ahead of their use: a hint, which changes no value.
func prefetch(p unsafe.Pointer) { cacheline.Prefetch(p, 3) }
