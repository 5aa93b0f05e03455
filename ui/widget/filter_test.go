package widget

import (
	"testing"

	tea "charm.land/bubbletea/v2"
)

func key1(s string) tea.KeyPressMsg {
	switch s {
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	}
	return tea.KeyPressMsg{Code: []rune(s)[0], Text: s}
}

// / opens the filter, typing edits it, enter keeps it, and esc on a kept filter clears it; other
// keys are the list's.
func TestFilterHandle(t *testing.T) {
	k := DefaultKeyMap()
	f := NewFilter("")
	if _, ok := f.Handle(key1("j"), k); ok {
		t.Fatal("a closed, empty filter took j")
	}
	if _, ok := f.Handle(key1("esc"), k); ok {
		t.Fatal("an empty filter took esc (it is the view's back)")
	}
	for _, s := range []string{"/", "H", "7", "enter"} {
		if _, ok := f.Handle(key1(s), k); !ok {
			t.Fatalf("the filter did not take %q", s)
		}
	}
	if f.Editing() || f.Value() != "h7" {
		t.Fatalf("after /H7 enter: editing %v, value %q; want closed, h7", f.Editing(), f.Value())
	}
	for _, tc := range []struct {
		fields []string
		want   bool
	}{{[]string{"host 3", "▸h76"}, true}, {[]string{"gpu 7"}, false}, {nil, false}} {
		if got := f.Match(tc.fields...); got != tc.want {
			t.Errorf("Match(%q) = %v; want %v", tc.fields, got, tc.want)
		}
	}
	if len(f.Keys(k)) != 2 {
		t.Error("a shown filter's keys do not offer esc")
	}
	if _, ok := f.Handle(key1("esc"), k); !ok || f.Shown() || !f.Match("anything") {
		t.Errorf("esc on a kept filter: shown %v; want it cleared", f.Shown())
	}
}

// A filter that is a host's name matches that host alone; anything else matches by containment,
// the host's name among the fields (an unknown host's is h?: before, h-1).
func TestFilterMatchHost(t *testing.T) {
	for _, tc := range []struct {
		filter string
		host   int
		want   bool
	}{
		{"h1", 1, true}, {"h1", 10, false}, {"h1", 127, false}, {"H12", 12, true}, {"h12", 1, false},
		{"h", 5, true}, {"h01", 1, false}, {"h01", 10, false}, {"peer", 3, true}, {"idle", 3, false}, {"", 9, true},
		// An unknown host is h?, as the views show it, not h-1.
		{"h?", -1, true}, {"h?", 0, false}, {"?", -1, true}, {"h-1", -1, false}, {"-1", -1, false}, {"h-", -1, false},
	} {
		f := NewFilter("")
		f.input.SetValue(tc.filter)
		if got := f.MatchHost(tc.host, "peer_wait"); got != tc.want {
			t.Errorf("filter %q on host %d: %v; want %v", tc.filter, tc.host, got, tc.want)
		}
	}
}
