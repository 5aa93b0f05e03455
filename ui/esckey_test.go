package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// esc typed and a key right after it reach the console as one alt key when the reader finds both
// bytes in one read (a busy machine, a script): it is taken as esc, then the key, where it was lost.
func TestEscThenKeyFast(t *testing.T) {
	alt := func(code rune, mod tea.KeyMod) tea.KeyPressMsg {
		return tea.KeyPressMsg{Code: code, Mod: tea.ModAlt | mod}
	}
	for _, c := range []struct {
		name  string
		setup []string          // keys before: the cluster view, a host drilled into
		key   tea.KeyPressMsg   // esc and the key, as the reader reports them together
		check func(*Model) bool // what esc then the key do
		want  string
	}{
		{"esc then / : up a level, the filter open", []string{"8", "enter", "enter"}, alt('/', 0),
			func(m *Model) bool {
				v := text(m)
				return m.panes[m.tab].Capturing() && strings.Contains(v, "› host 0") && !strings.Contains(v, "› gpu")
			}, "back at host 0 with its filter open"},
		{"esc then 5: up a level, the idle view", []string{"8", "enter", "enter"}, alt('5', 0),
			func(m *Model) bool { return m.tab == TabIdle }, "the idle view"},
		{"esc then G: the filter closed, the key taken", []string{"8", "enter", "/", "h"}, alt('g', tea.ModShift),
			func(m *Model) bool { return !m.panes[m.tab].Capturing() && m.tab == TabCluster }, "the filter closed"},
		{"alt+b in a filter: a word back, the filter stays open", []string{"8", "enter", "/", "h"}, alt('b', 0),
			func(m *Model) bool { return m.panes[m.tab].Capturing() }, "the filter open"},
		{"esc then : : the command line", []string{"8", "enter"}, alt(':', 0),
			func(m *Model) bool { return m.cmd.open }, "the command line open"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := sized(clusterSource(t, 64), 160, 45)
			press(m, c.setup...)
			m.Update(c.key)
			if !c.check(m) {
				t.Errorf("%s: want %s:\n%s", c.key.Keystroke(), c.want, text(m))
			}
		})
	}
}
