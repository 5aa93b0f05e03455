package ui

import (
	"testing"

	tea "charm.land/bubbletea/v2"
)

// The tab line and the keys' line are drawn once and kept while what they show holds: after each
// of a sequence of keys and resizes that change the view, the keys that work and the width, the
// lines kept are the lines drawn anew.
func TestChromeLinesFollowViewKeysAndWidth(t *testing.T) {
	m := sized(scenarioSource(t, "overlap", 3, ""), 160, 45)
	steps := []struct {
		what string
		do   func()
	}{
		{"first frame", func() {}},
		{"view 2", func() { press(m, "2") }},
		{"next view", func() { press(m, "tab") }},
		{"overview", func() { press(m, "1") }},
		{"sorted", func() { press(m, "s") }},
		{"paused", func() { press(m, "space") }},
		{"narrow", func() { m.Update(tea.WindowSizeMsg{Width: 90, Height: 30}) }},
		{"help", func() { press(m, "?") }},
		{"help closed", func() { press(m, "?") }},
		{"wide", func() { m.Update(tea.WindowSizeMsg{Width: 200, Height: 60}) }},
	}
	seen := map[string]bool{}
	for _, s := range steps {
		s.do()
		_ = m.View()
		tabs, footer := m.tabs(), m.footer()
		m.tabLine, m.footerLine = lineCache{}, lineCache{}
		if want := m.tabs(); tabs != want {
			t.Errorf("%s: tab line kept %q; drawn anew %q", s.what, tabs, want)
		}
		if want := m.footer(); footer != want {
			t.Errorf("%s: keys' line kept %q; drawn anew %q", s.what, footer, want)
		}
		seen[tabs+"\n"+footer] = true
		_ = m.View() // the next step starts from lines kept
	}
	if len(seen) < 4 {
		t.Fatalf("the steps drew only %d different chrome lines: the test does not exercise the cache", len(seen))
	}
}
