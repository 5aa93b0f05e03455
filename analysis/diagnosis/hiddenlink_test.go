package diagnosis_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/timeline"
)

// A degraded NIC or NVLink port under a pipeline's sends, hidden behind the stages' compute (the
// default compute: the step does not grow), is named by its rate while busy against what the
// link gives: its line rate where the topology is known (from the run's start, too), its own
// earlier steps' rate where it is not (then a fault from the start has no reference and is not
// named). Such a finding claims no step time (Severity 0, Hidden) and says what it would cost were
// nothing overlapping it (Exposure). A healthy pipeline gives no finding either way.
func TestHiddenSlowLinkPipeline(t *testing.T) {
	for _, c := range []struct {
		name  string
		peaks bool
		fault string // "" healthy; %d: the fault's onset (0: from the start)
		start bool   // the fault from the run's start, not from step 3
		rank  int32  // the link's GPU; -1: no finding
		link  int
		want  string
	}{
		{name: "NIC at 0.3, line rate known", peaks: true, fault: "kind=nic_slow,host=0,nic=4,factor=0.3,at=%dns", rank: 4, link: timeline.PeakNIC, want: "of its line rate"},
		{name: "NIC at 0.3, line rate unknown", fault: "kind=nic_slow,host=0,nic=4,factor=0.3,at=%dns", rank: 4, link: timeline.PeakNIC, want: "of its own rate while busy in earlier steps"},
		{name: "NIC at 0.3 from the start, line rate known", peaks: true, start: true, fault: "kind=nic_slow,host=1,nic=0,factor=0.3,at=%dns", rank: 8, link: timeline.PeakNIC, want: "of its line rate"},
		{name: "NIC at 0.3 from the start, line rate unknown", start: true, fault: "kind=nic_slow,host=1,nic=0,factor=0.3,at=%dns", rank: -1},
		{name: "NVLink at 0.3, line rate known", peaks: true, fault: "kind=nvlink_slow,host=0,gpu=4,factor=0.3,at=%dns", rank: 4, link: timeline.PeakNVLink, want: "of its line rate"},
		{name: "healthy, line rate known", peaks: true, rank: -1},
		{name: "healthy, line rate unknown", rank: -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var specs []string
			if c.fault != "" {
				at := int64(0)
				if !c.start {
					_, starts := pipelineRunPeaks(t, c.peaks, nil)
					at = starts[3]
				}
				specs = append(specs, fmt.Sprintf(c.fault, at))
			}
			fs, _ := pipelineRunPeaks(t, c.peaks, nil, specs...)
			if c.rank < 0 {
				for _, f := range fs {
					t.Errorf("finding %s; want none", f.String())
				}
				return
			}
			if len(fs) != 1 || fs[0].Kind != diagnosis.SlowLink || fs[0].Rank != c.rank || fs[0].Link != c.link {
				for _, f := range fs {
					t.Logf("%s", f.String())
				}
				t.Fatalf("%d findings; want one slow link %d of rank %d", len(fs), c.link, c.rank)
			}
			f := fs[0]
			t.Logf("%s; %s", f.String(), f.NextStep())
			if !f.Hidden || f.Severity != 0 || f.Exposure <= 0 {
				t.Errorf("hidden %v, severity %d, exposure %d; want hidden, 0 and > 0", f.Hidden, f.Severity, f.Exposure)
			}
			if !c.start && f.Step < 3 {
				t.Errorf("found at step %d; the fault began in step 3", f.Step)
			}
			for _, want := range []string{"degraded", c.want, "if nothing overlapped it"} {
				if !strings.Contains(f.Evidence, want) {
					t.Errorf("evidence %q; want %q", f.Evidence, want)
				}
			}
			if strings.Contains(f.Evidence, "waited on them") {
				t.Errorf("evidence %q says the step waited on it", f.Evidence)
			}
			if n := f.NextStep(); !strings.Contains(n, "were nothing overlapping it") {
				t.Errorf("next step %q; want what it would cost", n)
			}
		})
	}
}

// A stage's throttled GPU and a degraded NIC in the same step: the step grew by the GPU's
// kernels' lost time, not the NIC's, so the GPU is the top finding and the NIC, whose sends the
// stages' compute still hides, is not said to have been waited on nor given the step's growth.
func TestHiddenSlowLinkBesideSlowGPU(t *testing.T) {
	for _, peaks := range []bool{true, false} {
		t.Run(fmt.Sprintf("line rate known %v", peaks), func(t *testing.T) {
			_, starts := pipelineRunPeaks(t, peaks, nil)
			fs, _ := pipelineRunPeaks(t, peaks, nil,
				fmt.Sprintf("kind=gpu_slow,host=0,gpu=0,factor=0.88,at=%dns", starts[3]),
				fmt.Sprintf("kind=nic_slow,host=0,nic=4,factor=0.3,at=%dns", starts[3]))
			for _, f := range fs {
				t.Logf("%s", f.String())
			}
			if len(fs) == 0 || fs[0].Kind != diagnosis.SlowGPU || fs[0].Rank != 0 {
				t.Fatalf("top finding not the slow GPU of rank 0")
			}
			gpu := fs[0]
			var nic *diagnosis.Finding
			for i := range fs {
				if fs[i].Kind == diagnosis.SlowLink && fs[i].Rank == 4 && fs[i].Link == timeline.PeakNIC {
					nic = &fs[i]
				}
			}
			if nic == nil {
				t.Fatalf("no finding names rank 4's NIC")
			}
			if strings.Contains(nic.Evidence, "waited on them") {
				t.Errorf("NIC evidence %q says the step waited on it", nic.Evidence)
			}
			if nic.Severity >= gpu.Severity/4 {
				t.Errorf("NIC's cost %d; want well below the GPU's %d (the step's growth is the GPU's)", nic.Severity, gpu.Severity)
			}
			if !nic.Hidden {
				t.Errorf("NIC finding not hidden")
			}
		})
	}
}

// A degraded link's finding is first seen at the first window its link moved below its reference
// while busy, not at its rank's first op in the step, which can be before the fault began.
func TestHiddenSlowLinkFirstSeen(t *testing.T) {
	for _, peaks := range []bool{true, false} {
		t.Run(fmt.Sprintf("line rate known %v", peaks), func(t *testing.T) {
			_, starts := pipelineRunPeaks(t, peaks, nil)
			at := starts[3] + (starts[4]-starts[3])/4
			fs, _ := pipelineRunPeaks(t, peaks, nil, fmt.Sprintf("kind=nic_slow,host=0,nic=4,factor=0.3,at=%dns", at))
			if len(fs) != 1 || fs[0].Kind != diagnosis.SlowLink || fs[0].Rank != 4 || !fs[0].Hidden {
				for _, f := range fs {
					t.Logf("%s", f.String())
				}
				t.Fatalf("%d findings; want one hidden slow link of rank 4", len(fs))
			}
			f := fs[0]
			t.Logf("%s", f.String())
			// The fault's window: a link's evidence is no finer than its windows.
			if lo := at / timeline.LinkWindowNs * timeline.LinkWindowNs; f.Onset < lo || f.Onset > f.At {
				t.Errorf("first seen at %d; want in [%d, %d] (the fault began at %d)", f.Onset, lo, f.At, at)
			}
		})
	}
}
