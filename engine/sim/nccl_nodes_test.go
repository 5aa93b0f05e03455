package sim

import (
	"fmt"
	"math"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/timeline"
)

// ncclRef is NCCL 2.28.9's choice for an all-reduce over nodes × 8 H100 (one 400 Gb/s NIC per
// GPU, Intel hosts), worked out here from src/graph/tuning.cc on its own, with its constants
// written out, so that the simulator's tuner is checked against the formulas rather than against
// itself. The graphs are what the simulator's h100x8x2 file describes to NCCL: ring and tree 16
// channels of 369.9/16 GB/s (NVLink 450 GB/s × 0.822; the NICs' 8 × 47 GB/s are more), the NVLS
// graph 8 heads of 40 GB/s inside a node (search.cc's step under 369.9/9) and 45 GB/s through
// their NICs (the step under 47), which NCCL's search raises to 60 inside a single node.
func ncclRef(nodes int, nvls bool, bytes int64) (timeline.NCCLAlgo, timeline.NCCLProto) {
	const (
		ppn      = 8
		channels = 16
		ringBus  = 369.9 // channels × per-channel bandwidth, GB/s
		heads    = 8
		nvlsIn   = 40.0
	)
	n := nodes * ppn
	nsteps := float64(2 * (n - 1))
	i2 := min(nodes-1, 2) // NCCL's scale index: 1 node, 2, more
	llMax := [3]float64{141.0, 39.0, 20.4}[i2]
	treeCap := [3]float64{38.7, 41.4, 36.0}[i2] * channels
	treeLL128Cap := [3]float64{36.7, 36.7, 29.0}[i2] * channels
	nvlsTreeCap := [3]float64{0, 57.7, 45.5}[i2]
	nvlsOut := 45.0
	if nodes == 1 {
		nvlsOut = 60
	}
	log2 := math.Floor(math.Log2(float64(nodes)))
	type cand struct {
		a       timeline.NCCLAlgo
		p       timeline.NCCLProto
		lat, bw float64 // µs, algorithm GB/s
	}
	var cs []cand
	protos := []timeline.NCCLProto{timeline.ProtoLL, timeline.ProtoLL128, timeline.ProtoSimple}
	for i, p := range protos {
		// Ring: 2(n-1) steps, 2(nodes-1) of them through the network.
		bus := ringBus
		switch p {
		case timeline.ProtoLL:
			bus = min(llMax, bus*0.5)
		case timeline.ProtoLL128:
			bus = min(bus*0.92, channels*36.7)
		}
		intra := [3]float64{0.6, 1.9, 3.4}[i]
		inter := [3]float64{2.7, 4.0, 14.0}[i]
		nInter := 0.0
		if nodes > 1 {
			ov := 1.0 // getNetOverhead on Intel
			if p == timeline.ProtoSimple {
				ov *= 3
			}
			intra = max(intra, ov)
			nInter = float64(2 * (nodes - 1))
		}
		lat := [3]float64{6.6, 14.0, 8.4}[i] + (nsteps-nInter)*intra + nInter*inter
		if p == timeline.ProtoSimple && nodes > 1 && bytes/int64(channels*n) >= 64 {
			lat *= 1.4 // the ring's plateau (ncclTopoGetAlgoTime)
		}
		cs = append(cs, cand{timeline.AlgoRing, p, lat, bus * float64(n) / nsteps})

		// Tree: a chain inside each node, a double binary tree across; half the bus bandwidth.
		bus = min(ringBus*0.92, treeCap)
		switch p {
		case timeline.ProtoLL:
			bus = min(bus/3.8, llMax)
		case timeline.ProtoLL128:
			f := 120.0 / 128
			if nodes == 1 {
				f = 7.0 / 9
			}
			bus = min(bus*f, treeLL128Cap)
		}
		bw := bus * 0.5
		if ls := int(math.Floor(math.Log2(float64(bytes >> 6)))); bytes>>6 > 0 && ls < 23 {
			bw *= treeCorrection[i][ls]
		}
		lat = [3]float64{6.8, 14.0, 8.4}[i] + 2*((ppn-1)*[3]float64{0.6, 1.25, 4.0}[i]+log2*[3]float64{5.0, 8.5, 14}[i])
		cs = append(cs, cand{timeline.AlgoTree, p, lat, bw})
	}
	if nvls {
		per := nvlsIn * 0.85 * (heads - 1) / heads * 2 // NVLS pipelines the all-reduce's two halves
		switch {
		case nodes == 1:
			cs = append(cs, cand{timeline.AlgoNVLS, timeline.ProtoSimple, 25, heads * min(per, nvlsOut) * float64(n) / nsteps})
		default:
			out := nvlsOut
			if nodes <= 2 {
				out *= 2
			}
			bus := heads * min(per, out, nvlsTreeCap)
			cs = append(cs, cand{timeline.AlgoNVLSTree, timeline.ProtoSimple, 25 + 2*log2*20.9, bus * float64(n) / nsteps})
		}
	}
	best := cs[0]
	for _, c := range cs[1:] {
		if c.lat+float64(bytes)/(1000*c.bw) < best.lat+float64(bytes)/(1000*best.bw) {
			best = c
		}
	}
	return best.a, best.p
}

// treeCorrection is tuning.cc's treeCorrectionFactor, [LL, LL128, Simple][log2(bytes/64)].
var treeCorrection = [3][23]float64{
	{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
	{1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
	{.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}

// span is a run of sizes, from..to inclusive, for which NCCL picks one (algorithm, protocol).
type span struct {
	from, to int64
	want     string
}

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// TestNCCLChoiceAcrossNodes: on 1, 2, 4 and 16 hosts × 8 H100, from 1 KiB to 16 GiB, the tuner
// picks the (algorithm, protocol) NCCL 2.28.9's formulas pick (ncclRef), with NVLink SHARP usable
// and without it (topology nvls: false, as without the fabric manager or with NCCL_NVLS_ENABLE=0).
// The spans are that table, written out: tree across hosts at small and mid sizes (its latency
// grows with log2(nodes), the ring's with the ranks), NVLS-tree from 8 MiB on 2 hosts (NCCL's
// per-head cap of 57.7 GB/s: 461.6 GB/s busbw against the ring's 369.9), from 32–64 MiB on 4 and
// 16 (45.5 GB/s per head: 360 GB/s, so the ring wins back the largest sizes, where its 2·(nodes−1)
// network hops no longer count); without NVLS, the tree until the ring's LL128 and Simple win,
// later the more hosts the ring crosses (16 hosts: tree up to 2 GiB). The lone tree at 128 MiB on
// 4 hosts is NCCL's tree correction factor (0.9 there, 0.8 at 64 MiB).
func TestNCCLChoiceAcrossNodes(t *testing.T) {
	tests := []struct {
		nodes int
		nvls  bool
		spans []span
	}{
		{1, true, []span{{kib, mib, "Ring_LL"}, {2 * mib, 16 * gib, "NVLS_Simple"}}},
		{1, false, []span{{kib, 2 * mib, "Ring_LL"}, {4 * mib, 32 * mib, "Ring_LL128"}, {64 * mib, 16 * gib, "Ring_Simple"}}},
		{2, true, []span{{kib, 128 * kib, "Tree_LL"}, {256 * kib, 4 * mib, "Tree_LL128"}, {8 * mib, 16 * gib, "NVLSTree_Simple"}}},
		{2, false, []span{{kib, 128 * kib, "Tree_LL"}, {256 * kib, 16 * mib, "Tree_LL128"}, {32 * mib, 128 * mib, "Ring_LL128"}, {256 * mib, 16 * gib, "Ring_Simple"}}},
		{4, true, []span{{kib, 128 * kib, "Tree_LL"}, {256 * kib, 16 * mib, "Tree_LL128"}, {32 * mib, gib, "NVLSTree_Simple"}, {2 * gib, 16 * gib, "Ring_Simple"}}},
		{4, false, []span{{kib, 128 * kib, "Tree_LL"}, {256 * kib, 32 * mib, "Tree_LL128"}, {64 * mib, 64 * mib, "Ring_LL128"},
			{128 * mib, 128 * mib, "Tree_LL128"}, {256 * mib, 512 * mib, "Ring_LL128"}, {gib, 16 * gib, "Ring_Simple"}}},
		{16, true, []span{{kib, 128 * kib, "Tree_LL"}, {256 * kib, 32 * mib, "Tree_LL128"}, {64 * mib, 8 * gib, "NVLSTree_Simple"}, {16 * gib, 16 * gib, "Ring_Simple"}}},
		{16, false, []span{{kib, 128 * kib, "Tree_LL"}, {256 * kib, 256 * mib, "Tree_LL128"}, {512 * mib, 2 * gib, "Tree_Simple"},
			{4 * gib, 16 * gib, "Ring_Simple"}}},
	}
	base, err := topology.Builtin("h100x8x2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d hosts nvls=%v", tc.nodes, tc.nvls), func(t *testing.T) {
			tp := base
			tp.Hosts, tp.NVLS = tc.nodes, tc.nvls
			s := &Sim{m: ModelOf(tp), topo: tp}
			ranks := tp.AllDevices()
			nt := s.ncclTopo(ranks)
			next := kib
			for _, sp := range tc.spans {
				if sp.from != next {
					t.Fatalf("spans leave a gap at %d B", next)
				}
				for b := sp.from; b <= sp.to; b *= 2 {
					c := nt.choose(timeline.CollAllReduce, b, 0, 0)
					got := timeline.PackNCCL(c.Algo, c.Proto, 1)
					ra, rp := ncclRef(tc.nodes, tc.nvls, b)
					ref := timeline.PackNCCL(ra, rp, 1)
					if name := algoProto(got); name != sp.want || got != ref {
						t.Errorf("%d B: %s; the table says %s, NCCL's formulas %s", b, name, sp.want, algoProto(ref))
					}
				}
				next = sp.to * 2
			}
			if next != 32*gib {
				t.Fatalf("spans end at %d B; want 16 GiB", next/2)
			}
		})
	}
}

// algoProto names a packed choice as events do ("Tree_LL").
func algoProto(aux uint32) string {
	e := timeline.Event{Kind: timeline.KindCollective, Aux: aux}
	return e.AlgoProto()
}

// TestNVLSTreeOnlyWhereNCCLAllowsIt: NVLS-tree needs NVLS usable, more than one node and more than
// one GPU per node (ncclNvlsInit: a single GPU has no NVLS); NCCL_ALGO=^NVLSTree (nccl.nvls_tree:
// false) keeps it out of the tuner's reach, but forcing it still runs it; forcing it where NVLS
// is off falls back to what NCCL can run.
func TestNVLSTreeOnlyWhereNCCLAllowsIt(t *testing.T) {
	base, err := topology.Builtin("h100x8x2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		edit           func(tp *engine.Topology)
		algo           timeline.NCCLAlgo
		want           timeline.NCCLAlgo
		wantAvailableT bool
	}{
		{"default", func(*engine.Topology) {}, 0, timeline.AlgoNVLSTree, true},
		{"no NVLS", func(tp *engine.Topology) { tp.NVLS = false }, 0, timeline.AlgoRing, false},
		{"no NVLS, forced", func(tp *engine.Topology) { tp.NVLS = false }, timeline.AlgoNVLSTree, timeline.AlgoRing, false},
		{"one GPU per host", func(tp *engine.Topology) { tp.GPUsPerHost = 1 }, 0, timeline.AlgoRing, false},
		{"^NVLSTree", func(tp *engine.Topology) { tp.NCCL.NVLSTree = false }, 0, timeline.AlgoRing, true},
		{"^NVLSTree, forced", func(tp *engine.Topology) { tp.NCCL.NVLSTree = false }, timeline.AlgoNVLSTree, timeline.AlgoNVLSTree, true},
	} {
		tp := base
		tc.edit(&tp)
		s := &Sim{m: ModelOf(tp), topo: tp}
		ranks := tp.AllDevices()
		nt := s.ncclTopo(ranks)
		c := nt.choose(timeline.CollAllReduce, gib, tc.algo, 0)
		if c.Algo != tc.want || nt.available(timeline.CollAllReduce, timeline.AlgoNVLSTree) != tc.wantAvailableT {
			t.Errorf("%s: 1 GiB %v, NVLS-tree available %v; want %v, %v", tc.name, c.Algo,
				nt.available(timeline.CollAllReduce, timeline.AlgoNVLSTree), tc.want, tc.wantAvailableT)
		}
	}
}
