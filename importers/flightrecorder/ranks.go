package flightrecorder

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/units"
)

// rankSet is one process group's list of job ranks, held once however many dumps carry it: torch
// writes the whole list into every member's pg_config, so a job of N ranks carries the default
// group's N ranks N times (N² in all), and each dump keeping its own copy made memory grow as
// ranks².
type rankSet struct {
	id     int   // 1-based, in the order first seen
	ranks  []int // as the dump lists them (a group rank's job rank is ranks[group rank])
	sorted []int
}

// has reports whether r is in the set.
func (s *rankSet) has(r int) bool {
	_, ok := slices.BinarySearch(s.sorted, r)
	return ok
}

// rankSets interns the rank lists of one import's dumps.
type rankSets struct {
	byText map[string]*rankSet // torch's text, "[0, 1, 2]", as written
	byList map[string]*rankSet // the ranks, as given, in a canonical text
	n      int
}

func newRankSets() *rankSets {
	return &rankSets{byText: map[string]*rankSet{}, byList: map[string]*rankSet{}}
}

// intern returns the set of a pg_config's "ranks" value; nil when it has none.
func (t *rankSets) intern(v any) (*rankSet, error) {
	if t == nil {
		t = newRankSets()
	}
	text, isText := v.(string)
	if isText {
		if s, ok := t.byText[text]; ok {
			return s, nil
		}
	}
	ranks, err := parseRanks(v)
	if err != nil || ranks == nil {
		return nil, err
	}
	var b strings.Builder
	for _, r := range ranks {
		b.WriteString(strconv.Itoa(r))
		b.WriteByte(',')
	}
	key := b.String()
	s, ok := t.byList[key]
	if !ok {
		t.n++
		s = &rankSet{id: t.n, ranks: ranks, sorted: slices.Clone(ranks)}
		slices.Sort(s.sorted)
		t.byList[key] = s
	}
	if isText {
		t.byText[text] = s
	}
	return s, nil
}

// foreign finds the dumps that are of another job: a dump is when one of its process groups,
// which it is a member of, has other ranks than more of the other dumps say that group (by
// name) has for a set holding the dump's rank ("0" of 8 ranks where 1,023 dumps say 1,024). It
// returns why, by the dump's index. Groups split under one name, each with its own members, tie
// and leave nothing out.
func foreign(dumps []*dump) map[int]string {
	count := map[string]map[*rankSet]int{}
	for _, d := range dumps {
		for name, pc := range d.pgs {
			if pc.set == nil || !pc.set.has(d.rank) {
				continue
			}
			if count[name] == nil {
				count[name] = map[*rankSet]int{}
			}
			count[name][pc.set]++
		}
	}
	bySize := map[string][]*rankSet{} // each name's sets, the most dumps' first
	for name, c := range count {
		if len(c) < 2 {
			continue
		}
		sets := make([]*rankSet, 0, len(c))
		for s := range c {
			sets = append(sets, s)
		}
		sort.Slice(sets, func(a, b int) bool {
			if c[sets[a]] != c[sets[b]] {
				return c[sets[a]] > c[sets[b]]
			}
			return sets[a].id < sets[b].id
		})
		bySize[name] = sets
	}
	out := map[int]string{}
	for i, d := range dumps {
		for _, name := range d.pgNames() {
			pc := d.pgs[name]
			sets := bySize[name]
			if sets == nil || pc.set == nil || !pc.set.has(d.rank) {
				continue
			}
			c := count[name]
			for _, s := range sets {
				if c[s] <= c[pc.set] {
					break
				}
				if s.has(d.rank) {
					out[i] = fmt.Sprintf("its %s has %s, where %s say it has %d: a dump of another job? (left out; its rank counts as one without a dump)",
						pgLabel(&pgInfo{name: name, desc: pc.desc}), units.Counted(len(pc.set.ranks), "rank"), units.Counted(c[s], "other dump"), len(s.ranks))
					break
				}
			}
			if _, ok := out[i]; ok {
				break
			}
		}
	}
	return out
}
