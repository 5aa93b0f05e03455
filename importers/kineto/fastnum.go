package kineto

import (
	"encoding/binary"
	"math"
)

// The fast path's numbers: a time read as its grammar is checked, eight digits at a time, an
// integer arg, a number checked and passed over.

// fastTime reads the JSON number of microseconds at b[i] into ns as parseNs does, checking its
// grammar as fastNumber does, in one pass, and returns the index after it. A string, a number
// with an exponent or too many digits for an int64 of ns, or anything fastNumber would not take
// is not read (read false): the caller goes the longer way. The integer part is read eight
// digits at a time: a Kineto timestamp has sixteen.
func (d *decoder) fastTime(b []byte, i int) (ns int64, ok bool, end int, read bool) {
	j := i
	neg := j < len(b) && b[j] == '-'
	if neg {
		j++
	}
	var whole uint64
	digits := 0
	switch {
	case j >= len(b):
		return 0, false, 0, false
	case b[j] == '0':
		j++
	case b[j] >= '1' && b[j] <= '9':
		k := j
		for j+8 <= len(b) {
			v := binary.LittleEndian.Uint64(b[j:])
			if !eightDigits(v) {
				break
			}
			whole = whole*100_000_000 + eightDigitsValue(v)
			j += 8
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			whole = whole*10 + uint64(b[j]-'0')
			j++
		}
		digits = j - k
	default:
		return 0, false, 0, false
	}
	var frac int64
	if j < len(b) && b[j] == '.' {
		j++
		k := j
		for mult := int64(100); j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
			frac += int64(b[j]-'0') * mult
			mult /= 10
		}
		if j == k {
			return 0, false, 0, false
		}
	}
	if j >= len(b) || j-i > d.s.maxToken {
		return 0, false, 0, false
	}
	if c := b[j]; (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
		return 0, false, 0, false // an exponent (strconv's), or a byte the general path reports
	}
	// parseNs takes a number whose digits before its last one exceed maxWhole (any of seventeen
	// digits or more, some of sixteen) as out of range: the longer way reads it.
	if digits > 16 || digits == 16 && whole/10 > maxWhole {
		return 0, false, 0, false
	}
	ns = int64(whole)*1000 + frac
	if neg {
		ns = -ns
	}
	return ns, true, j, true
}

// maxWhole is the largest whole number of microseconds parseNs takes another digit after.
const maxWhole = (math.MaxInt64 - 9) / 10 / 1000

// eightDigits tells whether the eight bytes of v (the first in its low byte) are ASCII digits:
// each byte's high nibble is 3, and stays 3 when 6 is added (0x3a to 0x3f become 0x4_).
func eightDigits(v uint64) bool {
	const hi, three, six = 0xf0f0f0f0f0f0f0f0, 0x3030303030303030, 0x0606060606060606
	return v&hi == three && (v+six)&hi == three
}

// eightDigitsValue is the value of eight ASCII digits (the first, the most significant, in v's low
// byte): pairs, then fours, then the eight are combined by multiplications (simdjson's
// parse_eight_digits_unrolled).
func eightDigitsValue(v uint64) uint64 {
	v = (v & 0x0f0f0f0f0f0f0f0f) * 2561 >> 8
	v = (v & 0x00ff00ff00ff00ff) * 6553601 >> 16
	return (v & 0x0000ffff0000ffff) * 42949672960001 >> 32
}

// fastInt reads the plain decimal integer at b[i] (an optional minus, 1 to 18 digits, no leading
// zero) and returns its value and the index after it, as fastNumber and parseInt together would;
// anything else (a fraction, an exponent, a longer number, the window's end) is not read.
func (d *decoder) fastInt(b []byte, i int) (int64, int, bool) {
	j := i
	neg := j < len(b) && b[j] == '-'
	if neg {
		j++
	}
	k := j
	var v int64
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		v = v*10 + int64(b[j]-'0')
		j++
	}
	n := j - k
	if n == 0 || n > 18 || n > 1 && b[k] == '0' || j >= len(b) || j-i > d.s.maxToken {
		return 0, 0, false
	}
	if c := b[j]; c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
		return 0, 0, false
	}
	if neg {
		v = -v
	}
	return v, j, true
}

// fastNumber reads the JSON number at b[i] and returns the index after it. The number must end
// inside the window (the byte after it is there) and be valid as the general path reads it: the
// longest run of number bytes, all of it a number. One pass checks the grammar.
func (d *decoder) fastNumber(b []byte, i int) (int, bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j >= len(b):
		return 0, false
	case b[j] == '0':
		j++
	case b[j] >= '1' && b[j] <= '9':
		j++
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		return 0, false
	}
	if j < len(b) && b[j] == '.' {
		j++
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			return 0, false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			return 0, false
		}
	}
	// The general path takes every byte that may be part of a number before it checks: one more
	// here (as in 01 or 1-2) is an error it reports.
	if j >= len(b) || j-i > d.s.maxToken {
		return 0, false
	}
	if c := b[j]; (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
		return 0, false
	}
	return j, true
}
