package analysis

import "github.com/xfertop/xfertop/timeline"

// Link is a kind of link a device's bytes cross.
type Link int

// Links a device's traffic is counted on.
const (
	LinkPCIe Link = iota
	LinkNVLink
	LinkNIC
	LinkHBM
	NumLinks
)

var linkNames = [NumLinks]string{"PCIe", "NVLink", "NIC", "HBM"}

// String returns the link's short name.
func (l Link) String() string {
	if l >= 0 && l < NumLinks {
		return linkNames[l]
	}
	return "link?"
}

// Throughput history: BucketNs of session time per bucket, the last HistoryBuckets kept.
const (
	BucketNs       = 50_000_000
	HistoryBuckets = 120
)

// links counts every device's bytes per link, each end of a transfer on its own device: a copy on
// the device that ran it (and a peer copy on its peer too), a send on the sender, a receive on the
// receiver, a collective's bus bytes (nccl-tests: bytes × bus factor) on each rank. Sends and
// receives between hosts cross NICs, within a host NVLink; collectives with more ranks than a host
// has GPUs are counted on NICs. It also keeps a short history for throughput over time.
type links struct {
	gpusPerHost int
	bytes       [][NumLinks]float64 // totals by device
	moved       float64
	hist        linkHistory
	// pub is the rows last handed out, shared while nothing was counted since (rows are read-only).
	pub     []DeviceLinks
	changed bool
}

// MaxDevices bounds the device ids whose link traffic is counted (per-device state is a dense
// array: a bogus id from a hostile trace must not allocate gigabytes).
const MaxDevices = 1 << 14

func newLinks(gpusPerHost int) *links { return &links{gpusPerHost: max(gpusPerHost, 1)} }

func (l *links) device(d int32) *[NumLinks]float64 {
	for int(d) >= len(l.bytes) {
		l.bytes = append(l.bytes, [NumLinks]float64{})
	}
	l.changed = true
	return &l.bytes[d]
}

func (l *links) add(e *timeline.Event) {
	if e.Status != timeline.StatusOK || e.Device < 0 || e.Bytes <= 0 || e.Device >= MaxDevices {
		return
	}
	b := float64(e.Bytes)
	switch e.Kind {
	case timeline.KindMemcpy:
		switch timeline.CopyDir(e.Sub) {
		case timeline.CopyH2D, timeline.CopyD2H:
			l.put(e.Device, LinkPCIe, e, b)
		case timeline.CopyP2P:
			l.put(e.Device, LinkNVLink, e, b)
			if e.Peer >= 0 && e.Peer != e.Device && e.Peer < MaxDevices {
				l.put(e.Peer, LinkNVLink, e, b)
			}
		case timeline.CopySet:
			return // writes memory, moves nothing between places
		default:
			l.put(e.Device, LinkHBM, e, b)
		}
		l.moved += b
	case timeline.KindSend, timeline.KindRecv:
		link := LinkNVLink
		if e.Peer >= 0 && int(e.Peer)/l.gpusPerHost != int(e.Device)/l.gpusPerHost {
			link = LinkNIC
		}
		l.put(e.Device, link, e, b)
		if e.Kind == timeline.KindSend {
			l.moved += b
		}
	case timeline.KindCollective:
		bus := b * timeline.CollOp(e.Sub).BusFactor(int(e.Ranks))
		link := LinkNVLink
		if int(e.Ranks) > l.gpusPerHost {
			link = LinkNIC
		}
		l.put(e.Device, link, e, bus)
		l.moved += bus
	}
}

// put counts bytes on a device's link and spreads them over the history buckets the op spans.
func (l *links) put(dev int32, link Link, e *timeline.Event, bytes float64) {
	l.device(dev)[link] += bytes
	start, end := e.Start, e.End
	if end <= start {
		end = start + 1
	}
	first, last := start/BucketNs, end/BucketNs
	if last-first >= HistoryBuckets {
		first = last - HistoryBuckets + 1
	}
	for k := first; k <= last; k++ {
		lo, hi := max(start, k*BucketNs), min(end, (k+1)*BucketNs)
		if hi <= lo {
			continue
		}
		i := int(((k % HistoryBuckets) + HistoryBuckets) % HistoryBuckets)
		if l.hist.at(dev, i).stamp > k {
			continue // older than what the ring holds
		}
		c := l.hist.cell(dev, i)
		if c.stamp != k {
			*c = histCell{stamp: k}
		}
		c.bytes[link] += bytes * float64(hi-lo) / float64(end-start)
	}
}

// DeviceLinks is one device's bytes per link over the run.
type DeviceLinks struct {
	Device int32     `json:"device"`
	PCIe   int64     `json:"pcie_bytes"`
	NVLink int64     `json:"nvlink_bytes"`
	NIC    int64     `json:"nic_bytes"`
	HBM    int64     `json:"hbm_bytes"`
	Total  int64     `json:"total_bytes"`
	hist   *histRing // the history as of the result: never written once handed out
}

// Bytes returns the bytes counted on link.
func (d DeviceLinks) Bytes(link Link) int64 {
	switch link {
	case LinkPCIe:
		return d.PCIe
	case LinkNVLink:
		return d.NVLink
	case LinkNIC:
		return d.NIC
	case LinkHBM:
		return d.HBM
	}
	return 0
}

// Rate returns the link's throughput in bytes/s over history bucket k (time k·BucketNs), and
// false when the history no longer (or never) held that bucket.
func (d DeviceLinks) Rate(link Link, k int64) (float64, bool) {
	if d.hist == nil || k < 0 || link < 0 || link >= NumLinks {
		return 0, false
	}
	c := d.hist.at(d.Device, int(k%HistoryBuckets))
	if c.stamp != k {
		// An older stamp: bucket k had no traffic (a write would have stamped it). A newer one: the
		// slot was reused and bucket k is no longer held.
		return 0, c.stamp < k
	}
	return c.bytes[link] / (BucketNs / 1e9), true
}

// Links is traffic per device and link. MovedBytes counts each byte moved once: copies (not
// memsets), sends, and collectives' bus bytes summed over ranks.
type Links struct {
	Devices    []DeviceLinks `json:"devices"`
	MovedBytes int64         `json:"moved_bytes"`
}

func (l *links) result() Links {
	out := Links{MovedBytes: int64(l.moved)}
	if !l.changed && l.pub != nil {
		out.Devices = l.pub
		return out
	}
	ring := l.hist.publish()
	out.Devices = make([]DeviceLinks, 0, len(l.bytes))
	for i, b := range l.bytes {
		row := DeviceLinks{Device: int32(i), PCIe: int64(b[LinkPCIe]), NVLink: int64(b[LinkNVLink]), NIC: int64(b[LinkNIC]), HBM: int64(b[LinkHBM]),
			hist: ring}
		row.Total = row.PCIe + row.NVLink + row.NIC + row.HBM
		out.Devices = append(out.Devices, row)
	}
	l.pub, l.changed = out.Devices, false
	return out
}
