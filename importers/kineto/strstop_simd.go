//go:build goexperiment.simd && amd64

package kineto

import (
	"math/bits"
	"simd/archsimd"
)

// vectorScan tells whether strStop reads 32 bytes at a time: this build has Go's vector
// intrinsics (GOEXPERIMENT=simd), and the CPU has AVX2. Without AVX2 it reads words, as the
// portable build does.
var vectorScan = archsimd.X86.AVX2()

// strStop returns the index of the first quote, backslash or control character in b[j:]
// (len(b) when there is none), 32 bytes at a time while that many are left, then eight: one
// compare of each kind and one mask for a whole name, where words take three or four rounds.
// FuzzStrStop checks it against strStopWords and a byte at a time.
func strStop(b []byte, j int) int {
	if vectorScan {
		quote, bslash := archsimd.BroadcastUint8x32('"'), archsimd.BroadcastUint8x32('\\')
		ctl := archsimd.BroadcastUint8x32(0x1f)
		for ; j+32 <= len(b); j += 32 {
			v := archsimd.LoadUint8x32Slice(b[j:])
			// min(v, 0x1f) == v: v is a control byte (unsigned, so no byte from 0x80 up).
			m := v.Equal(quote).Or(v.Equal(bslash)).Or(v.Min(ctl).Equal(v)).ToBits()
			if m != 0 {
				return j + bits.TrailingZeros32(m)
			}
		}
	}
	return strStopWords(b, j)
}
