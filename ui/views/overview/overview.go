package overview

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
)

// Model is the overview.
type Model struct {
	widget.NoCapture
	widget.Base
}

// New returns the overview over fr.
func New(fr *widget.Frame) *Model { return &Model{Base: widget.Base{Fr: fr}} }

// Update does nothing: the overview has no keys of its own.
func (m *Model) Update(tea.Msg) (*Model, tea.Cmd) { return m, nil }

// ShortHelp lists no keys: the overview has none of its own.
func (m *Model) ShortHelp() []key.Binding { return nil }

// FullHelp lists no keys.
func (m *Model) FullHelp() [][]key.Binding { return nil }

var sparks = []rune("▁▂▃▄▅▆▇█")

// View draws the overview.
func (m *Model) View() string {
	fr, res := m.Fr, m.Fr.Res
	st := fr.Styles
	var b strings.Builder
	steps := fr.None("steps")
	if s := res.Steps; s.Count > 0 {
		steps = fmt.Sprintf("steps %d, last %s, p50 %s", s.Count, units.DurP(s.LastNs), units.DurP(s.P50Ns))
	}
	cache := "comm cache: " + fr.None("lookups")
	if cc := res.CommCache; !cc.Known {
		cache = "comm cache: " + units.Unknown + " (the source does not record communicators)"
	} else if cc.Hits+cc.Misses > 0 {
		cache = fmt.Sprintf("comm cache %.0f%% hits (%d hits, %d misses, %d evictions)", 100*float64(cc.Hits)/float64(cc.Hits+cc.Misses), cc.Hits, cc.Misses, cc.Evictions)
	}
	moved := units.Bytes(res.Links.MovedBytes)
	if fr.Snap != nil && fr.Snap.From > 0 {
		// A replay started or sought there: every figure counts from then on, as the headless
		// report of a replay --from does.
		moved += " since " + units.Dur(fr.Snap.From)
	}
	// What crossed links (bus bytes), not the payload the transfers view counts: say which.
	moved += " (bus bytes)"
	fmt.Fprintf(&b, "%s %s   %s   %s\n", st.Title.Render("Moved on links"), moved, steps, cache)
	now := "each link now, % of peak"
	if !fr.Live {
		now = "each link now (ended: idle), % of peak"
	}
	b.WriteString(st.Muted.Render("per GPU: where its time went (temporal breakdown of its span), the top cause of its streams' idle gaps; "+now) + "\n")
	m.writeDevices(&b)
	m.writeFabric(&b)
	if len(res.Telemetry) > 0 {
		b.WriteString(st.Title.Render("GPU telemetry (NVML):"))
		for _, t := range res.Telemetry {
			v := func(k string) int64 { m, _ := t.Metrics.Get(k); return m.Latest }
			fmt.Fprintf(&b, "  gpu%d %d%% %.0fW %d°C PCIe %.1f/%.1f GB/s", t.Device, v("utilization_pct"), float64(v("power_milliwatts"))/1e3,
				v("temperature_c"), float64(v("pcie_rx_bytes_per_s"))/1e9, float64(v("pcie_tx_bytes_per_s"))/1e9)
		}
		b.WriteString("\n")
	}
	if res.AlertCount > 0 {
		b.WriteString(st.Alert.Render(fmt.Sprintf("Alerts (%d):", res.AlertCount)) + "\n")
		for _, a := range res.Alerts[max(0, len(res.Alerts)-3):] {
			b.WriteString(st.Alert.Render("  "+units.Dur(a.At)+"  "+a.Message) + "\n")
		}
	}
	if fr.State.Missed > 0 {
		b.WriteString(st.Warn.Render(fmt.Sprintf("%d events went by while the view was behind (still recorded)", fr.State.Missed)) + "\n")
	}
	return b.String()
}

// Column widths of the device table: the device, the time split, the idle cause and the total.
// The split's middle column says non-compute, as the idle view and the report do (HTA's word);
// the cause column is as wide as the longest cause, barrier_wait.
const colDev, colSplit, colCause, colTotal = 5, 24, 12, 9

// deviceTable is the layout of one drawing of the device table: what fits the width, and the
// history's scale shared by every row so that sparklines compare across devices.
type deviceTable struct {
	fr     *widget.Frame
	cell   int   // width of one link's column
	histW  int   // sparkline buckets shown; under 8 none
	bucket int64 // the newest complete bucket
	peak   float64
}

// writeDevices writes the table of devices, a row each, as many as the height allows.
func (m *Model) writeDevices(b *strings.Builder) {
	fr, res := m.Fr, m.Fr.Res
	st := fr.Styles
	devs := res.Links.Devices
	for len(devs) < fr.Meta.Devices { // devices that moved nothing yet still have a row
		devs = append(devs, analysis.DeviceLinks{Device: int32(len(devs))})
	}
	times := map[int32]analysis.DeviceTime{}
	for _, d := range res.Breakdown.Devices {
		times[d.Device] = d
	}
	causes := map[int32]string{}
	for _, d := range res.StreamIdle.Devices {
		causes[d.Device] = d.TopCause
	}
	t := deviceTable{fr: fr, cell: 7, bucket: fr.State.Now/analysis.BucketNs - 1}
	if m.W >= 140 { // wide terminals show each link's GB/s beside its share of peak
		t.cell = 14
	}
	t.histW = min(max(m.W-colDev-colSplit-1-colCause-int(analysis.NumLinks)*t.cell-colTotal-2, 0), analysis.HistoryBuckets)
	for d := range devs {
		for k := t.bucket - int64(t.histW) + 1; k <= t.bucket; k++ {
			t.peak = max(t.peak, totalAt(&devs[d], k))
		}
	}
	b.WriteString(st.Muted.Render(t.head()) + "\n")
	rows := m.H - 5
	if res.Links.Fabric != nil {
		rows-- // the fabric's line
	}
	for d := range devs {
		if d >= rows {
			fmt.Fprintf(b, st.Muted.Render("… %d more devices (widen or heighten the terminal)")+"\n", len(devs)-d)
			break
		}
		tm, ok := times[devs[d].Device]
		b.WriteString(t.row(&devs[d], tm, ok, causes[devs[d].Device]) + "\n")
	}
}

// totalAt is a device's rate over all its links in bucket k.
func totalAt(d *analysis.DeviceLinks, k int64) float64 {
	var t float64
	for l := range analysis.NumLinks {
		r, _ := d.Rate(l, k)
		t += r
	}
	return t
}

func (t *deviceTable) head() string {
	head := fmt.Sprintf("%-*s%7s%10s%7s %-*s", colDev, "gpu", "comp%", "non-comp%", "idle%", colCause, "idle mostly")
	for l := range analysis.NumLinks {
		head += fmt.Sprintf("%*s", t.cell, l)
	}
	head += fmt.Sprintf("%*s", colTotal, "GB/s")
	if t.histW >= 8 {
		head += "  last " + units.Dur(int64(t.histW)*analysis.BucketNs)
	}
	return head
}

// row draws one device: its time split (unknown without a span), its streams' top idle cause,
// each link's rate now as a share of the link's peak, the total and the sparkline.
func (t *deviceTable) row(ds *analysis.DeviceLinks, tm analysis.DeviceTime, timed bool, cause string) string {
	st := t.fr.Styles
	line := fmt.Sprintf("%-*d", colDev, ds.Device)
	if timed && tm.SpanNs > 0 {
		idle := fmt.Sprintf("%7.1f", tm.IdlePct)
		if tm.IdlePct >= 50 {
			idle = st.WarnOn + idle + st.WarnOff
		}
		line += fmt.Sprintf("%7.1f%10.1f", tm.ComputePct, tm.NonCompPct) + idle
	} else {
		line += st.MutedOn + fmt.Sprintf("%7s%10s%7s", units.Unknown, units.Unknown, units.Unknown) + st.MutedOff
	}
	if cause == "" {
		cause = units.Unknown
	}
	line += fmt.Sprintf(" %-*s", colCause, cause)
	var sum float64
	for l := range analysis.NumLinks {
		r, _ := ds.Rate(l, t.bucket)
		if !t.fr.Live {
			r = 0 // the source has ended: nothing moves now, whatever the last bucket held
		}
		sum += r
		p := t.fr.Meta.LinkPeaks[l]
		txt := units.Unknown // no peak known for this link: a share of it is unknown
		if p > 0 {
			txt = fmt.Sprintf("%.0f%%", 100*r/p)
		}
		if t.cell > 7 {
			txt = fmt.Sprintf("%.1f %s", r/1e9, txt)
		}
		txt = fmt.Sprintf("%*s", t.cell, txt)
		switch {
		case p > 0 && r > 0.8*p:
			txt = st.WarnOn + txt + st.WarnOff
		case r == 0:
			txt = st.MutedOn + txt + st.MutedOff
		}
		line += txt
	}
	line += fmt.Sprintf("%*.1f", colTotal, sum/1e9)
	if t.histW >= 8 {
		var spark strings.Builder
		for k := t.bucket - int64(t.histW) + 1; k <= t.bucket; k++ {
			v := totalAt(ds, k)
			if v <= 0 || t.peak <= 0 {
				spark.WriteRune(' ')
				continue
			}
			spark.WriteRune(sparks[min(int(v/t.peak*float64(len(sparks)-1)+0.5), len(sparks)-1)])
		}
		line += "  " + st.GoodOn + spark.String() + st.GoodOff
	}
	return line
}

// writeFabric writes a line on the fabric's switch ports, when the source reported any: the
// hottest port now, and the busiest ports so far by their busiest 50 ms, as a share of a port's
// bandwidth (unknown without it).
func (m *Model) writeFabric(b *strings.Builder) {
	fr := m.Fr
	f := fr.Res.Links.Fabric
	if f == nil {
		return
	}
	st := fr.Styles
	pct := func(r float64) string {
		if f.PortBps <= 0 {
			return units.Unknown
		}
		return fmt.Sprintf("%.0f%%", 100*r/f.PortBps)
	}
	now := "idle"
	if r, port, ok := f.Rate(fr.State.Now/analysis.BucketNs - 1); fr.Live && ok && r > 0 {
		now = fmt.Sprintf("%s %.1f GB/s (%s)", timeline.PortName(port), r/1e9, pct(r))
		if f.PortBps > 0 && r > 0.8*f.PortBps {
			now = st.WarnOn + now + st.WarnOff
		}
	}
	var hot []string
	for i, p := range f.Hot {
		if i == 4 {
			break
		}
		share := units.Unknown
		if p.PeakPct != nil {
			share = fmt.Sprintf("%.0f%%", *p.PeakPct)
		}
		hot = append(hot, p.Name+" "+share)
	}
	fmt.Fprintf(b, "%s now %s; busiest 50 ms, %% of peak: %s\n", st.Title.Render("Switch ports:"), now, strings.Join(hot, ", "))
}
