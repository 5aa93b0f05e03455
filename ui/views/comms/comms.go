package comms

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
)

// Model is the comms view.
type Model struct {
	widget.Base
	list   widget.List
	filter widget.Filter // entries by device set, id or state
}

// New returns the comms view over fr.
func New(fr *widget.Frame) *Model {
	return &Model{Base: widget.Base{Fr: fr}, filter: widget.NewFilter("devices (e.g. 8-15), id or state")}
}

// Capturing reports whether the filter is being typed.
func (v *Model) Capturing() bool { return v.filter.Editing() }

// Selected returns the selected row.
func (v *Model) Selected() int { return v.list.Selected() }

// ShortHelp lists the view's keys.
func (v *Model) ShortHelp() []key.Binding {
	return append(v.filter.Keys(v.Fr.Keys), widget.ListKeys(v.Fr.Keys)...)
}

// FullHelp groups the view's keys.
func (v *Model) FullHelp() [][]key.Binding { return [][]key.Binding{v.ShortHelp()} }

// Update takes the list's keys and the mouse.
func (v *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	if cmd, ok := v.filter.Handle(msg, v.Fr.Keys); ok {
		return v, cmd
	}
	v.list.Handle(msg, v.Fr.Keys)
	return v, nil
}

// state names a communicator's state, as the view shows it.
func state(c analysis.Comm) string {
	switch {
	case c.Faulted:
		return "evicted (error)"
	case c.Evicted:
		return "evicted"
	}
	return "cached"
}

// order sorts communicators for the view: cached before evicted, newest first.
func order(cs []analysis.Comm) []analysis.Comm {
	out := slices.Clone(cs)
	slices.SortStableFunc(out, func(a, b analysis.Comm) int {
		if a.Evicted != b.Evicted {
			if a.Evicted {
				return 1
			}
			return -1
		}
		return cmp.Compare(b.CreatedNs, a.CreatedNs)
	})
	return out
}

// View draws the cache's totals and the entries that fit.
func (v *Model) View() string {
	st, cc := v.Fr.Styles, v.Fr.Res.CommCache
	var b strings.Builder
	rate := units.Unknown
	if lookups := cc.Hits + cc.Misses; lookups > 0 {
		rate = fmt.Sprintf("%.1f%%", 100*float64(cc.Hits)/float64(lookups))
	}
	if cc.Known {
		fmt.Fprintf(&b, "%s %d entries seen · %d hits · %d misses · %d evictions · hit rate %s of lookups · %s spent creating\n",
			st.Title.Render("Communicator cache"), len(cc.Comms), cc.Hits, cc.Misses, cc.Evictions, rate, units.Dur(cc.InitNsTotal))
	} else {
		fmt.Fprintf(&b, "%s %s (the source does not record communicators)\n", st.Title.Render("Communicator cache"), units.Unknown)
	}
	b.WriteString(st.Title.Render(fmt.Sprintf("%6s  %-28s%8s%12s%12s  %s", "id", "devices", "hits", "created", "cost", "state")) + "\n")
	comms := order(cc.Comms)
	if v.filter.Value() != "" {
		comms = slices.DeleteFunc(comms, func(c analysis.Comm) bool {
			return !v.filter.Match(deviceSet(c.Devices), fmt.Sprint(c.ID), state(c))
		})
	}
	cf := commFindings(v.Fr.Res.Findings)
	h := v.H - 3
	if v.filter.Shown() {
		h-- // the filter's line
	}
	shown := min(len(cf), maxCommFindings, max(h/2, 0))
	if shown > 0 {
		h -= shown + 1
	}
	from, to := v.list.Window(len(comms), h, 2)
	for i := from; i < to; i++ {
		c := comms[i]
		state := st.Good.Render("cached")
		switch {
		case c.Faulted:
			state = st.Alert.Render("evicted (error)")
		case c.Evicted:
			state = st.Muted.Render("evicted")
		}
		devs := deviceSet(c.Devices)
		if len(devs) > 28 {
			devs = devs[:27] + "…"
		}
		line := fmt.Sprintf("%6d  %-28s%8d%12s%12s  ", c.ID, devs, c.Hits, units.Dur(c.CreatedNs), units.Dur(c.InitNs))
		if i == v.list.Selected() {
			line = st.Selected.Render(line)
		}
		b.WriteString(line + state + "\n")
	}
	if to-from < len(comms) {
		b.WriteString(st.Muted.Render(fmt.Sprintf("%d–%d of %d (j/k to scroll)", from+1, to, len(comms))) + "\n")
	}
	if shown > 0 {
		b.WriteString(st.Title.Render(fmt.Sprintf("Communicators in trouble (%d findings; 9: all findings)", len(cf))) + "\n")
		gph := v.Fr.Meta.HostGPUs()
		for _, f := range cf[:shown] {
			line := fmt.Sprintf("%6d  %-13s %s — %s", f.Comm, f.Kind, f.Culprit(gph), f.Evidence)
			b.WriteString(st.Alert.Render(ansi.Truncate(line, max(v.W, 1), "…")) + "\n")
		}
	}
	if v.filter.Shown() {
		b.WriteString(v.filter.View() + st.Muted.Render(fmt.Sprintf("  %d of %d entries", len(comms), len(cc.Comms))))
	}
	return b.String()
}

// maxCommFindings bounds the findings the view lists under the cache.
const maxCommFindings = 6

// commFindings are the diagnosis's findings that name a communicator (a hang, a mismatch, a
// rank NCCL RAS found dead, missing or failing in it), worst first as the diagnosis orders them.
func commFindings(fs []diagnosis.Finding) []diagnosis.Finding {
	var out []diagnosis.Finding
	for _, f := range fs {
		if f.Comm != 0 && f.Kind >= diagnosis.Hang {
			out = append(out, f)
		}
	}
	return out
}

// deviceSet writes device ids compactly: 0-7,12.
func deviceSet(ds []int32) string {
	var parts []string
	for i := 0; i < len(ds); {
		j := i
		for j+1 < len(ds) && ds[j+1] == ds[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ds[i], ds[j]))
		} else {
			parts = append(parts, fmt.Sprint(ds[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
