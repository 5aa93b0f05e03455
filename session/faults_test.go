package session

import (
	"cmp"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine/fault"
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
