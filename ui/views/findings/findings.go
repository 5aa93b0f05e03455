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
	"github.com/xfertop/xfertop/analysis/hostmap"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
)

// Model is the findings view.
type Model struct {
	widget.Base
	list   widget.List
	filter widget.Filter // by kind, culprit (rank 700, host 87) or evidence
}

// New returns the findings view over fr.
func New(fr *widget.Frame) *Model {
	return &Model{Base: widget.Base{Fr: fr}, filter: widget.NewFilter("kind, rank, host or evidence, e.g. 700")}
}

// Capturing reports whether the filter is being typed.
func (v *Model) Capturing() bool { return v.filter.Editing() }

// ShortHelp lists the view's keys.
func (v *Model) ShortHelp() []key.Binding {
	keys := append([]key.Binding{v.Fr.Keys.Select}, v.filter.Keys(v.Fr.Keys)...)
	return append(keys, widget.ListKeys(v.Fr.Keys)...)
}

// shown returns the findings that pass the filter (indices into Res.Findings), worst first.
func (v *Model) shown() []int {
	fs := v.Fr.Res.Findings
	out := make([]int, 0, len(fs))
	for i := range fs {
		f := &fs[i]
		if v.filter.Match(f.Kind.String(), f.Culprit(), f.Evidence) {
			out = append(out, i)
		}
	}
	return out
}

// FullHelp groups the view's keys.
func (v *Model) FullHelp() [][]key.Binding { return [][]key.Binding{v.ShortHelp()} }

// Jump is where the timeline goes for a finding: the culprit's device from the onset to the
// finding (a link placed only by its host: the host's first GPU, as the analysis's host map,
// hosts, places them); ok is false when the finding names no device.
func Jump(f *diagnosis.Finding, hosts *hostmap.Map) (widget.JumpToMsg, bool) {
	dev := f.Rank
	if dev < 0 && f.Host >= 0 {
		if d, ok := hosts.First(f.Host); ok {
			dev = d
		}
	}
	if dev < 0 {
		return widget.JumpToMsg{}, false
	}
	return widget.JumpToMsg{Device: dev, Time: f.Onset, Dur: max(f.At-f.Onset, 1_000_000)}, true
}

// Update takes the list's keys; enter asks the timeline to show the culprit.
func (v *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	k := v.Fr.Keys
	if cmd, ok := v.filter.Handle(msg, k); ok {
		return v, cmd
	}
	if v.list.Handle(msg, k) {
		return v, nil
	}
	if km, ok := msg.(tea.KeyPressMsg); ok && key.Matches(km, k.Select) {
		fs, shown := v.Fr.Res.Findings, v.shown()
		if sel := v.list.Selected(); sel < len(shown) {
			if j, ok := Jump(&fs[shown[sel]], v.Fr.Res.Hosts); ok {
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
	shown := v.shown()
	var b strings.Builder
	b.WriteString(st.Title.Render(fmt.Sprintf("Findings (%d, worst first; enter: show the culprit in the timeline)", len(fs))) + "\n")
	head := fmt.Sprintf("%-13s %-*s %10s %10s %6s  %s", "kind", colCulprit, "culprit", "first seen", "found", "conf", "evidence")
	b.WriteString(st.Muted.Render(head) + "\n")
	h := v.H - 5
	if v.filter.Shown() {
		h-- // the filter's line
	}
	from, to := v.list.Window(len(shown), max(h, 1), 2)
	for i := from; i < to; i++ {
		f := &fs[shown[i]]
		line := row(f)
		line = ansi.Truncate(line, v.W, "…")
		if i == v.list.Selected() {
			line = st.Selected.Render(line)
		} else if f.Kind >= diagnosis.Hang {
			line = st.Alert.Render(line)
		}
		b.WriteString(line + "\n")
	}
	if sel := v.list.Selected(); sel < len(shown) {
		b.WriteString("\n" + ansi.Wordwrap(fs[shown[sel]].String(), v.W, " ") + "\n")
		if next := fs[shown[sel]].NextStep(); next != "" {
			b.WriteString(st.Muted.Render(ansi.Wordwrap(NextPrefix+next, v.W, " ")) + "\n")
		}
		if w := trimmedNote(&fs[shown[sel]], fr); w != "" {
			b.WriteString(st.Warn.Render(ansi.Wordwrap(w, v.W, " ")) + "\n")
		}
	}
	if v.filter.Shown() {
		b.WriteString(v.filter.View() + st.Muted.Render(fmt.Sprintf("  %d of %s", len(shown), units.Counted(len(fs), "finding"))) + "\n")
	}
	return b.String()
}

// NextPrefix begins the selected finding's next step (diagnosis.Finding.NextStep), as the
// report's "next:" line does.
const NextPrefix = "next: "

// colCulprit is the culprit column's width: a longer culprit (8 ranks stuck inside, their range and
// host) is cut to it with "…", so that the columns after it stay under their headings; the whole
// culprit is in the selected finding's text below the table.
const colCulprit = 34

// row is a finding's line of the table.
func row(f *diagnosis.Finding) string {
	culprit := ansi.Truncate(f.Culprit(), colCulprit, "…")
	return fmt.Sprintf("%-13s %s %10s %10s %5.0f%%  %s", f.Kind, culprit+strings.Repeat(" ", colCulprit-ansi.StringWidth(culprit)),
		units.Dur(f.Onset), units.Dur(f.At), 100*f.Confidence, f.Evidence)
}

// trimmedNote says, before enter is pressed, when the events of a finding's onset have been
// trimmed from the console's memory (--window): the timeline would show its culprit's rows empty
// there, and how to see them: in a replay, by seeking back to the onset (it is already a replay
// of a recording: ← here, since g moves in the list), live by a larger --window or the
// recording. "" when they are still held.
//
// A replay sought (or started) after the onset holds nothing before where it went: the note says
// that, and to seek back.
func trimmedNote(f *diagnosis.Finding, fr *widget.Frame) string {
	held, trimmed, ok := widget.HeldFrom(fr.Snap)
	if !ok || f.Onset >= held {
		return ""
	}
	if !trimmed {
		return fmt.Sprintf("its evidence from %s is before the events held (the replay went to %s, and holds what came after): enter shows the culprit's rows empty there; seek back to it (←) to see it",
			units.Dur(f.Onset), units.Dur(held))
	}
	how := "a larger --window, or record and replay, keeps it"
	switch {
	case fr.Replay:
		how = "seek back to it (←) to see it, or replay with a larger --window"
	case fr.Recording != "":
		how = fmt.Sprintf("a larger --window keeps it, and so does replaying %s", fr.Recording)
	}
	return fmt.Sprintf("its evidence from %s was trimmed from memory (events held from %s on): enter shows the culprit's rows empty there; %s",
		units.Dur(f.Onset), units.Dur(held), how)
}
