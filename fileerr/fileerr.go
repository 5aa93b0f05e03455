package fileerr

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is a problem in a file: it names the file and, where it can, the line.
type Error struct {
	Source string
	Line   int // 0 when no line can be named
	Msg    string
}

func (e *Error) Error() string { return Location(e.Source, e.Line) + ": " + e.Msg }

// Location names line of src as errors do: src:line, or src alone for line 0.
func Location(src string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", src, line)
	}
	return src
}

// At returns an *Error at line of src (0: the file as a whole).
func At(src string, line int, format string, args ...any) error {
	return &Error{Source: src, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// FromYAML turns an error of yaml.v3's decoder into an *Error with the line its message names.
func FromYAML(src string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return At(src, 0, "%s", strings.Join(te.Errors, "; "))
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if _, e := fmt.Sscanf(msg, "line %d:", &line); e == nil {
		msg = strings.TrimSpace(msg[strings.Index(msg, ":")+1:])
	}
	if err.Error() == "EOF" {
		msg = "empty file"
	}
	return At(src, line, "%s", msg)
}

// ReadBounded reads the whole file at path when it holds at most max bytes, and refuses it
// otherwise. The bound is applied while reading, not from the file's stated size, so a device
// (/dev/zero), a FIFO fed forever or a file still growing is refused after max+1 bytes instead of
// filling memory. what names the file's role in the error ("topology file").
func ReadBounded(path, what string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a %s", path, what)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %s, too large for a %s", path, sizeName(max), what)
	}
	return data, nil
}

// sizeName writes a bound the way a person states one: 1 MiB, 64 KiB, or bytes.
func sizeName(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
