package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/units"
)

// TextOptions shape the text report. The zero value is the default.
type TextOptions struct {
	// Top is how many of the worst devices a summarised table lists (0: DefaultTop).
	Top int
	// PerDevice prints every device's row however many devices there are, as the JSON keeps them.
	PerDevice bool
}

// DefaultTop is how many devices a summarised table lists by default (--top).
const DefaultTop = 10

// SummariseAbove is the number of devices above which the text report summarises a per-device
// table as its distribution across devices and lists only the worst: a row per device of a
// thousand-GPU job is thousands of lines no one reads.
const SummariseAbove = 64

func (o TextOptions) top() int {
	if o.Top <= 0 {
		return DefaultTop
	}
	return o.Top
}

// summarise reports whether a table of n device rows is summarised.
func (o TextOptions) summarise(n int) bool { return !o.PerDevice && n > SummariseAbove }

// spreadRow is one figure's distribution across devices, as a row of a summary table.
type spreadRow struct {
	name string
	vals []float64 // one per device, NaN where unknown
	fmt  func(float64) string
}

// writeSpreads writes a table of each row's min, p10, p50, p90 and max across devices, with how
// many devices had the figure where some did not.
func writeSpreads(b *strings.Builder, rows []spreadRow) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tmin\tp10\tp50\tp90\tmax\tdevices\t")
	for _, r := range rows {
		s := analysis.SpreadOf(r.vals)
		if s.N == 0 {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t0\t\n", r.name, units.Unknown, units.Unknown, units.Unknown, units.Unknown, units.Unknown)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", r.name, r.fmt(s.Min), r.fmt(s.P10), r.fmt(s.P50), r.fmt(s.P90), r.fmt(s.Max), s.N)
	}
	tw.Flush()
}

func fmtDur(v float64) string   { return units.Dur(int64(math.Round(v))) }
func fmtBytes(v float64) string { return units.Bytes(int64(math.Round(v))) }
func fmtPct(v float64) string   { return fmt.Sprintf("%.1f", v) }

// idleDevicesText writes the per-device temporal breakdown: every row, or above SummariseAbove
// devices its distribution and the most idle devices.
func idleDevicesText(b *strings.Builder, r *Report, o TextOptions) {
	devs := r.Idle.Devices
	head := "Devices (HTA temporal breakdown: % of each device's span; overlap: % of its communication time)"
	rowsOf := func(ds []analysis.DeviceTime) {
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "device\tspan\tidle\tidle %\tcompute %\tnon-compute %\toverlap %\t")
		for _, d := range ds {
			u := units.Unknown
			if !d.Ran() {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", d.Device, u, u, u, u, u, u)
				continue
			}
			if d.NoKernels {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", d.Device, units.Dur(d.SpanNs), u, u, u, u, u)
				continue
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%.1f\t%.1f\t%.1f\t%s\t\n", d.Device, units.Dur(d.SpanNs), units.Dur(d.IdleNs), d.IdlePct, d.ComputePct, d.NonCompPct, pctNum(d.OverlapPct))
		}
		tw.Flush()
	}
	if !o.summarise(len(devs)) {
		b.WriteString(head + ":\n")
		rowsOf(devs)
		return
	}
	fmt.Fprintf(b, "%s, across %d devices (--per-device lists each):\n", head, len(devs))
	if r.Idle.Unknown != "" {
		// No spread of unknowns: the span alone is measured.
		spans := make([]float64, len(devs))
		for i, d := range devs {
			spans[i] = math.NaN()
			if d.Ran() {
				spans[i] = float64(d.SpanNs)
			}
		}
		writeSpreads(b, []spreadRow{{"span", spans, fmtDur}})
		fmt.Fprintf(b, "idle, idle %%, compute %%, non-compute %%, overlap %%: unknown on every device (%s)\n", r.Idle.Unknown)
		return
	}
	var unran []analysis.DeviceTime
	col := func(f func(d analysis.DeviceTime) float64) []float64 {
		out := make([]float64, len(devs))
		for i, d := range devs {
			out[i] = math.NaN() // ran nothing, or its source records no kernels: unknown, out of the spread
			if d.Known() {
				out[i] = f(d)
			}
		}
		return out
	}
	spans := make([]float64, len(devs))
	for i, d := range devs {
		spans[i] = math.NaN() // ran nothing: unknown, out of the spread
		if d.Ran() {
			spans[i] = float64(d.SpanNs) // measured, kernels or not
		}
	}
	for _, d := range devs {
		if !d.Ran() {
			unran = append(unran, d)
		}
	}
	writeSpreads(b, []spreadRow{
		{"span", spans, fmtDur},
		{"idle", col(func(d analysis.DeviceTime) float64 { return float64(d.IdleNs) }), fmtDur},
		{"idle %", col(func(d analysis.DeviceTime) float64 { return d.IdlePct }), fmtPct},
		{"compute %", col(func(d analysis.DeviceTime) float64 { return d.ComputePct }), fmtPct},
		{"non-compute %", col(func(d analysis.DeviceTime) float64 { return d.NonCompPct }), fmtPct},
		{"overlap %", col(func(d analysis.DeviceTime) float64 {
			if d.OverlapPct == nil {
				return math.NaN() // did not communicate: no overlap to speak of
			}
			return *d.OverlapPct
		}), fmtPct},
	})
	if len(unran) > 0 {
		fmt.Fprintf(b, "%s nothing, figures unknown:\n", units.Counted(len(unran), "device ran", "devices ran"))
		rowsOf(unran[:min(len(unran), o.top())])
	}
	worst := MostIdle(devs, o.top())
	if len(worst) == 0 {
		return // no device's idle time is known
	}
	fmt.Fprintf(b, "The %d devices most idle (idle %% of their span, highest first; --top N lists more):\n", len(worst))
	rowsOf(worst)
}

// MostIdle returns the k devices with the highest idle share of their span, highest first, ties
// in device order: the devices the text report lists, and the console's cluster view's worst
// GPUs by idle %.
func MostIdle(devs []analysis.DeviceTime, k int) []analysis.DeviceTime {
	s := slices.DeleteFunc(slices.Clone(devs), func(d analysis.DeviceTime) bool { return !d.Known() }) // unknown: never among the worst
	slices.SortStableFunc(s, func(a, b analysis.DeviceTime) int {
		return cmp.Or(cmp.Compare(b.IdlePct, a.IdlePct), cmp.Compare(a.Device, b.Device))
	})
	return s[:min(k, len(s))]
}

// linkDevicesText writes the per-device link traffic: every device that moved something, or above
// SummariseAbove devices its distribution and the devices furthest from the median.
func linkDevicesText(b *strings.Builder, r *Report, o TextOptions, unknown bool) {
	// The devices present: the rows below the bound of the analysis' dense rows include ids that
	// ran nothing (a trace's devices 4464 and 70000 are not 4,465 devices).
	devs := slices.DeleteFunc(slices.Clone(r.Links.Devices), func(d analysis.DeviceLinks) bool {
		return d.Total == 0 && d.Unattributed == 0 && len(d.LowerBound) == 0
	})
	rowsOf := func(ds []analysis.DeviceLinks, all bool) {
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		head := "device\tPCIe\tNVLink\tNIC\tHBM\t"
		if unknown {
			head += "link unknown\t"
		}
		if !all {
			head += "total\t"
		}
		fmt.Fprintln(tw, head)
		for _, d := range ds {
			if all && d.Total == 0 && d.Unattributed == 0 && len(d.LowerBound) == 0 {
				continue
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t", d.Device, linkCell(d, analysis.LinkPCIe), linkCell(d, analysis.LinkNVLink),
				linkCell(d, analysis.LinkNIC), linkCell(d, analysis.LinkHBM))
			if unknown {
				fmt.Fprintf(tw, "%s\t", units.Bytes(d.Unattributed))
			}
			if !all {
				fmt.Fprintf(tw, "%s\t", units.Bytes(allLinks(d)))
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	if !o.summarise(len(devs)) {
		rowsOf(devs, true)
		return
	}
	fmt.Fprintf(b, "Across %d devices (--per-device lists each):\n", len(devs))
	col := func(f func(d analysis.DeviceLinks) int64) []float64 {
		out := make([]float64, len(devs))
		for i, d := range devs {
			out[i] = float64(f(d))
		}
		return out
	}
	var rows []spreadRow
	var unknownLinks []string
	for _, link := range []analysis.Link{analysis.LinkPCIe, analysis.LinkNVLink, analysis.LinkNIC, analysis.LinkHBM} {
		partial, known := false, false
		for _, d := range devs {
			partial = partial || d.Partial[link]
			known = known || !d.Partial[link] || linkBytes(d, link) > 0
		}
		name := link.String()
		switch {
		case !known: // every device's figure is unknown: no spread of zeros
			unknownLinks = append(unknownLinks, name)
			continue
		case partial:
			name += " (≥)"
		}
		rows = append(rows, spreadRow{name, col(func(d analysis.DeviceLinks) int64 { return linkBytes(d, link) }), fmtBytes})
	}
	if unknown {
		rows = append(rows, spreadRow{"link unknown", col(func(d analysis.DeviceLinks) int64 { return d.Unattributed }), fmtBytes})
	}
	totals := col(allLinks)
	writeSpreads(b, append(rows, spreadRow{"total", totals, fmtBytes}))
	if len(unknownLinks) > 0 {
		fmt.Fprintf(b, "%s: unknown on every device %s\n", strings.Join(unknownLinks, ", "), partialWhy)
	}
	med := analysis.SpreadOf(totals).P50
	worst := FurthestFromMedian(devs, med, o.top())
	fmt.Fprintf(b, "The %d devices whose total is furthest from the median device's (%s), furthest first:\n", len(worst), fmtBytes(med))
	rowsOf(worst, false)
}

// allLinks is a device's bytes on all its links, those whose link is unknown included: a total
// of 0 B beside 80 MiB of "link unknown" (a job without topology) would say it moved nothing.
func allLinks(d analysis.DeviceLinks) int64 { return d.Total + d.Unattributed }

// FurthestFromMedian returns the k devices whose total bytes differ most from med, furthest
// first, ties in device order: on a job whose ranks all move the same, the odd one out.
func FurthestFromMedian(devs []analysis.DeviceLinks, med float64, k int) []analysis.DeviceLinks {
	s := slices.Clone(devs)
	dist := func(d analysis.DeviceLinks) float64 { return math.Abs(float64(allLinks(d)) - med) }
	slices.SortStableFunc(s, func(a, b analysis.DeviceLinks) int {
		return cmp.Or(cmp.Compare(dist(b), dist(a)), cmp.Compare(a.Device, b.Device))
	})
	return s[:min(k, len(s))]
}

// partialWhy says why a link's bytes are a lower bound or unknown.
const partialWhy = "(kernels' and NCCL ops' memory traffic, ops of unknown size, and the link of ops counted under \"link unknown\", are in no source)"

// linkCell is a device's bytes on link: "≥ N" where some of them are unknown, "—" where all may be.
func linkCell(d analysis.DeviceLinks, link analysis.Link) string {
	n := linkBytes(d, link)
	switch {
	case d.Known(link):
		return units.Bytes(n)
	case n == 0:
		return units.Unknown
	}
	return "≥ " + units.Bytes(n)
}

// linkBytes is a device's bytes on link, both directions.
func linkBytes(d analysis.DeviceLinks, link analysis.Link) int64 {
	return [analysis.NumLinks]int64{d.PCIe, d.NVLink, d.NIC, d.HBM}[link]
}
