package fileerr

import (
	"errors"
	"fmt"
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
