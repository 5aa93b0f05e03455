package ui

import (
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// cellWidth is ansi.StringWidth, fast for the lines the console draws: it counts the runes of
// text made of SGR sequences and characters known to be one cell wide, and hands anything else
// (other escape sequences, wide or zero-width characters) to ansi.StringWidth. Measuring every line
// of every frame by grapheme cluster took a quarter of a frame's time.
func cellWidth(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			// CSI: ESC [, parameter bytes (0x30-0x3f), then intermediate bytes (0x20-0x2f), then a
			// final byte (0x40-0x7e), in that order (ECMA-48 5.4). Anything else, a parameter after
			// an intermediate among them, is malformed: ansi.StringWidth says what it shows.
			if i+1 >= len(s) || s[i+1] != '[' {
				return ansi.StringWidth(s)
			}
			j := i + 2
			for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f {
				j++
			}
			for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
				j++
			}
			if j >= len(s) || s[j] < 0x40 || s[j] > 0x7e {
				return ansi.StringWidth(s)
			}
			i = j + 1
		case c >= 0x20 && c < 0x7f:
			n++
			i++
		case c < utf8.RuneSelf:
			return ansi.StringWidth(s) // a control character
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if !narrow(r) {
				return ansi.StringWidth(s)
			}
			n++
			i += size
		}
	}
	return n
}

// narrow reports whether r is one cell wide and a grapheme cluster of its own wherever it stands:
// Latin-1 and the symbols the console draws with (punctuation, arrows, operators, box drawing,
// blocks, geometric shapes), none wide, combining or an emoji.
func narrow(r rune) bool {
	switch {
	case r >= 0xa0 && r <= 0x2ff:
		return r != 0xad // the soft hyphen has no width
	case r >= 0x2010 && r <= 0x2027, r >= 0x2030 && r <= 0x205e:
		return true
	case r >= 0x2190 && r <= 0x21ff, r >= 0x2200 && r <= 0x22ff:
		return true
	case r >= 0x2500 && r <= 0x25fc:
		return true
	}
	return false
}
