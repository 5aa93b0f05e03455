package recordings

import (
	"slices"
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

// The faults injected into a run survive the Meta chunk (a fault's own commas included); a
// recording without the key (every one written before it) reads as none.
func TestMetaFaultsRoundTrip(t *testing.T) {
	m := timeline.Meta{Source: "sim", Faults: []string{"kind=nic_slow,host=37,nic=3,factor=0.3,at=1.1s", "kind=hang,host=2,gpu=1,at=2s"}}
	if back := MetaFromPairs(MetaPairs(m)); !slices.Equal(back.Faults, m.Faults) || back.Extra != nil {
		t.Errorf("round trip = faults %q, extra %v; want %q and no extra", back.Faults, back.Extra, m.Faults)
	}
	if old := MetaFromPairs([][2]string{{"source", "sim"}, {"seed", "7"}}); old.Faults != nil {
		t.Errorf("a recording without the key has faults %q; want none", old.Faults)
	}
}
