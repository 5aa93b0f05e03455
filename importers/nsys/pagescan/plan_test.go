package pagescan

import "testing"

// TestPlanSlotSpreads: the headers of a table of texts differ in one byte, the text's serial type
// (its length), anywhere in the header; they must land in slots of their own about as often as at
// random (36 headers in 64 slots: 27 distinct slots expected), else their plans evict each other
// and every row's header is walked again. A byte in any position, and the header's length, count.
func TestPlanSlotSpreads(t *testing.T) {
	for _, size := range []int{3, 8, 22, 41} {
		for at := 0; at < size; at++ {
			seen := map[int]bool{}
			hdr := make([]byte, size)
			for i := range hdr {
				hdr[i] = byte(i%7 + 1)
			}
			for n := range 36 {
				hdr[at] = byte(13 + 2*(20+n)) // a text of 20 + n bytes
				seen[planSlot(hdr)] = true
			}
			if len(seen) < 20 {
				t.Errorf("headers of %d bytes differing in byte %d: %d distinct slots of 36 headers, want at least 20", size, at, len(seen))
			}
		}
	}
	if planSlot([]byte{1, 2, 3}) == planSlot([]byte{1, 2, 3, 0}) && planSlot([]byte{1}) == planSlot([]byte{1, 0}) {
		t.Error("a header and the same one with a zero byte more share slots: the length does not count")
	}
}
