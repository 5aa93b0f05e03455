package barriers

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/analysis"
	xtimeline "github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
)

// Model is the barriers view; its list selects the barrier shown.
type Model struct {
	widget.Base
	list   widget.List
	filter widget.Filter // the barrier's ranks
}

// New returns the barriers view over fr.
func New(fr *widget.Frame) *Model {
	return &Model{Base: widget.Base{Fr: fr}, filter: widget.NewFilter("rank, e.g. rank 12")}
}

// Capturing reports whether the filter is being typed.
func (v *Model) Capturing() bool { return v.filter.Editing() }

// ShortHelp lists the view's keys.
func (v *Model) ShortHelp() []key.Binding {
	return append(v.filter.Keys(v.Fr.Keys), widget.ListKeys(v.Fr.Keys)...)
}

// FullHelp groups the view's keys.
func (v *Model) FullHelp() [][]key.Binding { return [][]key.Binding{v.ShortHelp()} }

// Selected returns the barrier shown, 0 for the newest.
func (v *Model) Selected() int { return v.list.Selected() }

// Update takes the list's keys and the wheel: they choose the barrier.
func (v *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	if cmd, ok := v.filter.Handle(msg, v.Fr.Keys); ok {
		return v, cmd
	}
	if _, click := msg.(tea.MouseClickMsg); !click {
		v.list.Handle(msg, v.Fr.Keys)
	}
	return v, nil
}

// View draws the selected barrier's ranks.
func (v *Model) View() string {
	fr, w, h := v.Fr, v.W, v.H
	st, bs := fr.Styles, fr.Res.Barriers
	var b strings.Builder
	if len(bs.Recent) == 0 {
		return st.Muted.Render(v.Fr.None("barriers"))
	}
	var lp []string
	for _, l := range bs.Stragglers[:min(len(bs.Stragglers), 4)] {
		lp = append(lp, fmt.Sprintf("rank %d (%d×, p50 %s late)", l.Rank, l.TimesLast, units.DurP(l.LatenessNs50)))
	}
	if len(lp) == 0 {
		lp = append(lp, "nobody (no rank arrived after all the others and after the median)")
	}
	b.WriteString(st.Title.Render("Most often last: ") + strings.Join(lp, ", ") + "\n")
	// The selected barrier (newest first) with each rank's wait.
	v.list.Window(len(bs.Recent), 1, 1)
	sel := v.list.Selected()
	br := bs.Recent[len(bs.Recent)-1-sel]
	late := "no straggler"
	if br.Straggler != xtimeline.NoDevice {
		late = fmt.Sprintf("straggler rank %d, %s after the median", br.Straggler, units.Dur(br.LatenessNs))
	}
	fmt.Fprintf(&b, "%s %d of %d (newest first, j/k): op %d, released at %s, %s\n",
		st.Title.Render("Barrier"), sel+1, len(bs.Recent), br.Op, units.Dur(br.Release), late)
	var maxWait int64 = 1
	for _, a := range br.Arrivals {
		maxWait = max(maxWait, a.WaitNs)
	}
	barW := max(w-40, 10)
	arrivals := br.Arrivals
	if v.filter.Value() != "" {
		arrivals = slices.DeleteFunc(slices.Clone(arrivals), func(a analysis.Arrival) bool { return !v.filter.Match(fmt.Sprintf("rank %d", a.Rank)) })
	}
	rows := h - 4
	if v.filter.Shown() {
		rows-- // the filter's line
	}
	for i, a := range arrivals {
		if i >= rows {
			fmt.Fprintf(&b, "… %d more ranks\n", len(arrivals)-i)
			break
		}
		n := int(float64(a.WaitNs) / float64(maxWait) * float64(barW))
		bar := st.Activity[theme.PeerWait].Render(strings.Repeat("|", n))
		mark := ""
		if a.Rank == br.Straggler {
			mark = st.Alert.Render(" ◀ last (straggler)")
		}
		fmt.Fprintf(&b, "rank %-4d waited %10s %s%s\n", a.Rank, units.Dur(a.WaitNs), bar, mark)
	}
	if v.filter.Shown() {
		b.WriteString(v.filter.View() + st.Muted.Render(fmt.Sprintf("  %d of %s", len(arrivals), units.Counted(len(br.Arrivals), "rank"))) + "\n")
	}
	return b.String()
}
