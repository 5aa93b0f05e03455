package inspector

import (
	"bufio"
	"io"
)

// peeker is a reader whose first bytes can be looked at before it is read.
type peeker struct{ *bufio.Reader }

func newPeeker(r io.Reader) peeker { return peeker{bufio.NewReaderSize(r, 1<<16)} }

// peek copies the first len(b) bytes (or fewer, at the end) into b without consuming them.
func (p peeker) peek(b []byte) (int, error) {
	h, err := p.Peek(len(b))
	return copy(b, h), err
}
