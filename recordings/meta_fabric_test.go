package recordings

import (
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// The link peaks and the fabric port bandwidth survive the Meta chunk's key/value pairs; a
// recording without the fabric key (every one written before it) reads as no fabric, and a bad
// value is ignored rather than taken as a bandwidth.
func TestMetaFabricPortRoundTrip(t *testing.T) {
	m := timeline.Meta{Source: "sim", LinkBytes: true, FabricPortBps: 400e9}
	m.LinkPeaks[timeline.PeakNIC] = 50e9
	back := MetaFromPairs(MetaPairs(m))
	if back.FabricPortBps != 400e9 || back.LinkPeaks != m.LinkPeaks || !back.LinkBytes {
		t.Errorf("round trip = port %v, peaks %v, link bytes %v; want 400e9, %v, true", back.FabricPortBps, back.LinkPeaks, back.LinkBytes, m.LinkPeaks)
	}
	if old := MetaFromPairs([][2]string{{"source", "sim"}, {"peak.nic_bps", "5e10"}}); old.FabricPortBps != 0 {
		t.Errorf("a recording without the key has port bandwidth %v; want 0 (none)", old.FabricPortBps)
	}
	for _, v := range []string{"fast", "-1", "+Inf", "NaN"} {
		if bad := MetaFromPairs([][2]string{{"peak.fabric_port_bps", v}}); bad.FabricPortBps != 0 {
			t.Errorf("peak.fabric_port_bps %q read as %v; want it ignored", v, bad.FabricPortBps)
		}
	}
}
