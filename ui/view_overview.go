package ui

import (
	"fmt"
	"strings"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/units"
)

type overviewView struct{}

var sparks = []rune("▁▂▃▄▅▆▇█")

func (overviewView) view(m *Model, w, h int) string {
	st, res := m.styles, m.res
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
	b.WriteString(st.Muted.Render("each link: GB/s now and % of its peak; total GB/s; history of the total") + "\n")

	// One row per device: each link's throughput and share of its peak, then a sparkline of the
	// device's total over recent history.
	devs := res.Links.Devices
	for len(devs) < m.info.Meta.Devices { // devices that moved nothing yet still have a row
		devs = append(devs, analysis.DeviceLinks{Device: int32(len(devs))})
	}
	bucket := m.state.Now/analysis.BucketNs - 1
	const dev, cell, total = 5, 12, 9
	histW := max(w-dev-int(analysis.NumLinks)*cell-total-2, 8)
	histW = min(histW, analysis.HistoryBuckets)
	head := fmt.Sprintf("%-*s", dev, "dev")
	for l := range analysis.NumLinks {
		head += fmt.Sprintf("%*s", cell, l)
	}
	head += fmt.Sprintf("%*s  %s", total, "total", fmt.Sprintf("last %s", units.Dur(int64(histW)*analysis.BucketNs)))
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
		var sum float64
		for l := range analysis.NumLinks {
			r, _ := ds.Rate(l, bucket)
			sum += r
			pct := ""
			p := m.info.Meta.LinkPeaks[l]
			if p > 0 {
				pct = fmt.Sprintf("%3.0f%%", 100*r/p)
			}
			txt := fmt.Sprintf("%*s", cell, fmt.Sprintf("%.1f %s", r/1e9, pct))
			switch {
			case p > 0 && r > 0.8*p:
				txt = st.Warn.Render(txt)
			case r == 0:
				txt = st.Muted.Render(txt)
			}
			line += txt
		}
		line += fmt.Sprintf("%*.1f  ", total, sum/1e9)
		var spark strings.Builder
		for k := bucket - int64(histW) + 1; k <= bucket; k++ {
			t := totalAt(ds, k)
			if t <= 0 || peak <= 0 {
				spark.WriteRune(' ')
				continue
			}
			spark.WriteRune(sparks[min(int(t/peak*float64(len(sparks)-1)+0.5), len(sparks)-1)])
		}
		b.WriteString(line + st.Good.Render(spark.String()) + "\n")
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
	if m.state.Missed > 0 {
		b.WriteString(st.Warn.Render(fmt.Sprintf("%d events went by while the view was behind (still recorded)", m.state.Missed)) + "\n")
	}
	return b.String()
}
