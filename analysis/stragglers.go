package analysis

import (
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// Straggler is a rank that arrived last at a synchronising op (a barrier, a collective): how often,
// and how late (last arrival − median arrival) at the median.
type Straggler struct {
	Rank         int32  `json:"rank"`
	TimesLast    int64  `json:"times_last"`
	LatenessNs50 *int64 `json:"lateness_ns_p50"`
}

type rankLate struct {
	times int64
	late  Quantiles
}

// stragglers folds the instances of one kind of synchronising op: each instance's last arrival is
// its straggler, late by last − median arrival; per rank, how often it was last and how late.
// Barriers and collectives share it, so "straggler" means one thing in every report.
type stragglers struct {
	last    map[int32]*rankLate
	scratch []int64
}

func newStragglers() stragglers { return stragglers{last: map[int32]*rankLate{}} }

// add takes one instance's arrivals (ranks[i] arrived at arrive[i]) and returns its straggler
// (the first of the latest, in the order given) and its lateness. An instance of one rank has no
// straggler to count.
func (s *stragglers) add(ranks []int32, arrive []int64) (rank int32, latenessNs int64) {
	late := 0
	for i := range arrive {
		if arrive[i] > arrive[late] {
			late = i
		}
	}
	s.scratch = append(s.scratch[:0], arrive...) // Percentile sorts
	rank, latenessNs = ranks[late], arrive[late]-timeline.Percentile(s.scratch, 50)
	if len(arrive) > 1 {
		r := s.last[rank]
		if r == nil {
			r = &rankLate{}
			s.last[rank] = r
		}
		r.times++
		r.late.Add(float64(latenessNs))
	}
	return rank, latenessNs
}

// result lists the ranks that were last, most often first (then by rank).
func (s *stragglers) result() []Straggler {
	out := make([]Straggler, 0, len(s.last))
	for rank, r := range s.last {
		out = append(out, Straggler{Rank: rank, TimesLast: r.times, LatenessNs50: r.late.quantileNs(50)})
	}
	slices.SortFunc(out, func(x, y Straggler) int {
		if x.TimesLast != y.TimesLast {
			return cmpInt(y.TimesLast, x.TimesLast)
		}
		return int(x.Rank) - int(y.Rank)
	})
	return out
}
