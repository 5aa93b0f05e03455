package transfers

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
)

// Cols are the table's columns, in the order s cycles through them.
var Cols = []string{"kind", "size", "ranks", "count", "payload", "p50", "p99", "GB/s", "busbw", "algo_proto"}

// Model is the transfers view.
type Model struct {
	widget.Base
	list    widget.List
	sortCol int
	reverse bool
	filter  widget.Filter
}

// New returns the transfers view over fr, sorted by bytes, most first.
func New(fr *widget.Frame) *Model {
	return &Model{Base: widget.Base{Fr: fr}, sortCol: 4, reverse: true, filter: widget.NewFilter("kind, e.g. send or all_reduce")}
}

// SortCol returns the column sorted by.
func (v *Model) SortCol() int { return v.sortCol }

// Selected returns the selected row.
func (v *Model) Selected() int { return v.list.Selected() }

// Capturing reports whether the filter is being typed.
func (v *Model) Capturing() bool { return v.filter.Editing() }

// ShortHelp lists the view's keys.
func (v *Model) ShortHelp() []key.Binding {
	k := v.Fr.Keys
	return append([]key.Binding{k.Sort, k.Reverse, k.Filter}, widget.ListKeys(k)...)
}

// FullHelp groups the view's keys.
func (v *Model) FullHelp() [][]key.Binding { return [][]key.Binding{v.ShortHelp()} }

// Update takes keys (the filter's while it is open) and the mouse.
func (v *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	k := v.Fr.Keys
	if km, ok := msg.(tea.KeyPressMsg); ok && v.filter.Editing() {
		return v, v.filter.Key(km)
	}
	switch {
	case v.list.Handle(msg, k):
	default:
		km, ok := msg.(tea.KeyPressMsg)
		switch {
		case !ok:
		case key.Matches(km, k.Sort):
			v.sortCol = (v.sortCol + 1) % len(Cols)
		case key.Matches(km, k.Reverse):
			v.reverse = !v.reverse
		case key.Matches(km, k.Filter):
			return v, v.filter.Open()
		}
	}
	return v, nil
}

// row is a table row: a transfer kind or a collective at a size class.
type row struct {
	kind         string
	size         int64
	ranks        int
	count, bytes int64
	p50, p99     *int64
	rate, bus    *float64
	lo, hi       *float64 // rate's bounds when the timestamps' resolution leaves it uncertain (rate nil)
	algoProto    string   // collectives: NCCL's algorithm and protocol ("Ring_LL128"), "" when not known
	coll         bool     // a collective: its ranks are 0 when the source did not record them (size and bytes of any row: 0 when unknown)
	seen         *[2]int  // a partial collective row's fewest and most ranks seen (analysis.Collectives.Partial): its figures are theirs, bounds
	// emulated: the row stood in for the topology's (--fit on shared GPUs: analysis.Stats.Emulated,
	// analysis.Collective.Emulated), labelled so in the algo_proto column, as the text report does.
	emulated bool
}

// rows lists the analysis's transfer and collective rows, filtered; once the source has ended
// (ended), also the partial rows of the collectives some rank never reported (before, an open
// instance may yet complete).
func rows(res *analysis.Result, f string, ended bool) []row {
	var out []row
	for _, r := range res.Transfers.BySize {
		out = append(out, row{kind: r.Kind, size: r.SizeClass, count: r.Count, bytes: r.Bytes, p50: r.P50Ns, p99: r.P99Ns, rate: r.GBps,
			lo: r.GBpsMin, hi: r.GBpsMax, emulated: r.Emulated > 0})
	}
	for _, c := range res.Collectives.Rows {
		out = append(out, row{kind: c.Op, size: c.SizeClass, ranks: c.Ranks, count: c.Count, bytes: c.Bytes * c.Count,
			p50: c.P50Ns, p99: c.P99Ns, rate: c.AlgBW, bus: c.BusBW, algoProto: c.AlgoProto, coll: true, emulated: c.Emulated})
	}
	for _, c := range res.Collectives.Partial {
		if ended {
			out = append(out, row{kind: c.Op, size: c.SizeClass, ranks: c.Ranks, count: c.Count, bytes: c.Bytes * c.Count,
				p50: c.P50Ns, p99: c.P99Ns, rate: c.AlgBW, bus: c.BusBW, algoProto: c.AlgoProto, coll: true, seen: c.RanksSeen})
		}
	}
	if f != "" {
		out = slices.DeleteFunc(out, func(t row) bool { return !strings.Contains(strings.ToLower(t.kind), f) })
	}
	return out
}

func orZero[T int64 | float64](p *T) T {
	if p == nil {
		return -1 // unknown sorts below every known value
	}
	return *p
}

func gbpsCell(p *float64) string {
	if p == nil {
		return units.Unknown
	}
	if *p < 1 { // three significant digits, not "0.0" for a 4 KiB op's 0.00412 GB/s
		return units.GBpsFigure(*p)
	}
	return fmt.Sprintf("%.1f", *p)
}

// rateCell is a row's GB/s: its figure, or the bounds the text report gives it when the
// timestamps' resolution leaves it uncertain.
func rateCell(t row) string {
	if t.rate == nil && t.lo != nil {
		return units.GBpsBounds(t.lo, t.hi)
	}
	return gbpsCell(t.rate)
}

// rateKey sorts a row by its rate, or by its lower bound when only bounds are known.
func rateKey(t row) float64 {
	if t.rate == nil && t.lo != nil {
		return *t.lo
	}
	return orZero(t.rate)
}

func (v *Model) sorted() []row {
	rs := rows(v.Fr.Res, v.filter.Value(), !v.Fr.Live)
	keyOf := func(t row) []any {
		return []any{t.kind, t.size, int64(t.ranks), t.count, t.bytes, orZero(t.p50), orZero(t.p99), rateKey(t), orZero(t.bus), t.algoProto}
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := keyOf(rs[i])[v.sortCol], keyOf(rs[j])[v.sortCol]
		var c int
		switch x := a.(type) {
		case string:
			c = cmp.Compare(x, b.(string))
		case int64:
			c = cmp.Compare(x, b.(int64))
		case float64:
			c = cmp.Compare(x, b.(float64))
		}
		if c == 0 {
			c = cmp.Or(cmp.Compare(rs[i].kind, rs[j].kind), cmp.Compare(rs[i].size, rs[j].size), cmp.Compare(rs[i].algoProto, rs[j].algoProto))
		}
		if v.reverse {
			return c > 0
		}
		return c < 0
	})
	return rs
}

// importance ranks the columns by what a reader needs first, most first: when the window is too
// narrow the least important give way, whole, rather than every column being cut. The size class
// tells a row from its neighbours (a sweep has one row per size) and algo_proto two rows at one size.
var importance = []int{0, 1, 7, 8, 4, 9, 5, 3, 6, 2} // kind, size, GB/s, busbw, bytes, algo_proto, p50, count, p99, ranks

// gap is the space before every column but the first.
const gap = 2

// cells returns the text of row t's cells, in Cols order.
func cells(t row) []string {
	ranks, bus, size, bytes := "", "", "≤"+units.Bytes(t.size), units.Bytes(t.bytes)
	if t.coll {
		ranks, bus = units.Unknown, gbpsCell(t.bus)
		if t.ranks > 0 {
			ranks = fmt.Sprint(t.ranks)
		}
	}
	p50, p99, rate := units.DurP(t.p50), units.DurP(t.p99), rateCell(t)
	if s := t.seen; s != nil { // ranks seen of those expected: the figures are theirs, bounds of every rank's
		seen := fmt.Sprint(s[0])
		if s[1] != s[0] {
			seen = fmt.Sprintf("%d–%d", s[0], s[1])
		}
		ranks = seen + "/" + ranks
		p50, p99, rate, bus = units.Bound("≥", p50), units.Bound("≥", p99), units.Bound("≤", rate), units.Bound("≤", bus)
	}
	if t.size == 0 { // not recorded, or out of range: a copy or collective of unknown size
		size, bytes = units.Unknown, units.Unknown
	}
	ap := t.algoProto
	if t.emulated {
		ap = "emulated"
		if t.rate != nil { // some of the row's transfers were real: the rate is theirs
			ap = "part emulated"
		}
	}
	return []string{t.kind, size, ranks, fmt.Sprint(t.count), bytes, p50, p99, rate, bus, ap}
}

// layout chooses the columns shown and their widths for a window w cells wide: each as wide as
// its widest cell or heading, none that is blank in every row (sends have no busbw), and, when
// they do not fit, the least important dropped first (never the one sorted by).
func layout(head []string, body [][]string, w, sortCol int) (shown []bool, widths []int) {
	n := len(head)
	shown, widths = make([]bool, n), make([]int, n)
	for i := range n {
		widths[i] = ansi.StringWidth(head[i])
		blank := true
		for _, r := range body {
			widths[i] = max(widths[i], ansi.StringWidth(r[i]))
			blank = blank && r[i] == ""
		}
		shown[i] = i == 0 || !blank || len(body) == 0
	}
	total := func() int {
		s := 0
		for i := range n {
			if shown[i] {
				s += widths[i] + gap
			}
		}
		return s - gap
	}
	for k := len(importance) - 1; k > 0 && total() > w; k-- {
		if c := importance[k]; c != sortCol {
			shown[c] = false
		}
	}
	if total() > w { // only the kind and the sorted column are left: cut the kind's label
		widths[0] = max(1, widths[0]-(total()-w))
	}
	return shown, widths
}

// formatRow lays cells out in the shown columns: the first left-aligned and cut to its width with
// an ellipsis, the others right-aligned.
func formatRow(cs []string, shown []bool, widths []int) string {
	var b strings.Builder
	for i, c := range cs {
		if !shown[i] {
			continue
		}
		if i == 0 {
			c = ansi.Truncate(c, widths[0], "…")
			b.WriteString(c + strings.Repeat(" ", widths[0]-ansi.StringWidth(c)))
			continue
		}
		b.WriteString(strings.Repeat(" ", gap+widths[i]-ansi.StringWidth(c)) + c)
	}
	return b.String()
}

// View draws the table, the selection and the filter or a summary line.
func (v *Model) View() string {
	st, h := &v.Fr.Styles, v.H
	rs := v.sorted()
	var b strings.Builder
	head := slices.Clone(Cols)
	if v.reverse {
		head[v.sortCol] += "▼"
	} else {
		head[v.sortCol] += "▲"
	}
	from, to := v.list.Window(len(rs), h-3, 1)
	body := make([][]string, 0, to-from)
	for i := from; i < to; i++ {
		body = append(body, cells(rs[i]))
	}
	shown, widths := layout(head, body, v.W, v.sortCol)
	b.WriteString(st.Title.Render(formatRow(head, shown, widths)) + "\n")
	for i, cs := range body {
		line := formatRow(cs, shown, widths)
		if from+i == v.list.Selected() {
			line = st.Selected.Render(line)
		}
		b.WriteString(line + "\n")
	}
	if len(rs) == 0 {
		b.WriteString(st.Muted.Render(v.Fr.None("transfers")) + "\n")
	}
	for strings.Count(b.String(), "\n") < h-1 {
		b.WriteString("\n")
	}
	if v.filter.Shown() {
		b.WriteString(v.filter.View())
	} else {
		foot := units.Counted(len(rs), "row")
		if slices.ContainsFunc(rs, func(t row) bool { return t.seen != nil }) {
			// Named first, where a narrow window still shows it: the rank may be the hung one.
			if un := unrecorded(v.Fr.Res.Collectives.Partial); un != "" {
				foot += " · " + un
			}
		}
		foot += " · payload: bytes asked of the ops, not bus bytes on links · GB/s = payload / time (algbw for collectives)"
		if slices.ContainsFunc(rs, func(t row) bool { return t.rate == nil && t.lo != nil }) {
			foot += " · lo–hi: within the clock's ticks"
		}
		if slices.ContainsFunc(rs, func(t row) bool { return t.seen != nil }) {
			foot += " · ranks 1/2: seen of expected, ≥/≤: figures of those seen"
		}
		b.WriteString(st.Muted.Render(foot))
		if last := lastAtCollectives(v.Fr.Res.Collectives); last != "" {
			b.WriteString(st.Alert.Render(" · " + last))
		}
	}
	return b.String()
}

// lastAtCollectives names the ranks most often last to start a collective (the analysis's
// stragglers, worst first), says so when no rank ever started late, and is "" when no collective
// spanned two ranks.
func lastAtCollectives(cs analysis.Collectives) string {
	ss := cs.Stragglers
	if len(ss) == 0 {
		for _, c := range slices.Concat(cs.Rows, cs.Partial) {
			if c.Ranks > 1 {
				return "no straggler at collectives"
			}
		}
		return ""
	}
	parts := make([]string, 0, 2)
	for _, s := range ss[:min(len(ss), 2)] {
		parts = append(parts, fmt.Sprintf("rank %d (%d×, p50 %s)", s.Rank, s.TimesLast, units.DurP(s.LatenessNs50)))
	}
	return "last at collectives: " + strings.Join(parts, ", ")
}

// unrecorded names the ranks the partial rows' communicators hold that left no record (a Flight
// Recorder dump missing), as the text report does; "" when none did.
func unrecorded(rows []analysis.Collective) string {
	ranks, n := analysis.UnrecordedRanks(rows)
	if len(ranks) == 0 {
		return ""
	}
	parts := make([]string, len(ranks))
	for i, r := range ranks {
		parts[i] = fmt.Sprint(r)
	}
	list := strings.Join(parts, ",")
	if n > len(ranks) {
		list += fmt.Sprintf("… (%d)", n)
	}
	return fmt.Sprintf("no record of %s %s (no dump)", units.Plural(n, "rank"), list)
}
