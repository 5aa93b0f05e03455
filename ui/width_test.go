package ui

import (
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestCellWidth(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{
		{"", 0},
		{"plain ascii", 11},
		{"\x1b[38;2;95;175;95m█████\x1b[m·· ▾ device 0", 18},
		{"µs × − … ↓↑ ◀ ▁▂▃", 17},
		{"\x1b[7mselected\x1b[0m", 8},
		{"wide 中文", 9},                              // wide: measured the slow way
		{"e\u0301", 1},                              // combining accent
		{"\x1b]8;;http://x\x07link\x1b]8;;\x07", 4}, // OSC hyperlink
		{"tab\there", ansi.StringWidth("tab\there")},
	}
	for _, tt := range tests {
		if got := cellWidth(tt.s); got != tt.want || got != ansi.StringWidth(tt.s) {
			t.Errorf("cellWidth(%q) = %d; want %d (ansi.StringWidth %d)", tt.s, got, tt.want, ansi.StringWidth(tt.s))
		}
	}
}

// cellWidth agrees with ansi.StringWidth on any string.
func FuzzCellWidth(f *testing.F) {
	for _, s := range []string{"a█b", "\x1b[1mx\x1b[m", "中", "e\u0301", "\x1b[", "\x1b[38;5;9", "·…−"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := cellWidth(s), ansi.StringWidth(s); got != want {
			t.Errorf("cellWidth(%q) = %d; ansi.StringWidth = %d", s, got, want)
		}
	})
}
