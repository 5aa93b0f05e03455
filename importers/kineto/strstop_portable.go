//go:build !(goexperiment.simd && amd64)

package kineto

// vectorScan tells whether strStop reads 32 bytes at a time (a build with GOEXPERIMENT=simd on
// amd64, on a CPU with AVX2); here it reads words.
const vectorScan = false

// strStop returns the index of the first quote, backslash or control character in b[j:]
// (len(b) when there is none).
func strStop(b []byte, j int) int { return strStopWords(b, j) }
