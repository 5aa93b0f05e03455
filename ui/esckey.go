package ui

import (
	"unicode"

	tea "charm.land/bubbletea/v2"
)

// A terminal sends alt+x as ESC followed by x, the very bytes of esc typed and then x. The key
// reader tells them apart by time only: when both bytes are in one read, it reports alt+x. They
// are whenever the keys come fast, from a script (tmux send-keys Escape /) or a person while the
// machine is busy (a 4,096-GPU console folding on every core), so "esc, then /" was an alt+/
// that nothing took: both keys were lost. The console binds no alt key, so an alt key is taken as
// the two keys it also is, esc then the key; the text inputs' own alt keys (a word back, forward,
// deleted) stay theirs while one is open.

// textAltKeys are the alt keys a text input binds (bubbles' textinput.DefaultKeyMap).
var textAltKeys = map[string]bool{"alt+left": true, "alt+right": true, "alt+b": true, "alt+f": true,
	"alt+backspace": true, "alt+delete": true, "alt+d": true}

// splitAlt returns the keys an alt key stands for, esc and the key without alt; false for a key
// that is not one (no alt, or a text input's own while one is open).
func (m *Model) splitAlt(msg tea.KeyPressMsg) (tea.KeyPressMsg, bool) {
	if msg.Mod&tea.ModAlt == 0 {
		return msg, false
	}
	if textAltKeys[msg.Keystroke()] && (m.cmd.open || m.panes[m.tab].Capturing()) {
		return msg, false
	}
	k := msg
	k.Mod &^= tea.ModAlt
	k.Text = ""
	switch {
	case k.Mod&^tea.ModShift != 0 || !unicode.IsPrint(k.Code):
		// ctrl+x, a special key (an arrow): no text.
	case k.Mod&tea.ModShift != 0:
		// The reader made "G" a shifted g: its text is the capital.
		if k.ShiftedCode == 0 {
			k.ShiftedCode = unicode.ToUpper(k.Code)
		}
		k.Text = string(k.ShiftedCode)
	default:
		k.Text = string(k.Code)
	}
	return k, true
}

// keyOrAlt takes a key: an alt key as esc, then the key (splitAlt).
func (m *Model) keyOrAlt(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k, split := m.splitAlt(msg)
	if !split {
		return m.key(msg)
	}
	_, esc := m.key(tea.KeyPressMsg{Code: tea.KeyEscape})
	_, then := m.key(k)
	return m, tea.Batch(esc, then)
}
