package cacheline

import (
	"slices"
	"testing"
	"unsafe"
)

// TestPrefetchChangesNothing: Prefetch is a hint. Given every byte of a buffer, the last ones
// with lines past the end of the allocation (possibly on an unmapped page), nil, and no lines, it
// neither faults nor writes.
func TestPrefetchChangesNothing(t *testing.T) {
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i * 7)
	}
	want := slices.Clone(b)
	for i := range b {
		Prefetch(unsafe.Pointer(&b[i]), 1+i%4)
	}
	Prefetch(nil, 2)
	Prefetch(unsafe.Pointer(&b[0]), 0)
	Prefetch(unsafe.Pointer(&b[0]), -1)
	if !slices.Equal(b, want) {
		t.Fatal("the buffer changed under Prefetch")
	}
}
