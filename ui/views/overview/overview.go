package overview

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/analysis"
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
	fr, w, h := m.Fr, m.W, m.H
	st, res := fr.Styles, fr.Res
	var b strings.Builder
	steps := "no steps yet"
	if s := res.Steps; s.Count > 0 {
		steps = fmt.Sprintf("steps %d, last %s, p50 %s", s.Count, units.DurP(s.LastNs), units.DurP(s.P50Ns))
	}
	cache := "comm cache: none created"
	if cc := res.CommCache; cc.Hits+cc.Misses > 0 {
		cache = fmt.Sprintf("comm cache %.0f%% hits (%d hits, %d misses, %d evictions)", 100*float64(cc.Hits)/float64(cc.Hits+cc.Misses), cc.Hits, cc.Misses, cc.Evictions)
	}
	fmt.Fprintf(&b, "%s %s   %s   %s\n", st.Title.Render("Moved"), units.Bytes(res.Links.MovedBytes), steps, cache)
	b.WriteString(st.Muted.Render("per GPU: where its time went (temporal breakdown of its span), the top cause of its streams' idle gaps; each link now, % of peak") + "\n")

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
	bucket := fr.State.Now/analysis.BucketNs - 1
	// Wide terminals show each link's GB/s beside its share of peak.
	cell := 7
	if w >= 140 {
		cell = 14
	}
	const dev, split, cause, total = 5, 21, 14, 9
	histW := min(max(w-dev-split-1-cause-int(analysis.NumLinks)*cell-total-2, 0), analysis.HistoryBuckets)
	head := fmt.Sprintf("%-*s%7s%7s%7s %-*s", dev, "gpu", "comp%", "xfer%", "idle%", cause, "idle mostly")
	for l := range analysis.NumLinks {
		head += fmt.Sprintf("%*s", cell, l)
	}
	head += fmt.Sprintf("%*s", total, "GB/s")
	if histW >= 8 {
		head += "  last " + units.Dur(int64(histW)*analysis.BucketNs)
	}
	b.WriteString(st.Muted.Render(head) + "\n")
	totalAt := func(d *analysis.DeviceLinks, k int64) float64 {
		var t float64
		for l := range analysis.NumLinks {
			r, _ := d.Rate(l, k)
			t += r
		}
		return t
	}
	var peak float64
	for d := range devs {
		for k := bucket - int64(histW) + 1; k <= bucket; k++ {
			peak = max(peak, totalAt(&devs[d], k))
		}
	}
	rows := h - 5
	for d := range devs {
		if d >= rows {
			fmt.Fprintf(&b, st.Muted.Render("… %d more devices (widen or heighten the terminal)")+"\n", len(devs)-d)
			break
		}
		ds := &devs[d]
		line := fmt.Sprintf("%-*d", dev, ds.Device)
		if t, ok := times[ds.Device]; ok && t.SpanNs > 0 {
			idle := fmt.Sprintf("%7.1f", t.IdlePct)
			if t.IdlePct >= 50 {
				idle = st.WarnOn + idle + st.WarnOff
			}
			line += fmt.Sprintf("%7.1f%7.1f", t.ComputePct, t.NonCompPct) + idle
		} else {
			line += st.MutedOn + fmt.Sprintf("%7s%7s%7s", units.Unknown, units.Unknown, units.Unknown) + st.MutedOff
		}
		c := causes[ds.Device]
		if c == "" {
			c = units.Unknown
		}
		line += fmt.Sprintf(" %-*s", cause, c)
		var sum float64
		for l := range analysis.NumLinks {
			r, _ := ds.Rate(l, bucket)
			sum += r
			p := fr.Meta.LinkPeaks[l]
			txt := units.Unknown // no peak known for this link: a share of it is unknown
			if p > 0 {
				txt = fmt.Sprintf("%.0f%%", 100*r/p)
			}
			if cell > 7 {
				txt = fmt.Sprintf("%.1f %s", r/1e9, txt)
			}
			txt = fmt.Sprintf("%*s", cell, txt)
			switch {
			case p > 0 && r > 0.8*p:
				txt = st.WarnOn + txt + st.WarnOff
			case r == 0:
				txt = st.MutedOn + txt + st.MutedOff
			}
			line += txt
		}
		line += fmt.Sprintf("%*.1f", total, sum/1e9)
		if histW >= 8 {
			var spark strings.Builder
			for k := bucket - int64(histW) + 1; k <= bucket; k++ {
				t := totalAt(ds, k)
				if t <= 0 || peak <= 0 {
					spark.WriteRune(' ')
					continue
				}
				spark.WriteRune(sparks[min(int(t/peak*float64(len(sparks)-1)+0.5), len(sparks)-1)])
			}
			line += "  " + st.GoodOn + spark.String() + st.GoodOff
		}
		b.WriteString(line + "\n")
	}
	if len(res.Telemetry) > 0 {
		b.WriteString(st.Title.Render("GPU telemetry (NVML):"))
		for _, t := range res.Telemetry {
			v := func(k string) int64 { return t.Metrics[k].Latest }
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
