package timeline

// Strings interns strings so that events can refer to them by a small integer. Id 0 is the empty
// string. A Strings is not safe for concurrent use; the producer that owns a session's events owns it.
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
	id := uint32(len(t.list))
	if _, ok := t.ids[s]; !ok {
		t.ids[s] = id
	}
	t.list = append(t.list, s)
	return id
}
