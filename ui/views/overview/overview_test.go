package overview

import (
	"testing"

	"github.com/xfertop/xfertop/analysis"
)

func TestProfilerCostLine(t *testing.T) {
	pct := func(v float64) *float64 { return &v }
	tests := []struct {
		rows []analysis.ProfilerCost
		want string
	}{
		{[]analysis.ProfilerCost{{Device: 0, NsPerCallback: 80, OverheadPct: pct(0.4)}, {Device: 1, NsPerCallback: 95, OverheadPct: pct(1.25)},
			{Device: 2, NsPerCallback: 70, OverheadPct: pct(0.3)}},
			"NCCL profiler plugin's cost: 80 ns/callback (p50 of 3 ranks, worst 95, rank 1), 0.40 % of NCCL op time (worst 1.25 %, rank 1)"},
		{[]analysis.ProfilerCost{{Device: 4, NsPerCallback: 60}},
			"NCCL profiler plugin's cost: 60 ns/callback (p50 of 1 ranks, worst 60, rank 4), share of NCCL op time — (none observed yet)"},
	}
	for _, tt := range tests {
		if got := profilerCostLine(tt.rows); got != tt.want {
			t.Errorf("profilerCostLine(%+v)\n = %q\nwant %q", tt.rows, got, tt.want)
		}
	}
}
