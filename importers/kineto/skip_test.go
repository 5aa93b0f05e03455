package kineto

import (
	"strings"
	"testing"
)

// skipDecoders are decoders at the token limits FuzzFastPath uses: the default, one below the
// quoted "name", one that "traceEvents" is within but some arg keys are not.
func skipDecoders() []*decoder {
	var ds []*decoder
	for _, limit := range []int{DefaultMaxTokenBytes, 5, 14} {
		ds = append(ds, &decoder{s: newScanner("t.json", strings.NewReader(""), limit)})
	}
	return ds
}

// FuzzSkipArray: fastSkipArray, the skip of arrays of integers and plain strings, takes an
// array only where fastSkipNested (the skip of any value) takes it, and ends it at the same byte;
// where it refuses, fastSkipNested reads the array from the same byte (FuzzFastPath checks that
// whole events still read as the general path reads them).
func FuzzSkipArray(f *testing.F) {
	for _, s := range []string{`[[2048,1024],[1024,4096]],`, `[32,16,1]}`, `["float","float"],`, `[]`, `[[],[[]]]}`,
		`[0,10,"",""]`, `[01]`, `[-1]`, `[1.5]`, `[1e3]`, `[1,]`, `[,1]`, `[1 ]`, `[ 1]`, `["a\"b"]`, `["a` + "\x01" + `"]`,
		`[1`, `[1]]`, `[ [1 , 2] ,[] ]`, "[1\t,\n2]", `["abcdefghijklmnop"]`, `[123456]`, `{"a":1}`, `[true]`, strings.Repeat("[", 33) + strings.Repeat("]", 33)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range skipDecoders() {
			end, ok := d.fastSkipArray(data, 0)
			if !ok {
				continue
			}
			want, wok := d.fastSkipNested(data, 0)
			if !wok || want != end {
				t.Fatalf("limit %d: fastSkipArray(%q) = %d; fastSkipNested: %d, %v", d.s.maxToken, data, end, want, wok)
			}
		}
	})
}

// TestSkipArray: the arrays profilers write are taken by fastSkipArray; the others are left to
// fastSkipNested, which takes the valid ones and refuses the rest, from the same byte.
func TestSkipArray(t *testing.T) {
	for _, tc := range []struct {
		in       string
		taken    bool // by fastSkipArray, at the default limit
		end      int  // where fastSkipNested ends it (0: it refuses it)
		limitEnd int  // fastSkipArray's end at a token limit of 5 (0: refused)
	}{
		{`[[2048,1024],[1024,4096]],`, true, 25, 25},
		{`[123456]`, true, 8, 0},
		{`[32,16,1]}`, true, 9, 9},
		{`["float","float"],`, true, 17, 0},
		{`["ab","cd"],`, true, 11, 11},
		{`[],`, true, 2, 2},
		{`[[],[[]]]}`, true, 9, 9},
		{`[0,10]`, true, 6, 6},
		{`[1, 2]`, true, 6, 6},
		{`[ 1]`, true, 4, 4},
		{"[ [ 1 ,\t2 ] ,\n[ ] , \"a\" ]\r\n,", true, 25, 25},
		{strings.Repeat("[", 32) + strings.Repeat("]", 32), true, 64, 64},
		// Valid, but left to fastSkipNested: a negative, a fraction, an exponent, an escape, an
		// object, a literal, nesting past fastDepth (which it refuses too).
		{`[-1]`, false, 4, 0},
		{`[1.5]`, false, 5, 0},
		{`[1e3]`, false, 5, 0},
		{`["a\"b"]`, false, 8, 0},
		{`[{"a":1}]`, false, 9, 0},
		{`[true,null]`, false, 11, 0},
		{strings.Repeat("[", 33) + strings.Repeat("]", 33), false, 0, 0},
		{`7,`, false, 1, 0}, // not an array: fastSkip reads numbers itself
		// Not JSON, or not whole in the window: refused by both.
		{`[01]`, false, 0, 0},
		{`[1,]`, false, 0, 0},
		{`[,1]`, false, 0, 0},
		{`["a` + "\x01" + `"]`, false, 0, 0},
		{`[1`, false, 0, 0},
		{`[1,2`, false, 0, 0},
		{`["ab`, false, 0, 0},
	} {
		ds := skipDecoders()
		end, ok := ds[0].fastSkipArray([]byte(tc.in), 0)
		if ok != tc.taken || ok && end != tc.end {
			t.Errorf("fastSkipArray(%q) = %d, %v; want %d, %v", tc.in, end, ok, tc.end, tc.taken)
		}
		nested, nok := ds[0].fastSkipNested([]byte(tc.in), 0)
		if nok != (tc.end > 0) || nok && nested != tc.end {
			t.Errorf("fastSkipNested(%q) = %d, %v; want %d", tc.in, nested, nok, tc.end)
		}
		end, ok = ds[1].fastSkipArray([]byte(tc.in), 0)
		if ok != (tc.limitEnd > 0) || ok && end != tc.limitEnd {
			t.Errorf("limit 5: fastSkipArray(%q) = %d, %v; want %d", tc.in, end, ok, tc.limitEnd)
		}
	}
}
