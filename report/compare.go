package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// Unit says how a compared figure is measured and whether more of it is better.
type Unit string

// Units of compared figures.
const (
	UnitNs   Unit = "ns"   // less is better
	UnitGBps Unit = "GB/s" // more is better
	UnitPct  Unit = "%"    // of something: the row's name says of what
)

// Row is one figure in both runs: A, B, and B − A, with its relative change. A figure one run lacks
// is null there, and so are the differences.
type Row struct {
	Section string   `json:"section"`
	Name    string   `json:"name"`
	Unit    Unit     `json:"unit"`
	A       *float64 `json:"a"`
	B       *float64 `json:"b"`
	Diff    *float64 `json:"diff"`     // B − A
	DiffPct *float64 `json:"diff_pct"` // (B − A) / A, in percent
	// Better says whether B improves on A (true), worsens it (false), or either (null).
	Better *bool `json:"better"`
}

// Comparison lays two reports side by side: step time, GB/s per kind, idle by cause, overlap and
// busbw per collective.
type Comparison struct {
	A    string `json:"a"`
	B    string `json:"b"`
	Rows []Row  `json:"rows"`
}

func ns(p *int64) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}

func f(v int64) *float64 {
	x := float64(v)
	return &x
}

func row(section, name string, u Unit, a, b *float64, lessIsBetter bool) Row {
	r := Row{Section: section, Name: name, Unit: u, A: a, B: b}
	if a == nil || b == nil {
		return r
	}
	d := *b - *a
	r.Diff = &d
	if *a != 0 {
		p := round2(100 * d / *a)
		r.DiffPct = &p
	}
	if d != 0 {
		better := (d < 0) == lessIsBetter
		r.Better = &better
	}
	return r
}

func round2(x float64) float64 {
	if x < 0 {
		return -round2(-x)
	}
	return float64(int64(x*100+0.5)) / 100
}

// Compare lays a and b side by side, labelled la and lb.
func Compare(a, b *Report, la, lb string) *Comparison {
	c := &Comparison{A: la, B: lb}
	add := func(r Row) { c.Rows = append(c.Rows, r) }
	add(row("steps", "step time p50", UnitNs, ns(a.Steps.P50Ns), ns(b.Steps.P50Ns), true))
	add(row("steps", "step time mean", UnitNs, ns(a.Steps.MeanNs), ns(b.Steps.MeanNs), true))
	add(row("steps", "step time p99", UnitNs, ns(a.Steps.P99Ns), ns(b.Steps.P99Ns), true))
	for _, k := range timeline.TransferKinds {
		ka, kb := a.Transfers.ByKind[k], b.Transfers.ByKind[k]
		if ka.Count == 0 && kb.Count == 0 {
			continue
		}
		add(row("transfers", k+" GB/s", UnitGBps, ka.GBps, kb.GBps, false))
	}
	add(row("idle", "device idle (Σ devices)", UnitNs, f(a.Idle.TotalNs), f(b.Idle.TotalNs), true))
	for _, cause := range analysis.Causes() {
		ca, cb := a.Idle.ByCause[cause.String()], b.Idle.ByCause[cause.String()]
		if ca == 0 && cb == 0 {
			continue
		}
		add(row("idle", "stream gaps: "+cause.String(), UnitNs, f(ca), f(cb), true))
	}
	add(row("overlap", "communication overlapped with compute", UnitPct, a.Overlap.CommComputePct, b.Overlap.CommComputePct, false))
	type key struct {
		op    string
		ranks int
		class int64
		ap    string
	}
	inB := map[key]analysis.Collective{}
	for _, x := range b.Collectives {
		inB[key{x.Op, x.Ranks, x.SizeClass, x.AlgoProto}] = x
	}
	for _, x := range a.Collectives {
		y, ok := inB[key{x.Op, x.Ranks, x.SizeClass, x.AlgoProto}]
		if !ok || (x.BusBW == nil && y.BusBW == nil) {
			continue
		}
		name := fmt.Sprintf("%s ×%d ≤%s busbw", x.Op, x.Ranks, units.Bytes(x.SizeClass))
		if x.AlgoProto != "" {
			name = fmt.Sprintf("%s ×%d ≤%s %s busbw", x.Op, x.Ranks, units.Bytes(x.SizeClass), x.AlgoProto)
		}
		add(row("collectives", name, UnitGBps, x.BusBW, y.BusBW, false))
	}
	return c
}

func cell(v *float64, u Unit) string {
	if v == nil {
		return units.Unknown
	}
	switch u {
	case UnitNs:
		return units.Dur(int64(*v))
	case UnitGBps:
		return fmt.Sprintf("%.2f GB/s", *v)
	}
	return fmt.Sprintf("%.1f%%", *v)
}

// Cells formats the row for people, as the text comparison and the console's compare view both
// show it: A and B in the row's unit, B − A with its sign (− for less), the relative change, and
// "better" or "worse" ("" when neither).
func (r Row) Cells() (a, b, diff, pct, verdict string) {
	diff, pct = units.Unknown, units.Unknown
	if r.Diff != nil {
		sign := "+"
		if *r.Diff < 0 {
			sign = "−"
		}
		abs := *r.Diff
		if abs < 0 {
			abs = -abs
		}
		diff = sign + cell(&abs, r.Unit)
		if r.Unit == UnitPct {
			diff = fmt.Sprintf("%s%.1f pts", sign, abs)
		}
	}
	if r.DiffPct != nil {
		// The same minus as B − A's, so a column of changes reads alike.
		pct = strings.Replace(fmt.Sprintf("%+.1f%%", *r.DiffPct), "-", "−", 1)
	}
	if r.Better != nil {
		verdict = "worse"
		if *r.Better {
			verdict = "better"
		}
	}
	return cell(r.A, r.Unit), cell(r.B, r.Unit), diff, pct, verdict
}

// CompareText writes the comparison for people: each figure in A and B, B − A with its sign and
// relative change, and whether that is better or worse.
func CompareText(w io.Writer, c *Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "xfertop compare\n  A: %s\n  B: %s\n\n", c.A, c.B)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	const nameW = 44 // names are padded here so that they read left-aligned in the right-aligned table
	fmt.Fprintf(tw, "%-*s\tA\tB\tB − A\tchange\t\t\n", nameW, "")
	section := ""
	for _, r := range c.Rows {
		if r.Section != section {
			section = r.Section
			fmt.Fprintf(tw, "%-*s\t\t\t\t\t\t\n", nameW, section)
		}
		ca, cb, diff, pct, verdict := r.Cells()
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%s\t%s\t\n", nameW, "  "+r.Name, ca, cb, diff, pct, verdict)
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}
