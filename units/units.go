package units

import (
	"fmt"
	"math"
	"strconv"
)

// Unknown is how a value that is not known is shown.
const Unknown = "—"

// sig3 formats x with three significant figures for x in [1, 1000).
func sig3(x float64) string {
	switch {
	case x >= 99.95 || x <= -99.95:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 9.995 || x <= -9.995:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// Dur formats nanoseconds: "830 ns", "9.80 µs", "277 ms", "2.00 s"; past 100 s in minutes and hours.
func Dur(ns int64) string {
	a := ns
	if a < 0 {
		a = -a
	}
	f := float64(ns)
	switch {
	case ns == 0:
		return "0 s"
	case a < 1_000:
		return fmt.Sprintf("%d ns", ns)
	case a < 999_500:
		return sig3(f/1e3) + " µs"
	case a < 999_500_000:
		return sig3(f/1e6) + " ms"
	case a < 100_000_000_000:
		return sig3(f/1e9) + " s"
	case a < 3600_000_000_000:
		return fmt.Sprintf("%dm%02ds", ns/60e9, (a/1e9)%60)
	}
	return fmt.Sprintf("%dh%02dm", ns/3600e9, (a/60e9)%60)
}

// DurAt formats a time as Dur does, with as many more decimals as it takes to tell apart two times
// res ns apart: a timeline zoomed to 31.2 µs a column labels 10.8 s as "10.80012 s", not "10.8 s".
func DurAt(ns, res int64) string {
	a := ns
	if a < 0 {
		a = -a
	}
	var scale int64 // ns per unit
	var unit string
	switch {
	case res <= 0 || a < 1_000:
		return Dur(ns)
	case a < 999_500:
		scale, unit = 1_000, " µs"
	case a < 999_500_000:
		scale, unit = 1_000_000, " ms"
	case a < 100_000_000_000:
		scale, unit = 1_000_000_000, " s"
	default:
		if res >= 1_000_000_000 || a >= 3600_000_000_000 {
			return Dur(ns)
		}
		d := decimals(1_000_000_000, res)
		sign := ""
		if ns < 0 {
			sign = "-"
		}
		return fmt.Sprintf("%s%dm%0*.*fs", sign, a/60e9, d+3, d, float64(a%60e9)/1e9)
	}
	v := float64(ns) / float64(scale)
	// Dur's last digit: a unit for values of 100 and more, a tenth from 10, a hundredth below.
	step := float64(scale) / 100
	switch {
	case v >= 99.95 || v <= -99.95:
		step = float64(scale)
	case v >= 9.995 || v <= -9.995:
		step = float64(scale) / 10
	}
	if step <= float64(res) {
		return Dur(ns)
	}
	return strconv.FormatFloat(v, 'f', decimals(scale, res), 64) + unit
}

// decimals is how many decimals of a unit of scale ns tell apart times res ns apart (at most 9).
func decimals(scale, res int64) int {
	d := 0
	for step := scale; step > res && d < 9; step /= 10 {
		d++
	}
	return d
}

// DurP formats a duration that may be unknown (nil).
func DurP(ns *int64) string {
	if ns == nil {
		return Unknown
	}
	return Dur(*ns)
}

// Bytes formats a byte count with binary units: "512 B", "16 MiB", "1.5 GiB".
func Bytes(n int64) string {
	a := n
	if a < 0 {
		a = -a
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	if a < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n) / 1024
	u := 0
	for (f >= 1024 || f <= -1024) && u < len(units)-1 {
		f /= 1024
		u++
	}
	return strconv.FormatFloat(f, 'g', 4, 64) + " " + units[u]
}

// GBps formats a rate in GB/s (10⁹ bytes per second), "—" when unknown (nil).
func GBps(r *float64) string {
	if r == nil {
		return Unknown
	}
	if a := math.Abs(*r); a < 1 && a > 0 {
		return GBpsFigure(*r) + " GB/s" // three significant digits, not "0.0"
	}
	return fmt.Sprintf("%.1f GB/s", *r)
}

// GBpsBounds formats the bounds of a rate in GB/s that the timestamps' resolution leaves
// uncertain (analysis.Stats' GBpsMin and GBpsMax): "838.86–1398.10", "≥ 0.50" without an upper
// bound (the ops may have taken no time), "—" without a lower one. The text report and the
// console's views all show a bounded rate so, and only so.
func GBpsBounds(lo, hi *float64) string {
	switch {
	case lo == nil:
		return Unknown
	case hi == nil:
		return "≥ " + GBpsFigure(*lo)
	}
	return GBpsFigure(*lo) + "–" + GBpsFigure(*hi)
}

// GBpsFigure is a rate in GB/s with two decimals, or, below 1 GB/s, three significant digits:
// a 4 KiB collective's 0.00412 GB/s is not "0.00". Past nine decimals it is 0.
func GBpsFigure(v float64) string {
	a := math.Abs(v)
	if a >= 1 || a == 0 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	prec := min(2-int(math.Floor(math.Log10(a))), 9)
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// Rate formats bytes per second: "830 MB/s", "54.8 GB/s" (decimal units, as link speeds are quoted).
func Rate(bps float64) string {
	switch {
	case bps >= 1e9:
		return sig3(bps/1e9) + " GB/s"
	case bps >= 1e6:
		return sig3(bps/1e6) + " MB/s"
	case bps >= 1e3:
		return sig3(bps/1e3) + " kB/s"
	}
	return fmt.Sprintf("%.0f B/s", bps)
}

// Pct formats a percentage with one decimal, "—" when unknown (nil).
func Pct(p *float64) string {
	if p == nil {
		return Unknown
	}
	return fmt.Sprintf("%.1f%%", *p)
}

// HitRate formats the share of lookups that hit, as "99.8%": never "100%" while there were
// misses, nor "0%" while there were hits (Share); "—" with no lookups. The console's overview and
// its comms view both say it so.
func HitRate(hits, misses int64) string {
	if hits+misses <= 0 {
		return Unknown
	}
	return Share(100*float64(hits)/float64(hits+misses)) + "%"
}

// Share formats a percentage of a whole with one decimal and no sign, never rounding a part to
// nothing or to all of it: "<0.1" above 0 and below 0.05, ">99.9" from 99.95 and below 100. A
// device idle for a moment then never reads idle 0.0 beside the cause of its idle time.
func Share(p float64) string {
	switch {
	case p > 0 && p < 0.05:
		return "<0.1"
	case p >= 99.95 && p < 100:
		return ">99.9"
	}
	return fmt.Sprintf("%.1f", p)
}

// Count formats a count with decimal suffixes: "830", "11.4 k", "27.3 M", "1.20 G".
func Count(n float64) string {
	a := n
	if a < 0 {
		a = -a
	}
	switch {
	case a < 999.5:
		return strconv.FormatFloat(n, 'f', 0, 64)
	case a < 999_500:
		return sig3(n/1e3) + " k"
	case a < 999_500_000:
		return sig3(n/1e6) + " M"
	}
	return sig3(n/1e9) + " G"
}

// Bound marks a figure as a bound ("≥ 9.55 ms", "≤ 0.44"): sign is "≥" or "≤". An unknown
// figure stays unknown, unmarked. The text report and the console mark a partial collective
// row's figures (those of the ranks seen) so, and only so.
func Bound(sign, figure string) string {
	if figure == Unknown || figure == "" {
		return figure
	}
	return sign + " " + figure
}
