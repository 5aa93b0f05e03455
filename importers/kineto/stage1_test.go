package kineto

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
)

// A measurement, not part of the importer: the first stage of a simdjson-style parser (the
// positions of a document's structure found a block of 64 bytes at a time, before any value is
// read), written in portable Go with eight-byte words standing for simdjson's vectors. Its cost
// alone, per byte of a trace, bounds what a scanner built on it could reach: BenchmarkStage1.

// stage1 finds, 64 bytes at a time, the structural bytes of a JSON text outside strings ({ } [ ]
// : ,) and the quotes that open and close strings (not those a backslash escapes), and appends
// their offsets (from base) to idx. The state between blocks (inside a string, after an odd run
// of backslashes) is carried in st, as simdjson carries it, so that a text may be given in parts
// of a multiple of 64 bytes.
func (st *stage1State) scan(b []byte, base int, idx []uint32) []uint32 {
	inString, oddCarry := st.inString, st.oddCarry
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
		for w := range 8 {
			v := binary.LittleEndian.Uint64(blk[8*w:])
			lo := v | ones*0x20 // { and [, } and ], differ by 0x20 alone
			q := gather(byteHigh(v, '"'))
			s := gather(byteHigh(v, '\\'))
			o := gather(byteHigh(lo, '{') | byteHigh(lo, '}') | byteHigh(v, ':') | byteHigh(v, ','))
			quote |= q << (8 * w)
			bslash |= s << (8 * w)
			op |= o << (8 * w)
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

// stage1State is what stage1 carries from one block to the next.
type stage1State struct{ inString, oddCarry uint64 }

// stage1 is stage1State.scan over the whole of b.
func stage1(b []byte, idx []uint32) []uint32 {
	var st stage1State
	return st.scan(b, 0, idx)
}

// byteHigh sets the high bit of each byte of v equal to c, and no other bit: exact, no carry
// from one byte reaches the next.
func byteHigh(v uint64, c byte) uint64 {
	x := v ^ ones*uint64(c)
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^((x&low7 + low7) | x | low7)
}

// gather packs the high bits of a word's bytes into its low byte (bit k for byte k).
func gather(h uint64) uint64 { return (h >> 7) * 0x0102040810204080 >> 56 }

// escapedBytes is the mask of the bytes that an odd run of backslashes escapes (simdjson's
// find_odd_backslash_sequences); carry says whether the previous block ended in such a run.
func escapedBytes(bs uint64, carry *uint64) uint64 {
	const even, odd = 0x5555555555555555, 0xaaaaaaaaaaaaaaaa
	starts := bs &^ (bs << 1)
	evenStartMask := even ^ *carry
	evenStarts, oddStarts := starts&evenStartMask, starts&^evenStartMask
	evenCarries := bs + evenStarts
	oddCarries, c := bits.Add64(bs, oddStarts, 0)
	oddCarries |= *carry
	*carry = c
	evenEnds, oddEnds := evenCarries&^bs, oddCarries&^bs
	return evenEnds&odd | oddEnds&even
}

// prefixXor sets each bit to the parity of the bits at and below it: between an opening and a
// closing quote.
func prefixXor(x uint64) uint64 {
	x ^= x << 1
	x ^= x << 2
	x ^= x << 4
	x ^= x << 8
	x ^= x << 16
	x ^= x << 32
	return x
}

// stage1Bytewise is stage1 a byte at a time, to check it against.
func stage1Bytewise(b []byte) []uint32 {
	var idx []uint32
	in, esc := false, false
	for i, c := range b {
		wasEsc := esc
		esc = false
		switch {
		case wasEsc && (c == '"' || c == '\\'): // escaped: neither a quote nor an escape
		case c == '\\': // outside a string too, as in stage1 (no valid JSON has one there)
			esc = true
		case c == '"':
			in = !in
			idx = append(idx, uint32(i))
		case !in && (c == '{' || c == '}' || c == '[' || c == ']' || c == ':' || c == ','):
			idx = append(idx, uint32(i))
		}
	}
	return idx
}

func TestStage1(t *testing.T) {
	inputs := [][]byte{
		syntheticKineto(3),
		largeTraceBytes(t, 100, 1),
		[]byte(`{"a\\":"b\"c\\\"d","e":[1,{"f":"\\\\"}]}`),
		[]byte(`"\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\",{}`),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, r.IntN(300))
		for i := range b {
			b[i] = `"\{}[]:, ab`[r.IntN(11)]
		}
		inputs = append(inputs, b)
	}
	for _, in := range inputs {
		got, want := stage1(in, nil), stage1Bytewise(in)
		if !slices.Equal(got, want) {
			t.Fatalf("stage1(%.80q) = %v; want %v", in, got, want)
		}
		var st stage1State // in parts of 128 bytes, as BenchmarkStage1 gives it
		var parts []uint32
		for lo := 0; lo < len(in); lo += 128 {
			parts = st.scan(in[lo:min(lo+128, len(in))], lo, parts)
		}
		if !slices.Equal(parts, want) {
			t.Fatalf("stage1 in parts (%.80q) = %v; want %v", in, parts, want)
		}
	}
}

// BenchmarkStage1 measures stage1 alone on BenchmarkThroughput's traces, in MB of JSON per CPU
// second (the indexes go to a buffer reused every 64 KiB of input, as a streaming scanner would):
//
//	go test -run XXX -bench Stage1 -benchtime 3x -cpu 1 ./importers/kineto/
//	GOEXPERIMENT=simd go test -run XXX -bench Stage1 -benchtime 3x -cpu 1 ./importers/kineto/
func BenchmarkStage1(b *testing.B) {
	for _, tr := range []struct {
		name string
		data func() []byte
	}{
		{"large-in-order", func() []byte { return largeTraceBytes(b, 200_000, 1) }},
		{"synthetic", func() []byte { return syntheticKineto(1000) }},
	} {
		for _, v := range stage1Variants {
			b.Run(tr.name+"/"+v.name, func(b *testing.B) {
				data := tr.data()
				idx := make([]uint32, 0, 1<<16)
				var cpu time.Duration
				n := 0
				for b.Loop() {
					runtime.GC()
					c0 := cpuTime()
					var st stage1State
					for lo := 0; lo < len(data); lo += 1 << 16 {
						idx = v.scan(&st, data[lo:min(lo+1<<16, len(data))], lo, idx[:0])
						n += len(idx)
					}
					cpu += cpuTime() - c0
				}
				b.ReportMetric(float64(len(data))*float64(b.N)/cpu.Seconds()/1e6, "MB/cpu-s")
				b.ReportMetric(float64(n)/float64(b.N)/float64(len(data)), "indexes/byte")
				b.SetBytes(int64(len(data)))
			})
		}
	}
}

// stage1Variant is a stage 1 that BenchmarkStage1 measures: the portable one, and the vector one
// in a GOEXPERIMENT=simd build on an AVX2 CPU (stage1_simd_test.go).
type stage1Variant struct {
	name string
	scan func(st *stage1State, b []byte, base int, idx []uint32) []uint32
}

var stage1Variants = []stage1Variant{{"words", (*stage1State).scan}}
