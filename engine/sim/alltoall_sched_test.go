package sim_test

import (
	"context"
	"math"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/timeline"
)

// a2aTally is linkTally (every link window checked against the link's bandwidth) that also keeps
// the all-to-all's time: the first rank's start to the last rank's end.
type a2aTally struct {
	linkTally
	start, end int64
}

func (a *a2aTally) Emit(e *timeline.Event) {
	if e.Kind == timeline.KindCollective {
		if a.start == 0 || e.Start < a.start {
			a.start = e.Start
		}
		a.end = max(a.end, e.End)
		return
	}
	a.linkTally.Emit(e)
}

// runAllToAll runs one all-to-all over every GPU of hosts × 8 H100 on h100x8x4's network
// (sizes[i][j]: rank i to rank j; nil: even, bytes per rank), and returns the tally, the model and
// the simulator.
func runAllToAll(t *testing.T, hosts int, sizes [][]int64, bytes int64) (*a2aTally, sim.Model, *sim.Sim) {
	t.Helper()
	topo, err := sim.TopologyByName("h100x8x4")
	if err != nil {
		t.Fatal(err)
	}
	if topo, err = topology.WithHosts(topo, hosts); err != nil {
		t.Fatal(err)
	}
	m := sim.ModelOf(topo)
	tally := &a2aTally{linkTally: linkTally{t: t, algos: map[timeline.NCCLAlgo]bool{}}}
	tally.peaks[timeline.PeakNVLink], tally.peaks[timeline.PeakNIC] = m.NVLinkBps, m.NICBps
	tally.peaks[timeline.PeakPCIe], tally.peaks[timeline.PeakHBM] = m.PCIeBps, m.HBMBps
	s, err := sim.New(sim.Config{Topology: topo, Seed: 1, Model: m}, tally, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(s, tally, engine.DefaultOptions())
	devs := topo.AllDevices()
	if sizes != nil {
		_, err = c.RaggedAllToAll(devs, sizes, "a2a")
	} else {
		_, err = c.Collective(timeline.CollAllToAll, devs, bytes, "a2a")
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tally, m, s
}

// An even all-to-all across hosts is NIC-bound: each rank sends S/n to each of the n−8 ranks on
// other hosts through its NIC and receives as much, at the NIC's line rate times NCCL's
// efficiency (FACTS.md: 50 GB/s NDR, 47 GB/s reached). NCCL's schedule runs the peers in
// batches, one host's 8 GPUs a batch, each batch starting a NIC hop after the last: the time is
// NCCL's kernel cost, a hop per network batch and the bytes at that rate, worked out here from the
// topology's numbers. busbw (nccl-tests: algbw·(n−1)/n) is then the NIC's rate scaled by
// (n−1)/(n−8), and no link carries more than its bandwidth in any window.
func TestEvenAllToAllIsNICBound(t *testing.T) {
	for _, hosts := range []int{2, 4, 8} {
		n := hosts * 8
		const bytes = 64 << 20
		tally, m, _ := runAllToAll(t, hosts, nil, bytes)
		per := float64(bytes / n)
		nic := m.NICBps * m.NCCLNICEff
		want := float64(m.NCCLBaseNs) + float64(hosts-1)*float64(m.NICLatencyNs) + per*float64(n-8)/nic*1e9
		got := float64(tally.end - tally.start)
		if math.Abs(got-want) > 0.005*want {
			t.Errorf("%d ranks: the all-to-all took %.0f ns; want %.0f (NIC-bound, within 0.5%%)", n, got, want)
		}
		busbw := float64(bytes) / got * float64(n-1) / float64(n) // bytes/ns = GB/s
		if lim := 50 * 0.94 * float64(n-1) / float64(n-8); busbw > lim*1.001 || busbw < lim*0.95 {
			t.Errorf("%d ranks: busbw %.2f GB/s; want within 5%% below %.2f (47 GB/s a NIC, FACTS.md)", n, busbw, lim)
		}
		// Bytes on the NICs and NVLink: the pairs across hosts and inside them (a flow's end is
		// rounded up to the next ns: up to a ns of its rate more, some tens of bytes).
		slack := float64(n*n) * 64
		if got, want := tally.bytes[timeline.PeakNIC][timeline.LinkTx], float64(n*(n-8))*per; math.Abs(got-want) > slack {
			t.Errorf("%d ranks: NICs sent %.0f bytes; want %.0f", n, got, want)
		}
		if got, want := tally.bytes[timeline.PeakNVLink][timeline.LinkTx], float64(n*7)*per; math.Abs(got-want) > slack {
			t.Errorf("%d ranks: NVLink sent %.0f bytes; want %.0f", n, got, want)
		}
	}
}

// A ragged all-to-all across hosts takes at least the busiest NIC's bytes at its rate (the most
// any rank sends to, or receives from, other hosts), and the batches add their tails to it: a
// rank's next batch waits for the slowest of its 16 flows, where NCCL's other channels would fill
// the NIC meanwhile (docs/ARCHITECTURE.md, "The simulator"). On these sizes, uneven from 1 to 17
// units between any two ranks, the tails cost 15 %; here they must stay within 20 %.
func TestRaggedAllToAllNearItsBusiestNIC(t *testing.T) {
	const hosts = 8
	n := hosts * 8
	sizes := raggedSizes(n)
	tally, m, _ := runAllToAll(t, hosts, sizes, 0)
	var most float64
	for p := range n {
		var out, in float64
		for q := range n {
			if p/8 != q/8 {
				out += float64(sizes[p][q])
				in += float64(sizes[q][p])
			}
		}
		most = max(most, out, in)
	}
	bound := most / (m.NICBps * m.NCCLNICEff) * 1e9
	got := float64(tally.end - tally.start)
	if got < bound || got > 1.20*bound {
		t.Errorf("the ragged all-to-all took %.0f ns; want between the busiest NIC's %.0f and 20 %% above it", got, bound)
	}
}

// NCCL runs an all-to-all across nodes a batch of peers at a time (8 ranks of one node), not all
// n−1 at once: the flows in flight are at most a rank's delta-0 batch (7 NVLink peers) and one
// network batch (8 sends and 8 receives), so some 2·8·n, not n(n−1) (16,256 at 128 ranks), and the
// solver's work per flow does not grow with the ranks.
func TestAllToAllAcrossNodesRunsBatches(t *testing.T) {
	var perFlow [2]float64
	for i, hosts := range []int{8, 16} {
		n := hosts * 8
		_, _, s := runAllToAll(t, hosts, raggedSizes(n), 0)
		if got, most := sim.FlowSlots(s), n*(7+8); got > most {
			t.Errorf("%d ranks: %d flows at once; want at most %d (n(n−1) = %d)", n, got, most, n*(n-1))
		}
		perFlow[i] = float64(sim.SolverVisits(s)) / float64(n*(n-1))
	}
	if perFlow[1] > 1.5*perFlow[0] {
		t.Errorf("the solver looked at %.0f flows and links a flow at 64 ranks, %.0f at 128: want no growth with the ranks", perFlow[0], perFlow[1])
	}
}
