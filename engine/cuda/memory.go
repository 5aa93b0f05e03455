//go:build cuda

package cuda

/*
#include <cuda.h>
#include <stdint.h>
static CUresult xfer_host_alloc2(void** p, size_t n) { return cuMemHostAlloc(p, n, 0); }
static CUresult xfer_host_free2(void* p) { return cuMemFreeHost(p); }
*/
import "C"

import (
	"fmt"
	"math/bits"
	"unsafe"

	"gorgonia.org/cu"
)

func sizeClass(n int64) int64 {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len64(uint64(n-1))
}

// scratch returns the k-th device buffer of at least n bytes on g (allocated once, reused).
func (g *gpu) scratch(n int64, k int) (cu.DevicePtr, error) {
	c := sizeClass(n)
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.dev[c]) <= k {
		p, err := cu.MemAlloc(c)
		if err != nil {
			return 0, fmt.Errorf("device buffer of %d bytes: %w", c, err)
		}
		g.dev[c] = append(g.dev[c], p)
		g.allocs++
	}
	return g.dev[c][k], nil
}

// host returns a pinned host buffer of at least n bytes on g.
func (g *gpu) host(n int64) (unsafe.Pointer, error) {
	c := sizeClass(n)
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := g.pinned[c]; ok {
		return p, nil
	}
	var p unsafe.Pointer
	if r := C.xfer_host_alloc2(&p, C.size_t(c)); r != 0 {
		return nil, fmt.Errorf("pinned host buffer of %d bytes: CUDA error %d", c, int(r))
	}
	g.pinned[c] = p
	g.allocs++
	return p, nil
}

// PinnedHost allocates n bytes of page-locked host memory in the current context (for baselines that
// must copy exactly as the engine does).
func PinnedHost(n int64) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	if r := C.xfer_host_alloc2(&p, C.size_t(n)); r != 0 {
		return nil, fmt.Errorf("pinned host buffer of %d bytes: CUDA error %d", n, int(r))
	}
	return p, nil
}

// FreePinned frees memory from PinnedHost.
func FreePinned(p unsafe.Pointer) { C.xfer_host_free2(p) }
