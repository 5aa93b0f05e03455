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
// an event) but the display state waited (feed.paused): it reads the window now. A few events are
// read at once, so that space shows them at once; a window's worth (at 1,024 GPUs after a long
// pause, 8 s of folding in Update, deaf to keys all that time) is read by a fold run as a command,
// as a tick's is, whose frame is installed when it comes (the header says busy meanwhile, past
// slowFold).
func (m *Model) resume() tea.Cmd {
	m.paused, m.fr.Paused, m.drawnOK = false, false, false
	m.feed.paused.Store(false)
	if m.folding {
		return nil // the fold under way is installed when it comes; the next tick's reads the rest
	}
	if n, ok := m.feed.backlog(); ok && n <= syncResume {
		m.refresh()
		return nil
	}
	m.folding, m.foldFrom = true, m.now()
	return m.feed.foldCmd()
}

// syncResume is the most events a resume reads in Update: a few milliseconds' folding.
const syncResume = 1 << 16

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
