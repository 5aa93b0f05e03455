package session

import (
	"testing"

	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/timeline"
)

// firstColl keeps the start of each device's first collective.
type firstColl map[int32]int64

func (f firstColl) Emit(e *timeline.Event) {
	if e.Kind != timeline.KindCollective {
		return
	}
	if t, ok := f[e.Device]; !ok || e.Start < t {
		f[e.Device] = e.Start
	}
}

// A NIC slow from 0 s shows only once the NIC carries traffic, after the communicators' setup:
// the finding is first seen no later than the culprit's first collective, and says the fault may
// have begun before (its first traffic after setup), not that it began then.
func TestOnsetFromFirstTraffic(t *testing.T) {
	f, err := fault.Parse("kind=nic_slow,host=1,nic=3,factor=0.3,at=0s")
	if err != nil {
		t.Fatal(err)
	}
	colls := firstColl{}
	p, err := Prepare(Config{Scenario: "llm-train", Topology: "h100x8x2", Steps: 3, Seed: 1, Faults: []fault.Fault{f}}, colls)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := p.Report(out)
	if len(r.Findings) == 0 || r.Findings[0].Culprit != "host 1 GPU 3 NIC" {
		t.Fatalf("findings %+v; want the NIC of host 1 GPU 3 first", r.Findings)
	}
	x := r.Findings[0]
	first, ok := colls[11]
	if !ok {
		t.Fatal("rank 11 ran no collective")
	}
	if x.OnsetNs > first {
		t.Errorf("first seen at %d ns, after rank 11's first collective at %d ns", x.OnsetNs, first)
	}
	if !x.FromFirstTraffic {
		t.Errorf("finding %+v: want it marked as seen in the first traffic after setup", x)
	}
}

// A fault that begins after the first step compared is not put down to the first traffic.
func TestOnsetLaterFault(t *testing.T) {
	f, err := fault.Parse("kind=gpu_slow,host=1,gpu=5,factor=0.6,at=1.1s")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := runReport(t, Config{Scenario: "llm-train", Topology: "h100x8x2", Steps: 4, Seed: 1, Faults: []fault.Fault{f}})
	if len(r.Findings) == 0 || r.Findings[0].Culprit != "rank 13 (host 1 GPU 5)" {
		t.Fatalf("findings %+v; want rank 13 first", r.Findings)
	}
	if x := r.Findings[0]; x.FromFirstTraffic || x.OnsetNs < 1_100_000_000 {
		t.Errorf("finding %+v: want it first seen at or after 1.1 s, not in the first traffic", x)
	}
}
