package cluster

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/units"
)

// glyphs draw a value's fifth of the scale, lowest first, so the heatmap reads without colour.
var glyphs = [5]string{"·", "░", "▒", "▓", "█"}

// unknownGlyph is a device whose value is not known (it ran nothing yet; no peak for its link).
const unknownGlyph = "?"

// grid is the layout of the heatmap of hosts [h0, h1), gpus each, in w×h cells: a row of cells
// per host (per hg hosts when they outnumber the rows), a cell per GPU (per gg GPUs when they
// outnumber the columns), the rows in as many side-by-side panels as the width holds.
type grid struct {
	h0, h1, gpus    int         // hosts shown (indices in groups), the most GPUs a host has
	groups          []hostGroup // every host's devices (Devices.Groups)
	hg, gg          int         // hosts per row, GPUs per cell
	rows, cols      int         // rows of cells, cells per row
	labelW, panelW  int         // the host number's width, a panel's width with its gap
	panels, perPane int         // panels drawn, rows per panel
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// layout fits hosts [h0, h1) of groups, of at most gpus GPUs each, in w×h cells.
func layout(h0, h1 int, groups []hostGroup, gpus, w, h int) grid {
	w, h = max(w, 4), max(h, 1)
	gpus = max(gpus, 1)
	g := grid{h0: h0, h1: h1, gpus: gpus, groups: groups}
	g.labelW = 2
	for i := h0; i < min(h1, len(groups)); i++ {
		g.labelW = max(g.labelW, utf8.RuneCountInString(groups[i].shortLabel(maxLabel))+1)
	}
	g.gg = ceilDiv(gpus, max(w-g.labelW-1, 1))
	g.cols = ceilDiv(gpus, g.gg)
	g.panelW = g.labelW + g.cols + 1
	maxPanels := max((w+1)/g.panelW, 1)
	hosts := max(h1-h0, 1)
	g.hg = ceilDiv(hosts, maxPanels*h)
	g.rows = ceilDiv(hosts, g.hg)
	g.panels = ceilDiv(g.rows, h)
	g.perPane = ceilDiv(g.rows, g.panels) // rows spread evenly over the panels
	return g
}

// grouped says what a cell is, for the title.
func (g *grid) grouped() string {
	if g.hg == 1 && g.gg == 1 {
		return "cell: 1 GPU"
	}
	return fmt.Sprintf("cell: worst of %s × %s", units.Counted(g.hg, "host"), units.Counted(g.gg, "GPU"))
}

// hosts returns the hosts of row r.
func (g *grid) hosts(r int) (from, to int) {
	from = g.h0 + r*g.hg
	return from, min(from+g.hg, g.h1)
}

// devices calls f with the position of each device of cell (r, c): the GPUs of its hosts whose
// place on their host is in its columns.
func (g *grid) devices(r, c int, f func(p int32)) {
	hf, ht := g.hosts(r)
	for h := hf; h < min(ht, len(g.groups)); h++ {
		pos := g.groups[h].pos
		for l := c * g.gg; l < min((c+1)*g.gg, len(pos)); l++ {
			f(pos[l])
		}
	}
}

// label names host row r's first host (its number, ? for the devices of unknown host).
func (g *grid) label(r int) string {
	if hf, _ := g.hosts(r); hf < len(g.groups) {
		return g.groups[hf].shortLabel(maxLabel)
	}
	return ""
}

// at returns the cell at line y, column x of the grid (line 0 is its first row of cells), and
// whether there is one.
func (g *grid) at(x, y int) (r, c int, ok bool) {
	if y < 0 || y >= g.perPane || x < 0 {
		return 0, 0, false
	}
	p, off := x/g.panelW, x%g.panelW-g.labelW
	r = p*g.perPane + y
	if p >= g.panels || off < 0 || off >= g.cols || r >= g.rows {
		return 0, 0, false
	}
	return r, off, true
}

// cellView is what draw needs of a cell: its worst value (NaN: unknown or none).
type cellView func(r, c int) float64

// draw writes the grid's lines: each panel's rows side by side, the cursor's cell reversed.
func (g *grid) draw(b *strings.Builder, st *theme.Styles, m Metric, scale float64, val cellView, curR, curC int) {
	for y := range g.perPane {
		for p := range g.panels {
			r := p*g.perPane + y
			if r >= g.rows {
				break
			}
			if p > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(b, "%s%*s%s ", st.MutedOn, g.labelW-1, g.label(r), st.MutedOff)
			on := ""
			for c := range g.cols {
				v := val(r, c)
				glyph, col := cell(st, m, v, scale)
				if r == curR && c == curC {
					b.WriteString(closeOn(on) + st.CursorOn + glyph + st.CursorOff)
					on = ""
					continue
				}
				if col != on { // one escape per run of a colour, not per cell
					b.WriteString(closeOn(on) + col)
					on = col
				}
				b.WriteString(glyph)
			}
			b.WriteString(closeOn(on))
		}
		b.WriteByte('\n')
	}
}

// closeOn resets a colour opened with on (every style here closes with the same reset).
func closeOn(on string) string {
	if on == "" {
		return ""
	}
	return "\x1b[m"
}

// level is v's fifth of the scale, 0..4.
func level(v, scale float64) int {
	if scale <= 0 {
		return 0
	}
	return min(max(int(v/scale*5), 0), 4)
}

// cell returns v's glyph and colour: the glyph says the value's fifth of the scale, the colour how
// bad it is (good, plain, warning, alert), so either alone reads.
func cell(st *theme.Styles, m Metric, v, scale float64) (glyph, on string) {
	if math.IsNaN(v) {
		return unknownGlyph, st.MutedOn
	}
	lv := level(v, scale)
	bad := lv
	if !m.HighIsBad {
		bad = 4 - lv
	}
	switch bad {
	case 0, 1:
		on = st.GoodOn
	case 3:
		on = st.WarnOn
	case 4:
		on = st.AlertOn
	}
	return glyphs[lv], on
}

// legend is the scale's key: each glyph with its range, in its colour, and the unknown glyph.
func legend(st *theme.Styles, m Metric, scale float64) string {
	var parts []string
	for lv := range glyphs {
		lo, hi := scale*float64(lv)/5, scale*float64(lv+1)/5
		g, on := cell(st, m, (lo+hi)/2, scale)
		txt := fmt.Sprintf("%s %s–%s", g, trim(lo), trim(hi))
		if on != "" {
			txt = on + txt + "\x1b[m"
		}
		parts = append(parts, txt)
	}
	parts = append(parts, st.MutedOn+unknownGlyph+" unknown"+st.MutedOff)
	return strings.Join(parts, "  ")
}

// trim formats a scale's bound without needless decimals.
func trim(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
