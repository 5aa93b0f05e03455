package trace

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a small JSON reader specialised for trace files: it decodes the few fields xfertop
// uses, slices strings out of the input without copying when they have no escapes, and skips every
// other value without building it. It is several times faster than encoding/json on profiler traces,
// whose events carry large fields (call stacks, input shapes) nobody here reads.
type scanner struct {
	b    []byte
	pos  int
	name string
	err  error
}

var errTruncated = errors.New("the JSON ends before it is complete (is the file truncated?)")

func (s *scanner) fail(format string, args ...any) {
	if s.err == nil {
		if s.pos >= len(s.b) {
			s.err = fmt.Errorf("%s: %w", s.name, errTruncated)
			return
		}
		s.err = fmt.Errorf("%s: not valid JSON at byte offset %d: %s", s.name, s.pos, fmt.Sprintf(format, args...))
	}
}

func (s *scanner) ws() {
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.pos < len(s.b) {
		return s.b[s.pos]
	}
	return 0
}

func (s *scanner) expect(c byte) bool {
	if s.peek() != c {
		s.fail("expected %q", c)
		return false
	}
	s.pos++
	return true
}

// str reads a string; the result aliases the input unless it had escapes.
func (s *scanner) str() []byte {
	if !s.expect('"') {
		return nil
	}
	start := s.pos
	for s.pos < len(s.b) {
		c := s.b[s.pos]
		if c == '"' {
			out := s.b[start:s.pos]
			s.pos++
			return out
		}
		if c == '\\' {
			return s.strEscaped(start)
		}
		if c < 0x20 {
			s.fail("control character in a string")
			return nil
		}
		s.pos++
	}
	s.fail("unterminated string")
	return nil
}

func (s *scanner) strEscaped(start int) []byte {
	out := append([]byte(nil), s.b[start:s.pos]...)
	for s.pos < len(s.b) {
		c := s.b[s.pos]
		switch {
		case c == '"':
			s.pos++
			return out
		case c == '\\':
			if s.pos+1 >= len(s.b) {
				s.pos = len(s.b)
				s.fail("unterminated string")
				return nil
			}
			e := s.b[s.pos+1]
			s.pos += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := s.hex4()
				if utf16.IsSurrogate(r) && s.pos+1 < len(s.b) && s.b[s.pos] == '\\' && s.b[s.pos+1] == 'u' {
					s.pos += 2
					r = utf16.DecodeRune(r, s.hex4())
				}
				out = utf8.AppendRune(out, r)
			default:
				s.pos--
				s.fail("bad escape \\%c", e)
				return nil
			}
		case c < 0x20:
			s.fail("control character in a string")
			return nil
		default:
			out = append(out, c)
			s.pos++
		}
	}
	s.fail("unterminated string")
	return nil
}

func (s *scanner) hex4() rune {
	if s.pos+4 > len(s.b) {
		s.pos = len(s.b)
		s.fail("short \\u escape")
		return utf8.RuneError
	}
	v, err := strconv.ParseUint(string(s.b[s.pos:s.pos+4]), 16, 16)
	if err != nil {
		s.fail("bad \\u escape")
		return utf8.RuneError
	}
	s.pos += 4
	return rune(v)
}

// number returns the raw text of a number.
func (s *scanner) number() []byte {
	s.ws()
	start := s.pos
	for s.pos < len(s.b) {
		c := s.b[s.pos]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			s.pos++
			continue
		}
		break
	}
	if s.pos == start {
		s.fail("expected a number")
		return nil
	}
	return s.b[start:s.pos]
}

// scalar reads a number or a string and returns its text (a string's contents, unquoted).
func (s *scanner) scalar() ([]byte, bool) {
	switch c := s.peek(); {
	case c == '"':
		return s.str(), true
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(), true
	}
	s.skip()
	return nil, false
}

// skip passes over any value.
func (s *scanner) skip() {
	switch c := s.peek(); c {
	case '"':
		s.str()
	case '{', '[':
		depth := 0
		for s.pos < len(s.b) && s.err == nil {
			switch s.b[s.pos] {
			case '{', '[':
				depth++
				s.pos++
			case '}', ']':
				depth--
				s.pos++
				if depth == 0 {
					return
				}
			case '"':
				s.str()
			default:
				s.pos++
			}
		}
		if s.err == nil {
			s.fail("unterminated %c", c)
		}
	case 't', 'f', 'n':
		for _, w := range []string{"true", "false", "null"} {
			if len(s.b)-s.pos >= len(w) && string(s.b[s.pos:s.pos+len(w)]) == w {
				s.pos += len(w)
				return
			}
		}
		s.fail("unexpected literal")
	case 0:
		s.fail("unexpected end")
	default:
		s.number()
	}
}

// object calls field for each key of an object; field must consume the value.
func (s *scanner) object(field func(key []byte)) {
	if !s.expect('{') {
		return
	}
	if s.peek() == '}' {
		s.pos++
		return
	}
	for s.err == nil {
		if s.peek() != '"' {
			s.fail("expected a quoted key")
			return
		}
		key := s.str()
		if !s.expect(':') {
			return
		}
		field(key)
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return
		default:
			s.fail("expected ',' or '}'")
			return
		}
	}
}

// array calls elem for each element; elem must consume it.
func (s *scanner) array(elem func()) {
	if !s.expect('[') {
		return
	}
	if s.peek() == ']' {
		s.pos++
		return
	}
	for s.err == nil {
		elem()
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return
		default:
			s.fail("expected ',' or ']'")
			return
		}
	}
}

// parseNs turns a JSON number of microseconds into nanoseconds exactly (no float rounding for
// plain decimals, which is what profilers write).
func parseNs(num []byte) (int64, bool) {
	if len(num) == 0 {
		return 0, false
	}
	neg := num[0] == '-'
	i := 0
	if neg {
		i = 1
	}
	var whole, frac int64
	digits := 0
	for ; i < len(num) && num[i] >= '0' && num[i] <= '9'; i++ {
		if whole > (math.MaxInt64-9)/10/1000 {
			return 0, false
		}
		whole = whole*10 + int64(num[i]-'0')
		digits++
	}
	if i < len(num) && num[i] == '.' {
		i++
		mult := int64(100)
		for ; i < len(num) && num[i] >= '0' && num[i] <= '9'; i++ {
			frac += int64(num[i]-'0') * mult
			mult /= 10
			digits++
		}
	}
	if i != len(num) || digits == 0 {
		// An exponent or something odd: let strconv decide.
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 9e12 {
			return 0, false
		}
		return int64(math.Round(f * 1000)), true
	}
	v := whole*1000 + frac
	if neg {
		v = -v
	}
	return v, true
}

// parseInt reads an integer (or a string holding one, such as Kineto's "stream 7" thread names).
func parseInt(b []byte) (int64, bool) {
	if v, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		return v, true
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ' ' {
			v, err := strconv.ParseInt(string(b[i+1:]), 10, 64)
			return v, err == nil
		}
	}
	if f, err := strconv.ParseFloat(string(b), 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<62 {
		return int64(f), true
	}
	return 0, false
}
