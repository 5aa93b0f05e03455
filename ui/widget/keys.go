package widget

import "charm.land/bubbles/v2/key"

// KeyMap is every key the console answers to. Keys that do nothing in the current state are
// disabled, so help never lists a key that would not work.
type KeyMap struct {
	Help, Quit, Pause, NextTab, PrevTab                          key.Binding
	Tab1, Tab2, Tab3, Tab4, Tab5, Tab6, Tab7, Tab8, Tab9         key.Binding
	Back, Metric, Command, CollapseOthers                        key.Binding
	Up, Down, PageUp, PageDown, Left, Right, PanLeft, PanRight   key.Binding
	ZoomIn, ZoomOut                                              key.Binding
	Follow, Collapse, Top, Bottom, Select, Filter, Sort, Reverse key.Binding
	Slower, Faster, SeekBack, SeekFwd                            key.Binding
	PrevStep, NextStep                                           key.Binding
}

// DefaultKeyMap returns the keys, following top, htop, k9s and less.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Help:           key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:           key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Pause:          key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "pause view")),
		NextTab:        key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next view")),
		PrevTab:        key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous view")),
		Tab1:           key.NewBinding(key.WithKeys("1"), key.WithHelp("1", "overview")),
		Tab2:           key.NewBinding(key.WithKeys("2"), key.WithHelp("2", "timeline")),
		Tab3:           key.NewBinding(key.WithKeys("3"), key.WithHelp("3", "transfers")),
		Tab4:           key.NewBinding(key.WithKeys("4"), key.WithHelp("4", "barriers")),
		Tab5:           key.NewBinding(key.WithKeys("5"), key.WithHelp("5", "idle")),
		Tab6:           key.NewBinding(key.WithKeys("6"), key.WithHelp("6", "comms")),
		Tab7:           key.NewBinding(key.WithKeys("7"), key.WithHelp("7", "events")),
		Tab8:           key.NewBinding(key.WithKeys("8"), key.WithHelp("8", "cluster")),
		Tab9:           key.NewBinding(key.WithKeys("9"), key.WithHelp("9", "findings")),
		Back:           key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Metric:         key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "next metric")),
		Command:        key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "command")),
		Up:             key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:           key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:         key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "page up")),
		PageDown:       key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "page down")),
		Left:           key.NewBinding(key.WithKeys("left"), key.WithHelp("←", "cursor left")),
		Right:          key.NewBinding(key.WithKeys("right"), key.WithHelp("→", "cursor right")),
		PanLeft:        key.NewBinding(key.WithKeys("h"), key.WithHelp("h", "pan left")),
		PanRight:       key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "pan right")),
		ZoomIn:         key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "zoom in")),
		ZoomOut:        key.NewBinding(key.WithKeys("-"), key.WithHelp("-", "zoom out")),
		Follow:         key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "follow live")),
		Collapse:       key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "collapse device")),
		CollapseOthers: key.NewBinding(key.WithKeys("C"), key.WithHelp("C", "only this host (again: all)")),
		Top:            key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "start")),
		Bottom:         key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "end")),
		Select:         key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "show in timeline")),
		Filter:         key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Sort:           key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort column")),
		Reverse:        key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "reverse sort")),
		Slower:         key.NewBinding(key.WithKeys("["), key.WithHelp("[", "slower")),
		Faster:         key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "faster")),
		SeekBack:       key.NewBinding(key.WithKeys("<", ","), key.WithHelp("<", "seek back")),
		SeekFwd:        key.NewBinding(key.WithKeys(">", "."), key.WithHelp(">", "seek forward")),
		PrevStep:       key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "previous step")),
		NextStep:       key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "next step")),
	}
}
