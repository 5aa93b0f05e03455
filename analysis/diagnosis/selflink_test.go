package diagnosis_test

import (
	"context"
	"fmt"
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

// pipelineRun runs the built-in pipeline on h100x8x2 (stages on devices 0, 4, 8 and 12: stage 1
// sends to stage 2 across the NICs) for 6 steps with the knobs and faults given, and diagnoses it.
// It returns the findings and the steps' start times.
func pipelineRun(t *testing.T, knobs map[string]string, specs ...string) ([]diagnosis.Finding, []int64) {
	t.Helper()
	return pipelineRunPeaks(t, false, knobs, specs...)
}

// pipelineRunPeaks is pipelineRun, with the topology's line rates given to the diagnosis (as a
// simulated run's meta gives them) when peaks is set; without, they are unknown (a trace).
func pipelineRunPeaks(t *testing.T, peaks bool, knobs map[string]string, specs ...string) ([]diagnosis.Finding, []int64) {
	t.Helper()
	topo, err := sim.TopologyByName("h100x8x2")
	if err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Builtin("pipeline")
	if err != nil {
		t.Fatal(err)
	}
	var fs []fault.Fault
	for _, sp := range specs {
		x, err := fault.Parse(sp)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, x)
	}
	store := timeline.NewStore(nil)
	s, err := sim.New(sim.Config{Topology: topo, Seed: 1, Model: sim.ModelOf(topo), Faults: fs}, store, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Resolve(f, knobs, topo)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(s, store, sc.Options)
	res, err := sc.Run(context.Background(), c, store, scenario.RunConfig{Steps: 6, Seed: 1})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	d := diagnosis.New(hostmap.ByID(topo.GPUsPerHost))
	if peaks {
		m := sim.ModelOf(topo)
		var p [timeline.NumPeaks]float64
		p[timeline.PeakPCIe], p[timeline.PeakNVLink], p[timeline.PeakNIC] = m.PCIeBps, m.NVLinkBps, m.NICBps
		d.SetLinkPeaks(p)
	}
	var starts []int64
	evs := store.Events()
	for i := range evs {
		d.Add(&evs[i])
		if evs[i].Kind == timeline.KindStep {
			starts = append(starts, evs[i].Start)
		}
	}
	return d.Result(store.Strings), starts
}

// A pipeline's one send across the NICs (stage 1 → 2) has no peers to compare with: from step 3 a
// NIC at 0.3 of its line rate is found by the transfers against their own earlier steps, where
// the step grew with them (compute short enough that the stages wait on their activations), and
// named by the NIC whose rate while busy fell (the other end's stays at its line rate while
// busy, only for longer). Hidden behind the default compute (the step does not grow), it is not
// found so (hiddenlink_test.go names it by its rate alone); nothing is in a healthy run.
func TestSelfSlowLinkPipeline(t *testing.T) {
	short := map[string]string{"compute": "2ms"}
	for _, c := range []struct {
		name  string
		knobs map[string]string
		fault string // "" healthy; %d: the fault's onset
		rank  int32  // the NIC's GPU; -1: no finding
		flaps bool
	}{
		{name: "host 0 GPU 4's NIC at 0.3", knobs: short, fault: "kind=nic_slow,host=0,nic=4,factor=0.3,at=%dns", rank: 4},
		{name: "host 1 GPU 0's NIC at 0.3", knobs: short, fault: "kind=nic_slow,host=1,nic=0,factor=0.3,at=%dns", rank: 8},
		{name: "host 1 GPU 0's NIC flaps", knobs: short, fault: "kind=nic_flap,host=1,nic=0,factor=0,period=120ms,at=%dns", rank: 8, flaps: true},
		{name: "healthy", knobs: short, rank: -1},
		{name: "healthy, default compute", rank: -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var specs []string
			if c.fault != "" {
				_, starts := pipelineRun(t, c.knobs)
				specs = append(specs, fmt.Sprintf(c.fault, starts[3]))
			}
			fs, _ := pipelineRun(t, c.knobs, specs...)
			if c.rank < 0 {
				for _, f := range fs {
					t.Errorf("finding %s; want none", f.String())
				}
				return
			}
			if len(fs) != 1 || fs[0].Kind != diagnosis.SlowLink || fs[0].Rank != c.rank || fs[0].Link != timeline.PeakNIC || fs[0].Flaps != c.flaps {
				for _, f := range fs {
					t.Logf("%s", f.String())
				}
				t.Fatalf("%d findings; want one slow NIC of rank %d (flaps %v)", len(fs), c.rank, c.flaps)
			}
			t.Logf("%s", fs[0].String())
			if fs[0].Step < 3 {
				t.Errorf("found at step %d; the fault began in step 3", fs[0].Step)
			}
			for _, want := range []string{"of its own rate while busy in earlier steps", "the same transfers' time in its earlier steps", "costs the step"} {
				if !strings.Contains(fs[0].Evidence, want) {
					t.Errorf("evidence %q; want %q", fs[0].Evidence, want)
				}
			}
		})
	}
}
