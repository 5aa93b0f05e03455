package nccltests

import (
	"fmt"
	"io"
	"strings"

	"github.com/xfertop/xfertop/units"
)

// Delta is one size of a reference log against a simulation. Sim values are absent (HasSim
// false) for a size the simulation did not run.
type Delta struct {
	Size                 int64
	RefTimeUs, SimTimeUs float64
	RefBusBW, SimBusBW   float64
	HasSim               bool
	AlgoProto            string // the simulation's algorithm and protocol at this size
}

// TimePct is the simulated time's difference from the reference, % of the reference.
func (d Delta) TimePct() float64 { return pct(d.SimTimeUs, d.RefTimeUs) }

// BusBWPct is the simulated bus bandwidth's difference from the reference, % of the reference.
func (d Delta) BusBWPct() float64 { return pct(d.SimBusBW, d.RefBusBW) }

func pct(sim, ref float64) float64 {
	if ref == 0 {
		return 0
	}
	return (sim - ref) / ref * 100
}

// Diff pairs each row of ref (its out-of-place test, what nccl-tests users quote) with the
// simulated row of the same size.
func Diff(ref, sim *Table) []Delta {
	bySize := map[int64]Row{}
	for _, r := range sim.Rows {
		if _, dup := bySize[r.Size]; !dup {
			bySize[r.Size] = r
		}
	}
	out := make([]Delta, 0, len(ref.Rows))
	for _, r := range ref.Rows {
		d := Delta{Size: r.Size, RefTimeUs: r.Out.TimeUs, RefBusBW: r.Out.BusBW}
		if s, ok := bySize[r.Size]; ok {
			d.SimTimeUs, d.SimBusBW, d.HasSim, d.AlgoProto = s.Out.TimeUs, s.Out.BusBW, true, s.AlgoProto
		}
		out = append(out, d)
	}
	return out
}

// Ranges are the size ranges Compare summarises: latency-bound, the protocols' crossover, the
// approach to the plateau, the plateau.
var Ranges = []struct {
	Name   string
	Lo, Hi int64 // Lo ≤ size < Hi
}{
	{"≤ 64 KiB", 0, 64<<10 + 1},
	{"64 KiB – 16 MiB", 64<<10 + 1, 16 << 20},
	{"16 MiB – 1 GiB", 16 << 20, 1 << 30},
	{"≥ 1 GiB", 1 << 30, 1 << 62},
}

// Compare prints ds: per size the reference and simulated time and bus bandwidth and their
// differences, then per size range the mean difference of the time.
func Compare(w io.Writer, title string, ds []Delta) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", title)
	fmt.Fprintf(&b, "# %10s  %12s  %12s  %8s  %10s  %10s  %8s  %s\n", "size (B)", "ref time(us)", "sim time(us)", "time %", "ref busbw", "sim busbw", "busbw %", "sim algo")
	for _, d := range ds {
		if !d.HasSim {
			fmt.Fprintf(&b, "  %10d  %12.2f  %12s  %8s  %10.2f  %10s  %8s\n", d.Size, d.RefTimeUs, "-", "-", d.RefBusBW, "-", "-")
			continue
		}
		bw := "-" // below 1 GB/s the log's two decimals say too little for a percentage
		if d.RefBusBW >= 1 {
			bw = fmt.Sprintf("%+.1f", d.BusBWPct())
		}
		fmt.Fprintf(&b, "  %10d  %12.2f  %12.2f  %+8.1f  %10.2f  %10.2f  %8s  %s\n", d.Size, d.RefTimeUs, d.SimTimeUs, d.TimePct(),
			d.RefBusBW, d.SimBusBW, bw, d.AlgoProto)
	}
	b.WriteString("# mean time difference by size range (simulated − reference, % of reference):\n")
	for _, rg := range Ranges {
		var sum float64
		n := 0
		for _, d := range ds {
			if d.HasSim && d.RefTimeUs > 0 && d.Size >= rg.Lo && d.Size < rg.Hi {
				sum += d.TimePct()
				n++
			}
		}
		if n > 0 {
			fmt.Fprintf(&b, "#   %-16s %+7.1f%%  (%s)\n", rg.Name, sum/float64(n), units.Counted(n, "size"))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
