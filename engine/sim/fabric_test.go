package sim_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/timeline"
)

// fabricTopo is hosts × 8 H100 (h100x8x2's calibration) on the fabric the YAML lines give.
func fabricTopo(t *testing.T, hosts int, fabric string) engine.Topology {
	t.Helper()
	src := fmt.Sprintf("base: h100x8x2\nname: fab\nhosts: %d\n%s", hosts, fabric)
	tp, err := topology.Parse("fab.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// portTally sums fabric port bytes per direction and checks every window against the port's
// bandwidth.
type portTally struct {
	t     *testing.T
	peak  float64 // bytes/s
	bytes [2]float64
	ports map[uint32]bool
}

func (p *portTally) Emit(e *timeline.Event) {
	if e.Kind != timeline.KindLinkBytes {
		return
	}
	dir, ok := timeline.UnpackFabricLink(e.Sub)
	if !ok {
		return
	}
	if e.Device != timeline.NoDevice {
		p.t.Errorf("fabric port event on device %d; want NoDevice", e.Device)
	}
	if rate := float64(e.Bytes) / (float64(e.End-e.Start) / 1e9); rate > p.peak*1.0001+1e9/float64(e.End-e.Start) {
		p.t.Errorf("%s dir %d: %.4g B/s over [%d, %d]; the port's bandwidth is %.4g", timeline.PortName(e.Aux), dir, rate, e.Start, e.End, p.peak)
	}
	p.bytes[dir] += float64(e.Bytes)
	p.ports[e.Aux] = true
}

// tee hands every event to both sinks.
type tee [2]timeline.Sink

func (t tee) Emit(e *timeline.Event) { t[0].Emit(e); t[1].Emit(e) }

// runOn runs one collective of bytes per rank over every GPU of tp and returns its duration in ns
// and what the fabric's ports carried.
func runOn(t *testing.T, tp engine.Topology, op timeline.CollOp, algo timeline.NCCLAlgo, bytes int64) (int64, *portTally) {
	t.Helper()
	m := sim.ModelOf(tp)
	m.KernelJitter = 0
	ports := &portTally{t: t, peak: tp.LeafPortBps(), ports: map[uint32]bool{}}
	store := timeline.NewStore(nil)
	s, err := sim.New(sim.Config{Topology: tp, Seed: 1, Model: m}, tee{store, ports}, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.DefaultOptions()
	opts.NCCLAlgo = algo
	c := engine.NewClient(s, store, opts)
	devs := tp.AllDevices()
	warm(t, c, devs)
	if _, err := c.Collective(op, devs, bytes, "c"); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return lastOf(store.Events(), timeline.KindCollective).Dur(), ports
}

// An oversubscribed spine slows an all-to-all across rail groups by what its uplinks can carry.
// 4 hosts × 8 GPUs, 2 hosts per leaf (2 rail groups), S bytes per rank: each rank sends S/32 to
// each of the 31 others, over the NIC of the destination's rail (PXN). Per rail, a host's NIC out
// carries the flows of its 8 GPUs to the 3 other hosts: 24 × S/32 = 0.75·S. A rail group's leaf
// uplink carries its 2 hosts' flows to the other group: 2 × 8 × 2 × S/32 = S. NCCL reaches 94%
// of a NIC's line rate, so a payload P takes P/0.94 of wire.
//   - 1:1: a leaf port is 2 × 50 = 100 GB/s; the NICs bind: 0.75·S/0.94 / 50 GB/s.
//   - 4:1: a leaf port is 25 GB/s, below what the 2 hosts' NICs send up: S/0.94 / 25 GB/s.
//
// 8/3 times as long. The ports carry the cross-group bytes, 16·S up and 16·S down, never above
// their bandwidth; without a rail fabric the all-to-all takes the 1:1 time.
func TestOversubscribedSpineSlowsAllToAll(t *testing.T) {
	const S = 1 << 30
	const fab = "fabric:\n  kind: rail\n  hosts_per_leaf: 2\n  switch_radix: 64\n  oversubscription: %d\n"
	m := sim.ModelOf(fabricTopo(t, 4, ""))
	eff, nic := m.NCCLNICEff, m.NICBps
	tests := []struct {
		name   string
		fabric string
		want   float64 // ns, bandwidth term
	}{
		{"none", "", 0.75 * S / eff / nic * 1e9},
		{"rail 1:1", fmt.Sprintf(fab, 1), 0.75 * S / eff / nic * 1e9},
		{"rail 4:1", fmt.Sprintf(fab, 4), S / eff / (2 * nic / 4) * 1e9},
	}
	for _, tc := range tests {
		tp := fabricTopo(t, 4, tc.fabric)
		got, ports := runOn(t, tp, timeline.CollAllToAll, 0, S)
		t.Logf("%s: all-to-all %d MiB per rank in %.3f ms (bandwidth term %.3f ms)", tc.name, S>>20, float64(got)/1e6, tc.want/1e6)
		// Latency (tens of µs) is all the rest.
		if math.Abs(float64(got)-tc.want) > 0.01*tc.want {
			t.Errorf("%s: all-to-all took %d ns; want %.0f ±1%%", tc.name, got, tc.want)
		}
		if tc.fabric == "" {
			continue
		}
		for dir, b := range ports.bytes {
			if math.Abs(b-16*S) > 16*S*1e-6 {
				t.Errorf("%s: ports carried %.0f bytes in direction %d; want 16·S = %d", tc.name, b, dir, 16*S)
			}
		}
		if len(ports.ports) != 2*8 {
			t.Errorf("%s: %d leaves reported; want 16 (2 groups × 8 rails)", tc.name, len(ports.ports))
		}
	}
}

// A rail-aligned ring all-reduce across many hosts takes the time it takes without a fabric when
// the fabric is not oversubscribed: each ring crosses a leaf once per host it leaves, on one rail,
// and no port carries more than one ring's NIC share.
func TestRingUnchangedByNonBlockingFabric(t *testing.T) {
	const S = 256 << 20
	none, _ := runOn(t, fabricTopo(t, 32, ""), timeline.CollAllReduce, timeline.AlgoRing, S)
	rail, ports := runOn(t, fabricTopo(t, 32, "fabric:\n  kind: rail\n  hosts_per_leaf: 4\n  switch_radix: 8\n"),
		timeline.CollAllReduce, timeline.AlgoRing, S)
	t.Logf("32×8 ring all-reduce %d MiB: %.3f ms without a fabric, %.3f ms on 8 rail groups; ports up %.3g B", S>>20,
		float64(none)/1e6, float64(rail)/1e6, ports.bytes[timeline.LinkTx])
	if math.Abs(float64(rail-none)) > 1e-4*float64(none) {
		t.Errorf("ring all-reduce on a 1:1 rail fabric took %d ns; without one %d ns; want the same", rail, none)
	}
	if ports.bytes[timeline.LinkTx] == 0 {
		t.Errorf("no bytes crossed the spine; the ring spans 8 rail groups")
	}
}

// A switch hop costs hop_latency: a small send between rail groups crosses leaf, spine and leaf
// (3 hops), within a group only its leaf; between GPUs on different rails PXN adds the NVLink hop.
func TestFabricHopLatency(t *testing.T) {
	send := func(tp engine.Topology, src, dst engine.DeviceID) int64 {
		c, store := newClientOf(t, tp, engine.DefaultOptions())
		warm(t, c, []engine.DeviceID{src, dst})
		id := c.NewOpID()
		if _, err := c.Send(c.TransferStream(src), dst, 8, id); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Recv(c.TransferStream(dst), src, 8, id); err != nil {
			t.Fatal(err)
		}
		if err := c.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return lastOf(store.Events(), timeline.KindSend).Dur()
	}
	none := fabricTopo(t, 4, "")
	rail := fabricTopo(t, 4, "fabric:\n  kind: rail\n  hosts_per_leaf: 2\n  switch_radix: 64\n  hop_latency: 1us\n")
	m := sim.ModelOf(none)
	tests := []struct {
		name     string
		src, dst engine.DeviceID
		extra    int64
	}{
		{"same group, same rail", 0, 8, 1000},
		{"across groups, same rail", 0, 16, 3000},
		{"across groups, other rail", 0, 17, 3000 + m.NVLinkLatencyNs},
	}
	for _, tc := range tests {
		base, got := send(none, tc.src, tc.dst), send(rail, tc.src, tc.dst)
		if got-base != tc.extra {
			t.Errorf("%s: send took %d ns on the rail fabric, %d without; want %d more", tc.name, got, base, tc.extra)
		}
	}
}

// An NVLink domain larger than a host (NVL-style) joins its hosts' GPUs over NVLink: a
// collective within it puts nothing on the NICs; one spanning two domains does.
func TestNVLinkDomainAcrossHosts(t *testing.T) {
	nicBytes := func(tp engine.Topology) float64 {
		m := sim.ModelOf(tp)
		var nic float64
		sink := sinkFunc(func(e *timeline.Event) {
			if link, _, ok := timeline.UnpackLink(e.Sub); e.Kind == timeline.KindLinkBytes && ok && link == timeline.PeakNIC {
				nic += float64(e.Bytes)
			}
		})
		s, err := sim.New(sim.Config{Topology: tp, Seed: 1, Model: m}, sink, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := engine.NewClient(s, sink, engine.DefaultOptions())
		devs := tp.AllDevices()
		if _, err := c.Collective(timeline.CollAllGather, devs, 64<<20, "c"); err != nil {
			t.Fatal(err)
		}
		if err := c.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return nic
	}
	if got := nicBytes(fabricTopo(t, 4, "fabric:\n  nvlink_domain: 32\n")); got != 0 {
		t.Errorf("all-gather within one 32-GPU NVLink domain put %.0f bytes on NICs; want 0", got)
	}
	if got := nicBytes(fabricTopo(t, 4, "fabric:\n  nvlink_domain: 16\n")); got == 0 {
		t.Errorf("all-gather across two 16-GPU NVLink domains put nothing on NICs")
	}
}

type sinkFunc func(e *timeline.Event)

func (f sinkFunc) Emit(e *timeline.Event) { f(e) }
