// Package findings is the console's findings view: the diagnosis's verdicts, worst first, each
// with its culprit, kind, evidence and when it began; enter shows the culprit in the timeline.
package findings

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
)

// Model is the findings view.
type Model struct {
	widget.NoCapture
	widget.Base
	list widget.List
}

// New returns the findings view over fr.
func New(fr *widget.Frame) *Model { return &Model{Base: widget.Base{Fr: fr}} }

// ShortHelp lists the view's keys.
func (v *Model) ShortHelp() []key.Binding {
	return append([]key.Binding{v.Fr.Keys.Select}, widget.ListKeys(v.Fr.Keys)...)
}

// FullHelp groups the view's keys.
func (v *Model) FullHelp() [][]key.Binding { return [][]key.Binding{v.ShortHelp()} }

// Jump is where the timeline goes for a finding: the culprit's device from the onset to the
// finding (a link placed only by its host: the host's first GPU); ok is false when the finding
// names no device.
func Jump(f *diagnosis.Finding, gpusPerHost int) (widget.JumpToMsg, bool) {
	dev := f.Rank
	if dev < 0 && f.Host >= 0 {
		dev = f.Host * int32(max(gpusPerHost, 1))
	}
	if dev < 0 {
		return widget.JumpToMsg{}, false
	}
	return widget.JumpToMsg{Device: dev, Time: f.Onset, Dur: max(f.At-f.Onset, 1_000_000)}, true
}

// Update takes the list's keys; enter asks the timeline to show the culprit.
func (v *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	k := v.Fr.Keys
	if v.list.Handle(msg, k) {
		return v, nil
	}
	if km, ok := msg.(tea.KeyPressMsg); ok && key.Matches(km, k.Select) {
		fs := v.Fr.Res.Findings
		if sel := v.list.Selected(); sel < len(fs) {
			if j, ok := Jump(&fs[sel], v.Fr.Meta.HostGPUs()); ok {
				return v, widget.JumpTo(j)
			}
		}
	}
	return v, nil
}

// View lists the findings, worst first, with the selected one's evidence in full.
func (v *Model) View() string {
	fr := v.Fr
	st := fr.Styles
	fs := fr.Res.Findings
	if len(fs) == 0 {
		return st.Muted.Render("No findings: no rank, GPU, host or link stands out from its peers at the same step, and nothing hangs.")
	}
	gph := fr.Meta.HostGPUs()
	var b strings.Builder
	b.WriteString(st.Title.Render(fmt.Sprintf("Findings (%d, worst first; enter: show the culprit in the timeline)", len(fs))) + "\n")
	head := fmt.Sprintf("%-13s %-34s %10s %10s %6s  %s", "kind", "culprit", "first seen", "found", "conf", "evidence")
	b.WriteString(st.Muted.Render(head) + "\n")
	h := v.H - 5
	from, to := v.list.Window(len(fs), max(h, 1), 2)
	for i := from; i < to; i++ {
		f := &fs[i]
		line := fmt.Sprintf("%-13s %-34s %10s %10s %5.0f%%  %s", f.Kind, f.Culprit(gph), units.Dur(f.Onset), units.Dur(f.At), 100*f.Confidence, f.Evidence)
		line = ansi.Truncate(line, v.W, "…")
		if i == v.list.Selected() {
			line = st.Selected.Render(line)
		} else if f.Kind >= diagnosis.Hang {
			line = st.Alert.Render(line)
		}
		b.WriteString(line + "\n")
	}
	if sel := v.list.Selected(); sel < len(fs) {
		b.WriteString("\n" + ansi.Wordwrap(fs[sel].String(gph), v.W, " ") + "\n")
	}
	return b.String()
}
