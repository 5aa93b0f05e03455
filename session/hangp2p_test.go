package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine/fault"
)

// TestHangAtSendRecvNamesHungRank: a rank hung at a send or receive (before posting it, or inside
// it) is the one rank the findings name, and the alert or deadlock that ended the run quotes it as
// the root. A rank hung inside a transfer holds its peer inside it too; that peer is named as a
// victim, not a culprit (the two used to be named alike: "2 ranks stuck inside, which holds it:
// unknown"). Pipeline stages on two hosts (ranks 0 → 4 → 8 → 12) and crosshost pairs (rank 0
// with 8), each fault at a sender and at a receiver.
func TestHangAtSendRecvNamesHungRank(t *testing.T) {
	type place struct {
		scenario, where, at string
		rank                int32
	}
	places := []place{
		{"pipeline", "host=1,gpu=0", "1.1s", 8}, // receives from 4, sends to 12
		{"pipeline", "host=0,gpu=4", "1.1s", 4}, // receives from 0, sends to 8
		{"crosshost", "host=1,gpu=0", "10ms", 8},
		{"crosshost", "host=0,gpu=0", "10ms", 0},
	}
	for _, p := range places {
		for _, coll := range []string{"recv", "send", "send_recv"} {
			for _, mode := range []string{"in", "before"} {
				spec := fmt.Sprintf("kind=hang,%s,coll=%s,mode=%s,at=%s", p.where, coll, mode, p.at)
				t.Run(p.scenario+"/"+spec, func(t *testing.T) {
					f, err := fault.Parse(spec)
					if err != nil {
						t.Fatal(err)
					}
					r, out := runReport(t, Config{Scenario: p.scenario, Topology: "h100x8x2", Steps: 4, Seed: 1, Faults: []fault.Fault{f}})
					if out.Ended == nil {
						t.Fatalf("the run completed; want it ended by the hang")
					}
					var named []int32
					for _, x := range r.Findings {
						if x.Kind != "hang" && x.Kind != "missing rank" && x.Kind != "deadlock" {
							continue
						}
						if x.Rank == nil {
							t.Errorf("finding %q names no rank; want rank %d", x.Culprit+" — "+x.Evidence, p.rank)
							continue
						}
						named = append(named, *x.Rank)
					}
					if len(named) != 1 || named[0] != p.rank {
						t.Fatalf("findings name ranks %v (%+v); want exactly rank %d", named, r.Findings, p.rank)
					}
					if root := r.EndedRoot(); root == nil || root.Rank == nil || *root.Rank != p.rank {
						t.Errorf("the end of the run (%q) quotes %+v as its root; want rank %d", r.Ended, root, p.rank)
					}
					if mode == "in" {
						ev := r.Findings[0].Evidence
						if want := fmt.Sprintf("rank %d's part made no progress", p.rank); !strings.Contains(ev, want) || !strings.Contains(ev, "(a victim, not a cause)") {
							t.Errorf("evidence %q; want %q and its peer named a victim", ev, want)
						}
					}
				})
			}
		}
	}
}
