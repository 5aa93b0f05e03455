package analysis

import (
	"math"
	"testing"
)

func TestSpreadOf(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		in   []float64
		want Spread
	}{
		{"none", nil, Spread{}},
		{"only unknown", []float64{nan, nan}, Spread{}},
		{"one", []float64{7}, Spread{N: 1, Min: 7, P10: 7, P50: 7, P90: 7, Max: 7}},
		// 1..10 shuffled, an unknown among them: nearest rank p10 = 1st, p50 = 5th, p90 = 9th.
		{"ten", []float64{5, 3, nan, 10, 1, 9, 2, 8, 4, 7, 6}, Spread{N: 10, Min: 1, P10: 1, P50: 5, P90: 9, Max: 10}},
		// 20 values 0, 5, …, 95: p10 = 2nd (5), p50 = 10th (45), p90 = 18th (85).
		{"twenty", func() []float64 {
			v := make([]float64, 20)
			for i := range v {
				v[19-i] = float64(5 * i)
			}
			return v
		}(), Spread{N: 20, Min: 0, P10: 5, P50: 45, P90: 85, Max: 95}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.in...)
			if got := SpreadOf(tt.in); got != tt.want {
				t.Errorf("SpreadOf(%v) = %+v; want %+v", tt.in, got, tt.want)
			}
			for i := range in { // the caller's slice is not sorted in place
				if !(in[i] == tt.in[i] || math.IsNaN(in[i]) && math.IsNaN(tt.in[i])) {
					t.Fatalf("SpreadOf reordered its input: %v", tt.in)
				}
			}
		})
	}
}

func TestBusyPct(t *testing.T) {
	if _, ok := (DeviceTime{}).BusyPct(); ok {
		t.Error("a device without a span has a known busy %")
	}
	if p, ok := (DeviceTime{SpanNs: 100, IdlePct: 25}).BusyPct(); !ok || p != 75 {
		t.Errorf("BusyPct = %v, %v; want 75, true", p, ok)
	}
}

func TestMeanPctOfPeak(t *testing.T) {
	var d DeviceLinks
	d.Dir[LinkNIC][DirTx], d.Dir[LinkNIC][DirRx] = 10e9, 25e9 // the busier direction counts: 25 GB in 1 s
	if p, ok := d.MeanPctOfPeak(LinkNIC, 1e9, 50e9); !ok || p != 50 {
		t.Errorf("MeanPctOfPeak = %v, %v; want 50, true", p, ok)
	}
	for _, c := range []struct {
		dur  int64
		peak float64
	}{{0, 50e9}, {1e9, 0}} {
		if _, ok := d.MeanPctOfPeak(LinkNIC, c.dur, c.peak); ok {
			t.Errorf("MeanPctOfPeak(dur %d, peak %v) is known; want unknown", c.dur, c.peak)
		}
	}
}
