package session

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine/fault"
)

// A hang fault on a pipeline stage (a rank that only sends and receives) hangs the job at its next
// send or receive: the run ends on the watchdog, and the hang finding and the alert's root name
// the stage's rank. A coll= the rank never posts after the onset is warned of as never taking
// effect, with the ops it did post; one that took effect is not.
func TestHangOnPipelineStage(t *testing.T) {
	for _, c := range []struct {
		scenario, spec string
		rank           int32  // the hang finding's rank; -1: the run completes
		warn           string // in the never-took-effect warning ("": none)
		deadlock       bool   // the run ends as a deadlock, which quotes no root
	}{
		{"pipeline", "kind=hang,rank=4,at=1.1s", 4, "", false},
		// Inside its receive from stage 0 and its send to stage 2: both transfers stall.
		{"pipeline", "kind=hang,rank=4,mode=in,at=1.1s", 4, "", true},
		{"pipeline", "kind=hang,rank=4,coll=recv,at=1.1s", 4, "", false},
		{"pipeline", "kind=hang,rank=4,coll=all_reduce,at=1.1s", -1, "posted no all_reduce from its onset (1.1s) to the run's end; it posted: recv, send", false},
		{"llm-train", "kind=hang,host=0,gpu=3,coll=all_reduce,at=1.1s", -1, "rank 3 (host 0 GPU 3) posted no all_reduce", false},
		// A GPU the pipeline leaves idle: said once, by faultReach ("cannot show"), not here.
		{"pipeline", "kind=hang,host=1,gpu=3,at=1.1s", -1, "", false},
	} {
		t.Run(c.scenario+"/"+c.spec, func(t *testing.T) {
			f, err := fault.Parse(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			r, out := runReport(t, Config{Scenario: c.scenario, Topology: "h100x8x2", Seed: 1, Steps: 3, Faults: []fault.Fault{f}})
			var warns []string
			for _, w := range r.Warnings {
				if strings.Contains(w, "never took effect") {
					warns = append(warns, w)
				}
			}
			if c.warn == "" && len(warns) > 0 || c.warn != "" && (len(warns) != 1 || !strings.Contains(warns[0], c.warn)) {
				t.Errorf("warnings %q; want one saying %q: %v", r.Warnings, c.warn, c.warn != "")
			}
			if c.rank < 0 {
				if out.Ended != nil {
					t.Errorf("the run ended %v; want it to complete", out.Ended)
				}
				return
			}
			if !out.EndedByAlert() {
				t.Fatalf("the run ended %v; want the watchdog", out.Ended)
			}
			if len(r.Findings) == 0 || r.Findings[0].Kind != "hang" || r.Findings[0].Rank == nil || *r.Findings[0].Rank != c.rank {
				t.Fatalf("findings %+v; want first the hang of rank %d", r.Findings, c.rank)
			}
			if c.deadlock {
				return
			}
			if root := r.EndedRoot(); root == nil || root.Rank == nil || *root.Rank != c.rank {
				t.Errorf("the alert that ended the run (%q) quotes %+v; want rank %d", r.Ended, root, c.rank)
			}
		})
	}
}
