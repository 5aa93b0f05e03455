package analysis

import (
	"slices"

	"github.com/DataDog/sketches-go/ddsketch"
)

// Percentile estimation: exact (nearest rank) while a stream has at most exactLimit values, then a
// DDSketch whose answers are within sketchAccuracy of the true value (relative error), in at most
// sketchBins bins whatever the length of the run.
const (
	exactLimit     = 1024
	sketchAccuracy = 0.01
	sketchBins     = 2048
)

// Quantiles estimates percentiles of a stream of non-negative values in bounded memory.
// The zero value is ready to use.
type Quantiles struct {
	exact  []float64
	sketch *ddsketch.DDSketch
	n      int64
}

// Add records v.
func (q *Quantiles) Add(v float64) {
	q.n++
	if q.sketch == nil {
		if len(q.exact) < exactLimit {
			q.exact = append(q.exact, v)
			return
		}
		s, err := ddsketch.LogCollapsingLowestDenseDDSketch(sketchAccuracy, sketchBins)
		if err != nil {
			panic(err) // constant arguments: cannot fail
		}
		for _, x := range q.exact {
			_ = s.Add(x)
		}
		q.sketch, q.exact = s, nil
	}
	_ = q.sketch.Add(max(v, 0))
}

// Count returns how many values were added.
func (q *Quantiles) Count() int64 { return q.n }

// Exact reports whether Quantile answers exactly (no more than exactLimit values so far).
func (q *Quantiles) Exact() bool { return q.sketch == nil }

// Quantile returns the p-th percentile (0..100): nearest rank while exact, else within 1% of it.
// ok is false when no value was added.
func (q *Quantiles) Quantile(p float64) (v float64, ok bool) {
	if q.n == 0 {
		return 0, false
	}
	if q.sketch == nil {
		s := slices.Clone(q.exact)
		slices.Sort(s)
		rank := int(p/100*float64(len(s))+0.9999999) - 1
		return s[max(0, min(rank, len(s)-1))], true
	}
	v, err := q.sketch.GetValueAtQuantile(min(max(p/100, 0), 1))
	if err != nil {
		return 0, false
	}
	return v, true
}

// clone returns an independent copy.
func (q *Quantiles) clone() Quantiles {
	c := Quantiles{n: q.n, exact: append([]float64(nil), q.exact...)}
	if q.sketch != nil {
		c.sketch = q.sketch.Copy()
	}
	return c
}

// quantileNs is Quantile for durations: whole nanoseconds, nil when unknown.
func (q *Quantiles) quantileNs(p float64) *int64 {
	v, ok := q.Quantile(p)
	if !ok {
		return nil
	}
	n := int64(v + 0.5)
	return &n
}
