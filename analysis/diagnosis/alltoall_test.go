package diagnosis_test

import (
	"context"
	"github.com/xfertop/xfertop/analysis/hostmap"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/scenario"
	"github.com/xfertop/xfertop/timeline"
)

// moeRun runs the moe-alltoall built-in on 16 hosts of h100x8x4 (128 GPUs: its all-to-all crosses
// the NICs in NCCL's p2p schedule) for 6 steps with the faults given, and diagnoses it.
func moeRun(t *testing.T, specs ...string) []diagnosis.Finding {
	t.Helper()
	tp, err := sim.TopologyByName("h100x8x4")
	if err != nil {
		t.Fatal(err)
	}
	tp.Hosts = 16
	var fs []fault.Fault
	for _, sp := range specs {
		f, err := fault.Parse(sp)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	strs := timeline.NewStrings()
	d := diagnosis.New(hostmap.ByID(tp.GPUsPerHost))
	s, err := sim.New(sim.Config{Topology: tp, Seed: 1, Model: sim.ModelOf(tp), Faults: fs}, d, strs)
	if err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Builtin("moe-alltoall")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Resolve(f, nil, tp)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sc.Run(context.Background(), engine.NewClient(s, d, sc.Options), d, scenario.RunConfig{Steps: 6, Seed: 1})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	return d.Result(strs)
}

// A mixture of experts' all-to-all at 128 GPUs: a NIC at a tenth of its rate and a GPU at 30% of
// its speed change the step by under 2% (the hot expert's NIC bounds the all-to-all, and every
// rank's part of it ends with the instance), and were not found: the NIC's rank had no transfer
// slower than its peers' (a ragged all-to-all's ranks each move their own bytes, and end
// together), and the hot expert (its kernel ten times its peers' by design) ranked above the
// throttled GPU, was confined to one kernel, and rotated before a second step. Each is named now,
// by its rate while busy against its peers' NICs and by the kernels its peers ran alike; the
// healthy run has no finding.
func TestMoEAllToAllFaults(t *testing.T) {
	for _, c := range []struct {
		name, fault string
		kind        diagnosis.Kind
		link        int
		evidence    string
	}{
		{name: "healthy"},
		{name: "NIC at 0.1", fault: "kind=nic_slow,host=5,nic=3,factor=0.1,at=1.1s", kind: diagnosis.SlowLink, link: timeline.PeakNIC,
			evidence: "its NIC moved at 10% of its peers' median rate while busy (128 ranks' NIC, the same window)"},
		{name: "NIC at 0.3 from step 3", fault: "kind=nic_slow,host=5,nic=3,factor=0.3,at=1.5s", kind: diagnosis.SlowLink, link: timeline.PeakNIC,
			evidence: "in its all-to-all (128 ranks), whose ranks' parts end together"},
		{name: "GPU at 0.3", fault: "kind=gpu_slow,host=5,gpu=3,factor=0.3,at=1.1s", kind: diagnosis.SlowGPU, link: -1,
			evidence: "kernels took 3.33× their time on the peers that ran the same kernels this step, among the kernels its peers ran alike"},
		{name: "GPU at 0.3 from 0", fault: "kind=gpu_slow,host=5,gpu=3,factor=0.3", kind: diagnosis.SlowGPU, link: -1,
			evidence: "among the kernels its peers ran alike"},
		{name: "GPU at 0.6 from step 3", fault: "kind=gpu_slow,host=5,gpu=3,factor=0.6,at=1.5s", kind: diagnosis.SlowGPU, link: -1,
			evidence: "its kernels took"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var specs []string
			if c.fault != "" {
				specs = append(specs, c.fault)
			}
			fs := moeRun(t, specs...)
			if c.fault == "" {
				for _, f := range fs {
					t.Errorf("finding on a healthy run: %s", f.String())
				}
				return
			}
			if len(fs) != 1 || fs[0].Kind != c.kind || fs[0].Rank != 43 || fs[0].Link != c.link || !strings.Contains(fs[0].Evidence, c.evidence) {
				for _, f := range fs {
					t.Logf("%s", f.String())
				}
				t.Fatalf("%d findings; want one %s of rank 43 (host 5 GPU 3), link %d, saying %q", len(fs), c.kind, c.link, c.evidence)
			}
		})
	}
}
