package analysis

import (
	"reflect"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

func costSample(dev int32, m timeline.SampleMetric, v int64, calls uint64) timeline.Event {
	return timeline.Event{Kind: timeline.KindDeviceSample, Sub: uint8(m), Device: dev, Bytes: v, Op: calls, Peer: timeline.NoDevice}
}

func ptr(v float64) *float64 { return &v }

// The latest of each rank's cost samples, in its units: picoseconds become ns per callback, parts
// per million a percentage; a rank that has observed no NCCL operation has no overhead (unknown).
func TestProfilerCost(t *testing.T) {
	evs := []timeline.Event{
		costSample(1, timeline.SampleProfilerCallbackPs, 90_500, 100),
		costSample(0, timeline.SampleProfilerCallbackPs, 120_000, 40),
		costSample(0, timeline.SampleProfilerOverheadPPM, 4_100, 40),
		costSample(0, timeline.SampleProfilerCallbackPs, 80_250, 400), // later: it replaces the first
		costSample(0, timeline.SampleProfilerOverheadPPM, 2_500, 400),
		costSample(2, timeline.SampleUtilization, 50, 0), // NVML's, not the plugin's
	}
	a := New(timeline.Meta{})
	for i := range evs {
		a.Emit(&evs[i])
	}
	got := a.Result(timeline.NewStrings()).ProfilerCost
	want := []ProfilerCost{{Device: 0, Callbacks: 400, NsPerCallback: 80.25, OverheadPct: ptr(0.25)}, {Device: 1, Callbacks: 100, NsPerCallback: 90.5}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ProfilerCost = %+v; want %+v", got, want)
	}
	s := SummarizeProfilerCost(got)
	if s.Ranks != 2 || s.CallbacksTotal != 500 || s.NsPerCallbackP50 != 80.25 || s.NsPerCallbackMax != 90.5 || s.NsWorstRank != 1 ||
		s.OverheadRanks != 1 || *s.OverheadPctP50 != 0.25 || *s.OverheadPctMax != 0.25 || s.OverheadWorstRank != 0 {
		t.Errorf("SummarizeProfilerCost = %+v", s)
	}
	if s := SummarizeProfilerCost(want[1:]); s.OverheadPctMax != nil || s.OverheadPctP50 != nil {
		t.Errorf("no rank observed an operation, yet an overhead: %+v", s)
	}
}
