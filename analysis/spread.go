package analysis

import (
	"math"
	"slices"
)

// Spread is how a figure is distributed across devices: its smallest value, the 10th, 50th and
// 90th percentiles (nearest rank, exact: one value per device) and its largest. N is how many
// devices had the figure known; a Spread of none has N = 0 and no meaningful fields.
type Spread struct {
	N                       int
	Min, P10, P50, P90, Max float64
}

// SpreadOf returns the spread of vals (one per device), skipping NaN (unknown). It sorts a copy:
// vals is left as it was.
func SpreadOf(vals []float64) Spread {
	s := make([]float64, 0, len(vals))
	for _, v := range vals {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	if len(s) == 0 {
		return Spread{}
	}
	slices.Sort(s)
	at := func(p float64) float64 {
		rank := int(math.Ceil(p/100*float64(len(s)))) - 1 // nearest rank, as Quantiles
		return s[max(0, min(rank, len(s)-1))]
	}
	return Spread{N: len(s), Min: s[0], P10: at(10), P50: at(50), P90: at(90), Max: s[len(s)-1]}
}

// BusyPct is the share of the device's span in which some op of it ran: 100 − IdlePct. ok is
// false when the device has no span yet (nothing, or only instants, ran): unknown, not 0.
func (d DeviceTime) BusyPct() (pct float64, ok bool) {
	if !d.Known() {
		return 0, false // ran nothing, or its source records no kernels: busy is unknown
	}
	return round2(100 - d.IdlePct), true
}

// PctOfPeak is the link's rate over history bucket k as a percentage of peak (bytes/s, the
// link's one-way peak). ok is false when the peak is unknown (0) or the history does not hold
// bucket k.
func (d *DeviceLinks) PctOfPeak(link Link, k int64, peak float64) (pct float64, ok bool) {
	if peak <= 0 {
		return 0, false
	}
	r, ok := d.Rate(link, k)
	if !ok {
		return 0, false
	}
	return 100 * r / peak, true
}

// MeanPctOfPeak is the link's mean rate over durNs (its busier direction's bytes / durNs) as a
// percentage of peak: what a finished run's link did on average. ok is false when the peak or the
// duration is unknown (0).
func (d *DeviceLinks) MeanPctOfPeak(link Link, durNs int64, peak float64) (pct float64, ok bool) {
	if peak <= 0 || durNs <= 0 || link < 0 || link >= NumLinks {
		return 0, false
	}
	b := max(d.Dir[link][DirTx], d.Dir[link][DirRx])
	return 100 * float64(b) / (float64(durNs) / 1e9) / peak, true
}
