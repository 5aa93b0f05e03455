package diagnosis

import (
	"strings"
	"testing"
)

// A source's dead or missing rank folds into the hang naming that rank as its culprit: one
// finding, the source's kind, the hang's collective, its evidence the source's then the hang's
// (without the guess the source answers), the earlier onset. A statement of another rank, of
// another kind, or a second one of the same rank stays a finding of its own.
func TestMergeSourced(t *testing.T) {
	hang := Finding{Kind: Hang, Rank: 3, Host: -1, Seq: 5, Onset: 400, At: 400, Confidence: 1,
		Evidence: "all_reduce #5: rank 3 never entered it; rank 3 completed #4 and waits in no recorded op" + busyElsewhere}
	dead := func(rank int32) Finding {
		return Finding{Kind: DeadRank, Rank: rank, Host: 1, Onset: 100, At: 900, Confidence: 1, Evidence: "RAS: rank is considered dead"}
	}
	for _, c := range []struct {
		name     string
		sourced  []Finding
		n        int // findings after the merge
		kind     Kind
		evidence string
	}{
		{"dead culprit", []Finding{dead(3)}, 1, DeadRank, "RAS: rank is considered dead; all_reduce #5: rank 3 never entered it; rank 3 completed #4 and waits in no recorded op"},
		{"missing culprit", []Finding{{Kind: MissingRank, Rank: 3, Host: -1, Evidence: "RAS: rank missing"}}, 1, MissingRank, "RAS: rank missing; all_reduce #5"},
		{"dead other rank", []Finding{dead(2)}, 2, Hang, hang.Evidence},
		{"count behind", []Finding{{Kind: Hang, Rank: 3, Host: -1, Evidence: "counts disagree"}}, 2, Hang, hang.Evidence},
		{"told twice", []Finding{dead(3), {Kind: MissingRank, Rank: 3, Host: -1, Evidence: "RAS: rank missing"}}, 2, DeadRank, "RAS: rank is considered dead; "},
		{"no rank", []Finding{{Kind: MissingRank, Rank: -1, Host: -1, Evidence: "incomplete"}}, 2, Hang, hang.Evidence},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := mergeSourced([]Finding{hang}, c.sourced)
			if len(out) != c.n || out[0].Kind != c.kind || !strings.HasPrefix(out[0].Evidence, c.evidence) || out[0].Seq != 5 {
				t.Fatalf("mergeSourced = %+v; want %d findings, the first %v with evidence %q…", out, c.n, c.kind, c.evidence)
			}
			if c.kind == DeadRank && (out[0].Onset != 100 || out[0].At != 900 || out[0].Host != 1 || strings.Contains(out[0].Evidence, "busy elsewhere")) {
				t.Errorf("merged %+v; want onset 100, at 900, the source's host 1, no guess", out[0])
			}
		})
	}
}
