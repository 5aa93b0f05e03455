package analysis

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// linkBytes is one device's bytes per link: PCIe, NVLink, NIC, HBM.
type linkBytes [NumLinks]int64

func linksOf(l Links) map[int32]linkBytes {
	out := map[int32]linkBytes{}
	for _, d := range l.Devices {
		var b linkBytes
		for k := range NumLinks {
			b[k] = d.Bytes(k)
		}
		if b != (linkBytes{}) {
			out[d.Device] = b
		}
	}
	return out
}

func TestLinkNames(t *testing.T) {
	for l, want := range map[Link]string{LinkPCIe: "PCIe", LinkNVLink: "NVLink", LinkNIC: "NIC", LinkHBM: "HBM", NumLinks: "link?", -1: "link?"} {
		if got := l.String(); got != want {
			t.Errorf("Link(%d) = %q; want %q", l, got, want)
		}
	}
}

func TestLinks(t *testing.T) {
	twoHosts := timeline.Meta{Devices: 8, GPUsPerHost: 4}
	tests := []struct {
		name  string
		meta  timeline.Meta
		evs   []timeline.Event
		want  map[int32]linkBytes // devices with traffic
		unatt int64               // each device's unattributed bytes, where any
		moved int64
		emu   int64 // bus bytes of emulated ops (Links.EmulatedBytes)
	}{
		{
			name:  "send on the sender, recv on the receiver, within a host",
			meta:  twoHosts,
			evs:   []timeline.Event{sendEv(0, 1, 0, 10, 1000, 1), recvEv(1, 0, 0, 10, 1000, 1)},
			want:  map[int32]linkBytes{0: {LinkNVLink: 1000}, 1: {LinkNVLink: 1000}},
			moved: 1000,
		},
		{
			name:  "across hosts: NIC",
			meta:  twoHosts,
			evs:   []timeline.Event{sendEv(3, 4, 0, 10, 2000, 1), recvEv(4, 3, 0, 10, 2000, 1)},
			want:  map[int32]linkBytes{3: {LinkNIC: 2000}, 4: {LinkNIC: 2000}},
			moved: 2000,
		},
		{
			// Not every device on one host: NVLink or a NIC, unknown (W2: a 1,024-rank job's
			// traffic had all gone on NVLink, none on the NICs).
			name:  "unknown hosts: a send's link unknown",
			meta:  timeline.Meta{Devices: 8},
			evs:   []timeline.Event{sendEv(0, 1, 0, 10, 2000, 1), recvEv(1, 0, 0, 10, 2000, 1)},
			want:  map[int32]linkBytes{},
			unatt: 2000,
			moved: 2000,
		},
		{
			name:  "unknown hosts: a 1,024-rank all-reduce's link unknown",
			meta:  timeline.Meta{Devices: 1024},
			evs:   ranks(1024, instance(timeline.CollAllReduce, 1, []int64{0, 0}, []int64{10, 10}, 1024)),
			want:  map[int32]linkBytes{},
			unatt: 2 * 2046,
			moved: 2 * 2046,
		},
		{
			name:  "unknown hosts: a 2-rank all-reduce's link unknown too",
			meta:  timeline.Meta{Devices: 2},
			evs:   instance(timeline.CollAllReduce, 1, []int64{0, 0}, []int64{10, 10}, 1000),
			want:  map[int32]linkBytes{},
			unatt: 2 * 1000,
			moved: 2000,
		},
		{
			name:  "unknown hosts, but the source says one host: NVLink",
			meta:  timeline.Meta{Devices: 2},
			evs:   oneHost(instance(timeline.CollAllReduce, 1, []int64{0, 0}, []int64{10, 10}, 1000)),
			want:  map[int32]linkBytes{0: {LinkNVLink: 2000}, 1: {LinkNVLink: 2000}},
			moved: 2000,
		},
		{
			name:  "peer copy on both ends",
			meta:  twoHosts,
			evs:   []timeline.Event{copyEv(timeline.CopyP2P, 2, 3, 0, 10, 500)},
			want:  map[int32]linkBytes{2: {LinkNVLink: 500}, 3: {LinkNVLink: 500}},
			moved: 500,
		},
		{
			// A memset writes its bytes to HBM as a D2D copy does; it moves nothing between places.
			name: "host copies on PCIe, device copies and memsets on HBM",
			meta: twoHosts,
			evs: []timeline.Event{
				copyEv(timeline.CopyH2D, 0, timeline.NoDevice, 0, 10, 100), copyEv(timeline.CopyD2H, 1, timeline.NoDevice, 0, 10, 200),
				copyEv(timeline.CopyD2D, 2, timeline.NoDevice, 0, 10, 400), copyEv(timeline.CopySet, 3, timeline.NoDevice, 0, 10, 10_000),
			},
			want:  map[int32]linkBytes{0: {LinkPCIe: 100}, 1: {LinkPCIe: 200}, 2: {LinkHBM: 400}, 3: {LinkHBM: 10_000}},
			moved: 700,
		},
		{
			// A ring all-reduce sends and receives its bus bytes (2·3/4·1000) on each rank.
			name:  "collective within a host: bus bytes out of and into each rank's NVLink",
			meta:  twoHosts,
			evs:   instance(timeline.CollAllReduce, 1, []int64{0, 0, 0, 0}, []int64{10, 10, 10, 10}, 1000),
			want:  map[int32]linkBytes{0: {LinkNVLink: 3000}, 1: {LinkNVLink: 3000}, 2: {LinkNVLink: 3000}, 3: {LinkNVLink: 3000}},
			moved: 6000,
		},
		{
			// NVLS: the switch reduces; each rank's buffer goes in and the result comes out.
			name: "NVLS collective within a host: its buffer out of and into each rank",
			meta: twoHosts,
			evs: withAux(instance(timeline.CollAllReduce, 1, []int64{0, 0, 0, 0}, []int64{10, 10, 10, 10}, 1000),
				timeline.PackNCCL(timeline.AlgoNVLS, timeline.ProtoSimple, 16)),
			want:  map[int32]linkBytes{0: {LinkNVLink: 2000}, 1: {LinkNVLink: 2000}, 2: {LinkNVLink: 2000}, 3: {LinkNVLink: 2000}},
			moved: 6000,
		},
		{
			// Only its algorithm knows the split between NVLink and NICs: unknown, not all on the NIC.
			name:  "collective over more ranks than a host has: unattributed",
			meta:  twoHosts,
			evs:   instance(timeline.CollAllGather, 1, make([]int64, 8), []int64{10, 10, 10, 10, 10, 10, 10, 10}, 1000),
			want:  map[int32]linkBytes{},
			unatt: 2 * 875,
			moved: 7000,
		},
		{
			name: "measured links: the engine's link bytes alone, the ops only for moved",
			meta: timeline.Meta{Devices: 8, GPUsPerHost: 4, LinkBytes: true},
			evs: []timeline.Event{
				sendEv(3, 4, 0, 10, 2000, 1), recvEv(4, 3, 0, 10, 2000, 1),
				linkEv(3, LinkNIC, DirTx, 0, 10, 2000), linkEv(4, LinkNIC, DirRx, 0, 10, 2000), linkEv(3, LinkNVLink, DirRx, 0, 10, 64),
			},
			want:  map[int32]linkBytes{3: {LinkNIC: 2000, LinkNVLink: 64}, 4: {LinkNIC: 2000}},
			moved: 2000,
		},
		{
			// --fit on one GPU: the copy that stood in for a cross-host send crossed no NIC.
			name:  "emulated send and receive across hosts: on no link, counted as emulated",
			meta:  twoHosts,
			evs:   withAux([]timeline.Event{sendEv(3, 4, 0, 10, 2000, 1), recvEv(4, 3, 0, 10, 2000, 1)}, timeline.AuxEmulated),
			want:  map[int32]linkBytes{},
			moved: 0,
			emu:   2000,
		},
		{
			// Four ranks on one GPU: nothing crossed NVLink; its bus bytes are what it stood in for.
			name:  "emulated collective within a host: on no link, its bus bytes emulated",
			meta:  twoHosts,
			evs:   withAux(instance(timeline.CollAllReduce, 1, []int64{0, 0, 0, 0}, []int64{10, 10, 10, 10}, 1000), timeline.AuxEmulated),
			want:  map[int32]linkBytes{},
			moved: 0,
			emu:   6000,
		},
		{
			name:  "link bytes from a source that does not measure links are not counted",
			meta:  twoHosts,
			evs:   []timeline.Event{linkEv(3, LinkNIC, DirTx, 0, 10, 2000)},
			want:  map[int32]linkBytes{},
			moved: 0,
		},
		{
			name: "failed ops, unknown sizes and host-only events are not counted",
			meta: twoHosts,
			evs: []timeline.Event{
				withStatus(sendEv(0, 1, 0, 10, 1000, 1), timeline.StatusError),
				withStatus(copyEv(timeline.CopyH2D, 0, timeline.NoDevice, 0, 10, 100), timeline.StatusCanceled),
				sendEv(0, 1, 0, 10, 0, 2),
				copyEv(timeline.CopyH2D, timeline.NoDevice, timeline.NoDevice, 0, 10, 100),
				kern(0, 1, 0, 10),
			},
			want: map[int32]linkBytes{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := analyze(tc.meta, tc.evs...).Links
			got := linksOf(l)
			if len(got) != len(tc.want) {
				t.Errorf("devices with traffic = %v; want %v", got, tc.want)
			}
			for dev, w := range tc.want {
				if got[dev] != w {
					t.Errorf("device %d: %v; want %v (PCIe, NVLink, NIC, HBM)", dev, got[dev], w)
				}
			}
			if l.MovedBytes != tc.moved {
				t.Errorf("MovedBytes = %d; want %d", l.MovedBytes, tc.moved)
			}
			if l.EmulatedBytes != tc.emu {
				t.Errorf("EmulatedBytes = %d; want %d", l.EmulatedBytes, tc.emu)
			}
			for i, d := range l.Devices {
				if d.Unattributed != tc.unatt {
					t.Errorf("device %d: %d bytes unattributed; want %d", d.Device, d.Unattributed, tc.unatt)
				}
				if d.Device != int32(i) || d.Total != d.PCIe+d.NVLink+d.NIC+d.HBM {
					t.Errorf("row %d = %+v; want device %d, total the sum of links", i, d, i)
				}
			}
		})
	}
}

func withAux(evs []timeline.Event, aux uint32) []timeline.Event {
	for i := range evs {
		evs[i].Aux = aux
	}
	return evs
}

func linkEv(dev int32, link Link, dir int, start, end, bytes int64) timeline.Event {
	return timeline.Event{Kind: timeline.KindLinkBytes, Sub: timeline.PackLink(int(link), dir), Device: dev, Peer: timeline.NoDevice,
		Start: start, End: end, Bytes: bytes}
}

func TestLinkRateHistory(t *testing.T) {
	const b = BucketNs
	// 1 GB over [b/2, 3b/2): half in bucket 0, half in bucket 1: 0.5 GB per 50 ms = 10 GB/s.
	evs := []timeline.Event{copyEv(timeline.CopyH2D, 0, timeline.NoDevice, b/2, 3*b/2, 1e9)}
	// 2 GB over bucket 3 alone on NVLink.
	evs = append(evs, sendEv(0, 1, 3*b, 4*b, 2e9, 1))
	// An instant (zero-length) copy lands in one bucket.
	evs = append(evs, copyEv(timeline.CopyD2D, 0, timeline.NoDevice, 5*b+10, 5*b+10, 1e6))
	a := fold(timeline.Meta{Devices: 2, GPUsPerHost: 2}, evs)
	d := a.Result(nil).Links.Devices[0]
	tests := []struct {
		link Link
		k    int64
		want float64
	}{
		{LinkPCIe, 0, 10e9}, {LinkPCIe, 1, 10e9}, {LinkPCIe, 2, 0}, {LinkNVLink, 0, 0},
		{LinkNVLink, 3, 40e9}, {LinkHBM, 5, 1e6 / 0.05}, {LinkPCIe, 7, 0},
	}
	for _, tc := range tests {
		got, ok := d.Rate(tc.link, tc.k)
		if !ok || abs(got-tc.want) > 1 {
			t.Errorf("Rate(%v, %d) = %v, %v; want %v, true", tc.link, tc.k, got, ok, tc.want)
		}
	}
	for _, bad := range []struct {
		link Link
		k    int64
	}{{LinkPCIe, -1}, {NumLinks, 0}, {-1, 0}} {
		if _, ok := d.Rate(bad.link, bad.k); ok {
			t.Errorf("Rate(%v, %d) ok; want false", bad.link, bad.k)
		}
	}
	if _, ok := new(DeviceLinks).Rate(LinkPCIe, 0); ok {
		t.Error("Rate on a row without history ok; want false")
	}
}

// A long op spreads its bytes over the buckets it spans; past the history's length only the last
// HistoryBuckets keep their share.
func TestLinkRateLongOp(t *testing.T) {
	const n = HistoryBuckets + 30
	dur := int64(n*BucketNs + BucketNs/2) // 1 B/ns = 1 GB/s, ending inside bucket n
	e := copyEv(timeline.CopyH2D, 0, timeline.NoDevice, 0, dur, dur)
	d := analyze(timeline.Meta{Devices: 1}, e).Links.Devices[0]
	if d.PCIe != dur {
		t.Errorf("PCIe bytes = %d; want %d (totals are not limited by the history)", d.PCIe, dur)
	}
	for _, k := range []int64{n - HistoryBuckets + 1, 100, n - 1} {
		if got, ok := d.Rate(LinkPCIe, k); !ok || abs(got-1e9) > 1 {
			t.Errorf("Rate(PCIe, %d) = %v, %v; want 1e9", k, got, ok)
		}
	}
	if got, ok := d.Rate(LinkPCIe, n); !ok || abs(got-0.5e9) > 1 {
		t.Errorf("Rate(PCIe, %d) = %v, %v; want 0.5e9 (half a bucket)", n, got, ok)
	}
}

// Once a newer bucket has reused its slot, an old bucket is no longer held: Rate says so rather
// than reporting 0 B/s for a bucket that had traffic.
func TestLinkRateEvictedBucket(t *testing.T) {
	evs := []timeline.Event{
		copyEv(timeline.CopyH2D, 0, timeline.NoDevice, 0, BucketNs, 1e9),
		copyEv(timeline.CopyH2D, 0, timeline.NoDevice, HistoryBuckets*BucketNs, HistoryBuckets*BucketNs+10, 100),
	}
	d := analyze(timeline.Meta{Devices: 1}, evs...).Links.Devices[0]
	if got, ok := d.Rate(LinkPCIe, HistoryBuckets); !ok || got <= 0 {
		t.Errorf("Rate(newest bucket) = %v, %v; want traffic", got, ok)
	}
	if got, ok := d.Rate(LinkPCIe, 0); ok {
		t.Errorf("Rate(bucket 0, evicted by bucket %d) = %v, true; want ok = false (bucket 0 carried 20 GB/s)", HistoryBuckets, got)
	}
	// A bucket the ring still covers that had no traffic is a true zero.
	if got, ok := d.Rate(LinkPCIe, 5); !ok || got != 0 {
		t.Errorf("Rate(idle bucket 5) = %v, %v; want 0, true", got, ok)
	}
}

// TestLinksCollectiveOfUnknownRanks: a collective whose bytes are known but not its ranks may have
// crossed hosts, and its bus bytes (bytes × a factor of the ranks) are unknown: nothing is put on
// NVLink, NVLink and the NIC are lower bounds, and so are the bytes moved on links.
func TestLinksCollectiveOfUnknownRanks(t *testing.T) {
	l := analyze(timeline.Meta{GPUsPerHost: 8}, collEv(timeline.CollAllToAll, 0, 0, 1, 0, 10, 1<<20)).Links
	d := l.Devices[0]
	if d.NVLink != 0 || !slices.Equal(d.LowerBound, []string{"NVLink", "NIC", "HBM"}) || !l.MovedLowerBound {
		t.Errorf("NVLink %d, lower bounds %q, moved lower bound %v; want 0, [NVLink NIC HBM], true", d.NVLink, d.LowerBound, l.MovedLowerBound)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestLinksPartial: a link whose bytes are in part unknown says so, so that 0 there reads as
// unknown: a SendRecv kernel of unknown size and ranks (an Nsight export's, a Kineto trace's of a
// 128-rank job) on NVLink and the NIC, as its peers may be on this host or another; a send to an
// unknown peer the same; a collective known to fit in the host on NVLink alone; a copy of unknown
// size on its link, and HBM wherever kernels or NCCL ops ran (their memory traffic is in no
// source). A device that only copied is exact.
func TestLinksPartial(t *testing.T) {
	sr := timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollSendRecv), Device: 0, Peer: timeline.NoDevice, Stream: 1, Start: 0, End: 10}
	unsized := copyEv(timeline.CopyH2D, 2, timeline.NoDevice, 0, 10, 0)
	inHost := collEv(timeline.CollAllReduce, 2, 5, 7, 0, 10, 0)
	evs := []timeline.Event{sr, kern(1, 1, 0, 10), copyEv(timeline.CopySet, 1, timeline.NoDevice, 10, 20, 4096), unsized,
		copyEv(timeline.CopyD2D, 3, timeline.NoDevice, 0, 10, 400), sendEv(4, timeline.NoDevice, 0, 10, 0, 9), inHost,
		collEv(timeline.CollAllReduce, 8, 6, 8, 0, 10, 100)} // across hosts: its bytes are "link unknown"
	for _, measured := range []bool{false, true} {
		a := New(timeline.Meta{GPUsPerHost: 4, LinkBytes: measured})
		for i := range evs {
			a.Emit(&evs[i])
		}
		got := map[int32][]string{}
		for _, d := range a.Result(nil).Links.Devices {
			got[d.Device] = d.LowerBound
		}
		want := map[int32][]string{0: {"NVLink", "NIC", "HBM"}, 1: {"HBM"}, 2: {"PCIe"}, 3: nil, 4: {"NVLink", "NIC", "HBM"}, 5: {"NVLink", "HBM"},
			6: {"NVLink", "NIC", "HBM"}}
		if measured { // the engine measures every link but HBM's kernel traffic
			want = map[int32][]string{0: {"HBM"}, 1: {"HBM"}, 4: {"HBM"}, 5: {"HBM"}, 6: {"HBM"}}
		}
		for dev, w := range want {
			if !slices.Equal(got[dev], w) {
				t.Errorf("measured %v: device %d lower-bound links = %q; want %q", measured, dev, got[dev], w)
			}
		}
	}
}

// In JSON a link's bytes are null where the figure is unknown (partial, nothing counted), a number
// where it is known (0 included) or a partial figure above 0 (a lower bound).
func TestDeviceLinksJSONUnknownIsNull(t *testing.T) {
	d := DeviceLinks{Device: 7, PCIe: 0, NVLink: 300, NIC: 0, HBM: 0, Total: 300}
	d.Partial[LinkNVLink], d.Partial[LinkHBM] = true, true
	b, err := json.Marshal(&d)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"device": 7.0, "pcie_bytes": 0.0, "nvlink_bytes": 300.0, "nic_bytes": 0.0, "hbm_bytes": nil, "total_bytes": 300.0}
	for k, w := range want {
		if v, ok := got[k]; !ok || v != w {
			t.Errorf("%s = %v (present %v); want %v in %s", k, v, ok, w, b)
		}
	}
	// The keys in the struct's order, as before the links' bytes could be null.
	if want := `{"device":7,"pcie_bytes":0,"nvlink_bytes":300,"nic_bytes":0,"hbm_bytes":null,"total_bytes":300}`; string(b) != want {
		t.Errorf("JSON %s; want %s", b, want)
	}
	// By value too (a slice of DeviceLinks marshals its elements by value).
	if b2, _ := json.Marshal([]DeviceLinks{d}); !strings.Contains(string(b2), `"hbm_bytes":null`) {
		t.Errorf("by value: %s", b2)
	}
}

// TotalRate is the sum of a device's links' Rate, in link order, in every bucket: held, never
// written, and evicted from the ring alike.
func TestTotalRateSumsLinks(t *testing.T) {
	m := timeline.Meta{Devices: 70, GPUsPerHost: 8}
	r := fold(m, spreadTransfers(70, 400)).Result(nil)
	last := (r.FirstNs + r.DurationNs) / BucketNs
	var moving int
	for _, d := range r.Links.Devices {
		for k := int64(-1); k <= last+1; k++ {
			var want float64
			for l := range NumLinks {
				v, _ := d.Rate(l, k)
				want += v
			}
			if got := d.TotalRate(k); got != want {
				t.Fatalf("device %d, bucket %d: TotalRate = %v; want %v", d.Device, k, got, want)
			}
			if want > 0 {
				moving++
			}
		}
	}
	if moving == 0 {
		t.Fatal("no bucket had traffic")
	}
	if got := new(DeviceLinks).TotalRate(0); got != 0 {
		t.Errorf("TotalRate on a row without history = %v; want 0", got)
	}
}

// oneHost marks collectives as their source knowing every rank is on one host.
func oneHost(evs []timeline.Event) []timeline.Event {
	for i := range evs {
		evs[i].Aux |= timeline.AuxOneHost
	}
	return evs
}

// ranks gives collectives n ranks (of which the test holds only some).
func ranks(n int, evs []timeline.Event) []timeline.Event {
	for i := range evs {
		evs[i].Ranks = uint16(n)
	}
	return evs
}

// Without a topology (GPUsPerHost unknown) no op between devices is known to stay in a host: a
// 1,024-rank all-reduce and a send put their bytes in "link unknown", with NVLink and the NIC lower
// bounds (shown —), not all on NVLink with the NIC 0 B; a copy to the host stays on PCIe.
func TestLinksUnknownHosts(t *testing.T) {
	evs := ranks(1024, instance(timeline.CollAllReduce, 1, []int64{0, 0}, []int64{10, 10}, 1<<20))
	evs = append(evs, sendEv(2, 3, 0, 10, 4096, 2), recvEv(3, 2, 0, 10, 4096, 2), copyEv(timeline.CopyD2H, 4, timeline.NoDevice, 0, 10, 100))
	r := analyze(timeline.Meta{Devices: 1024}, evs...)
	for _, d := range r.Links.Devices {
		want, lower := int64(0), []string(nil)
		switch d.Device {
		case 0, 1:
			want, lower = 2*(1<<20)*2046/1024, []string{"NVLink", "NIC", "HBM"}
		case 2, 3:
			want, lower = 4096, []string{"NVLink", "NIC", "HBM"}
		}
		if d.Unattributed != want || d.NVLink != 0 || d.NIC != 0 || !slices.Equal(d.LowerBound, lower) {
			t.Errorf("device %d: unattributed %d, NVLink %d, NIC %d, lower bounds %q; want %d, 0, 0, %q",
				d.Device, d.Unattributed, d.NVLink, d.NIC, d.LowerBound, want, lower)
		}
		if d.Device == 4 && d.PCIe != 100 {
			t.Errorf("device 4: PCIe %d; want 100", d.PCIe)
		}
	}
}

// When the events carry their devices' hosts (attach: each rank names its host, NCCL's), a send
// between devices of two hosts is on their NICs and a collective over ranks of several hosts is
// unattributed, where the ranks-per-host count attach starts with would put both on one host's
// NVLink (on an H200, two ranks of two NCCL hosts over loopback sockets read as NVLink traffic).
func TestLinksHostsFromEvents(t *testing.T) {
	onHost := func(h uint16, evs ...timeline.Event) []timeline.Event {
		for i := range evs {
			evs[i].Host = h
		}
		return evs
	}
	coll := ranks(2, instance(timeline.CollAllReduce, 1, []int64{20, 20}, []int64{30, 30}, 1<<20))
	for _, tc := range []struct {
		name          string
		hosts         [2]uint16
		nvlink, nic   int64
		unattributed  int64
		hostsInEvents bool
	}{
		{"two hosts", [2]uint16{0, 1}, 0, 4096, 2 * (1 << 20), true},
		{"one host", [2]uint16{3, 3}, 4096 + 2*(1<<20), 0, 0, true},
		{"the count alone (one host of 32768)", [2]uint16{0, 1}, 4096 + 2*(1<<20), 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := timeline.Meta{Devices: 2, GPUsPerHost: 1 << 15}
			if tc.hostsInEvents {
				m.Extra = map[string]string{timeline.HostsInEventsKey: "1"}
			}
			// Each rank's first event names its host (its communicator's creation, in a job);
			// an op with a peer whose host no event has named yet is unattributed, not guessed.
			evs := onHost(tc.hosts[0], kern(0, 1, 0, 1))
			evs = append(evs, onHost(tc.hosts[1], kern(1, 1, 0, 1))...)
			evs = append(evs, onHost(tc.hosts[0], sendEv(0, 1, 2, 10, 4096, 2))...)
			evs = append(evs, onHost(tc.hosts[1], recvEv(1, 0, 2, 10, 4096, 2))...)
			for _, e := range coll {
				evs = append(evs, onHost(tc.hosts[e.Device], e)...)
			}
			r := analyze(m, evs...)
			for _, d := range r.Links.Devices {
				if d.NVLink != tc.nvlink || d.NIC != tc.nic || d.Unattributed != tc.unattributed {
					t.Errorf("device %d: NVLink %d, NIC %d, unattributed %d; want %d, %d, %d",
						d.Device, d.NVLink, d.NIC, d.Unattributed, tc.nvlink, tc.nic, tc.unattributed)
				}
			}
		})
	}
}

// In a live job a rank's first send can come before its peer's first event names the peer's host
// (attach hears the ranks in any order): the send's bytes are unknown then (its NVLink and NIC
// lower bounds, shown —, never 0), and move to the link they crossed once the peer is heard from,
// over the time they ran; a peer never heard from leaves them unknown. Before, they stayed unknown
// for good, though the report at the end knew both hosts.
func TestLinksPeerHeardLate(t *testing.T) {
	const b = BucketNs
	on := func(h uint16, e timeline.Event) timeline.Event { e.Host = h; return e }
	type row struct {
		nvlink, nic, unknown int64
		lower                []string
	}
	for _, tc := range []struct {
		name       string
		peerHost   uint16
		heard      bool
		before     row // device 0 after its send, before the peer's first event
		after      row // device 0 at the end
		link       Link
		rateBucket float64 // device 0's rate on link in bucket 1 at the end
	}{
		{"peer on another host", 1, true, row{0, 0, 4096, []string{"NVLink", "NIC", "HBM"}}, row{0, 4096 + 8192, 0, []string{"HBM"}}, LinkNIC, 4096 / 0.05},
		{"peer on the same host", 0, true, row{0, 0, 4096, []string{"NVLink", "NIC", "HBM"}}, row{4096 + 8192, 0, 0, []string{"HBM"}}, LinkNVLink, 4096 / 0.05},
		{"peer never heard from", 1, false, row{0, 0, 4096, []string{"NVLink", "NIC", "HBM"}}, row{0, 0, 4096 + 8192, []string{"NVLink", "NIC", "HBM"}}, LinkNIC, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := timeline.Meta{Devices: 2, Extra: map[string]string{timeline.HostsInEventsKey: "1"}}
			a := New(m)
			emit := func(evs ...timeline.Event) {
				for i := range evs {
					a.Emit(&evs[i])
				}
			}
			check := func(when string, want row) *DeviceLinks {
				t.Helper()
				for _, d := range a.Result(nil).Links.Devices {
					if d.Device != 0 {
						continue
					}
					if d.NVLink != want.nvlink || d.NIC != want.nic || d.Unattributed != want.unknown || !slices.Equal(d.LowerBound, want.lower) {
						t.Errorf("%s: device 0 NVLink %d, NIC %d, unattributed %d, lower bounds %q; want %d, %d, %d, %q",
							when, d.NVLink, d.NIC, d.Unattributed, d.LowerBound, want.nvlink, want.nic, want.unknown, want.lower)
					}
					return &d
				}
				t.Fatalf("%s: no row for device 0", when)
				return nil
			}
			emit(on(0, kern(0, 1, 0, 1)), on(0, sendEv(0, 1, b, 2*b, 4096, 2)))
			check("before the peer", tc.before)
			if tc.heard {
				emit(on(tc.peerHost, kern(1, 1, 0, 1)), on(tc.peerHost, recvEv(1, 0, b, 2*b, 4096, 2)))
			}
			emit(on(0, sendEv(0, 1, 3*b, 4*b, 8192, 3)))
			d := check("at the end", tc.after)
			if got, ok := d.Rate(tc.link, 1); !ok || abs(got-tc.rateBucket) > 1 {
				t.Errorf("Rate(%v, 1) = %v, %v; want %v (the late send's bytes over the time it ran)", tc.link, got, ok, tc.rateBucket)
			}
		})
	}
}
