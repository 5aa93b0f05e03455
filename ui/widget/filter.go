package widget

import (
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
