package events

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// Bounds on a search's work and memory: a frame formats at most searchBudget events (a search of
// millions of events held goes on over several frames, newest first), and the newest maxMatches
// lines that match are kept.
const (
	searchBudget = 50_000
	maxMatches   = 20_000
)

// search finds the lines that match a query among every event the console's window holds, not
// only the last agg.MaxLog of them: at 1,024 GPUs those are 10 ms, and a rank's events are rarely
// among them. It scans from where it began towards the oldest event held, and the events that
// arrive after it began as they come, within a budget per frame.
type search struct {
	query string
	gen   uint64
	// [lo, hi) are the event indices searched; newer are the matches at hi's side, oldest first,
	// older those below where the search began, newest first.
	lo, hi       int64
	newer, older []int64
	// uncounted bounds the events whose matches were not all kept: below it the cap let matches go
	// (older ones not searched, or newer ones dropped), so the count is a floor while the window
	// still holds any of them.
	uncounted int64
}

// reset starts a search for query in snap's events.
func (s *search) reset(query string, snap *timeline.Snapshot) {
	*s = search{query: query, gen: snap.Generation, lo: snap.Total, hi: snap.Total, newer: s.newer[:0], older: s.older[:0]}
}

// update carries the search on over snap: the events that arrived since the last frame, then
// older ones, format(i) giving event i's line ("" for none: not a line of the log).
func (s *search) update(query string, snap *timeline.Snapshot, format func(int64) string) {
	if query != s.query || snap.Generation != s.gen || snap.Total < s.hi {
		s.reset(query, snap)
	}
	budget := searchBudget
	match := func(i int64) bool {
		budget--
		l := format(i)
		return l != "" && strings.Contains(strings.ToLower(l), s.query)
	}
	for ; s.hi < snap.Total && budget > 0; s.hi++ {
		if match(s.hi) {
			s.newer = append(s.newer, s.hi)
		}
	}
	// Events the window has since let go are no longer shown.
	s.lo = max(s.lo, snap.Base)
	s.older = slices.DeleteFunc(s.older, func(i int64) bool { return i < snap.Base })
	s.newer = slices.DeleteFunc(s.newer, func(i int64) bool { return i < snap.Base })
	for ; s.lo > snap.Base && budget > 0; s.lo-- {
		if len(s.older)+len(s.newer) >= maxMatches {
			s.uncounted = max(s.uncounted, s.lo)
			s.lo = snap.Base // enough: the newest are kept
			break
		}
		if match(s.lo - 1) {
			s.older = append(s.older, s.lo-1)
		}
	}
	if n := len(s.newer) - maxMatches; n > 0 {
		s.uncounted = max(s.uncounted, s.newer[n-1]+1)
		s.newer = slices.Delete(s.newer, 0, n)
	}
}

// done reports whether every event snap holds was searched.
func (s *search) done(snap *timeline.Snapshot) bool { return s.lo <= snap.Base && s.hi >= snap.Total }

// searched is how many events were searched.
func (s *search) searched() int64 { return s.hi - s.lo }

// capped reports whether matches among the events snap holds were let go for the cap, so that
// matches is a floor rather than the count.
func (s *search) capped(snap *timeline.Snapshot) bool { return s.uncounted > snap.Base }

// header says how many lines match among held (the events held, formatted): the count when every
// match was kept, and that only the newest maxMatches are shown when the cap let some go.
func (s *search) header(snap *timeline.Snapshot, held, state string) string {
	switch {
	case !s.done(snap):
		return fmt.Sprintf("searching: %s so far in %s of %s events held, %s", units.Counted(s.matches(), "match", "matches"),
			units.Count(float64(s.searched())), held, state)
	case s.capped(snap):
		return fmt.Sprintf("more than %d matches in the %s events held (the newest %d shown, the rest not counted), %s",
			maxMatches, held, maxMatches, state)
	}
	return fmt.Sprintf("%s in all %s events held, %s", units.Counted(s.matches(), "match", "matches"), held, state)
}

// matches is how many lines match.
func (s *search) matches() int { return len(s.newer) + len(s.older) }

// nth returns the index of the k-th newest match.
func (s *search) nth(k int) int64 {
	if k < len(s.newer) {
		return s.newer[len(s.newer)-1-k]
	}
	return s.older[k-len(s.newer)]
}
