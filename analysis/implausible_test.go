package analysis

import "testing"

// TestRateAboveEverything: a group whose bytes and time give a rate above timeline.MaxRateGBps,
// even at the bound the timestamps' resolution allows (1 GB in "0 µs"), has an unknown rate, not
// a figure or a bound above every link; a plausible group keeps its figure or bounds.
func TestRateAboveEverything(t *testing.T) {
	tests := []struct {
		name        string
		bytes, dur  int64 // one op
		tick        int64
		known, anyB bool // a figure (GBps); a bound (GBpsMin)
	}{
		{"1 GB in no time, µs ticks", 1e9, 0, 1000, false, false},
		{"1 GB in 10 ns, ns ticks", 1e9, 10, 1, false, false},
		{"8 B in no time, µs ticks", 8, 0, 1000, false, true},
		{"1 GB in 10 ms", 1e9, 10e6, 1000, true, false},
	}
	for _, tc := range tests {
		var s opStats
		s.add(tc.bytes, tc.dur, emuNone)
		got := s.result(tc.tick)
		if (got.GBps != nil) != tc.known || (got.GBpsMin != nil) != tc.anyB {
			t.Errorf("%s: GBps %v, GBpsMin %v; want a figure %v, a bound %v", tc.name, orNil(got.GBps), orNil(got.GBpsMin), tc.known, tc.anyB)
		}
	}
}

func orNil(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
