//go:build goexperiment.simd && amd64

package kineto

import (
	"math/bits"
	"math/rand/v2"
	"simd/archsimd"
	"slices"
	"testing"
)

// A measurement, as stage1 is: simdjson's first stage with AVX2 vectors through Go's vector
// intrinsics (GOEXPERIMENT=simd), 32 bytes a compare where stage1 takes eight a word. Its cost
// alone is BenchmarkStage1's "vector" runs; FuzzStage1Vector checks it against stage1.

// scanVector is scan with vectors: the masks of quotes, backslashes and structural bytes of each
// 64-byte block from two 32-byte loads, then the same escapes, string insides and offsets.
func (st *stage1State) scanVector(b []byte, base int, idx []uint32) []uint32 {
	inString, oddCarry := st.inString, st.oddCarry
	quoteC, bslashC := archsimd.BroadcastUint8x32('"'), archsimd.BroadcastUint8x32('\\')
	lbrace, rbrace := archsimd.BroadcastUint8x32('{'), archsimd.BroadcastUint8x32('}')
	colon, comma := archsimd.BroadcastUint8x32(':'), archsimd.BroadcastUint8x32(',')
	bit5 := archsimd.BroadcastUint8x32(0x20) // { and [, } and ], differ by 0x20 alone
	var tail [64]byte
	for off := 0; off < len(b); off += 64 {
		blk := b[off:min(off+64, len(b))]
		if len(blk) < 64 {
			for i := range tail {
				tail[i] = ' '
			}
			copy(tail[:], blk)
			blk = tail[:]
		}
		var quote, bslash, op uint64
		for h := range 2 {
			v := archsimd.LoadUint8x32Slice(blk[32*h:])
			lo := v.Or(bit5)
			q := v.Equal(quoteC).ToBits()
			s := v.Equal(bslashC).ToBits()
			o := lo.Equal(lbrace).Or(lo.Equal(rbrace)).Or(v.Equal(colon)).Or(v.Equal(comma)).ToBits()
			quote |= uint64(q) << (32 * h)
			bslash |= uint64(s) << (32 * h)
			op |= uint64(o) << (32 * h)
		}
		escaped := escapedBytes(bslash, &oddCarry)
		quote &^= escaped
		in := prefixXor(quote) ^ inString
		inString = uint64(int64(in) >> 63)
		for m := (op &^ in) | quote; m != 0; m &= m - 1 {
			idx = append(idx, uint32(base+off+bits.TrailingZeros64(m)))
		}
	}
	st.inString, st.oddCarry = inString, oddCarry
	return idx
}

func init() {
	if archsimd.X86.AVX2() {
		stage1Variants = append(stage1Variants, stage1Variant{"vector", (*stage1State).scanVector})
	}
}

// FuzzStage1Vector: the vector stage 1 lists the same offsets as the portable one, byte for byte,
// whole and in parts of 128 bytes (the state carried between them).
func FuzzStage1Vector(f *testing.F) {
	if !archsimd.X86.AVX2() {
		f.Skip("this CPU has no AVX2")
	}
	f.Add(syntheticKineto(1))
	f.Add([]byte(`{"a\\":"b\"c\\\"d","e":[1,{"f":"\\\\"}]}`))
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		b := make([]byte, r.IntN(300))
		for i := range b {
			b[i] = `"\{}[]:, ab`[r.IntN(11)]
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var st, vst stage1State
		want := st.scan(in, 0, nil)
		if got := vst.scanVector(in, 0, nil); !slices.Equal(got, want) {
			t.Fatalf("scanVector(%.80q) = %v; stage1: %v", in, got, want)
		}
		var parts []uint32
		vst = stage1State{}
		for lo := 0; lo < len(in); lo += 128 {
			parts = vst.scanVector(in[lo:min(lo+128, len(in))], lo, parts)
		}
		if !slices.Equal(parts, want) {
			t.Fatalf("scanVector in parts (%.80q) = %v; stage1: %v", in, parts, want)
		}
	})
}
