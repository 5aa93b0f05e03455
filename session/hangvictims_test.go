package session

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine/fault"
)

// TestHangInCollectiveOneFinding: llm-train's rank 8 hung inside its all_gather (mode=in) holds
// ranks 9–15 inside it, and behind it the pipeline's transfers with host 0: rank 0 waits in a
// receive from 8, which 8 never reaches, while 8's receive from 0 waits on rank 0's send behind
// that wait (and so for ranks 1–3 with 9–11, stuck inside the all_gather too). Those are victims of
// the one root, not deadlocks of their own: the findings name rank 8 once, rank 0's receive folded
// into it, and the watchdog's alert quotes it as the root. Before, four "deadlock: ranks 0 → 8 → 0"… stood beside the hang
// (the ranks stuck inside a collective are no wait, so the look at the waits the watchdog ended
// counted each rank's receive as its one op under way), and the alert quoted one of them.
func TestHangInCollectiveOneFinding(t *testing.T) {
	for _, mode := range []string{"in", "before"} {
		spec := "kind=hang,host=1,gpu=0,at=0.5s,mode=" + mode
		t.Run(spec, func(t *testing.T) {
			f, err := fault.Parse(spec)
			if err != nil {
				t.Fatal(err)
			}
			r, out := runReport(t, Config{Scenario: "llm-train", Topology: "h100x8x2", Seed: 1, Faults: []fault.Fault{f}})
			if out.Ended == nil {
				t.Fatalf("the run completed; want it ended by the hang")
			}
			var named []string
			for _, x := range r.Findings {
				switch x.Kind {
				case "hang", "missing rank", "deadlock":
					named = append(named, x.Kind+": "+x.Culprit+" — "+x.Evidence)
				}
			}
			if len(named) != 1 || r.Findings[0].Rank == nil || *r.Findings[0].Rank != 8 {
				t.Fatalf("findings:\n%s\nwant exactly one, a hang of rank 8", strings.Join(named, "\n"))
			}
			// Rank 0's receive from 8, which 8 never reaches behind the all_gather, is its victim:
			// folded into its finding, as a hang before a transfer folds the others.
			if ev := r.Findings[0].Evidence; mode == "in" && !strings.Contains(ev, "also waited on by 8 MiB from rank 8 to rank 0") {
				t.Errorf("evidence %q; want rank 0's receive from 8 folded in (also waited on by …)", ev)
			}
			if root := r.EndedRoot(); root == nil || root.Rank == nil || *root.Rank != 8 {
				t.Errorf("the end of the run (%q) quotes %+v as its root; want rank 8", r.Ended, root)
			}
		})
	}
}
