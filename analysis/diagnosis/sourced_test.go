package diagnosis

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
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

// A source's count mismatch (NCCL RAS: rank 1's AllReduce count behind the others', "they have
// not entered the AllReduce the others are in") of a rank that Flight Recorder has inside the
// hung collective, waiting with the others for rank 3: one behind, its count lagged (it had not
// launched the kernel when RAS looked), and it joins the hang's evidence, no culprit of its own;
// further behind, or by how much not known, it stays a finding at half its confidence, saying
// what contradicts it. A mismatch in another collective, or of a rank not inside it, is left as
// it is.
func TestMergeCountBehind(t *testing.T) {
	hang := Finding{Kind: DeadRank, Rank: 3, Host: 1, Coll: timeline.CollAllReduce, Seq: 5, Confidence: 1,
		Entered: []int32{0, 1, 2}, Waiting: []int32{0, 1, 2}, Evidence: "RAS: rank 3 is considered dead; all_reduce #5: rank 3 never entered it"}
	behind := func(rank int32, coll timeline.CollOp, n int64) Finding {
		return Finding{Kind: Hang, Rank: rank, Host: 0, Coll: coll, Confidence: 1, Missing: []int32{rank}, MissingN: 1, behind: n,
			Evidence: "RAS: AllReduce counts disagree (MISMATCH): 2 ranks at 1407; behind: rank 1 at 1406"}
	}
	for _, c := range []struct {
		name     string
		s        Finding
		n        int     // findings after the merge
		conf     float64 // the count's finding's confidence, when kept
		evidence string  // in the hang's evidence (joined) or the kept finding's
	}{
		{name: "one behind, inside", s: behind(1, timeline.CollAllReduce, 1), n: 1,
			evidence: "; RAS counts rank 1 one all_reduce behind the others: it had not launched #5's kernel when RAS looked, and Flight Recorder has it inside all_reduce #5, waiting with the others: held up like them, not a culprit"},
		{name: "one behind, collective not known", s: behind(1, 0, 1), n: 1, evidence: "RAS counts rank 1 one all_reduce behind"},
		{name: "three behind, inside", s: behind(1, timeline.CollAllReduce, 3), n: 2, conf: 0.5,
			evidence: "behind: rank 1 at 1406; contradicted by Flight Recorder, which has rank 1 inside all_reduce #5, waiting with the others (RAS counts it 3 behind)"},
		{name: "how far not known", s: behind(1, timeline.CollAllReduce, 0), n: 2, conf: 0.5, evidence: "(by how many, RAS does not say)"},
		{name: "another collective", s: behind(1, timeline.CollAllGather, 1), n: 2, conf: 1, evidence: "behind: rank 1 at 1406"},
		{name: "not inside it", s: behind(7, timeline.CollAllReduce, 1), n: 2, conf: 1, evidence: "behind: rank 1 at 1406"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := hang
			out := mergeSourced([]Finding{h}, []Finding{c.s})
			if len(out) != c.n || out[0].Kind != DeadRank || out[0].Rank != 3 || out[0].Confidence != 1 {
				t.Fatalf("mergeSourced = %+v; want %d findings, rank 3's first at 100%%", out, c.n)
			}
			got := out[0].Evidence
			if c.n == 2 {
				got = out[1].Evidence
				if out[1].Kind != Hang || out[1].Confidence != c.conf {
					t.Errorf("kept %+v; want the count's hang at confidence %.1f", out[1], c.conf)
				}
				if c.conf < 1 != strings.Contains(got, "contradicted") {
					t.Errorf("kept evidence %q; want it said contradicted exactly when its confidence is lowered", got)
				}
				if out[0].Evidence != hang.Evidence {
					t.Errorf("the hang's evidence changed to %q", out[0].Evidence)
				}
			}
			if !strings.Contains(got, c.evidence) {
				t.Errorf("evidence %q; want it to hold %q", got, c.evidence)
			}
		})
	}
}
