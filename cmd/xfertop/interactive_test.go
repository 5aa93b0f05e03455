package main

import (
	"strings"
	"testing"
)

// The console runs where standard output is a terminal, reading keys from standard input or, when
// that is a pipe, from /dev/tty; when it cannot, the reason names the stream that is not a terminal.
func TestConsoleWhy(t *testing.T) {
	for _, c := range []struct {
		name                   string
		outTerm, inTerm, ttyOK bool
		want                   string // "" when the console runs
	}{
		{"both terminals", true, true, true, ""},
		{"stdin a pipe, keys from /dev/tty", true, false, true, ""},
		{"stdin a pipe, no /dev/tty", true, false, false, "standard input is not a terminal"},
		{"stdout a pipe", false, true, true, "standard output is not a terminal"},
		{"both pipes", false, false, false, "standard output is not a terminal"},
	} {
		got := consoleWhy(c.outTerm, c.inTerm, c.ttyOK)
		if c.want == "" && got != "" || c.want != "" && !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: consoleWhy(%v, %v, %v) = %q; want %q", c.name, c.outTerm, c.inTerm, c.ttyOK, got, c.want)
		}
	}
}
