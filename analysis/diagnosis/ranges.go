package diagnosis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/units"
)

// Bounds of rankSummary: up to listRanks ranks are listed one by one; more are written as runs
// of consecutive ranks, at most listRuns of them.
const (
	listRanks = 8
	listRuns  = 8
)

// rankSummary names a set of ranks for a finding's evidence: "ranks 0, 1, 2" when they are few,
// else their count and runs, "1023 ranks (0–612, 614–1023)", so that a hang at 1,024 ranks reads
// as one line, not 10 KB of rank numbers (the ranks that never entered are listed apart).
func rankSummary(rs []int32) string {
	if len(rs) <= listRanks {
		return units.Plural(len(rs), "rank") + " " + rankList(rs, len(rs))
	}
	return fmt.Sprintf("%d ranks (%s)", len(rs), rankRuns(rs))
}

// rankRuns writes ranks as runs of consecutive ones, "0–612, 614, 616–1023", the first listRuns
// of them and the count of the others.
func rankRuns(rs []int32) string {
	s := slices.Clone(rs)
	slices.Sort(s)
	s = slices.Compact(s)
	var parts []string
	runs := 0
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		runs++
		if len(parts) < listRuns {
			if j == i {
				parts = append(parts, fmt.Sprint(s[i]))
			} else {
				parts = append(parts, fmt.Sprintf("%d–%d", s[i], s[j]))
			}
		}
		i = j + 1
	}
	out := strings.Join(parts, ", ")
	if runs > listRuns {
		out += fmt.Sprintf(", … (%d runs in all)", runs)
	}
	return out
}

// sortedRanks is a sorted copy of rs, nil when empty.
func sortedRanks(rs []int32) []int32 {
	if len(rs) == 0 {
		return nil
	}
	s := slices.Clone(rs)
	slices.Sort(s)
	return s
}
