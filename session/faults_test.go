package session

import (
	"cmp"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/report"
)

// A run with a fault reports the diagnosis's finding: a hung rank is named as the root of the
// hang, dated before the watchdog's timeout (10 s) ended the run, and a throttled GPU by its rank.
func TestFaultFindingsInReport(t *testing.T) {
	for _, c := range []struct {
		scenario, spec, kind, culprit string
		beforeNs                      int64
	}{
		{spec: "kind=hang,host=2,gpu=1,at=1.1s", kind: "hang", culprit: "rank 17 (host 2 GPU 1)", beforeNs: 10_000_000_000},
		{spec: "kind=gpu_slow,host=1,gpu=5,factor=0.6,at=1.1s", kind: "slow GPU", culprit: "rank 13 (host 1 GPU 5)", beforeNs: 2_000_000_000},
		// Links that transfer times alone cannot place (every rank of a ring waits for its slowest
		// link): their rate while busy names them.
		{spec: "kind=nvlink_slow,host=1,gpu=5,factor=0.5,at=1.1s", kind: "slow link", culprit: "host 1 GPU 5 NVLink", beforeNs: 2_000_000_000},
		{scenario: "allreduce-sweep", spec: "kind=nic_slow,host=2,nic=3,factor=0.3,at=1.05s", kind: "slow link", culprit: "host 2 GPU 3 NIC", beforeNs: 2_000_000_000},
	} {
		f, err := fault.Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		sc := cmp.Or(c.scenario, "llm-train")
		r, _ := runReport(t, Config{Scenario: sc, Topology: "h100x8x4", Steps: 4, Seed: 1, Faults: []fault.Fault{f}})
		if len(r.Findings) == 0 || r.Findings[0].Kind != c.kind || r.Findings[0].Culprit != c.culprit || r.Findings[0].AtNs >= c.beforeNs {
			t.Errorf("%s: findings %+v; want first a %s on %s before %d ns", c.spec, r.Findings, c.kind, c.culprit, c.beforeNs)
		}
	}
	r, _ := runReport(t, Config{Scenario: "llm-train", Topology: "h100x8x4", Steps: 4, Seed: 1})
	if len(r.Findings) != 0 {
		t.Errorf("healthy run: findings %+v", r.Findings)
	}
	if _, err := Prepare(Config{Scenario: "llm-train", Backend: "cuda", Faults: []fault.Fault{{Kind: fault.GPUSlow, Host: 0, GPU: 0, NIC: -1, Factor: 0.5}}}); err == nil ||
		!strings.Contains(err.Error(), "gpu_slow: the cuda backend cannot inject it: a real GPU cannot be throttled") {
		t.Errorf("cuda with a fault: %v; want it refused", err)
	}
}

// TestWatchdogQuotesHangRoot: a rank that hangs before a collective makes its peers wait; the
// watchdog fires on the first op whose wait runs out, which may wait for a rank that is itself
// waiting on the hung one (a pipeline's receive from a stage whose group waits in an all-gather
// the hung rank never entered). The alert quotes the diagnosis's root, so the alert, the finding
// and the run's end name the same rank, live and replayed from the run's recording.
func TestWatchdogQuotesHangRoot(t *testing.T) {
	for _, c := range []struct {
		hosts int
		spec  string
		rank  int32  // -1: the root is no one rank
		root  string // in the quoted root
	}{
		{2, "kind=hang,host=1,gpu=2,at=50ms", 10, "rank 10 "}, // the watchdog's op waits for rank 8, which waits on 10
		{2, "kind=hang,host=0,gpu=3,at=50ms", 3, "rank 3 "},   // the watchdog's op waits for rank 3 itself
		// Ranks stuck inside a collective: the root is the rank whose part made no progress (its
		// kernel never finished), which the alert quotes.
		{4, "kind=hang,host=1,gpu=1,mode=in,at=300ms", 9, "rank 9 "},
	} {
		t.Run(c.spec, func(t *testing.T) {
			f, err := fault.Parse(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			rec := filepath.Join(t.TempDir(), "hang.xfr")
			live, out := runReport(t, Config{Scenario: "llm-train", Hosts: c.hosts, Seed: 1, Faults: []fault.Fault{f}, Record: rec})
			if !out.EndedByAlert() {
				t.Fatalf("the run ended %v; want the watchdog", out.Ended)
			}
			rp, err := Replay(context.Background(), ReplayConfig{Path: rec})
			if err != nil {
				t.Fatal(err)
			}
			for name, r := range map[string]*report.Report{"live": live, "replay": rp.Report()} {
				if c.rank >= 0 && (len(r.Findings) == 0 || r.Findings[0].Rank == nil || *r.Findings[0].Rank != c.rank) {
					t.Fatalf("%s: findings %+v; want first the hang of rank %d", name, r.Findings, c.rank)
				}
				root := r.EndedRoot()
				if root == nil || (root.Rank == nil) != (c.rank < 0) || root.Rank != nil && *root.Rank != c.rank || !strings.Contains(root.String(), c.root) {
					t.Errorf("%s: the alert that ended the run (%q) quotes %+v; want %q, the finding's", name, r.Ended, root, c.root)
				}
			}
		})
	}
}

// The faults injected into a run are part of its description: the report (text and JSON), and
// the recording, so that its replay says so too. A healthy run names none.
func TestFaultsInDescription(t *testing.T) {
	const spec = "kind=nic_slow,host=1,nic=3,factor=0.3,at=1.1s"
	f, err := fault.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(t.TempDir(), "nic.xfr")
	live, _ := runReport(t, Config{Scenario: "llm-train", Topology: "h100x8x2", Steps: 2, Seed: 1, Faults: []fault.Fault{f}, Record: rec})
	rp, err := Replay(context.Background(), ReplayConfig{Path: rec})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*report.Report{"live": live, "replay": rp.Report()} {
		if len(r.Faults) != 1 || r.Faults[0] != spec {
			t.Errorf("%s: faults %q; want [%q]", name, r.Faults, spec)
		}
		var b strings.Builder
		if err := report.Text(&b, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "\nfaults injected: "+spec+"\n") {
			t.Errorf("%s: the text report does not name the fault:\n%s", name, b.String()[:min(b.Len(), 600)])
		}
	}
	healthy, _ := runReport(t, Config{Scenario: "llm-train", Topology: "h100x8x2", Steps: 2, Seed: 1})
	if healthy.Faults != nil {
		t.Errorf("healthy run: faults %q; want none", healthy.Faults)
	}
}
