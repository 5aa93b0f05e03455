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
	// TimesLastPartial counts the times of TimesLast at instances some rank never reported
	// (Collectives.Partial): last of the ranks seen; the unseen rank may have come later still.
	TimesLastPartial int64 `json:"times_last_partial"`
}

type rankLate struct {
	times, partial int64
	late           Quantiles
}

// stragglers folds the instances of one kind of synchronising op: an instance's straggler is the
// rank that arrived measurably last, late by last − median arrival; per rank, how often it was last
// and how late. Measurably: after the median arrival and after every other rank, by 1 ns or more.
// When the latest arrivals tie, or every rank arrived with the median, nobody was late and no rank
// is named: a straggler is a rank the others waited for alone. Barriers and collectives share it,
// so "straggler" means one thing in every report.
type stragglers struct {
	last map[int32]*rankLate
	// base, in an overlay (overlay), holds the ranks the overlay has not touched.
	base    *stragglers
	scratch []int64
}

func newStragglers() stragglers { return stragglers{last: map[int32]*rankLate{}} }

// overlay returns stragglers that read as s and take more instances without changing s: a rank it
// is told of is copied from s first. A result can so fold instances that may yet complete (open
// collectives) at the cost of the ranks they name, not of every rank.
func (s *stragglers) overlay() *stragglers {
	return &stragglers{last: map[int32]*rankLate{}, base: s}
}

// add takes one instance's arrivals (ranks[i] arrived at arrive[i]) and returns its straggler and
// its lateness; ok is false when it has none (one rank, a tie for last, nobody after the median).
// partial says some rank of the instance never reported.
func (s *stragglers) add(ranks []int32, arrive []int64, partial bool) (rank int32, latenessNs int64, ok bool) {
	if len(arrive) < 2 {
		return timeline.NoDevice, 0, false
	}
	late, tie := 0, false
	for i := 1; i < len(arrive); i++ {
		switch {
		case arrive[i] > arrive[late]:
			late, tie = i, false
		case arrive[i] == arrive[late]:
			tie = true
		}
	}
	s.scratch = append(s.scratch[:0], arrive...) // Percentile sorts
	latenessNs = arrive[late] - timeline.Percentile(s.scratch, 50)
	if tie || latenessNs <= 0 {
		return timeline.NoDevice, 0, false
	}
	rank = ranks[late]
	r := s.last[rank]
	if r == nil {
		r = &rankLate{}
		if s.base != nil {
			if b := s.base.last[rank]; b != nil {
				r.times, r.partial, r.late = b.times, b.partial, b.late.clone()
			}
		}
		s.last[rank] = r
	}
	r.times++
	if partial {
		r.partial++
	}
	r.late.Add(float64(latenessNs))
	return rank, latenessNs, true
}

// result lists the ranks that were last, most often first (then by rank).
func (s *stragglers) result() []Straggler {
	out := make([]Straggler, 0, len(s.last))
	for rank, r := range s.last {
		out = append(out, Straggler{Rank: rank, TimesLast: r.times, LatenessNs50: r.late.quantileNs(50), TimesLastPartial: r.partial})
	}
	if s.base != nil {
		for rank, r := range s.base.last {
			if _, ok := s.last[rank]; !ok {
				out = append(out, Straggler{Rank: rank, TimesLast: r.times, LatenessNs50: r.late.quantileNs(50), TimesLastPartial: r.partial})
			}
		}
	}
	slices.SortFunc(out, func(x, y Straggler) int {
		if x.TimesLast != y.TimesLast {
			return cmpInt(y.TimesLast, x.TimesLast)
		}
		return int(x.Rank) - int(y.Rank)
	})
	return out
}
