package flightrecorder

import (
	"fmt"
	"io"
)

// DefaultMaxTokenBytes bounds one string or number of a JSON dump, as the trace reader's
// --max-token-bytes does: a dump's longest strings are stack frames and names.
const DefaultMaxTokenBytes = 64 << 20

// limits bound what readFile holds of one dump: the file (it is decoded whole) and, for JSON, one
// string or number, which is refused as it is read rather than after the whole file is.
type limits struct {
	fileBytes  int64
	tokenBytes int64
}

// limits are opts' bounds with the defaults filled in.
func (o Options) limits() limits {
	l := limits{fileBytes: o.MaxFileBytes, tokenBytes: int64(o.MaxTokenBytes)}
	if l.fileBytes <= 0 {
		l.fileBytes = MaxFileBytes
	}
	if l.tokenBytes <= 0 {
		l.tokenBytes = DefaultMaxTokenBytes
	}
	return l
}

// tokenGuard passes JSON through, failing once one string or number (any run of bytes that is not
// JSON's punctuation or white space) is longer than max: what a dump of one 1 GiB string would
// otherwise cost is read only up to the bound. It keeps no more state than the token it is in.
type tokenGuard struct {
	r        io.Reader
	max      int64
	off, run int64 // bytes read; bytes of the current token
	inStr    bool
	esc      bool
}

// TokenError is a string or number longer than the bound, at the byte offset where it passes it.
type TokenError struct {
	Offset, Max int64
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("a string or number longer than %d bytes (--max-token-bytes): not a Flight Recorder dump", e.Max)
}

func (g *tokenGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	for i, c := range p[:n] {
		switch {
		case g.inStr && g.esc:
			g.esc = false
			g.run++
		case g.inStr && c == '\\':
			g.esc = true
			g.run++
		case c == '"':
			g.inStr, g.run = !g.inStr, 0
		case g.inStr:
			g.run++
		case c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':' || c == ' ' || c == '\t' || c == '\r' || c == '\n':
			g.run = 0
		default:
			g.run++
		}
		if g.run > g.max {
			return i, &TokenError{Offset: g.off + int64(i), Max: g.max}
		}
	}
	g.off += int64(n)
	return n, err
}
