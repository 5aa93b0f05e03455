package ui

import (
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/xfertop/xfertop/ui/widget"
)

// click selects a view by its tab, or hands the click to the view shown, in its own coordinates.
func (m *Model) click(msg tea.MouseClickMsg) tea.Cmd {
	if m.showHelp || msg.Button != tea.MouseLeft || m.width < MinWidth || m.height < MinHeight {
		return nil
	}
	bodyTop := lipgloss.Height(m.header()) + 1 // the header's lines, then the tabs
	if msg.Y == bodyTop-1 {
		x := 0
		for i := range m.names {
			w := lipgloss.Width(m.tabLabel(i))
			if msg.X >= x && msg.X < x+w {
				m.tab = i
				return nil
			}
			x += w
		}
		return nil
	}
	if msg.Y < bodyTop {
		return nil
	}
	msg.Y -= bodyTop
	return m.panes[m.tab].update(msg)
}

// resume shows the run again after a pause. The analysis folded on while paused (no figure misses
// an event) but the display state waited (feed.paused): it reads the window now, up to a window of
// events, which at 1,024 GPUs took 8 s in Update, deaf to keys all that time. So the fold runs as
// a command, as a tick's does, and its frame is installed when it comes (the header says busy
// meanwhile, past slowFold).
func (m *Model) resume() tea.Cmd {
	m.paused, m.fr.Paused, m.drawnOK = false, false, false
	m.feed.paused.Store(false)
	if m.folding {
		return nil // the fold under way is installed when it comes; the next tick's reads the rest
	}
	m.folding, m.foldFrom = true, m.now()
	return m.feed.foldCmd()
}

// seek asks the source to jump; its next generation of events starts the console afresh.
func (m *Model) seek(t int64) {
	gen := m.snap.Generation
	if !m.src.SeekTo(t) {
		return
	}
	m.refresh()
	// The replay takes the seek on its own goroutine: until it has, the frame is the old start's.
	m.seekPending = m.snap.Generation == gen
	if m.timeline >= 0 {
		m.panes[m.timeline].update(widget.SeekedMsg{})
	}
}
