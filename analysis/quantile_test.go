package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestQuantilesEmpty(t *testing.T) {
	var q Quantiles
	if v, ok := q.Quantile(50); ok || v != 0 {
		t.Errorf("Quantile(50) on no values = %v, %v; want 0, false", v, ok)
	}
	if p := q.quantileNs(99); p != nil {
		t.Errorf("quantileNs(99) on no values = %d; want nil", *p)
	}
	if q.Count() != 0 || !q.Exact() {
		t.Errorf("Count, Exact = %d, %v; want 0, true", q.Count(), q.Exact())
	}
}

func TestQuantilesNearestRank(t *testing.T) {
	ten := []float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	tests := []struct {
		name string
		vals []float64
		p    float64
		want float64
	}{
		{"single", []float64{7}, 99, 7},
		{"even median is the lower one", []float64{4, 1, 3, 2}, 50, 2},
		{"odd median", []float64{5, 1, 4, 2, 3}, 50, 3},
		{"p0 is the minimum", ten, 0, 10},
		{"p10", ten, 10, 10},
		{"p11 rounds the rank up", ten, 11, 20},
		{"p90", ten, 90, 90},
		{"p99", ten, 99, 100},
		{"p100 is the maximum", ten, 100, 100},
		{"duplicates", []float64{3, 3, 3, 1}, 25, 1},
		{"duplicates above", []float64{3, 3, 3, 1}, 26, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var q Quantiles
			for _, v := range tc.vals {
				q.Add(v)
			}
			v, ok := q.Quantile(tc.p)
			if !ok || v != tc.want {
				t.Errorf("Quantile(%v) of %v = %v, %v; want %v, true", tc.p, tc.vals, v, ok, tc.want)
			}
		})
	}
}

func TestQuantileNsRounds(t *testing.T) {
	var q Quantiles
	q.Add(2.5)
	if p := q.quantileNs(50); p == nil || *p != 3 {
		t.Errorf("quantileNs(50) of {2.5} = %v; want 3", fmtPtrI(p))
	}
}

// Up to exactLimit values every percentile is the nearest-rank one; one more switches to the sketch.
func TestQuantilesExactUpToLimit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var q Quantiles
	vals := make([]float64, 0, exactLimit)
	for range exactLimit {
		v := float64(r.IntN(1_000_000))
		vals = append(vals, v)
		q.Add(v)
	}
	if !q.Exact() || q.Count() != exactLimit {
		t.Fatalf("after %d values: Exact, Count = %v, %d; want true, %d", exactLimit, q.Exact(), q.Count(), exactLimit)
	}
	sorted := slices.Sorted(slices.Values(vals))
	for p := 0.0; p <= 100; p += 0.5 {
		if v, ok := q.Quantile(p); !ok || v != nearestRank(sorted, p) {
			t.Errorf("Quantile(%v) = %v, %v; want %v", p, v, ok, nearestRank(sorted, p))
		}
	}
	q.Add(1)
	if q.Exact() || q.Count() != exactLimit+1 {
		t.Errorf("after %d values: Exact, Count = %v, %d; want false, %d", exactLimit+1, q.Exact(), q.Count(), exactLimit+1)
	}
}

// Past exactLimit, answers are within 1% (relative) of the nearest-rank value. The sketch may pick
// a neighbouring rank (DDSketch ranks by q·(n−1)), so the neighbours are accepted as well.
func TestQuantilesSketchAccuracy(t *testing.T) {
	dists := []struct {
		name string
		gen  func(r *rand.Rand) float64
	}{
		{"log-uniform 1µs..1s", func(r *rand.Rand) float64 { return math.Exp(math.Log(1e3) + r.Float64()*math.Log(1e6)) }},
		{"uniform", func(r *rand.Rand) float64 { return 1 + r.Float64()*1e6 }},
		{"bimodal", func(r *rand.Rand) float64 {
			if r.IntN(10) == 0 {
				return 5e8 + r.Float64()*1e8
			}
			return 1e4 + r.Float64()*1e3
		}},
	}
	for i, d := range dists {
		t.Run(d.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 99))
			var q Quantiles
			vals := make([]float64, 100_000)
			for k := range vals {
				vals[k] = d.gen(r)
				q.Add(vals[k])
			}
			slices.Sort(vals)
			if q.Exact() || q.Count() != int64(len(vals)) {
				t.Fatalf("Exact, Count = %v, %d; want false, %d", q.Exact(), q.Count(), len(vals))
			}
			for _, p := range []float64{0, 1, 10, 25, 50, 75, 90, 99, 99.9, 100} {
				got, ok := q.Quantile(p)
				if !ok {
					t.Fatalf("Quantile(%v) not ok", p)
				}
				rank := max(int(math.Ceil(p/100*float64(len(vals)))), 1) - 1
				best := math.Inf(1)
				for k := max(rank-1, 0); k <= min(rank+1, len(vals)-1); k++ {
					best = min(best, math.Abs(got-vals[k])/vals[k])
				}
				if best > sketchAccuracy {
					t.Errorf("Quantile(%v) = %v; nearest rank %v (relative error %.4f > %v)", p, got, vals[rank], best, sketchAccuracy)
				}
			}
		})
	}
}

func TestQuantilesZerosInSketch(t *testing.T) {
	var q Quantiles
	for range 3 * exactLimit {
		q.Add(0)
	}
	q.Add(1000)
	if v, ok := q.Quantile(50); !ok || v != 0 {
		t.Errorf("Quantile(50) of zeros = %v, %v; want 0, true", v, ok)
	}
	if v, ok := q.Quantile(100); !ok || math.Abs(v-1000)/1000 > sketchAccuracy {
		t.Errorf("Quantile(100) = %v, %v; want 1000 ±1%%", v, ok)
	}
}
