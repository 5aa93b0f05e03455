package sim_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// linkTally sums the simulator's KindLinkBytes events per link class and direction, over the whole
// cluster, and checks every window against the link's bandwidth as it goes.
type linkTally struct {
	t     *testing.T
	peaks [timeline.NumPeaks]float64 // bytes/s per direction
	bytes [timeline.NumPeaks][2]float64
	algos map[timeline.NCCLAlgo]bool
	busy  int // windows that report a busy time
}

func (l *linkTally) Emit(e *timeline.Event) {
	switch e.Kind {
	case timeline.KindCollective:
		a, _, _ := e.NCCLChoice()
		l.algos[a] = true
	case timeline.KindLinkBytes:
		link, dir, ok := timeline.UnpackLink(e.Sub)
		if !ok {
			l.t.Fatalf("link bytes with Sub %d", e.Sub)
		}
		if e.End <= e.Start || e.Start/timeline.LinkWindowNs != (e.End-1)/timeline.LinkWindowNs {
			l.t.Errorf("link window [%d, %d] is empty or straddles a %d ns boundary", e.Start, e.End, timeline.LinkWindowNs)
		}
		if rate := float64(e.Bytes) / (float64(e.End-e.Start) / 1e9); rate > l.peaks[link]*1.0001+1e9/float64(e.End-e.Start) {
			l.t.Errorf("device %d link %d dir %d: %.4g B/s over [%d, %d]; its bandwidth is %.4g", e.Device, link, dir, rate, e.Start, e.End, l.peaks[link])
		}
		// Busy time (Op) is within the window, and bytes over it — the rate while busy, which the
		// diagnosis compares — is no more than the link's bandwidth either.
		if busy := int64(e.Op); busy > e.End-e.Start {
			l.t.Errorf("device %d link %d dir %d: busy %d ns in a %d ns window", e.Device, link, dir, busy, e.End-e.Start)
		} else if busy > 0 && float64(e.Bytes)/(float64(busy)/1e9) > l.peaks[link]*1.001+1e9/float64(busy) {
			l.t.Errorf("device %d link %d dir %d: %.4g B/s while busy (%d B in %d ns); its bandwidth is %.4g", e.Device, link, dir,
				float64(e.Bytes)/(float64(busy)/1e9), e.Bytes, busy, l.peaks[link])
		}
		if e.Op > 0 {
			l.busy++
		}
		l.bytes[link][dir] += float64(e.Bytes)
	}
}

// runCollective runs one collective of bytes per rank over every GPU of hosts × 8 H100, with the
// algorithm forced (0: NCCL's choice), and returns what the links carried.
func runCollective(t *testing.T, hosts int, op timeline.CollOp, algo timeline.NCCLAlgo, bytes int64) *linkTally {
	t.Helper()
	topo, err := sim.TopologyByName("h100x8x2")
	if err != nil {
		t.Fatal(err)
	}
	topo.Hosts = hosts
	m := sim.ModelOf(topo)
	tally := &linkTally{t: t, algos: map[timeline.NCCLAlgo]bool{}}
	tally.peaks[timeline.PeakNVLink], tally.peaks[timeline.PeakNIC] = m.NVLinkBps, m.NICBps
	tally.peaks[timeline.PeakPCIe], tally.peaks[timeline.PeakHBM] = m.PCIeBps, m.HBMBps
	s, err := sim.New(sim.Config{Topology: topo, Seed: 1, Model: m}, tally, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.DefaultOptions()
	opts.NCCLAlgo = algo
	c := engine.NewClient(s, tally, opts)
	devs := topo.AllDevices()
	if _, err := c.Collective(op, devs, bytes, "c"); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tally
}

// The bytes each link class carries for one collective are its algorithm's own traffic, worked out
// here from the algorithm (not from the simulator's code):
//
//   - ring over n ranks on H hosts (one ring per NIC across hosts, one ring inside a host): every
//     rank sends and receives the bus bytes B (all-reduce 2(n−1)/n·S, all-gather and reduce-scatter
//     (n−1)/n·S), split evenly over the rings; a ring crosses a host boundary H times of its n
//     edges (H > 1), so the NICs carry H·B each way and NVLink (n−H)·B. The simulator moves the
//     tree's bytes as the ring's (it times the tree by NCCL's model, not its traffic).
//   - NVLS inside a host: every rank's buffer S goes into the switch and the result comes back:
//     n·S each way on NVLink, nothing on NICs.
//   - NVLS all-gather inside a host: each rank stores its share S/n once into the switch, which
//     writes it into every rank: S out in all (n·S/n) and n·S in. Reduce-scatter the reverse: the
//     switch pulls every share from every rank (n·S out) and each rank receives its reduced share
//     (S in all).
//   - NVLS-tree across hosts: the same on NVLink, and each rank's 1/ppn share of S each way
//     through its NIC on 2 hosts (twice that beyond, as an inner node of NCCL's two trees).
//   - all-to-all: each rank sends S/n to every other rank: over a NIC to those on other hosts,
//     over NVLink to those on its own.
func TestLinkBytesAreTheAlgorithmsTraffic(t *testing.T) {
	const S = 256 << 20
	const ppn = 8
	// nvIn < 0: NVLink carries nvlink in as well as out.
	type want struct{ nvlink, nvIn, nic float64 }
	ring := func(op timeline.CollOp) func(n, h int) want {
		return func(n, h int) want {
			b := float64(S) * op.BusFactor(n)
			if h == 1 {
				return want{nvlink: float64(n) * b, nvIn: -1}
			}
			return want{nvlink: float64(n-h) * b, nvIn: -1, nic: float64(h) * b}
		}
	}
	tests := []struct {
		name  string
		op    timeline.CollOp
		algo  timeline.NCCLAlgo
		hosts []int
		want  func(n, h int) want
	}{
		{"all-reduce ring", timeline.CollAllReduce, timeline.AlgoRing, []int{1, 2, 64, 128}, ring(timeline.CollAllReduce)},
		{"all-reduce tree", timeline.CollAllReduce, timeline.AlgoTree, []int{1, 2, 64}, ring(timeline.CollAllReduce)},
		{"all-gather ring", timeline.CollAllGather, timeline.AlgoRing, []int{1, 2, 64}, ring(timeline.CollAllGather)},
		{"reduce-scatter ring", timeline.CollReduceScatter, timeline.AlgoRing, []int{1, 2, 64}, ring(timeline.CollReduceScatter)},
		{"all-reduce NVLS", timeline.CollAllReduce, timeline.AlgoNVLS, []int{1}, func(n, h int) want { return want{nvlink: float64(n) * S, nvIn: -1} }},
		{"all-gather NVLS", timeline.CollAllGather, timeline.AlgoNVLS, []int{1}, func(n, h int) want { return want{nvlink: S, nvIn: float64(n) * S} }},
		{"reduce-scatter NVLS", timeline.CollReduceScatter, timeline.AlgoNVLS, []int{1}, func(n, h int) want { return want{nvlink: float64(n) * S, nvIn: S} }},
		{"all-reduce NVLS-tree", timeline.CollAllReduce, timeline.AlgoNVLSTree, []int{2, 64}, func(n, h int) want {
			inner := 1.0
			if h > 2 {
				inner = 2
			}
			return want{nvlink: float64(n) * S, nvIn: -1, nic: float64(n) * inner * float64(S/ppn)}
		}},
		{"all-to-all", timeline.CollAllToAll, 0, []int{1, 2, 64}, func(n, h int) want {
			per := float64(S / n)
			return want{nvlink: float64(n) * float64(ppn-1) * per, nvIn: -1, nic: float64(n) * float64(n-ppn) * per}
		}},
	}
	for _, tc := range tests {
		for _, h := range tc.hosts {
			t.Run(fmt.Sprintf("%s/%d hosts", tc.name, h), func(t *testing.T) {
				if testing.Short() && h > 2 {
					t.Skip("64 and 128 hosts: not in -short")
				}
				n := h * ppn
				got := runCollective(t, h, tc.op, tc.algo, S)
				if tc.algo != 0 && !got.algos[tc.algo] {
					t.Fatalf("ran %v; want %v", got.algos, tc.algo)
				}
				if got.busy == 0 {
					t.Error("no link window reports a busy time: the rate-while-busy checks checked nothing")
				}
				w := tc.want(n, h)
				if w.nvIn < 0 {
					w.nvIn = w.nvlink
				}
				for _, c := range []struct {
					name string
					link int
					want [2]float64 // out, in
				}{{"NVLink", timeline.PeakNVLink, [2]float64{w.nvlink, w.nvIn}}, {"NIC", timeline.PeakNIC, [2]float64{w.nic, w.nic}},
					{"PCIe", timeline.PeakPCIe, [2]float64{}}, {"HBM", timeline.PeakHBM, [2]float64{}}} {
					for dir, dname := range []string{"out", "in"} {
						g, want := got.bytes[c.link][dir], c.want[dir]
						// A flow ends on the nanosecond after its last byte, and a window's bytes are
						// rounded to whole bytes: a few hundred bytes per flow and window at most.
						if math.Abs(g-want) > float64(n)*1024+want*1e-4 {
							t.Errorf("%s %s: %.6g bytes; the algorithm moves %.6g", c.name, dname, g, want)
						}
					}
				}
			})
		}
	}
}

// An NVLS all-gather or reduce-scatter loads the two directions of a rank's NVLink unequally, and
// its busy times follow the hand calculation. Of the gathered S on n = 8 ranks, all-gather brings
// S into each rank at NCCL's protocol rate on NVLink, payload r = 450 GB/s × 0.822, its wire at
// the line rate L = 450 GB/s: the in link is busy T = S/r, the whole transfer. The rank's own
// share S/n leaves at r/n, in wire bytes (S/n)·L/r at L: busy T/n, not the whole of T as a flow
// paced at r/n but stretched to the line would show. Both directions' rate while busy is r.
// Reduce-scatter swaps the directions.
func TestNVLSShareLinkBusy(t *testing.T) {
	const S = 1 << 30
	for _, tc := range []struct {
		op        timeline.CollOp
		heavy, lt int // directions
	}{
		{timeline.CollAllGather, timeline.LinkRx, timeline.LinkTx},
		{timeline.CollReduceScatter, timeline.LinkTx, timeline.LinkRx},
	} {
		t.Run(tc.op.String(), func(t *testing.T) {
			c, store := newClient(t, "h100x8", forced(timeline.AlgoNVLS, 0))
			m := sim.ModelOf(c.Topology())
			devs := c.Topology().AllDevices()
			n := float64(len(devs))
			if _, err := c.Collective(tc.op, devs, S, "c"); err != nil {
				t.Fatal(err)
			}
			run(t, c)
			if e := lastOf(store.Events(), timeline.KindCollective); e.AlgoProto() != "NVLS_Simple" {
				t.Fatalf("ran %s; want NVLS_Simple", e.AlgoProto())
			}
			r := m.NVLinkBps * m.NCCLNVLinkEff / 1e9 // bytes/ns
			T := S / r
			for _, d := range []struct {
				dir         int
				bytes, busy float64
			}{{tc.heavy, S, T}, {tc.lt, S / n, T / n}} {
				bytes, busy := linkBusy(store, 3, timeline.PeakNVLink, d.dir)
				if math.Abs(bytes-d.bytes) > 1e-6*d.bytes+64 {
					t.Errorf("device 3 NVLink dir %d carried %.0f bytes; want %.0f", d.dir, bytes, d.bytes)
				}
				if math.Abs(busy-d.busy) > 1e-6*d.busy+20 {
					t.Errorf("device 3 NVLink dir %d busy %.0f ns; the hand calculation says %.0f", d.dir, busy, d.busy)
				}
			}
		})
	}
}
