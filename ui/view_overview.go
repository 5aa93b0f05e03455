package ui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
)

type overviewView struct{}

var sparks = []rune("▁▂▃▄▅▆▇█")

func (overviewView) view(m *Model, w, h int) string {
	st, s := m.styles, m.state
	var b strings.Builder
	steps := "no steps yet"
	if n := len(s.Steps); n > 0 {
		p := append([]int64(nil), s.Steps...)
		steps = fmt.Sprintf("steps %d, last %s, p50 %s", s.StepCount, report.Dur(s.Steps[n-1]), report.Dur(timeline.Percentile(p, 50)))
	}
	cache := "comm cache: none created"
	if lookups := s.CommHits + s.CommMiss; lookups > 0 {
		cache = fmt.Sprintf("comm cache %.0f%% hits (%d hits, %d misses, %d evictions)", 100*float64(s.CommHits)/float64(lookups), s.CommHits, s.CommMiss, s.CommEvict)
	}
	fmt.Fprintf(&b, "%s %s   %s   %s\n", st.Title.Render("Moved"), report.Bytes(s.Moved), steps, cache)
	b.WriteString(st.Muted.Render("each link: GB/s now and % of its peak; total GB/s; history of the total") + "\n")

	// One row per device: each link's throughput and share of its peak, then a sparkline of the
	// device's total over recent history.
	bucket := s.Now/agg.BucketNs - 1
	const dev, cell, total = 5, 12, 9
	histW := max(w-dev-agg.Links*cell-total-2, 8)
	histW = min(histW, agg.History)
	head := fmt.Sprintf("%-*s", dev, "dev")
	for _, n := range agg.LinkNames {
		head += fmt.Sprintf("%*s", cell, n)
	}
	head += fmt.Sprintf("%*s  %s", total, "total", fmt.Sprintf("last %s", report.Dur(int64(histW)*agg.BucketNs)))
	b.WriteString(st.Muted.Render(head) + "\n")
	var peak float64
	for d := range s.Devices {
		for k := bucket - int64(histW) + 1; k <= bucket; k++ {
			var t float64
			for l := range agg.Links {
				t += s.Devices[d].Rate(l, k)
			}
			peak = max(peak, t)
		}
	}
	rows := h - 5
	for d := range s.Devices {
		if d >= rows {
			fmt.Fprintf(&b, st.Muted.Render("… %d more devices (widen or heighten the terminal)")+"\n", len(s.Devices)-d)
			break
		}
		ds := &s.Devices[d]
		line := fmt.Sprintf("%-*d", dev, d)
		var sum float64
		for l := range agg.Links {
			r := ds.Rate(l, bucket)
			sum += r
			pct := ""
			if p := m.info.Peak[l]; p > 0 {
				pct = fmt.Sprintf("%3.0f%%", 100*r/p)
			}
			txt := fmt.Sprintf("%*s", cell, fmt.Sprintf("%.1f %s", r/1e9, pct))
			switch p := m.info.Peak[l]; {
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
			var t float64
			for l := range agg.Links {
				t += ds.Rate(l, k)
			}
			if t <= 0 || peak <= 0 {
				spark.WriteRune(' ')
				continue
			}
			spark.WriteRune(sparks[min(int(t/peak*float64(len(sparks)-1)+0.5), len(sparks)-1)])
		}
		b.WriteString(line + st.Good.Render(spark.String()) + "\n")
	}
	if len(s.Telemetry) > 0 {
		b.WriteString(st.Title.Render("GPU telemetry (NVML):"))
		devs := make([]int32, 0, len(s.Telemetry))
		for d := range s.Telemetry {
			devs = append(devs, d)
		}
		slices.Sort(devs)
		for _, d := range devs {
			t := s.Telemetry[d]
			fmt.Fprintf(&b, "  gpu%d %d%% %.0fW %d°C PCIe %.1f/%.1f GB/s", d, t[timeline.SampleUtilization], float64(t[timeline.SamplePowerMilliW])/1e3,
				t[timeline.SampleTempC], float64(t[timeline.SamplePCIeRx])/1e9, float64(t[timeline.SamplePCIeTx])/1e9)
		}
		b.WriteString("\n")
	}
	if len(s.Alerts) > 0 {
		b.WriteString(st.Alert.Render(fmt.Sprintf("Alerts (%d):", len(s.Alerts))) + "\n")
		for _, a := range s.Alerts[max(0, len(s.Alerts)-3):] {
			b.WriteString(st.Alert.Render("  "+report.Dur(a.At)+"  "+a.Message) + "\n")
		}
	}
	if s.Missed > 0 {
		b.WriteString(st.Warn.Render(fmt.Sprintf("%d events went by while the view was behind (still recorded)", s.Missed)) + "\n")
	}
	return b.String()
}
