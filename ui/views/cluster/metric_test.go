package cluster

import (
	"testing"

	"github.com/xfertop/xfertop/analysis"
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
