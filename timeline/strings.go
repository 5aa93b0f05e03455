package timeline

import (
	"strings"
	"unicode/utf8"
)

// Strings interns strings so that events can refer to them by a small integer. Id 0 is the empty
// string. Every string is made printable on its way in (Printable): labels come from traces,
// exports and other hosts, and this is the one place they all pass before a terminal shows them.
// A Strings is not safe for concurrent use; the producer that owns a session's events owns it.
type Strings struct {
	ids  map[string]uint32
	list []string
}

// NewStrings returns an empty table holding only the empty string at id 0.
func NewStrings() *Strings {
	return &Strings{ids: map[string]uint32{"": 0}, list: []string{""}}
}

// ID returns the id of s, adding it to the table if it is new.
func (t *Strings) ID(s string) uint32 {
	if id, ok := t.ids[s]; ok {
		return id
	}
	if p := Printable(s); p != s {
		return t.ID(p)
	}
	id := uint32(len(t.list))
	t.ids[s] = id
	t.list = append(t.list, s)
	return id
}

// Lookup returns the string with the given id, or "" when the id is unknown.
func (t *Strings) Lookup(id uint32) string {
	if int(id) < len(t.list) {
		return t.list[id]
	}
	return ""
}

// Len returns the number of strings in the table, the empty string included.
func (t *Strings) Len() int { return len(t.list) }

// All returns the table's strings in id order. The slice must not be modified.
func (t *Strings) All() []string { return t.list }

// Append adds s as the next id even if it is already present (readers rebuilding a table recorded
// elsewhere need the recorded ids, duplicates included) and returns its id.
func (t *Strings) Append(s string) uint32 {
	s = Printable(s)
	id := uint32(len(t.list))
	if _, ok := t.ids[s]; !ok {
		t.ids[s] = id
	}
	t.list = append(t.list, s)
	return id
}

// Printable returns s with what a terminal would act on instead of show replaced: control
// characters (C0, DEL and C1, which start escape sequences: ESC [ moves the cursor, ESC ] sets
// the title) and bytes that are not UTF-8 become U+FFFD, a tab a space, so that a label can neither move the
// cursor, recolour the screen nor shift a column. A string without them is returned as it is,
// without allocating.
func Printable(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if c < 0x20 || c == 0x7f || r == utf8.RuneError && size == 1 || r >= 0x80 && r <= 0x9f {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteString(s[:i])
	for _, r := range s[i:] { // ranging turns each invalid byte into U+FFFD
		switch {
		case r == '\t':
			r = ' ' // a tab moves the cursor to a stop that the column widths do not know
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}
