package cluster

import (
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/diagnosis"
	xtimeline "github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/ui/widget"
)

// A device whose links nothing was counted on yet carried nothing where the source measures its
// links (0%), and is unknown where it does not, or where the link's peak is unknown.
func TestLinkPctBeforeAnyTraffic(t *testing.T) {
	for _, tc := range []struct {
		name      string
		measured  bool
		peak      float64
		wantKnown bool
	}{{"measured", true, 450e9, true}, {"inferred", false, 450e9, false}, {"no peak", true, 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			fr := &widget.Frame{Res: &analysis.Result{}, State: agg.New(), Live: true,
				Meta: xtimeline.Meta{Devices: 16, GPUsPerHost: 8, LinkBytes: tc.measured}}
			fr.Meta.LinkPeaks[xtimeline.PeakNVLink] = tc.peak
			var ds Devices
			ds.Reset(fr)
			v, ok := ds.LinkPct(analysis.LinkNVLink, 9)
			if ok != tc.wantKnown || v != 0 {
				t.Errorf("LinkPct = %v, %v; want 0, %v", v, ok, tc.wantKnown)
			}
			if _, ok := ds.LinkPct(analysis.LinkNVLink, 16); ok {
				t.Error("a device the job does not have has a known link")
			}
		})
	}
}

// The findings metric colours a device by the most confident finding naming it, or naming its host
// when a finding names no device; a device no finding names is a known 0.
func TestFindingPct(t *testing.T) {
	res := &analysis.Result{Findings: []diagnosis.Finding{
		{Rank: 11, Host: 1, Confidence: 0.9},
		{Rank: 11, Host: 1, Confidence: 0.4},
		{Rank: -1, Host: 0, Confidence: 0.5},
	}}
	fr := &widget.Frame{Res: res, State: agg.New(), Meta: xtimeline.Meta{Devices: 16, GPUsPerHost: 8}}
	var ds Devices
	ds.Reset(fr)
	for _, tc := range []struct {
		dev  int32
		want float64
		ok   bool
	}{{11, 90, true}, {3, 50, true}, {12, 0, true}, {16, 0, false}} {
		if v, ok := ds.FindingPct(tc.dev); v != tc.want || ok != tc.ok {
			t.Errorf("FindingPct(%d) = %v, %v; want %v, %v", tc.dev, v, ok, tc.want, tc.ok)
		}
	}
	ms := Metrics()
	if m := ms[len(ms)-1]; m.Name != "findings (confidence %)" || !m.HighIsBad {
		t.Errorf("the last metric is %q; want the findings, high is bad", m.Name)
	}
}
