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
	"github.com/xfertop/xfertop/ui/theme"
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

// row is one line of the table: an entry of the communicator cache, or a communicator a source
// names without a cache (a Flight Recorder process group, an NCCL RAS communicator).
type row struct {
	cache *analysis.Comm
	named *analysis.Communicator
}

// rows lists the cache's entries (cached before evicted, newest first), then the named
// communicators, those with ranks in trouble first, each by id.
func rows(cc analysis.CommCache, named []analysis.Communicator) []row {
	out := make([]row, 0, len(cc.Comms)+len(named))
	for _, c := range order(cc.Comms) {
		out = append(out, row{cache: &c})
	}
	ns := slices.Clone(named)
	slices.SortStableFunc(ns, func(a, b analysis.Communicator) int {
		if ta, tb := trouble(a) != "", trouble(b) != ""; ta != tb {
			if ta {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.ID, b.ID)
	})
	for i := range ns {
		out = append(out, row{named: &ns[i]})
	}
	return out
}

// trouble says which ranks of a named communicator its source found in trouble; "" for none.
func trouble(c analysis.Communicator) string {
	var parts []string
	for _, t := range []struct {
		what  string
		ranks []int32
	}{{"dead", c.Dead}, {"missing", c.Missing}, {"error", c.Failing}, {"behind", c.Behind}} {
		if len(t.ranks) > 0 {
			parts = append(parts, t.what+" "+deviceSet(t.ranks))
		}
	}
	if c.Incomplete {
		parts = append(parts, "incomplete (some ranks never joined)")
	}
	if c.Unheard > 0 {
		parts = append(parts, units.Counted(c.Unheard, "rank")+" unheard from")
	}
	return strings.Join(parts, " · ")
}

// name is a named communicator's name and size, as the state column shows it.
func name(c analysis.Communicator) string {
	n := c.Name
	if n == "" {
		n = fmt.Sprintf("communicator %d", c.ID)
	}
	size := units.Unknown + " ranks"
	if c.Ranks > 0 {
		size = units.Counted(c.Ranks, "rank")
	}
	return n + " · " + size
}

// fields are a row's devices, id and state, as the filter matches them.
func (r row) fields() []string {
	if r.cache != nil {
		return []string{deviceSet(r.cache.Devices), fmt.Sprint(r.cache.ID), state(*r.cache)}
	}
	return []string{deviceSet(r.named.Members), fmt.Sprint(r.named.ID), name(*r.named) + " " + trouble(*r.named)}
}

// line draws a row, its state coloured.
func (r row) line(st *theme.Styles, selected bool) string {
	var devs, hits, created, cost, state string
	if c := r.cache; c != nil {
		devs, hits, created, cost = deviceSet(c.Devices), fmt.Sprint(c.Hits), units.Dur(c.CreatedNs), units.Dur(c.InitNs)
		state = st.Good.Render("cached")
		switch {
		case c.Faulted:
			state = st.Alert.Render("evicted (error)")
		case c.Evicted:
			state = st.Muted.Render("evicted")
		}
	} else {
		// Named by a source that records no cache: its hits, creation and cost are unknown.
		c := r.named
		devs, hits, created, cost = deviceSet(c.Members), units.Unknown, units.Unknown, units.Unknown
		if devs == "" {
			devs = units.Unknown
		}
		state = name(*c)
		if t := trouble(*c); t != "" {
			state += " · " + st.Alert.Render(t)
		}
	}
	devs = ansi.Truncate(devs, 28, "…")
	var n uint32
	if r.cache != nil {
		n = r.cache.ID
	} else {
		n = r.named.ID
	}
	// Padded by width, not bytes: "—" is one column of three bytes.
	line := fmt.Sprintf("%6d  %s%s%s%s  ", n, padRight(devs, 28), padLeft(hits, 8), padLeft(created, 12), padLeft(cost, 12))
	if selected {
		line = st.Selected.Render(line)
	}
	return line + state
}

// View draws the cache's totals and the entries that fit, then the communicators the source
// names, then the findings that name a communicator.
func (v *Model) View() string {
	st, cc := v.Fr.Styles, v.Fr.Res.CommCache
	named := v.Fr.Res.Communicators
	var b strings.Builder
	rate := units.HitRate(cc.Hits, cc.Misses)
	switch {
	case cc.Known:
		fmt.Fprintf(&b, "%s %s seen · %s · %s · %s · hit rate %s of lookups · %s spent creating\n",
			st.Title.Render("Communicator cache"), units.Counted(len(cc.Comms), "entry"), units.Counted(cc.Hits, "hit"), units.Counted(cc.Misses, "miss"),
			units.Counted(cc.Evictions, "eviction"), rate, units.Dur(cc.InitNsTotal))
	case len(named) > 0:
		fmt.Fprintf(&b, "%s %s (the source does not record the cache) · %s named by the source\n",
			st.Title.Render("Communicator cache"), units.Unknown, units.Counted(len(named), "communicator"))
	default:
		fmt.Fprintf(&b, "%s %s (the source does not record communicators)\n", st.Title.Render("Communicator cache"), units.Unknown)
	}
	if cc.Known && len(named) > 0 {
		fmt.Fprintf(&b, "%s named by the source besides the cache\n", units.Counted(len(named), "communicator"))
	}
	b.WriteString(st.Title.Render(fmt.Sprintf("%6s  %-28s%8s%12s%12s  %s", "id", "devices", "hits", "created", "cost", "state")) + "\n")
	all := rows(cc, named)
	shownRows := all
	if v.filter.Value() != "" {
		shownRows = slices.DeleteFunc(slices.Clone(all), func(r row) bool { return !v.filter.Match(r.fields()...) })
	}
	cf := commFindings(v.Fr.Res.Findings)
	h := v.H - 3
	if cc.Known && len(named) > 0 {
		h--
	}
	if v.filter.Shown() {
		h-- // the filter's line
	}
	shown := min(len(cf), maxCommFindings, max(h/2, 0))
	if shown > 0 {
		h -= shown + 1
	}
	from, to := v.list.Window(len(shownRows), h, 2)
	for i := from; i < to; i++ {
		b.WriteString(shownRows[i].line(&st, i == v.list.Selected()) + "\n")
	}
	if to-from < len(shownRows) {
		b.WriteString(st.Muted.Render(fmt.Sprintf("%d–%d of %d (j/k to scroll)", from+1, to, len(shownRows))) + "\n")
	}
	if shown > 0 {
		b.WriteString(st.Title.Render(fmt.Sprintf("Communicators in trouble (%s; 9: all findings)", units.Counted(len(cf), "finding"))) + "\n")
		for _, f := range cf[:shown] {
			line := fmt.Sprintf("%6d  %-13s %s — %s", f.Comm, f.Kind, f.Culprit(), f.Evidence)
			b.WriteString(st.Alert.Render(ansi.Truncate(line, max(v.W, 1), "…")) + "\n")
		}
	}
	if v.filter.Shown() {
		b.WriteString(v.filter.View() + st.Muted.Render(fmt.Sprintf("  %d of %s", len(shownRows), units.Counted(len(all), "entry"))))
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

// padLeft right-aligns s in w columns; padRight left-aligns it.
func padLeft(s string, w int) string  { return strings.Repeat(" ", max(w-ansi.StringWidth(s), 0)) + s }
func padRight(s string, w int) string { return s + strings.Repeat(" ", max(w-ansi.StringWidth(s), 0)) }

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
