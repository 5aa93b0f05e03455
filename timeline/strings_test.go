package timeline

import (
	"testing"
	"unicode/utf8"
)

// Labels are made printable on their way into the table, by ID and by Append alike: escape
// sequences, other control characters and bytes that are not UTF-8 cannot reach a terminal.
func TestStringsPrintable(t *testing.T) {
	cases := []struct{ in, want string }{
		{"gemm<float>(float*)", "gemm<float>(float*)"},
		{"ncclDevKernel_AllReduce · 中文 é", "ncclDevKernel_AllReduce · 中文 é"},
		{"\x1b[ 0A", "\ufffd[ 0A"},
		{"\x1b[2J\x1b]0;owned\x07kernel", "\ufffd[2J\ufffd]0;owned\ufffdkernel"},
		{"a\tb\r\nc\x7f", "a b\ufffd\ufffdc\ufffd"},
		{"c1\u009b31m", "c1\ufffd31m"},
		{"bad\xff\xfeutf8", "bad\ufffd\ufffdutf8"},
	}
	for _, c := range cases {
		if got := Printable(c.in); got != c.want {
			t.Errorf("Printable(%q) = %q; want %q", c.in, got, c.want)
		}
		s := NewStrings()
		if got := s.Lookup(s.ID(c.in)); got != c.want {
			t.Errorf("ID(%q) looks up as %q; want %q", c.in, got, c.want)
		}
		if s.ID(c.in) != s.ID(c.want) {
			t.Errorf("ID(%q) and ID(%q) differ", c.in, c.want)
		}
		if got := s.Lookup(s.Append(c.in)); got != c.want {
			t.Errorf("Append(%q) looks up as %q; want %q", c.in, got, c.want)
		}
	}
}

// Whatever it is given, Printable returns valid UTF-8 without control characters, leaves a
// printable string as it is, and is idempotent.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"", "gemm", "\x1b[ 0A", "a\tb", "\xff", "\u009b", "中"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := Printable(s)
		if !utf8.ValidString(p) {
			t.Fatalf("Printable(%q) = %q: not UTF-8", s, p)
		}
		for _, r := range p {
			if r < 0x20 || r >= 0x7f && r <= 0x9f {
				t.Fatalf("Printable(%q) = %q holds %U", s, p, r)
			}
		}
		if Printable(p) != p {
			t.Fatalf("Printable(%q) = %q, then %q", s, p, Printable(p))
		}
	})
}
