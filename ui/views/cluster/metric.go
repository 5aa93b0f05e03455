package cluster

import (
	"math"
	"slices"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/ui/widget"
)

// Metric is a figure the heatmap shows, one value per device. The value is the analysis's
// (analysis.DeviceTime, analysis.DeviceLinks); the view only places and formats it. Another
// figure, such as the findings against a device, is one more Metric in Metrics.
type Metric struct {
	Name string // what the title and the legend call it
	Unit string // printed after a value ("%")
	// Max is the top of the scale the glyphs split in five (100 for a percentage); 0 takes the
	// largest value of the frame.
	Max float64
	// HighIsBad says which end is worst: the colours and the worst lists follow it.
	HighIsBad bool
	// Value returns device d's figure, false when it is unknown.
	Value func(ds *Devices, d int32) (float64, bool)
}

// Metrics returns the metrics the view cycles through, in order.
func Metrics() []Metric {
	ms := []Metric{
		{Name: "busy %", Unit: "%", Max: 100, Value: func(ds *Devices, d int32) (float64, bool) {
			t, ok := ds.Time(d)
			if !ok {
				return 0, false
			}
			return t.BusyPct()
		}},
		{Name: "idle %", Unit: "%", Max: 100, HighIsBad: true, Value: func(ds *Devices, d int32) (float64, bool) {
			t, ok := ds.Time(d)
			if !ok || !t.Known() {
				return 0, false
			}
			return t.IdlePct, true
		}},
	}
	for l := range analysis.NumLinks {
		ms = append(ms, Metric{Name: l.String() + " % of peak", Unit: "%", Max: 100, HighIsBad: true,
			Value: func(ds *Devices, d int32) (float64, bool) { return ds.LinkPct(l, d) }})
	}
	ms = append(ms, Metric{Name: "findings (confidence %)", Unit: "%", Max: 100, HighIsBad: true,
		Value: func(ds *Devices, d int32) (float64, bool) { return ds.FindingPct(d) }})
	return ms
}

// FindingPct is the confidence, as a percentage, of the most confident finding of the diagnosis
// that names device d as its culprit, or names d's host when it names no device; 0 when none
// does (the diagnosis runs on every source, so no finding is a known 0).
func (ds *Devices) FindingPct(d int32) (float64, bool) {
	if ds.res == nil || d < 0 || int(d) >= ds.n {
		return 0, false
	}
	host := int32(int(d) / max(ds.fr.Meta.HostGPUs(), 1))
	best := 0.0
	for _, f := range ds.res.Findings {
		if f.Rank == d || (f.Rank < 0 && f.Host >= 0 && f.Host == host) {
			best = max(best, 100*f.Confidence)
		}
	}
	return best, true
}

// Devices is what the metrics read of one frame: the analysis's rows by device id. It is rebuilt
// when the frame's Result changes and read-only after.
type Devices struct {
	fr    *widget.Frame
	res   *analysis.Result
	n     int     // devices in the job
	times []int32 // device → its row in Breakdown.Devices, -1 for none
}

// Reset points ds at fr's Result; it reports whether that changed anything.
func (ds *Devices) Reset(fr *widget.Frame) bool {
	if ds.res == fr.Res && ds.fr == fr && ds.res != nil {
		return false
	}
	ds.fr, ds.res = fr, fr.Res
	n := fr.Meta.Devices
	if fr.Res != nil {
		n = max(n, len(fr.Res.Links.Devices))
		if b := fr.Res.Breakdown.Devices; len(b) > 0 {
			n = max(n, int(b[len(b)-1].Device)+1)
		}
	}
	ds.n = min(n, analysis.MaxDevices)
	ds.times = slices.Grow(ds.times[:0], ds.n)[:ds.n]
	for i := range ds.times {
		ds.times[i] = -1
	}
	if fr.Res != nil {
		for i, t := range fr.Res.Breakdown.Devices {
			if t.Device >= 0 && int(t.Device) < ds.n {
				ds.times[t.Device] = int32(i)
			}
		}
	}
	return true
}

// N is how many devices the job has (the largest id seen + 1 when the run's description says
// fewer).
func (ds *Devices) N() int { return ds.n }

// Time returns device d's temporal breakdown; false when it ran nothing yet.
func (ds *Devices) Time(d int32) (analysis.DeviceTime, bool) {
	if d < 0 || int(d) >= ds.n || ds.times[d] < 0 {
		return analysis.DeviceTime{}, false
	}
	return ds.res.Breakdown.Devices[ds.times[d]], true
}

// LinkPct is device d's link l as a percentage of its peak: over the newest complete history
// bucket while the source runs, over the whole run once it has ended (its last bucket would say
// only how the run ended).
func (ds *Devices) LinkPct(l analysis.Link, d int32) (float64, bool) {
	if ds.res == nil || d < 0 || int(d) >= ds.n {
		return 0, false
	}
	if int(d) >= len(ds.res.Links.Devices) || ds.res.Links.Devices[d].Device != d {
		// Nothing counted on the device's links yet (past the rows by id, the rows are of devices
		// with ids past analysis.MaxDevices): where the source measures its links, they
		// carried nothing (a job's first communicator setup); otherwise it is not known.
		return 0, ds.fr.Meta.LinkBytes && ds.fr.Meta.LinkPeaks[l] > 0
	}
	dl := ds.res.Links.Devices[d]
	if !dl.Known(l) {
		return 0, false // part of its bytes are in no source: the report's "≥" or "—"
	}
	peak := ds.fr.Meta.LinkPeaks[l]
	if ds.fr.Live {
		return dl.PctOfPeak(l, ds.fr.State.Now/analysis.BucketNs-1, peak)
	}
	return dl.MeanPctOfPeak(l, ds.res.DurationNs, peak)
}

// LinkWhen says over what time LinkPct is taken.
func (ds *Devices) LinkWhen() string {
	if ds.fr != nil && ds.fr.Live {
		return "over the last 50 ms"
	}
	return "mean over the run"
}

// Fill writes metric m's value of every device into vals (resized to N), NaN where unknown.
func (ds *Devices) Fill(m Metric, vals []float64) []float64 {
	vals = slices.Grow(vals[:0], ds.n)[:ds.n]
	for d := range vals {
		v, ok := m.Value(ds, int32(d))
		if !ok {
			v = math.NaN()
		}
		vals[d] = v
	}
	return vals
}

// worse reports whether a is worse than b under m; an unknown value is never worse.
func (m Metric) worse(a, b float64) bool {
	switch {
	case math.IsNaN(a):
		return false
	case math.IsNaN(b):
		return true
	case m.HighIsBad:
		return a > b
	}
	return a < b
}

// shown is a value as the view writes it, to a tenth of its unit (fmtVal): two values that read
// the same are a tie.
func shown(x float64) float64 { return math.Round(x*10) / 10 }

// before reports whether device a, of value x, ranks before device b, of value y, wherever the
// view names the worst: the worst lists, a host's worst GPU, a cell's worst device (the cursor
// names it). The worse value as shown comes first; a tie goes to the lower device id, so the lists
// and the cursor name the same device whatever order the devices were seen in. An unknown value
// never ranks before.
func (m Metric) before(x float64, a int32, y float64, b int32) bool {
	sx, sy := shown(x), shown(y)
	if sx != sy || math.IsNaN(sx) {
		return m.worse(sx, sy)
	}
	return a < b
}

// order says which end the worst lists start from.
func (m Metric) order() string {
	if m.HighIsBad {
		return "highest first"
	}
	return "lowest first"
}
