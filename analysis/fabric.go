package analysis

import (
	"sort"

	"github.com/xfertop/xfertop/timeline"
)

// MaxFabricPorts bounds the switch ports whose traffic is counted (a hostile recording must not
// grow the map without end); a rail fabric of 1,024 hosts has at most a few thousand.
const MaxFabricPorts = 1 << 16

// HotPorts is how many of the busiest fabric ports a result lists.
const HotPorts = 8

// fabric counts what the fabric's switch ports carried (KindLinkBytes events of class
// timeline.LinkFabric): per port and direction over the run, per port its busiest 50 ms bucket,
// and per bucket the busiest port's rate (the fabric's throughput history).
type fabric struct {
	portBps float64 // a port's bandwidth each way; 0 unknown
	ports   map[uint32]*portAcc
	dropped int64 // events for ports beyond MaxFabricPorts
	hist    [HistoryBuckets]portCell
	changed bool
	pub     Fabric
}

type portAcc struct {
	bytes  [NumDirs]float64
	bucket int64            // the bucket cur counts
	cur    [NumDirs]float64 // bytes in that bucket
	peak   float64          // the busiest bucket's rate, busier direction, bytes/s
}

// portCell is one history bucket: the busiest port's rate in it.
type portCell struct {
	stamp int64
	rate  float64
	port  uint32
}

func (f *fabric) add(e *timeline.Event, dir int) {
	if e.Bytes <= 0 || e.Status != timeline.StatusOK {
		return
	}
	if f.ports == nil {
		f.ports = map[uint32]*portAcc{}
	}
	p := f.ports[e.Aux]
	if p == nil {
		if len(f.ports) >= MaxFabricPorts {
			f.dropped++
			return
		}
		p = &portAcc{bucket: -1}
		f.ports[e.Aux] = p
	}
	f.changed = true
	b := float64(e.Bytes)
	p.bytes[dir] += b
	// The engine's windows are the history's buckets (timeline.LinkWindowNs == BucketNs), cut
	// short where a run returns; the pieces of one bucket add up.
	k := e.Start / BucketNs
	if k != p.bucket {
		p.bucket, p.cur = k, [NumDirs]float64{}
	}
	p.cur[dir] += b
	rate := max(p.cur[DirTx], p.cur[DirRx]) / (BucketNs / 1e9)
	p.peak = max(p.peak, rate)
	if k < 0 {
		return
	}
	c := &f.hist[k%HistoryBuckets]
	if c.stamp > k {
		return
	}
	if c.stamp != k {
		*c = portCell{stamp: k}
	}
	if rate > c.rate {
		c.rate, c.port = rate, e.Aux
	}
}

// FabricPort is one switch port's traffic: a leaf's uplink (towards the spines) and downlink.
type FabricPort struct {
	Port uint32 `json:"port"` // timeline.PackPort(rail group, rail)
	Name string `json:"name"` // "leaf g0.r3"
	Up   int64  `json:"up_bytes"`
	Down int64  `json:"down_bytes"`
	// PeakBps is the port's busiest 50 ms, its busier direction, in bytes/s.
	PeakBps float64 `json:"peak_bps"`
	// PeakPct is PeakBps as a percentage of the port's bandwidth; nil when that is unknown.
	PeakPct *float64 `json:"peak_pct,omitempty"`
}

// Fabric is what the fabric's switch ports carried, with the busiest ports first.
type Fabric struct {
	// PortBps is a port's bandwidth each way (0: unknown, PeakBps then has no percentage).
	PortBps float64      `json:"port_bps,omitempty"`
	Ports   int          `json:"ports"`
	Up      int64        `json:"up_bytes"`
	Down    int64        `json:"down_bytes"`
	Hot     []FabricPort `json:"hot,omitempty"`
	// Dropped counts events for ports beyond MaxFabricPorts, not counted.
	Dropped int64 `json:"dropped,omitempty"`
	hist    *[HistoryBuckets]portCell
}

// Rate returns the busiest port's rate in bytes/s over history bucket k and the port; ok is false
// when the history no longer (or never) held that bucket.
func (f Fabric) Rate(k int64) (bps float64, port uint32, ok bool) {
	if f.hist == nil || k < 0 {
		return 0, 0, false
	}
	c := f.hist[k%HistoryBuckets]
	if c.stamp != k {
		return 0, 0, c.stamp < k
	}
	return c.rate, c.port, true
}

func (f *fabric) result() Fabric {
	if !f.changed && f.pub.hist != nil {
		return f.pub
	}
	h := f.hist
	out := Fabric{PortBps: f.portBps, Ports: len(f.ports), Dropped: f.dropped, hist: &h}
	for port, p := range f.ports {
		up, down := int64(p.bytes[DirTx]), int64(p.bytes[DirRx])
		out.Up += up
		out.Down += down
		out.Hot = append(out.Hot, FabricPort{Port: port, Up: up, Down: down, PeakBps: p.peak})
	}
	sort.Slice(out.Hot, func(i, j int) bool {
		a, b := out.Hot[i], out.Hot[j]
		if a.PeakBps != b.PeakBps {
			return a.PeakBps > b.PeakBps
		}
		if a.Up+a.Down != b.Up+b.Down {
			return a.Up+a.Down > b.Up+b.Down
		}
		return a.Port < b.Port
	})
	if len(out.Hot) > HotPorts {
		out.Hot = out.Hot[:HotPorts]
	}
	for i := range out.Hot {
		out.Hot[i].Name = timeline.PortName(out.Hot[i].Port)
		if f.portBps > 0 {
			pct := 100 * out.Hot[i].PeakBps / f.portBps
			out.Hot[i].PeakPct = &pct
		}
	}
	f.pub, f.changed = out, false
	return out
}
