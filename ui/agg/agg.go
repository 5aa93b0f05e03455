// Package agg folds a session's events, as they arrive, into what the console shows: throughput
// per device and link over time, steps, the communicator cache, alerts, per-stream activity for the
// timeline, transfer and collective statistics, barriers and stragglers, and a log. It is
// incremental (each Update reads only events it has not seen) and bounded (old stream activity is
// dropped with the window), so the console keeps up with any ingest rate.
package agg

import (
	"math/bits"
	"sort"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// Links a device's traffic is counted on.
const (
	LinkPCIe = iota
	LinkNVLink
	LinkNIC
	LinkHBM
	Links
)

// LinkNames are the links' short names.
var LinkNames = [Links]string{"PCIe", "NVLink", "NIC", "HBM"}

// Info is what the aggregator needs to know about the source.
type Info struct {
	Devices     int
	GPUsPerHost int
	// Peak is each link's peak bandwidth per device, bytes per second (0: unknown).
	Peak [Links]float64
}

// Buckets of the throughput history.
const (
	BucketNs = 50_000_000 // 50 ms of session time
	History  = 120        // buckets kept
)

// DeviceStats is one device's traffic.
type DeviceStats struct {
	// bytes[link][bucket % History] with the absolute bucket in stamp.
	bytes [Links][History]float64
	stamp [History]int64
	Moved int64 // bytes moved by this device, all links
}

// Rate returns the link's throughput in bytes/s over bucket b.
func (d *DeviceStats) Rate(link int, b int64) float64 {
	i := int(b % History)
	if b < 0 || d.stamp[i] != b {
		return 0
	}
	return d.bytes[link][i] / (BucketNs / 1e9)
}

// Op is one item on a stream's timeline.
type Op struct {
	Start, End int64
	Index      int64 // global event index, to fetch details from the snapshot
	Kind       timeline.Kind
	Sub        uint8
}

// Track is one stream's recent activity, ordered by start.
type Track struct {
	Device   int32
	Stream   uint32
	Priority int8
	Ops      []Op
}

// RowKey identifies a transfers-table row: an op kind at a size class.
type RowKey struct {
	Kind  string // h2d, d2h, d2d, p2p, memset, send, recv, or a collective op
	Size  int64  // power-of-two size class (upper bound)
	Ranks int
}

// Row is a transfers-table row.
type Row struct {
	RowKey
	Count int
	Bytes int64
	Lat   Hist // op time (per collective instance: last rank end − first rank start)
	Rate  Hist // bytes/s per op (collectives: algbw)
}

// Hist is a log-linear histogram of positive values (16 sub-buckets per power of two: ±3%).
type Hist struct {
	counts map[int]int
	n      int
}

func histBucket(v float64) int {
	if v < 1 {
		return 0
	}
	u := uint64(v)
	e := bits.Len64(u) - 1
	sub := 0
	if e >= 4 {
		sub = int(u>>(e-4)) & 15
	} else {
		sub = int(u<<(4-e)) & 15
	}
	return e*16 + sub
}

func histValue(b int) float64 {
	e, sub := b/16, b%16
	return float64(uint64(1)<<e) * (1 + (float64(sub)+0.5)/16)
}

// Add records v.
func (h *Hist) Add(v float64) {
	if h.counts == nil {
		h.counts = map[int]int{}
	}
	h.counts[histBucket(v)]++
	h.n++
}

// Quantile returns the q-quantile (0..1), approximately.
func (h *Hist) Quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	keys := make([]int, 0, len(h.counts))
	for k := range h.counts {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	target := int(q*float64(h.n)+0.9999999) - 1
	seen := 0
	for _, k := range keys {
		seen += h.counts[k]
		if seen > target {
			return histValue(k)
		}
	}
	return histValue(keys[len(keys)-1])
}

// Count returns the number of values.
func (h *Hist) Count() int { return h.n }

// Barrier is one finished barrier.
type Barrier struct {
	Op        uint64
	Label     string
	Release   int64
	Arrivals  []Arrival // in rank order
	Straggler int32
	Lateness  int64
}

// Arrival is one rank at a barrier.
type Arrival struct {
	Rank   int32
	Arrive int64
	Wait   int64
}

// Comm is a communicator seen in the cache events.
type Comm struct {
	ID      uint32
	Devices string
	Created int64
	InitNs  int64
	Hits    int
	Evicted bool
	Faulted bool
}

// Alert is a watchdog or error alert.
type Alert struct {
	At      int64
	Message string
}

// Limits on what the aggregator keeps.
const (
	MaxBarriers = 200
	MaxAlerts   = 100
	MaxLog      = 5000
	MaxSteps    = 2000
)

// State is everything the views read. Update folds new events into it.
type State struct {
	Info      Info
	Next      int64 // global index of the next event to read
	Missed    int64 // events trimmed from the window before they were read
	Now       int64
	Events    int64
	Devices   []DeviceStats
	Steps     []int64 // recent step durations
	StepCount int
	Tracks    []*Track
	trackIdx  map[[2]int64]int
	Rows      map[RowKey]*Row
	open      map[uint64]*pending // collectives and barriers not yet complete
	Barriers  []Barrier
	LastAt    map[int32]int // barriers each rank arrived last at
	Lateness  map[int32][]int64
	Comms     map[uint32]*Comm
	CommHits  int
	CommMiss  int
	CommEvict int
	CommInit  int64
	Alerts    []Alert
	// Telemetry holds each device's latest NVML readings, by timeline.SampleMetric.
	Telemetry map[int32]*[10]int64
	Log       []int64 // recent event indices (ring, newest at Log[(logHead-1)%len])
	logHead   int
	Moved     int64
}

type pending struct {
	kind    timeline.Kind
	coll    timeline.CollOp
	ranks   int
	bytes   int64
	start   int64
	end     int64
	label   string
	arrives []Arrival
}

// New returns an empty state.
func New(info Info) *State {
	if info.GPUsPerHost <= 0 {
		info.GPUsPerHost = max(info.Devices, 1)
	}
	return &State{Info: info, Devices: make([]DeviceStats, max(info.Devices, 1)), trackIdx: map[[2]int64]int{},
		Rows: map[RowKey]*Row{}, open: map[uint64]*pending{}, LastAt: map[int32]int{}, Lateness: map[int32][]int64{},
		Comms: map[uint32]*Comm{}, Log: make([]int64, 0, MaxLog)}
}

// Update reads the events of snap that are new since the last call.
func (s *State) Update(snap *timeline.Snapshot) {
	if s.Next < snap.Base {
		s.Missed += snap.Base - s.Next
		s.Next = snap.Base
	}
	s.Now = max(s.Now, snap.Now)
	for i := s.Next; i < snap.Total; i++ {
		s.add(snap, i, snap.At(i))
	}
	s.Next = snap.Total
	// Drop stream activity the window no longer holds.
	for _, t := range s.Tracks {
		k := sort.Search(len(t.Ops), func(j int) bool { return t.Ops[j].Index >= snap.Base })
		if k > 0 {
			t.Ops = append(t.Ops[:0], t.Ops[k:]...)
		}
	}
}

func (s *State) device(d int32) *DeviceStats {
	if d < 0 {
		return nil
	}
	for int(d) >= len(s.Devices) {
		s.Devices = append(s.Devices, DeviceStats{})
	}
	return &s.Devices[d]
}

func (s *State) track(e *timeline.Event) *Track {
	k := [2]int64{int64(e.Device), int64(e.Stream)}
	if i, ok := s.trackIdx[k]; ok {
		return s.Tracks[i]
	}
	t := &Track{Device: e.Device, Stream: e.Stream, Priority: e.Priority}
	// Keep tracks sorted by device, then stream.
	pos := sort.Search(len(s.Tracks), func(i int) bool {
		o := s.Tracks[i]
		return o.Device > t.Device || (o.Device == t.Device && o.Stream > t.Stream)
	})
	s.Tracks = append(s.Tracks, nil)
	copy(s.Tracks[pos+1:], s.Tracks[pos:])
	s.Tracks[pos] = t
	for i := pos; i < len(s.Tracks); i++ {
		s.trackIdx[[2]int64{int64(s.Tracks[i].Device), int64(s.Tracks[i].Stream)}] = i
	}
	return t
}

// sizeClass rounds n up to a power of two.
func sizeClass(n int64) int64 {
	if n <= 1 {
		return max(n, 0)
	}
	return 1 << bits.Len64(uint64(n-1))
}

// linkOf says which link of its device an event's bytes cross, and how many bytes per rank a
// collective puts on it (nccl-tests bus bytes).
func (s *State) linkOf(e *timeline.Event) (int, float64) {
	switch e.Kind {
	case timeline.KindMemcpy:
		switch timeline.CopyDir(e.Sub) {
		case timeline.CopyH2D, timeline.CopyD2H:
			return LinkPCIe, float64(e.Bytes)
		case timeline.CopyP2P:
			return LinkNVLink, float64(e.Bytes)
		}
		return LinkHBM, float64(e.Bytes)
	case timeline.KindSend:
		if e.Peer >= 0 && int(e.Peer)/s.Info.GPUsPerHost != int(e.Device)/s.Info.GPUsPerHost {
			return LinkNIC, float64(e.Bytes)
		}
		return LinkNVLink, float64(e.Bytes)
	case timeline.KindCollective:
		bus := float64(e.Bytes) * timeline.CollOp(e.Sub).BusFactor(int(e.Ranks))
		if int(e.Ranks) > s.Info.GPUsPerHost {
			return LinkNIC, bus
		}
		return LinkNVLink, bus
	}
	return -1, 0
}

// addBytes spreads an op's bytes over the history buckets its time spans.
func (d *DeviceStats) addBytes(link int, start, end int64, bytes float64) {
	if end <= start {
		end = start + 1
	}
	first, last := start/BucketNs, end/BucketNs
	if last-first >= History {
		first = last - History + 1
		start = first * BucketNs
	}
	for b := first; b <= last; b++ {
		lo, hi := max(start, b*BucketNs), min(end, (b+1)*BucketNs)
		if hi <= lo {
			continue
		}
		i := int(b % History)
		if d.stamp[i] != b {
			d.stamp[i] = b
			for l := range Links {
				d.bytes[l][i] = 0
			}
		}
		d.bytes[link][i] += bytes * float64(hi-lo) / float64(end-start)
	}
}

func (s *State) add(snap *timeline.Snapshot, idx int64, e *timeline.Event) {
	s.Events++
	if len(s.Log) < MaxLog {
		s.Log = append(s.Log, idx)
	} else {
		s.Log[s.logHead] = idx
		s.logHead = (s.logHead + 1) % MaxLog
	}
	switch e.Kind {
	case timeline.KindStep:
		if e.Status == timeline.StatusOK {
			s.StepCount++
			if len(s.Steps) == MaxSteps {
				s.Steps = s.Steps[1:]
			}
			s.Steps = append(s.Steps, e.Dur())
		}
		return
	case timeline.KindCommInit:
		c := s.comm(e.Comm)
		if c.InitNs == 0 {
			s.CommMiss++
			c.Created = e.Start
			c.Devices = strings.TrimSpace(snap.Label(e.Label)[strings.LastIndex(snap.Label(e.Label), " ")+1:])
		}
		if d := e.Dur(); d > c.InitNs {
			s.CommInit += d - c.InitNs
			c.InitNs = d
		}
		return
	case timeline.KindCommHit:
		s.CommHits++
		s.comm(e.Comm).Hits++
		return
	case timeline.KindCommEvict:
		s.CommEvict++
		c := s.comm(e.Comm)
		c.Evicted = true
		c.Faulted = e.Status == timeline.StatusFaulted
		return
	case timeline.KindDeviceSample:
		if s.Telemetry == nil {
			s.Telemetry = map[int32]*[10]int64{}
		}
		t := s.Telemetry[e.Device]
		if t == nil {
			t = &[10]int64{}
			s.Telemetry[e.Device] = t
		}
		if int(e.Sub) < len(t) {
			t[e.Sub] = e.Bytes
		}
		return
	case timeline.KindAlert:
		if len(s.Alerts) == MaxAlerts {
			s.Alerts = s.Alerts[1:]
		}
		s.Alerts = append(s.Alerts, Alert{At: e.Start, Message: snap.Label(e.Label)})
		return
	}
	if e.Stream != 0 && e.Device >= 0 && (e.Kind.IsBusy() || e.Kind == timeline.KindEventWait || e.Kind == timeline.KindBarrier || e.Kind == timeline.KindPeerWait) {
		t := s.track(e)
		op := Op{Start: e.Start, End: e.End, Index: idx, Kind: e.Kind, Sub: e.Sub}
		j := len(t.Ops)
		t.Ops = append(t.Ops, op)
		for j > 0 && t.Ops[j-1].Start > op.Start {
			t.Ops[j] = t.Ops[j-1]
			j--
		}
		t.Ops[j] = op
	}
	if e.Status != timeline.StatusOK {
		return
	}
	if link, bytes := s.linkOf(e); link >= 0 && bytes > 0 {
		if d := s.device(e.Device); d != nil {
			d.addBytes(link, e.Start, e.End, bytes)
			d.Moved += e.Bytes
		}
		if e.Kind != timeline.KindCollective {
			s.Moved += e.Bytes
		}
	}
	switch e.Kind {
	case timeline.KindMemcpy, timeline.KindSend, timeline.KindRecv:
		kind := timeline.CopyDir(e.Sub).String()
		if e.Kind == timeline.KindSend {
			kind = "send"
		} else if e.Kind == timeline.KindRecv {
			kind = "recv"
		}
		r := s.row(RowKey{Kind: kind, Size: sizeClass(e.Bytes)})
		r.Count++
		r.Bytes += e.Bytes
		r.Lat.Add(float64(e.Dur()))
		if d := e.Dur(); d > 0 {
			r.Rate.Add(float64(e.Bytes) / float64(d) * 1e9)
		}
	case timeline.KindCollective, timeline.KindBarrier:
		p := s.open[e.Op]
		if p == nil {
			p = &pending{kind: e.Kind, coll: timeline.CollOp(e.Sub), ranks: int(e.Ranks), bytes: e.Bytes, start: e.Start, end: e.End, label: snap.Label(e.Label)}
			s.open[e.Op] = p
			if len(s.open) > 10_000 { // an instance whose ranks never all arrived: forget the oldest half
				for k := range s.open {
					delete(s.open, k)
					if len(s.open) < 5_000 {
						break
					}
				}
			}
		}
		p.start, p.end = min(p.start, e.Start), max(p.end, e.End)
		p.arrives = append(p.arrives, Arrival{Rank: e.Device, Arrive: e.Start, Wait: e.Dur()})
		if len(p.arrives) >= max(p.ranks, 1) {
			delete(s.open, e.Op)
			s.finish(e.Op, p)
		}
	}
}

func (s *State) comm(id uint32) *Comm {
	c := s.Comms[id]
	if c == nil {
		c = &Comm{ID: id}
		s.Comms[id] = c
	}
	return c
}

func (s *State) row(k RowKey) *Row {
	r := s.Rows[k]
	if r == nil {
		r = &Row{RowKey: k}
		s.Rows[k] = r
	}
	return r
}

func (s *State) finish(op uint64, p *pending) {
	if p.kind == timeline.KindCollective {
		r := s.row(RowKey{Kind: p.coll.String(), Size: sizeClass(p.bytes), Ranks: p.ranks})
		r.Count++
		r.Bytes += p.bytes
		t := p.end - p.start
		r.Lat.Add(float64(t))
		if t > 0 {
			r.Rate.Add(float64(p.bytes) / float64(t) * 1e9)
		}
		return
	}
	sort.Slice(p.arrives, func(i, j int) bool { return p.arrives[i].Rank < p.arrives[j].Rank })
	b := Barrier{Op: op, Label: p.label, Release: p.end, Arrivals: p.arrives}
	last := 0
	arr := make([]int64, len(p.arrives))
	for i, a := range p.arrives {
		arr[i] = a.Arrive
		if a.Arrive > p.arrives[last].Arrive {
			last = i
		}
	}
	b.Straggler = p.arrives[last].Rank
	b.Lateness = p.arrives[last].Arrive - timeline.Percentile(arr, 50)
	if len(p.arrives) > 1 {
		s.LastAt[b.Straggler]++
		l := s.Lateness[b.Straggler]
		if len(l) == 1000 {
			l = l[1:]
		}
		s.Lateness[b.Straggler] = append(l, b.Lateness)
	}
	if len(s.Barriers) == MaxBarriers {
		s.Barriers = s.Barriers[1:]
	}
	s.Barriers = append(s.Barriers, b)
}

// RecentLog returns up to n recent event indices, oldest first.
func (s *State) RecentLog(n int) []int64 {
	out := make([]int64, 0, min(n, len(s.Log)))
	for k := len(s.Log) - min(n, len(s.Log)); k < len(s.Log); k++ {
		out = append(out, s.Log[(s.logHead+k)%len(s.Log)])
	}
	return out
}
