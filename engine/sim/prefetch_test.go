package sim

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestPrefetchChangesNothing: prefetch is a hint. Given the last command of a block, past whose
// end its three lines reach (possibly onto an unmapped page), it neither faults nor writes.
func TestPrefetchChangesNothing(t *testing.T) {
	b := make([]hostCmd, cmdBlock)
	for i := range b {
		b[i] = hostCmd{Kind: 3, Duration: int64(i), ref: 7, Event: 9}
	}
	want := append([]hostCmd(nil), b...)
	for i := range b {
		prefetch(unsafe.Pointer(&b[i]))
	}
	for i := range b {
		if !reflect.DeepEqual(b[i], want[i]) {
			t.Fatalf("command %d after prefetch = %+v; want %+v", i, b[i], want[i])
		}
	}
}
