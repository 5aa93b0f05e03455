package units

import "testing"

func TestFormats(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	n := func(x int64) *int64 { return &x }
	tests := []struct{ got, want string }{
		{Dur(0), "0 s"},
		{Dur(830), "830 ns"},
		{Dur(9_800), "9.80 µs"},
		{Dur(999_999), "1.00 ms"},
		{Dur(277_000_000), "277 ms"},
		{Dur(2_000_000_000), "2.00 s"},
		{Dur(-4_147_000), "-4.15 ms"},
		{Dur(125_000_000_000), "2m05s"},
		{Dur(7_260_000_000_000), "2h01m"},
		{DurAt(10_800_123_456, 31_250), "10.80012 s"},
		{DurAt(10_800_154_706, 31_250), "10.80015 s"},
		{DurAt(10_800_000_000, 100_000_000), "10.8 s"},
		{DurAt(277_123_000, 1_000), "277.123 ms"},
		{DurAt(277_123_000, 2_000_000), "277 ms"},
		{DurAt(9_800, 1), "9.800 µs"},
		{DurAt(830, 1), "830 ns"},
		{DurAt(-4_147_000, 500), "-4.1470 ms"},
		{DurAt(125_250_000_000, 10_000_000), "2m05.25s"},
		{DurAt(125_000_000_000, 5_000_000_000), "2m05s"},
		{DurAt(5_000_000_000, 0), "5.00 s"},
		{DurP(nil), "—"},
		{DurP(n(1500)), "1.50 µs"},
		{Bytes(512), "512 B"},
		{Bytes(16 << 20), "16 MiB"},
		{Bytes(3 << 29), "1.5 GiB"},
		{Bytes(18_874_368), "18 MiB"},
		{GBps(nil), "—"},
		{GBps(f(54.84)), "54.8 GB/s"},
		{GBpsBounds(nil, f(2)), "—"},
		{GBpsBounds(f(838.86), f(1398.1)), "838.86–1398.10"},
		{GBpsBounds(f(0.5), nil), "≥ 0.500"},
		{Rate(54.8e9), "54.8 GB/s"},
		{Rate(830e6), "830 MB/s"},
		{Pct(nil), "—"},
		{Pct(f(15.62)), "15.6%"},
		{Count(830), "830"},
		{Count(11_400), "11.4 k"},
		{Count(27_300_000), "27.3 M"},
		{Count(1.2e9), "1.20 G"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q; want %q", tt.got, tt.want)
		}
	}
}

func TestShare(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want string
	}{{0, "0.0"}, {0.01, "<0.1"}, {0.05, "0.1"}, {12.34, "12.3"}, {99.94, "99.9"}, {99.96, ">99.9"}, {100, "100.0"}} {
		if got := Share(c.p); got != c.want {
			t.Errorf("Share(%v) = %q; want %q", c.p, got, c.want)
		}
	}
}

func TestCounted(t *testing.T) {
	for _, c := range []struct {
		n    int
		one  string
		many []string
		want string
	}{
		{1, "rank", nil, "1 rank"}, {0, "rank", nil, "0 ranks"}, {7, "rank", nil, "7 ranks"},
		{1, "miss", nil, "1 miss"}, {2, "miss", nil, "2 misses"}, {2, "entry", nil, "2 entries"},
		{2, "day", nil, "2 days"}, {3, "GPU", nil, "3 GPUs"}, {2, "batch", nil, "2 batches"},
		{2, "port sample", nil, "2 port samples"}, {1, "is", []string{"are"}, "1 is"}, {4, "is", []string{"are"}, "4 are"},
	} {
		if got := Counted(c.n, c.one, c.many...); got != c.want {
			t.Errorf("Counted(%d, %q, %q) = %q; want %q", c.n, c.one, c.many, got, c.want)
		}
	}
	if got := Plural(int64(1), "rank"); got != "rank" {
		t.Errorf("Plural(1, rank) = %q", got)
	}
}

// A hit rate never reads 100% while there were misses (1,024 GPUs: 928 misses in many
// lookups), nor 0% while there were hits.
func TestHitRate(t *testing.T) {
	for _, c := range []struct {
		hits, misses int64
		want         string
	}{
		{600_000, 928, "99.8%"},
		{2_000_000, 928, ">99.9%"},
		{177, 3, "98.3%"},
		{10, 0, "100.0%"},
		{1, 30_000, "<0.1%"},
		{0, 0, Unknown},
	} {
		if got := HitRate(c.hits, c.misses); got != c.want {
			t.Errorf("HitRate(%d, %d) = %q; want %q", c.hits, c.misses, got, c.want)
		}
	}
}

// A rate below 1 GB/s keeps three significant digits: a 4 KiB collective's rate is not "0.00".
func TestGBpsFigure(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{110.98, "110.98"}, {1, "1.00"}, {0, "0.00"}, {0.412, "0.412"}, {0.0041, "0.00410"},
		{0.00004119, "0.0000412"}, {-0.0041, "-0.00410"}, {1e-12, "0.000000000"},
	} {
		if got := GBpsFigure(tc.in); got != tc.want {
			t.Errorf("GBpsFigure(%v) = %q; want %q", tc.in, got, tc.want)
		}
	}
	if r := 0.0041; GBps(&r) != "0.00410 GB/s" {
		t.Errorf("GBps(0.0041) = %q", GBps(&r))
	}
}
