package kineto

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a streaming JSON reader specialised for trace files: it decodes the few fields xfertop
// uses and passes over every other value without building it, checking as it goes that the input is
// JSON, so that a file stops at its first invalid byte. It reads through a window that holds at most
// one token (plus a read-ahead chunk), so its memory does not depend on the size of the input: a
// token longer than maxToken bytes (a string's counting its quotes and escapes) is refused instead
// of buffered.
//
// Byte slices it returns (strings, numbers) stay valid only until its next call.
type scanner struct {
	r        io.Reader
	buf      []byte // buf[pos:] is input not yet consumed
	pos      int
	mark     int   // index of the first byte a refill must keep (the token being read); -1: none
	off      int64 // input offset of buf[0]
	eof      bool
	rerr     error // a read error to report once the bytes read before it are consumed
	name     string
	err      error
	maxToken int
	gzipped  bool   // offsets count decompressed bytes (byteOffset says so)
	tmp      []byte // a string's unescaped contents
	key      []byte // the key object passes to its callback
	stack    []byte // open containers while skipping a value
}

const (
	readChunk = 64 << 10
	// window is the scanner's window before a token grows it: four chunks, so that it reads
	// straight into it past the reader's buffer, and few events straddle its end.
	window = 4 * readChunk
	// maxDepth bounds the nesting of arrays and objects (encoding/json's limit), so that a file of
	// brackets cannot grow the stack without bound.
	maxDepth = 10000
)

var errTruncated = errors.New("the JSON ends before it is complete")

// errEmptyFile is a file that ends before its first byte: a truncation (errors.Is errTruncated)
// said plainly.
var errEmptyFile error = emptyFile{}

type emptyFile struct{}

func (emptyFile) Error() string        { return "the file is empty (0 bytes)" }
func (emptyFile) Is(target error) bool { return target == errTruncated }

func newScanner(name string, r io.Reader, maxToken int) *scanner {
	return &scanner{r: r, buf: make([]byte, 0, window), mark: -1, name: name, maxToken: maxToken}
}

// offset is the input offset of the next byte.
func (s *scanner) offset() int64 { return s.off + int64(s.pos) }

// fill reads more input, keeping buf[mark:] (or buf[pos:]) at the front of the window. It reports
// whether new bytes arrived.
func (s *scanner) fill() bool {
	if s.err != nil {
		return false
	}
	if s.rerr != nil {
		s.readFailed()
		return false
	}
	if s.eof {
		return false
	}
	keep := s.pos
	if s.mark >= 0 && s.mark < keep {
		keep = s.mark
	}
	n := copy(s.buf[:cap(s.buf)], s.buf[keep:])
	s.buf = s.buf[:n]
	s.off += int64(keep)
	s.pos -= keep
	if s.mark >= 0 {
		s.mark -= keep
	}
	if cap(s.buf)-len(s.buf) < readChunk/2 {
		// A token fills the window: grow it, up to the token limit and a chunk (whoever reads the
		// token checks its length before asking for more, so the window never needs to be larger).
		if c := min(2*cap(s.buf), s.maxToken+2*readChunk); c > cap(s.buf) {
			nb := make([]byte, len(s.buf), c)
			copy(nb, s.buf)
			s.buf = nb
		}
		if len(s.buf) == cap(s.buf) {
			s.tooLong(s.off, "token")
			return false
		}
	}
	for {
		m, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+m]
		if err == io.EOF {
			s.eof = true
		} else if err != nil {
			s.rerr = err
		}
		if m > 0 {
			return true
		}
		if s.eof {
			return false
		}
		if s.rerr != nil {
			s.readFailed()
			return false
		}
	}
}

// readFailed turns a read error into the scanner's error: a limit refused, or the file unreadable.
func (s *scanner) readFailed() {
	if s.err != nil {
		return
	}
	var le *LimitError
	if errors.As(s.rerr, &le) {
		le.Name, le.Gzipped = s.name, s.gzipped
		s.err = le
		return
	}
	s.err = fmt.Errorf("%s: read at %s: %w", s.name, byteOffset(s.offset(), s.gzipped), s.rerr)
}

// more reports whether a byte is available at buf[pos], reading if needed.
func (s *scanner) more() bool {
	return s.pos < len(s.buf) || s.fill()
}

func (s *scanner) fail(format string, args ...any) {
	if s.err != nil {
		return
	}
	if !s.more() {
		switch {
		case s.err != nil:
		case s.offset() == 0 && !s.gzipped:
			s.err = fmt.Errorf("%s: %w", s.name, errEmptyFile)
		default:
			s.err = fmt.Errorf("%s: %w, at %s (is the file truncated?)", s.name, errTruncated, byteOffset(s.offset(), s.gzipped))
		}
		return
	}
	s.err = fmt.Errorf("%s: not valid JSON at %s: %s", s.name, byteOffset(s.offset(), s.gzipped), fmt.Sprintf(format, args...))
}

// badValue refuses a value, valid JSON, that started at offset start and that xfertop cannot take:
// the message says what is wrong with it, not that the file is not JSON.
func (s *scanner) badValue(start int64, err error) {
	if s.err == nil {
		s.err = fmt.Errorf("%s: at %s: %w", s.name, byteOffset(start, s.gzipped), err)
	}
}

// tooLong refuses a token that started at offset start.
func (s *scanner) tooLong(start int64, what string) {
	if s.err == nil {
		s.err = &LimitError{Name: s.name, Offset: start, Limit: int64(s.maxToken), What: what, Gzipped: s.gzipped}
	}
}

// peek returns the next non-space byte without consuming it (0 at the end).
// skipBOM steps over a UTF-8 byte-order mark at the start of the input (editors on Windows write
// one before JSON); offsets still count its 3 bytes, as the file holds them.
func (s *scanner) skipBOM() {
	for len(s.buf)-s.pos < 3 && s.fill() {
	}
	if b := s.buf[s.pos:]; len(b) >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf {
		s.pos += 3
	}
}

func (s *scanner) peek() byte {
	for {
		for s.pos < len(s.buf) {
			c := s.buf[s.pos]
			if c > ' ' || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
				return c
			}
			s.pos++
		}
		if !s.fill() {
			return 0
		}
	}
}

func (s *scanner) expect(c byte) bool {
	if s.peek() != c {
		s.fail("expected %q", c)
		return false
	}
	s.pos++
	return true
}

// str reads a string and returns its contents, which alias the window unless it had escapes.
func (s *scanner) str() []byte {
	if !s.expect('"') {
		return nil
	}
	startOff := s.offset() - 1
	s.mark = s.pos
	defer func() { s.mark = -1 }()
	for {
		b := s.buf
		for i := s.pos; i < len(b); i++ {
			c := b[i]
			if c == '"' {
				s.pos = i + 1
				if s.offset()-startOff > int64(s.maxToken) {
					s.tooLong(startOff, "string")
					return nil
				}
				return b[s.mark:i]
			}
			if c == '\\' || c < 0x20 {
				s.pos = i
				if c < 0x20 {
					s.fail("control character in a string")
					return nil
				}
				s.tmp = append(s.tmp[:0], b[s.mark:i]...)
				s.mark = -1
				return s.strEscaped(startOff)
			}
		}
		s.pos = len(b)
		if s.offset()-startOff > int64(s.maxToken) {
			s.tooLong(startOff, "string")
			return nil
		}
		if !s.fill() {
			s.fail("unterminated string")
			return nil
		}
	}
}

// strEscaped goes on with a string after its first backslash, unescaping into s.tmp.
func (s *scanner) strEscaped(startOff int64) []byte {
	for s.more() {
		if s.offset()-startOff > int64(s.maxToken) {
			s.tooLong(startOff, "string")
			return nil
		}
		c := s.buf[s.pos]
		switch {
		case c == '"':
			s.pos++
			if s.offset()-startOff > int64(s.maxToken) {
				s.tooLong(startOff, "string")
				return nil
			}
			return s.tmp
		case c == '\\':
			r, ok := s.escape()
			if !ok {
				return nil
			}
			if r >= 0 {
				s.tmp = utf8.AppendRune(s.tmp, r)
			}
		case c < 0x20:
			s.fail("control character in a string")
			return nil
		default:
			s.tmp = append(s.tmp, c)
			s.pos++
		}
	}
	s.fail("unterminated string")
	return nil
}

// escape reads one escape sequence (the backslash is at pos) and returns the rune it stands for.
func (s *scanner) escape() (rune, bool) {
	s.pos++
	if !s.more() {
		s.fail("unterminated string")
		return 0, false
	}
	e := s.buf[s.pos]
	s.pos++
	switch e {
	case '"', '\\', '/':
		return rune(e), true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case 'u':
		r, ok := s.hex4()
		if !ok {
			return 0, false
		}
		if utf16.IsSurrogate(r) && s.more() && s.buf[s.pos] == '\\' {
			// Keep the backslash in the window while looking past it: if no \u follows, the next
			// round reads it as an escape of its own.
			s.mark = s.pos
			s.pos++
			if s.more() && s.buf[s.pos] == 'u' {
				s.mark = -1
				s.pos++
				r2, ok := s.hex4()
				if !ok {
					return 0, false
				}
				return utf16.DecodeRune(r, r2), true
			}
			s.pos, s.mark = s.mark, -1
		}
		if utf16.IsSurrogate(r) {
			return utf8.RuneError, true
		}
		return r, true
	}
	s.pos--
	s.fail("bad escape \\%c", e)
	return 0, false
}

func (s *scanner) hex4() (rune, bool) {
	var v rune
	for range 4 {
		if !s.more() {
			s.fail("short \\u escape")
			return 0, false
		}
		c := s.buf[s.pos]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			s.fail("bad \\u escape")
			return 0, false
		}
		s.pos++
	}
	return v, true
}

// skipStr passes over a string, checking its escapes, without keeping it in the window.
func (s *scanner) skipStr() {
	if !s.expect('"') {
		return
	}
	startOff := s.offset() - 1
	for {
		b := s.buf
		i := s.pos
		for ; i < len(b); i++ {
			if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
				break
			}
		}
		s.pos = i
		if s.offset()-startOff > int64(s.maxToken) {
			s.tooLong(startOff, "string")
			return
		}
		if i == len(b) {
			if !s.fill() {
				s.fail("unterminated string")
				return
			}
			continue
		}
		switch b[i] {
		case '"':
			s.pos++
			if s.offset()-startOff > int64(s.maxToken) {
				s.tooLong(startOff, "string")
			}
			return
		case '\\':
			if _, ok := s.escape(); !ok {
				return
			}
		default:
			s.fail("control character in a string")
			return
		}
	}
}

// number reads a number and returns its text, checked against JSON's grammar.
func (s *scanner) number() []byte {
	s.peek()
	startOff := s.offset()
	s.mark = s.pos
	defer func() { s.mark = -1 }()
	for {
		for s.pos < len(s.buf) {
			c := s.buf[s.pos]
			if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
				s.pos++
				continue
			}
			goto done
		}
		if s.offset()-startOff > int64(s.maxToken) {
			s.tooLong(startOff, "number")
			return nil
		}
		if !s.fill() {
			break
		}
	}
done:
	if s.offset()-startOff > int64(s.maxToken) {
		s.tooLong(startOff, "number")
		return nil
	}
	num := s.buf[s.mark:s.pos]
	if n := validNumber(num); n != len(num) {
		s.pos = s.mark + n
		s.fail("bad number")
		return nil
	}
	return num
}

// validNumber returns the length of the longest prefix of b that is a JSON number: len(b) when all
// of it is one.
func validNumber(b []byte) int {
	i := 0
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return i
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return i
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i
		}
	}
	return i
}

// literal reads true, false or null.
func (s *scanner) literal() {
	var w string
	switch s.peek() {
	case 't':
		w = "true"
	case 'f':
		w = "false"
	default:
		w = "null"
	}
	for i := 0; i < len(w); i++ {
		if !s.more() || s.buf[s.pos] != w[i] {
			s.fail("unexpected literal")
			return
		}
		s.pos++
	}
}

// scalar reads a number or a string and returns its text (a string's contents, unquoted); any other
// value is skipped.
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

// value passes over one scalar, or opens a container (pushed on the stack) and reports it.
func (s *scanner) value() (opened bool) {
	switch c := s.peek(); {
	case c == '"':
		s.skipStr()
	case c == '{' || c == '[':
		if len(s.stack) >= maxDepth {
			s.fail("nesting deeper than %d", maxDepth)
			return false
		}
		s.pos++
		s.stack = append(s.stack, c)
		return true
	case c == 't' || c == 'f' || c == 'n':
		s.literal()
	case c == '-' || (c >= '0' && c <= '9'):
		s.number()
	case c == 0 && !s.more():
		s.fail("unexpected end")
	default:
		s.fail("unexpected character %q", c)
	}
	return false
}

// skip passes over any value, checking that it is JSON, without building it. Its memory is the
// nesting depth, bounded by maxDepth.
func (s *scanner) skip() {
	s.stack = s.stack[:0]
	needValue := true
	for s.err == nil {
		if needValue {
			if !s.value() {
				if len(s.stack) == 0 {
					return
				}
				needValue = false
				continue
			}
			// Just opened a container: it may be empty; an object starts with a key.
			top := s.stack[len(s.stack)-1]
			if c := s.peek(); (top == '{' && c == '}') || (top == '[' && c == ']') {
				s.pos++
				s.stack = s.stack[:len(s.stack)-1]
				if len(s.stack) == 0 {
					return
				}
				needValue = false
				continue
			}
			if top == '{' && !s.skipKey() {
				return
			}
			continue
		}
		top := s.stack[len(s.stack)-1]
		switch c := s.peek(); {
		case c == ',':
			s.pos++
			if top == '{' && !s.skipKey() {
				return
			}
			needValue = true
		case (top == '{' && c == '}') || (top == '[' && c == ']'):
			s.pos++
			s.stack = s.stack[:len(s.stack)-1]
			if len(s.stack) == 0 {
				return
			}
		default:
			if top == '{' {
				s.fail("expected ',' or '}'")
			} else {
				s.fail("expected ',' or ']'")
			}
		}
	}
}

// skipKey passes over an object key and its colon.
func (s *scanner) skipKey() bool {
	if s.peek() != '"' {
		s.fail("expected a quoted key")
		return false
	}
	s.skipStr()
	return s.err == nil && s.expect(':')
}

// object calls field for each key of an object; field must consume the value. The key is valid
// only until field reads further (a nested object reuses it).
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
		// The key is copied: reading on to the colon may move the window.
		s.key = append(s.key[:0], s.str()...)
		if !s.expect(':') {
			return
		}
		field(s.key)
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

// array calls elem for each element; elem must consume it. It reports whether the array was read
// to its ']' (false on an error).
func (s *scanner) array(elem func()) bool {
	return s.elements(elem, false)
}

// openArray is array for an array that may end with the input instead of its ']' (after an
// element, or a comma after one), as the Trace Event Format allows the JSON Array Format to: it
// reports whether the ']' was there. An element cut short is still an error.
func (s *scanner) openArray(elem func()) bool {
	return s.elements(elem, true)
}

func (s *scanner) elements(elem func(), open bool) bool {
	if !s.expect('[') {
		return false
	}
	ended := func() bool { return open && s.peek() == 0 && s.err == nil && !s.more() && s.err == nil }
	if s.peek() == ']' {
		s.pos++
		return true
	}
	for s.err == nil {
		if ended() {
			return false
		}
		elem()
		if s.err != nil {
			return false
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return true
		default:
			if ended() {
				return false
			}
			s.fail("expected ',' or ']'")
			return false
		}
	}
	return false
}

// parseNs turns a JSON number of microseconds into nanoseconds exactly (no float rounding for
// plain decimals, which is what profilers write). It refuses what does not fit in ±292 years.
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
	long := false // more digits than an int64 of ns holds: strconv reads it, as out of range
	for ; i < len(num) && num[i] >= '0' && num[i] <= '9'; i++ {
		if whole > (math.MaxInt64-9)/10/1000 {
			long = true
			break
		}
		whole = whole*10 + int64(num[i]-'0')
		digits++
	}
	if !long && i < len(num) && num[i] == '.' {
		i++
		mult := int64(100)
		for ; i < len(num) && num[i] >= '0' && num[i] <= '9'; i++ {
			frac += int64(num[i]-'0') * mult
			mult /= 10
			digits++
		}
	}
	if i != len(num) || digits == 0 {
		// An exponent or something odd: let strconv decide. A number past what is kept (maxTime,
		// 146 years, in ns) is that bound, of its sign, for the checks on times to name it as
		// out of range: it is a number, and not a time xfertop can hold.
		f, err := strconv.ParseFloat(string(num), 64)
		if (err != nil && !errors.Is(err, strconv.ErrRange)) || math.IsNaN(f) {
			return 0, false
		}
		if math.Abs(f) >= maxTime/1000 {
			return int64(math.Copysign(maxTime, f)), true
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
	// Plain decimal integers, what traces hold, without strconv's string: up to 18 digits cannot
	// overflow, and an optional minus is all strconv would accept besides a plus.
	if i := 0; len(b) > 0 && len(b) <= 19 {
		neg := b[0] == '-'
		if neg {
			i = 1
		}
		if i < len(b) && len(b)-i <= 18 {
			var v int64
			for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
				v = v*10 + int64(b[i]-'0')
			}
			if i == len(b) {
				if neg {
					v = -v
				}
				return v, true
			}
		}
	}
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
