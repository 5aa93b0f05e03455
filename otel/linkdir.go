package otel

import (
	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
)

// Directions of a link's traffic, as OpenTelemetry's network.io.direction names them.
const (
	dirTransmit = iota
	dirReceive
	numDirs
)

var dirNames = [numDirs]string{"transmit", "receive"}

// netLinks are the links whose traffic has a direction: HBM (a copy within one device's memory)
// is counted by xfertop.link.* only.
var netLinks = [...]analysis.Link{analysis.LinkPCIe, analysis.LinkNVLink, analysis.LinkNIC}

// dirRing is how many 50 ms buckets of per-direction history a device keeps: only the newest is
// reported, the rest let events that end a little out of order still land in their buckets.
const dirRing = 16

// linkDirs counts each device's bytes per link and direction, as the analysis counts a link's
// bytes (analysis.links: the same link for each kind of event, the same spreading over 50 ms
// buckets), with the direction the bytes went:
//
//   - a host-to-device copy is received on the device's PCIe, a device-to-host copy transmitted;
//   - a peer copy is transmitted by its device and received by its peer, on NVLink;
//   - a send is transmitted and a receive received, on NIC between hosts and NVLink within one;
//   - a collective's bus bytes (nccl-tests: bytes × bus factor) are both transmitted and
//     received by every rank: each rank of a ring or tree sends and receives that much.
//
// So a link's transmit + receive is the analysis' count for copies and point-to-point transfers,
// and twice it for collectives, whose bus bytes the analysis counts once per rank.
type linkDirs struct {
	gpusPerHost int
	devs        []dirLinks
}

type dirLinks struct {
	bytes [analysis.NumLinks][numDirs]float64
	hist  [analysis.NumLinks][numDirs][dirRing]float64
	stamp [dirRing]int64
}

func newLinkDirs(gpusPerHost int) *linkDirs { return &linkDirs{gpusPerHost: max(gpusPerHost, 1)} }

func (l *linkDirs) add(e *timeline.Event) {
	if e.Status != timeline.StatusOK || e.Device < 0 || e.Bytes <= 0 || e.Device >= analysis.MaxDevices {
		return
	}
	b := float64(e.Bytes)
	switch e.Kind {
	case timeline.KindMemcpy:
		switch timeline.CopyDir(e.Sub) {
		case timeline.CopyH2D:
			l.put(e.Device, analysis.LinkPCIe, dirReceive, e, b)
		case timeline.CopyD2H:
			l.put(e.Device, analysis.LinkPCIe, dirTransmit, e, b)
		case timeline.CopyP2P:
			l.put(e.Device, analysis.LinkNVLink, dirTransmit, e, b)
			if e.Peer >= 0 && e.Peer != e.Device && e.Peer < analysis.MaxDevices {
				l.put(e.Peer, analysis.LinkNVLink, dirReceive, e, b)
			}
		}
	case timeline.KindSend, timeline.KindRecv:
		link := analysis.LinkNVLink
		if e.Peer >= 0 && int(e.Peer)/l.gpusPerHost != int(e.Device)/l.gpusPerHost {
			link = analysis.LinkNIC
		}
		dir := dirTransmit
		if e.Kind == timeline.KindRecv {
			dir = dirReceive
		}
		l.put(e.Device, link, dir, e, b)
	case timeline.KindCollective:
		bus := b * timeline.CollOp(e.Sub).BusFactor(int(e.Ranks))
		link := analysis.LinkNVLink
		if int(e.Ranks) > l.gpusPerHost {
			link = analysis.LinkNIC
		}
		l.put(e.Device, link, dirTransmit, e, bus)
		l.put(e.Device, link, dirReceive, e, bus)
	}
}

// put counts bytes on a device's link in one direction and spreads them over the buckets the op
// spans, each its share of the op's time (as analysis does).
func (l *linkDirs) put(dev int32, link analysis.Link, dir int, e *timeline.Event, bytes float64) {
	for int(dev) >= len(l.devs) {
		l.devs = append(l.devs, dirLinks{})
	}
	d := &l.devs[dev]
	d.bytes[link][dir] += bytes
	start, end := e.Start, e.End
	if end <= start {
		end = start + 1
	}
	first, last := start/analysis.BucketNs, end/analysis.BucketNs
	first = max(first, last-dirRing+1)
	for k := first; k <= last; k++ {
		lo, hi := max(start, k*analysis.BucketNs), min(end, (k+1)*analysis.BucketNs)
		if hi <= lo {
			continue
		}
		i := int(((k % dirRing) + dirRing) % dirRing)
		if d.stamp[i] != k {
			if d.stamp[i] > k {
				continue // older than what the ring holds
			}
			d.stamp[i] = k
			for x := range d.hist {
				for y := range d.hist[x] {
					d.hist[x][y][i] = 0
				}
			}
		}
		d.hist[link][dir][i] += bytes * float64(hi-lo) / float64(end-start)
	}
}

// dirTotals is one device's bytes per link and direction, and its rates in one bucket.
type dirTotals struct {
	bytes [analysis.NumLinks][numDirs]int64
	rate  [analysis.NumLinks][numDirs]float64
	rated bool // the ring still holds the bucket asked for
}

// totals returns device dev's counts, with rates over bucket k (as analysis.DeviceLinks.Rate: an
// older stamp means no traffic in k, a newer one that k is no longer held).
func (l *linkDirs) totals(dev int32, k int64) (dirTotals, bool) {
	var t dirTotals
	if dev < 0 || int(dev) >= len(l.devs) {
		return t, false
	}
	d := &l.devs[dev]
	for x := range d.bytes {
		for y := range d.bytes[x] {
			t.bytes[x][y] = int64(d.bytes[x][y])
		}
	}
	if k < 0 {
		return t, true
	}
	i := int(k % dirRing)
	switch {
	case d.stamp[i] == k:
		t.rated = true
		for x := range d.hist {
			for y := range d.hist[x] {
				t.rate[x][y] = d.hist[x][y][i] / (analysis.BucketNs / 1e9)
			}
		}
	case d.stamp[i] < k:
		t.rated = true // no traffic in k: zero rates
	}
	return t, true
}

// clone copies the counts for a collection (the analyzer's goroutine keeps adding).
func (l *linkDirs) clone() *linkDirs {
	return &linkDirs{gpusPerHost: l.gpusPerHost, devs: append([]dirLinks(nil), l.devs...)}
}
