package widget

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
)

// Filter is the `/` filter of a list: typing edits it, enter keeps it, esc clears it.
type Filter struct {
	input     textinput.Model
	filtering bool
}

// NewFilter returns a closed, empty filter showing placeholder when opened.
func NewFilter(placeholder string) Filter {
	ti := textinput.New()
	ti.Prompt = "/"
	ti.Placeholder = placeholder
	return Filter{input: ti}
}

// Open starts editing.
func (f *Filter) Open() tea.Cmd {
	f.filtering = true
	return f.input.Focus()
}

// Editing reports whether the filter takes every key now.
func (f *Filter) Editing() bool { return f.filtering }

// Key takes a key while the filter is open.
func (f *Filter) Key(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "enter", "esc":
		f.filtering = false
		f.input.Blur()
		if msg.String() == "esc" {
			f.input.SetValue("")
		}
		return nil
	}
	var cmd tea.Cmd
	f.input, cmd = f.input.Update(msg)
	return cmd
}

// Value is the filter in lower case ("" for none).
func (f *Filter) Value() string { return strings.ToLower(f.input.Value()) }

// Shown reports whether the filter line is on screen.
func (f *Filter) Shown() bool { return f.filtering || f.input.Value() != "" }

// View draws the filter line.
func (f *Filter) View() string { return f.input.View() }

// Clear empties the filter and closes it.
func (f *Filter) Clear() {
	f.filtering = false
	f.input.Blur()
	f.input.SetValue("")
}

// Handle takes `/` (it opens the filter), every key while the filter is open, and esc while a
// filter is shown but closed (it clears it: esc goes back from a filtered list to the whole
// one). It reports whether msg was one of them.
func (f *Filter) Handle(msg tea.Msg, k KeyMap) (tea.Cmd, bool) {
	km, ok := msg.(tea.KeyPressMsg)
	switch {
	case !ok:
		return nil, false
	case f.filtering:
		return f.Key(km), true
	case key.Matches(km, k.Filter):
		return f.Open(), true
	case key.Matches(km, k.Back) && f.Shown():
		f.Clear()
		return nil, true
	}
	return nil, false
}

// Keys are the filter's keys for a view's help: `/`, and esc while a filter is shown.
func (f *Filter) Keys(k KeyMap) []key.Binding {
	if f.Shown() {
		back := k.Back
		back.SetHelp("esc", "clear filter")
		return []key.Binding{k.Filter, back}
	}
	return []key.Binding{k.Filter}
}

// Match reports whether any of fields contains the filter (case-insensitive); an empty filter
// matches everything.
func (f *Filter) Match(fields ...string) bool {
	v := f.Value()
	if v == "" {
		return true
	}
	for _, s := range fields {
		if strings.Contains(strings.ToLower(s), v) {
			return true
		}
	}
	return false
}

// HostToken reports whether the filter is a host's name, h and a number ("h1"), and which host;
// h? is the devices whose host is unknown (-1), as the views show them.
func (f *Filter) HostToken() (int, bool) {
	v, ok := strings.CutPrefix(f.Value(), "h")
	if !ok || v == "" {
		return 0, false
	}
	if v == "?" {
		return -1, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || strconv.Itoa(n) != v {
		return 0, false
	}
	return n, true
}

// MatchHost is Match for a row of a device on host (-1: unknown, h?), whose name ("h1") is among
// fields: a filter that is a host's name matches that host alone (h1 is host 1, not hosts 10–19 and 100–127 too);
// any other filter matches as Match does, the host's name among the fields.
func (f *Filter) MatchHost(host int, fields ...string) bool {
	if h, ok := f.HostToken(); ok {
		return h == host || (h < 0 && host < 0)
	}
	name := "h?" // an unknown host, as the views show it (not h-1)
	if host >= 0 {
		name = "h" + strconv.Itoa(host)
	}
	return f.Match(append(fields, name)...)
}
