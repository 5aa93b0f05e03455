package analysis

import (
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// portEvent is a fabric port's link-bytes event for leaf (group, rail) in direction dir.
func portEvent(group, rail, dir int, start, end, bytes int64) timeline.Event {
	return timeline.Event{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(timeline.LinkFabric, dir), Start: start, End: end,
		Bytes: bytes, Device: timeline.NoDevice, Peer: timeline.NoDevice, Aux: timeline.PackPort(group, rail)}
}

// Fabric port bytes are counted per port apart from the devices' links: totals per direction, the
// busiest 50 ms bucket (the pieces of a bucket cut where a run paused add up), the percentage of
// the port's bandwidth, the hottest port per bucket, busiest first.
func TestFabricPorts(t *testing.T) {
	const ms = 1_000_000
	a := New(timeline.Meta{LinkBytes: true, FabricPortBps: 100e9, GPUsPerHost: 8, Devices: 16})
	for _, e := range []timeline.Event{
		// leaf g0.r1 up: 2 GB in bucket 0 in two pieces (40 GB/s), 1 GB in bucket 1 (20 GB/s).
		portEvent(0, 1, timeline.LinkTx, 0, 20*ms, 1e9),
		portEvent(0, 1, timeline.LinkTx, 20*ms, 50*ms, 1e9),
		portEvent(0, 1, timeline.LinkTx, 50*ms, 100*ms, 1e9),
		// leaf g1.r1 down: 4 GB in bucket 1 (80 GB/s).
		portEvent(1, 1, timeline.LinkRx, 50*ms, 100*ms, 4e9),
		// leaf g2.r0 up: 0.5 GB in bucket 0 (10 GB/s).
		portEvent(2, 0, timeline.LinkTx, 0, 50*ms, 5e8),
	} {
		a.Emit(&e)
	}
	r := a.Result(nil).Links
	f := r.Fabric
	if f == nil {
		t.Fatal("no fabric in the result")
	}
	if f.Ports != 3 || f.Up != 35e8 || f.Down != 4e9 || f.PortBps != 100e9 {
		t.Errorf("fabric = %d ports, %d up, %d down, %v B/s; want 3, 3.5e9, 4e9, 100e9", f.Ports, f.Up, f.Down, f.PortBps)
	}
	want := []struct {
		name string
		peak float64
	}{{"leaf g1.r1", 80e9}, {"leaf g0.r1", 40e9}, {"leaf g2.r0", 10e9}}
	if len(f.Hot) != len(want) {
		t.Fatalf("hot ports %+v; want %d", f.Hot, len(want))
	}
	for i, w := range want {
		h := f.Hot[i]
		if h.Name != w.name || h.PeakBps != w.peak || h.PeakPct == nil || *h.PeakPct != w.peak/1e9 {
			t.Errorf("hot[%d] = %s %.4g B/s %v%%; want %s %.4g B/s %v%%", i, h.Name, h.PeakBps, h.PeakPct, w.name, w.peak, w.peak/1e9)
		}
	}
	if bps, port, ok := f.Rate(0); !ok || bps != 40e9 || port != timeline.PackPort(0, 1) {
		t.Errorf("Rate(0) = %.4g, %d, %v; want 40e9 on leaf g0.r1", bps, port, ok)
	}
	if bps, port, ok := f.Rate(1); !ok || bps != 80e9 || port != timeline.PackPort(1, 1) {
		t.Errorf("Rate(1) = %.4g, %d, %v; want 80e9 on leaf g1.r1", bps, port, ok)
	}
	for _, d := range r.Devices {
		if d.Total != 0 {
			t.Errorf("device %d counted %d bytes of the fabric's ports", d.Device, d.Total)
		}
	}
}

// Without the port's bandwidth the percentage is unknown, not 0; a source that does not measure
// its links, or a recording without fabric events, has no fabric section.
func TestFabricUnknownPeakAndAbsent(t *testing.T) {
	e := portEvent(0, 0, timeline.LinkTx, 0, 50_000_000, 1e9)
	a := New(timeline.Meta{LinkBytes: true})
	a.Emit(&e)
	if f := a.Result(nil).Links.Fabric; f == nil || len(f.Hot) != 1 || f.Hot[0].PeakPct != nil {
		t.Errorf("fabric without a port bandwidth = %+v; want one port with an unknown percentage", f)
	}
	b := New(timeline.Meta{})
	b.Emit(&e)
	if f := b.Result(nil).Links.Fabric; f != nil {
		t.Errorf("a source that does not measure links has a fabric %+v; want none", f)
	}
	c := New(timeline.Meta{LinkBytes: true})
	dev := timeline.Event{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(timeline.PeakNIC, timeline.LinkTx), Start: 0, End: 50_000_000, Bytes: 1e9, Peer: timeline.NoDevice}
	c.Emit(&dev)
	if f := c.Result(nil).Links.Fabric; f != nil {
		t.Errorf("device links only: fabric %+v; want none", f)
	}
}
