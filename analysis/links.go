package analysis

import (
	"cmp"
	"encoding/json"
	"slices"

	"github.com/xfertop/xfertop/analysis/hostmap"
	"github.com/xfertop/xfertop/timeline"
)

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

// String returns the link's short name.
func (l Link) String() string { return timeline.LinkName(int(l)) }

// Throughput history: BucketNs of session time per bucket, the last HistoryBuckets kept. A bucket
// is the engine's link window, so a measured window lands in exactly one bucket.
const (
	BucketNs       = timeline.LinkWindowNs
	HistoryBuckets = 120
)

// Link directions, from the device's side (timeline.LinkTx, timeline.LinkRx).
const (
	DirTx   = timeline.LinkTx
	DirRx   = timeline.LinkRx
	NumDirs = 2
)

// links counts every device's bytes per link and direction, and keeps a short history for
// throughput over time. Where the source measured its links (the simulator's KindLinkBytes
// events: Meta.LinkBytes), those are the only bytes counted: each is what the algorithm really put
// on that link, and a link's rate can never exceed what it carries. Otherwise the bytes come from
// the ops: a copy on the device that ran it (a peer copy sent by it, received by its peer), a
// send on the sender and a receive on the receiver (NIC between hosts, else NVLink), and a
// collective's bus bytes (nccl-tests: bytes × bus factor; NVLS: its buffer) out of and into each
// rank on NVLink when its ranks fit in one host. A collective that spans hosts moves its bytes over NVLink and NICs in
// shares only its algorithm knows, so a source that did not measure them leaves them unattributed
// (shown as unknown), rather than putting them all on one link above its peak.
type links struct {
	// hosts places the devices on hosts (the analysis's one map): where a device's host is
	// unknown (a trace without topology), which of its ops stay in a host, and so their link, is
	// unknown too.
	hosts    *hostmap.Map
	measured bool                         // link bytes come from KindLinkBytes events
	bytes    [][NumLinks][NumDirs]float64 // totals by device slot (farSlots)
	unknown  []float64                    // by slot: bytes on links the source cannot tell
	// partial is, by slot, the links whose bytes are in part unknown: an op of unknown size, or
	// (HBM) kernels and NCCL ops, whose memory traffic no source records.
	partial [][NumLinks]bool
	slots   farSlots // the slots of the device ids at or past MaxDevices
	nearLen int      // the largest device id below MaxDevices seen, + 1: the slots after it, to MaxDevices, are none's
	moved   busBytes
	// emulated is the bus bytes of the ops that stood in for the topology's (timeline.AuxEmulated:
	// --fit on shared GPUs): counted as moved would be, but on no link, as they crossed none.
	emulated busBytes
	// movedPartial says an op that moves bytes was of unknown size: moved is then a lower bound.
	movedPartial bool
	hist         linkHistory
	// pub is the rows last handed out, shared while nothing was counted since (rows are read-only).
	pub     []DeviceLinks
	changed bool
	fabric  fabric // the fabric's switch ports
	// pending are, by the peer whose host no event had named yet, the sends and receives counted
	// in unknown for it: once the peer's first event names its host, their bytes move to the link
	// they crossed (a live job's ranks are heard from in any order: a rank's first send can come
	// before its peer's first event). npending counts them, up to maxPendingP2P; past it an op
	// stays in unknown.
	pending  map[int32][]pendingP2P
	npending int
}

// pendingP2P is a send or receive whose peer's host was not known when it came.
type pendingP2P struct {
	dev        int32
	dir        int
	start, end int64
	bytes      float64
}

// maxPendingP2P bounds the sends and receives kept to be attributed when their peer's host is
// known (a peer never heard from, a hostile stream: the rest stay unknown).
const maxPendingP2P = 4096

// MaxDevices bounds the device ids that are their own slot in the per-device state (a dense array
// by id); the others get slots of their own as they are first seen (farSlots), so that a bogus
// id from a hostile trace costs one device's state, not gigabytes, and no device is dropped.
const MaxDevices = 1 << 14

func newLinks(hosts *hostmap.Map, measured bool, portBps float64) *links {
	return &links{hosts: hosts, measured: measured, fabric: fabric{portBps: portBps}}
}

// sameHost reports whether devices a and b are on one host, and whether that is known: it is not
// where either's host is unknown (every device taken as one host's would put a 1,024-rank job's
// traffic on NVLink, none on the NICs).
func (l *links) sameHost(a, b int32) (same, known bool) { return l.hosts.SameHost(a, b) }

// device returns the slot of device d (>= 0), making its state where it has none, and marks the
// rows changed.
func (l *links) device(d int32) int32 {
	s := d
	if s >= MaxDevices {
		s = l.slots.of(d)
	} else if int(s) >= l.nearLen {
		l.nearLen = int(s) + 1
	}
	for int(s) >= len(l.bytes) {
		l.bytes = append(l.bytes, [NumLinks][NumDirs]float64{})
		l.unknown = append(l.unknown, 0)
		l.partial = append(l.partial, [NumLinks]bool{})
	}
	l.changed = true
	return s
}

// attributeLate moves the bytes of the sends and receives whose peer is e's device, once the host
// map knows that device's host, from unknown to the link they crossed, over the time they ran.
func (l *links) attributeLate(e *timeline.Event) {
	peer := e.Device
	ps := l.pending[peer]
	if len(ps) == 0 {
		return
	}
	if _, known := l.hosts.Host(peer); !known {
		return
	}
	delete(l.pending, peer)
	l.npending -= len(ps)
	for _, p := range ps {
		same, known := l.sameHost(p.dev, peer)
		if !known {
			continue // its own device's host not kept by the map: it stays unknown
		}
		link := LinkNIC
		if same {
			link = LinkNVLink
		}
		l.unknown[l.device(p.dev)] -= p.bytes
		l.put(p.dev, link, p.dir, &timeline.Event{Start: p.start, End: p.end}, p.bytes)
	}
}

func (l *links) add(e *timeline.Event) {
	if l.npending > 0 {
		l.attributeLate(e)
	}
	if e.Kind == timeline.KindLinkBytes {
		if dir, ok := timeline.UnpackFabricLink(e.Sub); ok {
			if l.measured {
				l.fabric.add(e, dir)
			}
			return
		}
	}
	if e.Emulated() {
		l.addEmulated(e)
		return
	}
	if e.Status == timeline.StatusOK && e.Device >= 0 {
		l.markPartial(e)
	}
	// A source that measures its links (the engine) knows every op's size: a 0 there is 0 bytes
	// (a communicator's warm-up collective), not unknown.
	if !l.measured && e.Status == timeline.StatusOK && movesBytes(e) && (e.Bytes <= 0 || e.Kind == timeline.KindCollective && e.Ranks == 0) {
		l.movedPartial = true // its size, or its ranks and so its bus bytes, are unknown
	}
	if e.Status != timeline.StatusOK || e.Device < 0 || e.Bytes <= 0 {
		return
	}
	b := float64(e.Bytes)
	if e.Kind == timeline.KindLinkBytes {
		if link, dir, ok := timeline.UnpackLink(e.Sub); ok && l.measured {
			l.put(e.Device, Link(link), dir, e, b)
		}
		return
	}
	switch e.Kind {
	case timeline.KindMemcpy:
		if timeline.CopyDir(e.Sub) != timeline.CopySet { // a memset writes memory, moves nothing between places
			l.moved.add(e.Bytes, 1, 1)
		}
	case timeline.KindSend:
		l.moved.add(e.Bytes, 1, 1)
	case timeline.KindCollective:
		num, den := timeline.CollOp(e.Sub).BusFraction(int(e.Ranks))
		l.moved.add(e.Bytes, num, den)
	}
	if !l.measured {
		l.fromOp(e, b)
	}
}

// addEmulated counts an op that stood in for the topology's (a send carried by a copy on a GPU
// that its ranks share, a collective over fewer GPUs than ranks, or none): its bus bytes in the
// emulated total, on no link. Its device did touch memory (HBM: a copy's, NCCL's), which no
// figure holds.
func (l *links) addEmulated(e *timeline.Event) {
	if e.Status != timeline.StatusOK || e.Device < 0 {
		return
	}
	s := l.device(e.Device)
	l.partial[s][LinkHBM] = true
	switch e.Kind {
	case timeline.KindSend:
		l.emulated.add(e.Bytes, 1, 1)
	case timeline.KindCollective:
		num, den := timeline.CollOp(e.Sub).BusFraction(int(e.Ranks))
		l.emulated.add(e.Bytes, num, den)
	}
}

// movesBytes reports whether the op's bytes count in the bytes moved on links: a copy (not a
// memset), a send, a collective.
func movesBytes(e *timeline.Event) bool {
	switch e.Kind {
	case timeline.KindMemcpy:
		return timeline.CopyDir(e.Sub) != timeline.CopySet
	case timeline.KindSend, timeline.KindCollective:
		return true
	}
	return false
}

// markPartial notes the links an op puts bytes on that the figures cannot hold: kernels' and NCCL
// ops' memory traffic (HBM: no source records it), and, where the links are inferred from the ops,
// those an op of unknown size crossed (a Nsight export's SendRecv kernel).
func (l *links) markPartial(e *timeline.Event) {
	mark := func(dev int32, ls ...Link) {
		if dev < 0 {
			return
		}
		s, ok := dev, dev < MaxDevices
		if !ok {
			s, ok = l.slots.lookup(dev)
		}
		for _, k := range ls {
			if !ok || int(s) >= len(l.partial) || !l.partial[s][k] {
				s, ok = l.device(dev), true // grows partial; marks the rows changed
				l.partial[s][k] = true
			}
		}
	}
	switch e.Kind {
	case timeline.KindKernel:
		mark(e.Device, LinkHBM)
		return
	case timeline.KindCollective, timeline.KindSend, timeline.KindRecv:
		mark(e.Device, LinkHBM)
	case timeline.KindMemcpy:
	default:
		return
	}
	if l.measured {
		return // the links are measured: they hold all the op's bytes
	}
	if e.Bytes > 0 && l.unattributed(e) {
		// Its bytes went to "link unknown": NVLink and the NIC hold only part of the device's
		// traffic, a lower bound (— when nothing else), never a bare 0. A send's or receive's
		// may move to its link later (attributeLate), so those links are lower bounds while the
		// device has bytes in unknown (result), not for good.
		if e.Kind == timeline.KindCollective {
			mark(e.Device, LinkNVLink, LinkNIC)
		}
		return
	}
	if e.Bytes > 0 && (e.Kind != timeline.KindCollective || e.Ranks > 0) {
		return // the op's links hold all its bytes (a collective's bus bytes need its ranks)
	}
	switch e.Kind {
	case timeline.KindMemcpy:
		switch timeline.CopyDir(e.Sub) {
		case timeline.CopyH2D, timeline.CopyD2H:
			mark(e.Device, LinkPCIe)
		case timeline.CopyP2P:
			mark(e.Device, LinkNVLink)
			mark(e.Peer, LinkNVLink)
		default:
			mark(e.Device, LinkHBM)
		}
	case timeline.KindSend, timeline.KindRecv:
		same, known := l.sameHost(e.Device, e.Peer)
		switch {
		case e.Peer < 0 || !known: // the peer or the hosts unknown: on this host or another, NVLink or a NIC
			mark(e.Device, LinkNVLink, LinkNIC)
		case !same:
			mark(e.Device, LinkNIC)
		default:
			mark(e.Device, LinkNVLink)
		}
	case timeline.KindCollective:
		if l.acrossHosts(e) {
			mark(e.Device, LinkNVLink, LinkNIC)
		} else {
			mark(e.Device, LinkNVLink)
		}
	}
}

// acrossHosts reports whether a collective may span hosts: as its source says
// (timeline.AuxOneHost, AuxManyHosts), else when it has more ranks than a host holds, its ranks
// are not recorded (a trace's SendRecv kernel of a 128-rank job: its NIC traffic is unknown, not 0),
// or the hosts' size is not known (a trace without topology: a 1,024-rank all-reduce is not one
// host's). A 1-rank collective stays on its device.
func (l *links) acrossHosts(e *timeline.Event) bool {
	switch {
	case e.Aux&timeline.AuxOneHost != 0:
		return false
	case e.Aux&timeline.AuxManyHosts != 0:
		return true
	}
	if e.Ranks == 1 {
		return false
	}
	if l.hosts.Source() == hostmap.FromEvents {
		// Its members are not in the event: once the job's ranks name several hosts it may span
		// them; on one host it is that host's only when as many devices as it has ranks have
		// named it (before, a member not yet heard from may be elsewhere).
		devs, hosts := l.hosts.Learned()
		return hosts > 1 || devs < int(e.Ranks)
	}
	per := l.hosts.PerHost()
	return e.Ranks == 0 || per <= 0 || int(e.Ranks) > per
}

// unattributed reports whether an op's bytes go to no one link: a collective across hosts (only
// its algorithm knows the split) or a send or receive whose hosts are unknown.
func (l *links) unattributed(e *timeline.Event) bool {
	switch e.Kind {
	case timeline.KindCollective:
		return e.Ranks > 0 && l.acrossHosts(e)
	case timeline.KindSend, timeline.KindRecv:
		_, known := l.sameHost(e.Device, e.Peer)
		return e.Peer >= 0 && !known
	}
	return false
}

// fromOp counts an op's bytes on the links it crossed, as far as the op itself tells.
func (l *links) fromOp(e *timeline.Event, b float64) {
	switch e.Kind {
	case timeline.KindMemcpy:
		switch timeline.CopyDir(e.Sub) {
		case timeline.CopyH2D:
			l.put(e.Device, LinkPCIe, DirRx, e, b)
		case timeline.CopyD2H:
			l.put(e.Device, LinkPCIe, DirTx, e, b)
		case timeline.CopyP2P:
			l.put(e.Device, LinkNVLink, DirTx, e, b)
			if e.Peer >= 0 && e.Peer != e.Device {
				l.put(e.Peer, LinkNVLink, DirRx, e, b)
			}
		default: // on the device: a D2D copy, or a memset (it writes its bytes to HBM as a copy does)
			l.put(e.Device, LinkHBM, DirTx, e, b)
		}
	case timeline.KindSend, timeline.KindRecv:
		link := LinkNVLink
		dir := DirTx
		if e.Kind == timeline.KindRecv {
			dir = DirRx
		}
		if same, known := l.sameHost(e.Device, e.Peer); e.Peer >= 0 && !known {
			l.unknown[l.device(e.Device)] += b // NVLink or a NIC: the hosts are not known
			if _, ok := l.hosts.Host(e.Device); ok && l.npending < maxPendingP2P {
				// Its own host is known, its peer's not yet: it is attributed when the peer's is.
				if l.pending == nil {
					l.pending = map[int32][]pendingP2P{}
				}
				l.pending[e.Peer] = append(l.pending[e.Peer], pendingP2P{dev: e.Device, dir: dir, start: e.Start, end: e.End, bytes: b})
				l.npending++
			}
			return
		} else if e.Peer >= 0 && !same {
			link = LinkNIC
		}
		l.put(e.Device, link, dir, e, b)
	case timeline.KindCollective:
		bus := b * timeline.CollOp(e.Sub).BusFactor(int(e.Ranks))
		if l.acrossHosts(e) {
			l.unknown[l.device(e.Device)] += 2 * bus
			return
		}
		if a, _, _ := e.NCCLChoice(); a == timeline.AlgoNVLS || a == timeline.AlgoNVLSTree {
			// NVLink SHARP: each rank sends its buffer into the switch and receives the result; the
			// switch reduces, so the bus bytes (which may exceed the link) never cross the link.
			bus = b
		}
		l.put(e.Device, LinkNVLink, DirTx, e, bus)
		l.put(e.Device, LinkNVLink, DirRx, e, bus)
	}
}

// put counts bytes on one direction of a device's link and spreads them over the history buckets
// the op (or the measured window) spans.
func (l *links) put(dev int32, link Link, dir int, e *timeline.Event, bytes float64) {
	s := l.device(dev)
	l.bytes[s][link][dir] += bytes
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
		if l.hist.at(s, i).stamp > k {
			continue // older than what the ring holds
		}
		c := l.hist.cell(s, i)
		if c.stamp != k {
			*c = histCell{stamp: k}
		}
		c.bytes[link][dir] += bytes * float64(hi-lo) / float64(end-start)
	}
}

// DeviceLinks is one device's bytes per link over the run, both directions together (Dir has
// them apart).
type DeviceLinks struct {
	Device int32 `json:"device"`
	PCIe   int64 `json:"pcie_bytes"`
	NVLink int64 `json:"nvlink_bytes"`
	NIC    int64 `json:"nic_bytes"`
	HBM    int64 `json:"hbm_bytes"`
	Total  int64 `json:"total_bytes"`
	// Unattributed is bytes the device moved on links its source cannot tell apart (a collective
	// across hosts in a trace): its per-link figures are then lower bounds.
	Unattributed int64 `json:"unattributed_bytes,omitempty"`
	// LowerBound names the links whose figure holds only part of their bytes (the rest unknown: an
	// op of unknown size; on HBM, the memory traffic of kernels and NCCL ops, which no source
	// records): a figure of 0 there is unknown, not none. Partial has the same by Link.
	LowerBound []string       `json:"lower_bound_links,omitempty"`
	Partial    [NumLinks]bool `json:"-"`
	// Dir is the bytes per link out of (DirTx) and into (DirRx) the device.
	Dir  [NumLinks][NumDirs]int64 `json:"-"`
	hist *histRing                // the history as of the result: never written once handed out
	slot int32                    // the device's slot in hist (its id below MaxDevices)
}

// MarshalJSON writes a link's bytes as null where nothing was counted on a link whose figure is
// partial (Known false): there 0 would read as "none moved" where the report says unknown. A
// partial figure above 0 stays a number, a lower bound named in lower_bound_links.
func (d DeviceLinks) MarshalJSON() ([]byte, error) {
	known := func(link Link, v int64) *int64 {
		if v == 0 && d.Partial[link] {
			return nil
		}
		return &v
	}
	// The fields of DeviceLinks in their order, the four links' bytes as pointers.
	return json.Marshal(struct {
		Device       int32    `json:"device"`
		PCIe         *int64   `json:"pcie_bytes"`
		NVLink       *int64   `json:"nvlink_bytes"`
		NIC          *int64   `json:"nic_bytes"`
		HBM          *int64   `json:"hbm_bytes"`
		Total        int64    `json:"total_bytes"`
		Unattributed int64    `json:"unattributed_bytes,omitempty"`
		LowerBound   []string `json:"lower_bound_links,omitempty"`
	}{d.Device, known(LinkPCIe, d.PCIe), known(LinkNVLink, d.NVLink), known(LinkNIC, d.NIC), known(LinkHBM, d.HBM),
		d.Total, d.Unattributed, d.LowerBound})
}

// Known reports whether the device's figures on link are whole: false where part of its bytes are
// in no source (Partial), where the report writes "≥ N" or "—". A rate or share of peak on such a
// link is unknown, not the part counted: the console and the report follow this one rule.
func (d *DeviceLinks) Known(link Link) bool {
	return link >= 0 && link < NumLinks && !d.Partial[link]
}

// Bytes returns the bytes counted on link, both directions.
func (d *DeviceLinks) Bytes(link Link) int64 {
	if link < 0 || link >= NumLinks {
		return 0
	}
	return d.Dir[link][DirTx] + d.Dir[link][DirRx]
}

// Rate returns the link's throughput in bytes/s over history bucket k (time k·BucketNs): its busier
// direction's, the figure a link's one-way peak bounds. It is false when the history no longer (or
// never) held that bucket.
func (d *DeviceLinks) Rate(link Link, k int64) (float64, bool) {
	tx, ok := d.RateDir(link, DirTx, k)
	rx, _ := d.RateDir(link, DirRx, k)
	return max(tx, rx), ok
}

// RateDir returns one direction's throughput on link in bytes/s over history bucket k, as Rate.
func (d *DeviceLinks) RateDir(link Link, dir int, k int64) (float64, bool) {
	if d.hist == nil || k < 0 || link < 0 || link >= NumLinks || dir < 0 || dir >= NumDirs {
		return 0, false
	}
	c := d.hist.at(d.slot, int(k%HistoryBuckets))
	if c.stamp != k {
		// An older stamp: bucket k had no traffic (a write would have stamped it). A newer one: the
		// slot was reused and bucket k is no longer held.
		return 0, c.stamp < k
	}
	return c.bytes[link][dir] / (BucketNs / 1e9), true
}

// TotalRate returns the device's throughput over all its links in bucket k: the sum of each link's
// Rate in link order, read from the history once rather than twice a link (a console's sparklines
// ask for every bucket of every row on screen, each frame).
func (d *DeviceLinks) TotalRate(k int64) float64 {
	if d.hist == nil || k < 0 {
		return 0
	}
	c := d.hist.at(d.slot, int(k%HistoryBuckets))
	if c.stamp != k {
		return 0
	}
	var t float64
	for l := range NumLinks {
		t += max(c.bytes[l][DirTx]/(BucketNs/1e9), c.bytes[l][DirRx]/(BucketNs/1e9))
	}
	return t
}

// Links is traffic per device and link. MovedBytes counts each byte moved once: copies (not
// memsets), sends, and collectives' bus bytes summed over ranks. Measured says the link figures
// are the source's own measurement of its links (the simulator's), not inferred from its ops.
type Links struct {
	// Devices is a row per device id from 0 to the largest below MaxDevices seen (Devices[i] is
	// device i's, zero where it moved nothing), then one per device with an id past that, by id.
	Devices    []DeviceLinks `json:"devices"`
	MovedBytes int64         `json:"moved_bytes"`
	// MovedLowerBound says some op that moved bytes was of unknown size: MovedBytes holds only
	// the others' (0 then reads as unknown, not none).
	MovedLowerBound bool `json:"moved_lower_bound"`
	Measured        bool `json:"measured"`
	// EmulatedBytes is the bus bytes (as MovedBytes counts them) of the ops that stood in for the
	// topology's (timeline.AuxEmulated: the cuda backend's --fit with ranks sharing a GPU): in no
	// link figure and not in MovedBytes, as they crossed none of the topology's links. 0 where
	// nothing was emulated (every simulator run).
	EmulatedBytes int64 `json:"emulated_bytes"`
	// Fabric is what the network's switch ports carried (a simulated rail fabric); nil when the
	// source reported none.
	Fabric *Fabric `json:"fabric,omitempty"`
}

// lowerBound holds, for each set of partial links (bit k: link k), their names in link order: a
// row's LowerBound is one of these, shared by every row and result (never written), where a list
// made per row per result was most of a result's allocations at 4,096 devices.
var lowerBound = func() (names [1 << NumLinks][]string) {
	for set := 1; set < len(names); set++ {
		for k := range NumLinks {
			if set&(1<<k) != 0 {
				names[set] = append(names[set], k.String())
			}
		}
	}
	return names
}()

// lowerBoundNames is the names of the partial links, in link order; nil when none is.
func lowerBoundNames(partial [NumLinks]bool) []string {
	set := 0
	for k, p := range partial {
		if p {
			set |= 1 << k
		}
	}
	return lowerBound[set]
}

func (l *links) result() Links {
	out := Links{MovedBytes: l.moved.total(), MovedLowerBound: l.movedPartial, Measured: l.measured, EmulatedBytes: l.emulated.total()}
	if len(l.fabric.ports) > 0 {
		f := l.fabric.result()
		out.Fabric = &f
	}
	if !l.changed && l.pub != nil {
		out.Devices = l.pub
		return out
	}
	ring := l.hist.publish()
	out.Devices = make([]DeviceLinks, 0, len(l.bytes))
	far := -1 // the first row of a device past MaxDevices
	for i, b := range l.bytes {
		if i >= l.nearLen && i < MaxDevices {
			continue // between the largest id below MaxDevices and the first slot past it: no device's
		}
		if i >= MaxDevices && far < 0 {
			far = len(out.Devices)
		}
		row := DeviceLinks{Device: l.slots.id(int32(i)), Unattributed: int64(l.unknown[i]), hist: ring, slot: int32(i)}
		for k := range b {
			for dir := range b[k] {
				row.Dir[k][dir] = int64(b[k][dir])
			}
		}
		row.PCIe, row.NVLink, row.NIC, row.HBM = row.Bytes(LinkPCIe), row.Bytes(LinkNVLink), row.Bytes(LinkNIC), row.Bytes(LinkHBM)
		row.Total = row.PCIe + row.NVLink + row.NIC + row.HBM
		row.Partial = l.partial[i]
		if l.unknown[i] > 0 {
			row.Partial[LinkNVLink], row.Partial[LinkNIC] = true, true
		}
		row.LowerBound = lowerBoundNames(row.Partial)
		out.Devices = append(out.Devices, row)
	}
	if far >= 0 {
		// The slots past MaxDevices are in the order the ids were first seen: the rows are by id.
		slices.SortFunc(out.Devices[far:], func(x, y DeviceLinks) int { return cmp.Compare(x.Device, y.Device) })
	}
	l.pub, l.changed = out.Devices, false
	return out
}
