package otel

import (
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// Each kind of event lands on its link in its direction, on the device (and the peer) it should.
func TestLinkDirs(t *testing.T) {
	const gpus = 8
	nd := timeline.NoDevice
	type want struct {
		dev  int32
		link analysis.Link
		dir  int
		b    int64
	}
	ar := uint8(timeline.CollAllReduce)
	tests := []struct {
		name string
		e    timeline.Event
		want []want
	}{
		{"h2d is received on PCIe", timeline.Event{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyH2D), Device: 1, Peer: nd, Bytes: 100}, []want{{1, analysis.LinkPCIe, dirReceive, 100}}},
		{"d2h is transmitted on PCIe", timeline.Event{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyD2H), Device: 1, Peer: nd, Bytes: 100}, []want{{1, analysis.LinkPCIe, dirTransmit, 100}}},
		{"p2p: device transmits, peer receives", timeline.Event{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyP2P), Device: 1, Peer: 2, Bytes: 100},
			[]want{{1, analysis.LinkNVLink, dirTransmit, 100}, {2, analysis.LinkNVLink, dirReceive, 100}}},
		{"d2d moves nothing between places", timeline.Event{Kind: timeline.KindMemcpy, Sub: uint8(timeline.CopyD2D), Device: 1, Peer: nd, Bytes: 100}, nil},
		{"send within a host: NVLink", timeline.Event{Kind: timeline.KindSend, Device: 1, Peer: 2, Bytes: 100}, []want{{1, analysis.LinkNVLink, dirTransmit, 100}}},
		{"recv between hosts: NIC", timeline.Event{Kind: timeline.KindRecv, Device: 9, Peer: 1, Bytes: 100}, []want{{9, analysis.LinkNIC, dirReceive, 100}}},
		{"collective: bus bytes both ways", timeline.Event{Kind: timeline.KindCollective, Sub: ar, Ranks: 4, Device: 3, Peer: nd, Bytes: 100},
			[]want{{3, analysis.LinkNVLink, dirTransmit, 150}, {3, analysis.LinkNVLink, dirReceive, 150}}},
		{"collective over hosts: NIC", timeline.Event{Kind: timeline.KindCollective, Sub: ar, Ranks: 16, Device: 3, Peer: nd, Bytes: 160},
			[]want{{3, analysis.LinkNIC, dirTransmit, 300}, {3, analysis.LinkNIC, dirReceive, 300}}},
		{"a failed op moved nothing", timeline.Event{Kind: timeline.KindSend, Device: 1, Peer: 2, Bytes: 100, Status: timeline.StatusTimeout}, nil},
		{"a bogus device is not counted", timeline.Event{Kind: timeline.KindSend, Device: analysis.MaxDevices, Peer: 2, Bytes: 100}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newLinkDirs(gpus)
			tc.e.Start, tc.e.End = 10, 20
			l.add(&tc.e)
			got := map[want]bool{}
			for dev := range int32(len(l.devs)) {
				tot, _ := l.totals(dev, 0)
				for link := range analysis.NumLinks {
					for dir := range numDirs {
						if b := tot.bytes[link][dir]; b != 0 {
							got[want{dev, link, dir, b}] = true
							if !tot.rated || tot.rate[link][dir] != float64(b)/0.05 {
								t.Errorf("device %d %v %s: rate %v in bucket 0; want %v", dev, link, dirNames[dir], tot.rate[link][dir], float64(b)/0.05)
							}
						}
					}
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("counted %v; want %v", got, tc.want)
			}
			for _, w := range tc.want {
				if !got[w] {
					t.Errorf("counted %v; want %v among them", got, w)
				}
			}
		})
	}
}
