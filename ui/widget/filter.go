package widget

import (
	"strings"

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
