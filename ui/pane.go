package ui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/ui/widget"
)

// JumpToMsg asks the console to show a stream of a device around a time in the timeline.
type JumpToMsg = widget.JumpToMsg

// pane is what the root needs of a view: widget.Widget without the concrete type.
type pane interface {
	update(msg tea.Msg) tea.Cmd
	View() string
	SetSize(w, h int)
	ShortHelp() []key.Binding
	FullHelp() [][]key.Binding
	Capturing() bool
}

// slot holds a view of concrete type T and assigns back what its Update returns, as a parent of
// bubbles' components does; so views keep concrete types and the root a slice.
type slot[T widget.Widget[T]] struct{ w T }

func (s *slot[T]) update(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	s.w, cmd = s.w.Update(msg)
	return cmd
}

func (s *slot[T]) View() string              { return s.w.View() }
func (s *slot[T]) SetSize(w, h int)          { s.w.SetSize(w, h) }
func (s *slot[T]) ShortHelp() []key.Binding  { return s.w.ShortHelp() }
func (s *slot[T]) FullHelp() [][]key.Binding { return s.w.FullHelp() }
func (s *slot[T]) Capturing() bool           { return s.w.Capturing() }

// paneAt returns view i as its concrete type (for tests and the compare console).
func paneAt[T widget.Widget[T]](m *Model, i int) T { return m.panes[i].(*slot[T]).w }
