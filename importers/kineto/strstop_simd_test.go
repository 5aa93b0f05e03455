//go:build goexperiment.simd && amd64

package kineto

import "testing"

// TestStrStopWithoutAVX2: the GOEXPERIMENT=simd build on a CPU without AVX2 (vectorScan false)
// finds a string's end with the words, as the portable build does, and the whole import reads
// the same events then.
func TestStrStopWithoutAVX2(t *testing.T) {
	defer func(v bool) { vectorScan = v }(vectorScan)
	vectorScan = false
	checkStrStop(t)
	TestAgreesWithWholeImporter(t)
}
