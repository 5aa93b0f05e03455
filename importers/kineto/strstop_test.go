package kineto

import (
	"bytes"
	"testing"
)

// strStopBytes is strStop a byte at a time, to check it against.
func strStopBytes(b []byte, j int) int {
	for ; j < len(b); j++ {
		if c := b[j]; c == '"' || c == '\\' || c < 0x20 {
			return j
		}
	}
	return j
}

// FuzzStrStop: strStop (32 bytes at a time in a GOEXPERIMENT=simd build on an AVX2 CPU, eight in
// the portable one) finds the same byte as the portable words and as a byte at a time, from any
// start in any bytes.
func FuzzStrStop(f *testing.F) {
	f.Add([]byte(`"ampere_sgemm_128x64_nn","pid":0`), 1)
	f.Add([]byte(`Memcpy HtoD (Pinned -> Device) with a name past 32 bytes"`), 0)
	f.Add(append(bytes.Repeat([]byte{0x80}, 40), '\\', '"'), 3)
	f.Add(append(bytes.Repeat([]byte{0xff}, 64), 0x1f), 0)
	f.Add(append(bytes.Repeat([]byte{' '}, 33), 0x7f, 0x20, 0x21, 0x00), 2)
	f.Fuzz(func(t *testing.T, b []byte, j int) {
		if j < 0 || j > len(b) {
			j = len(b)
		}
		want := strStopBytes(b, j)
		if got := strStop(b, j); got != want {
			t.Fatalf("strStop(%q, %d) = %d; a byte at a time, %d (vector scan: %v)", b, j, got, want, vectorScan)
		}
		if got := strStopWords(b, j); got != want {
			t.Fatalf("strStopWords(%q, %d) = %d; a byte at a time, %d", b, j, got, want)
		}
	})
}
