package sim_test

import (
	"context"
	"math"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// Calibration of the collectives against published figures and NCCL's own cost model, and the
// flow-level behaviour on top of it (docs/nccl-tests.md says how far the model is from published
// measurements, size range by size range).

// collective runs `concurrent` collectives of op over every device of topo at once, each rank on a
// stream of its own, after the communicator exists, and returns the last one's event and its
// nccl-tests bus bandwidth (GB/s).
func collective(t *testing.T, topo string, op timeline.CollOp, bytes int64, opts engine.Options, concurrent int) (timeline.Event, float64) {
	t.Helper()
	c, store := newClient(t, topo, opts)
	devs := c.Topology().AllDevices()
	n := len(devs)
	warm(t, c, devs)
	for range concurrent {
		streams := make([]engine.StreamID, n)
		for i := range streams {
			var err error
			if streams[i], err = c.NewStream(devs[i], engine.PriorityNormal); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.CollectiveOn(op, devs, streams, bytes, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := lastOf(store.Events(), timeline.KindCollective)
	return e, float64(bytes) / float64(e.Dur()) * op.BusFactor(n)
}

// TestCalibrationLargeAllReduce: 8×H100 all-reduce at every size from 1 to 8 GiB reaches the
// published busbw within 5% (FACTS.md, nccl-tests #212): NVLS, NCCL's choice on an NVLS-capable
// NVSwitch host, ~480 GB/s; ring, forced as NCCL_ALGO=Ring does, ~370 GB/s.
func TestCalibrationLargeAllReduce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      engine.Options
		want      float64
		algoProto string
	}{
		{"auto", engine.DefaultOptions(), 480, "NVLS_Simple"},
		{"ring", forced(timeline.AlgoRing, 0), 370, "Ring_Simple"},
	} {
		for b := int64(1 << 30); b <= 8<<30; b *= 2 {
			e, bw := collective(t, "h100x8", timeline.CollAllReduce, b, tc.opts, 1)
			if !within(bw, tc.want, 0.05) || e.AlgoProto() != tc.algoProto {
				t.Errorf("%s %d GiB: %s busbw %.1f GB/s; want %s %.0f ±5%%", tc.name, b>>30, e.AlgoProto(), bw, tc.algoProto, tc.want)
			}
		}
	}
}

// TestCalibrationOtherCollectives: on 8×H100 every other collective's large-message busbw is near
// NCCL's effective NVLink bandwidth, ~370 GB/s (nccl-tests #212: "which you can observe as BusBw
// when running non-allreduce operations"), within 5%: all-gather, reduce-scatter and broadcast
// (rings), all-to-all (every pair at once through each GPU's NVLink) and send/recv (a ring of
// pairs, sendrecv_perf's pattern).
func TestCalibrationOtherCollectives(t *testing.T) {
	for _, op := range []timeline.CollOp{timeline.CollAllGather, timeline.CollReduceScatter, timeline.CollBroadcast, timeline.CollAllToAll} {
		for _, b := range []int64{1 << 30, 8 << 30} {
			if _, bw := collective(t, "h100x8", op, b, engine.DefaultOptions(), 1); !within(bw, 370, 0.05) {
				t.Errorf("%v %d GiB: busbw %.1f GB/s; want 370 ±5%%", op, b>>30, bw)
			}
		}
	}
	for _, b := range []int64{1 << 30, 8 << 30} {
		if bw := sendRecvRing(t, "h100x8", b); !within(bw, 370, 0.05) {
			t.Errorf("send/recv ring %d GiB: busbw %.1f GB/s; want 370 ±5%%", b>>30, bw)
		}
	}
}

// TestCalibrationNVLSAllGather: NVLS all-gather and reduce-scatter forced on 8×H100 (NCCL_ALGO=NVLS)
// against what is published. NVIDIA/nccl issue 1506 (8 GPUs, 1 GB): all-gather ~300 GB/s busbw with
// NVLS, ~350 with the ring (and all-reduce 470 with NVLS); NCCL's answer there and in issue 1083:
// NVLS moves S/n out and S in per rank (reduce-scatter the reverse), more in one direction than
// the ring's (n−1)/n·S each way, so it is slower than the ring for both. The model's all-gather
// is 320.9 GB/s at 1 GiB: +7.0% against 300 (−6.5% in time); no published reduce-scatter figure
// was found, so it is only checked to be slower than the ring, as issues 1047 and 1083 report.
// Unforced, NCCL keeps the ring for both (TestNCCLNVLSAllGather works out why).
func TestCalibrationNVLSAllGather(t *testing.T) {
	const b = 1 << 30
	for _, op := range []timeline.CollOp{timeline.CollAllGather, timeline.CollReduceScatter} {
		re, ring := collective(t, "h100x8", op, b, engine.DefaultOptions(), 1)
		ne, nvls := collective(t, "h100x8", op, b, forced(timeline.AlgoNVLS, 0), 1)
		if re.AlgoProto() != "Ring_Simple" || ne.AlgoProto() != "NVLS_Simple" {
			t.Fatalf("%v: ran %s unforced and %s forced; want Ring_Simple and NVLS_Simple", op, re.AlgoProto(), ne.AlgoProto())
		}
		t.Logf("%v 1 GiB: busbw NVLS %.1f GB/s, ring %.1f", op, nvls, ring)
		if nvls >= ring {
			t.Errorf("%v 1 GiB: NVLS busbw %.1f GB/s, ring %.1f; NVLS is slower on one H100 host", op, nvls, ring)
		}
		if op == timeline.CollAllGather && !within(nvls, 300, 0.08) {
			t.Errorf("all-gather NVLS 1 GiB: busbw %.1f GB/s; published ~300 (NVIDIA/nccl#1506), want within 8%%", nvls)
		}
	}
}

// sendRecvRing runs sendrecv_perf's pattern once (each rank, in one group, sends bytes to the next
// and receives from the previous) and returns its busbw: bytes / the time from the first send's
// start to the last receive's end (nccl-tests' factor for send/recv is 1).
func sendRecvRing(t *testing.T, topo string, bytes int64) float64 {
	t.Helper()
	c, store := newClient(t, topo, engine.DefaultOptions())
	n := c.Topology().Devices()
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = c.NewOpID()
		if _, err := c.Communicator([]engine.DeviceID{engine.DeviceID(i), engine.DeviceID((i + 1) % n)}); err != nil {
			t.Fatal(err)
		}
	}
	run(t, c)
	begin := len(store.Events())
	c.GroupStart()
	for i := range n {
		s := c.TransferStream(engine.DeviceID(i))
		if _, err := c.Send(s, engine.DeviceID((i+1)%n), bytes, ids[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Recv(s, engine.DeviceID((i+n-1)%n), bytes, ids[(i+n-1)%n]); err != nil {
			t.Fatal(err)
		}
	}
	c.GroupEnd()
	run(t, c)
	start, end := int64(math.MaxInt64), int64(0)
	for _, e := range store.Events()[begin:] {
		if e.Kind == timeline.KindSend || e.Kind == timeline.KindRecv {
			start, end = min(start, e.Start), max(end, e.End)
		}
	}
	return float64(bytes) / float64(end-start)
}

// NCCL's tuner constants, typed here from NVIDIA/nccl src/graph/tuning.cc at v2.28.9-1 (commit
// dbc86fd0, ncclTunerConstantsDefaults and getNetOverhead; the NCCL PyTorch 2.11 bundles), µs and
// GB/s, so that this test computes NCCL's prediction on its own rather than asking the
// simulator's tuner.
const (
	baseLatRingLL  = 6.6   // baseLatencies[Ring][LL]
	baseLatTreeLL  = 6.8   // baseLatencies[Tree][LL]
	hwLatNVLRingLL = 0.6   // hwLatencies[NVLINK][Ring][LL]
	hwLatNVLTreeLL = 0.6   // hwLatencies[NVLINK][Tree][LL]
	hwLatNetRingLL = 2.7   // hwLatencies[NET][Ring][LL]
	hwLatNetTreeLL = 5.0   // hwLatencies[NET][Tree][LL]
	netOverheadUs  = 1.0   // getNetOverhead: an Intel host
	llMaxBwN1      = 141.0 // llMaxBws[Hopper][0]: one node, indexed by GPU architecture
	llMaxBwN2      = 39.0  // llMaxBws[0][1]: two nodes, indexed by CPU vendor (Intel)
	perChMaxTreeN1 = 38.7
	perChMaxTreeN2 = 41.4 // perChMaxTreeBws[Hopper]
)

// treeCorrectionLL is treeCorrectionFactor[LL] by log2(bytes/64).
var treeCorrectionLL = []float64{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0}

// ncclSmallAllReduceUs is NCCL's predicted time of an all-reduce of bytes ≤ 64 KiB over nodes
// hosts of 8 H100 (NVLink; one 400 Gb/s NIC per GPU), µs: the faster of ring and tree with LL,
// the protocol NCCL runs at these sizes. The topology's bus bandwidth is the effective NVLink
// (370 GB/s, 16 channels) inside a host and 8 NICs × 45 GB/s across hosts.
func ncclSmallAllReduceUs(nodes int, bytes int64) float64 {
	n, ppn, ch := float64(8*nodes), 8.0, 16.0
	bus, llMax, treeMax := 370.0, llMaxBwN1, perChMaxTreeN1
	if nodes > 1 {
		bus, llMax, treeMax = 8*45.0, llMaxBwN2, perChMaxTreeN2
	}
	// Ring: 2(n−1) steps; across hosts 2·(nodes−1) of them cross the network (NCCL 2.20 counted
	// 2·nodes) and each of the others costs at least a network post.
	nsteps, inter := 2*(n-1), 0.0
	intra := hwLatNVLRingLL
	if nodes > 1 {
		inter, intra = 2*float64(nodes-1), max(hwLatNVLRingLL, netOverheadUs)
	}
	ringLat := baseLatRingLL + (nsteps-inter)*intra + inter*hwLatNetRingLL
	ringBw := min(llMax, bus/2) * n / nsteps
	// Tree: up and down the chain inside each host, log2(nodes) network hops each way; across two
	// nodes the tree graph's bandwidth may reach twice the NICs' (search.cc raises bwIntra).
	treeLat := baseLatTreeLL + 2*((ppn-1)*hwLatNVLTreeLL+math.Log2(float64(nodes))*hwLatNetTreeLL)
	treeBus := 370.0
	if nodes > 2 {
		treeBus = bus
	}
	treeBw := min(min(treeBus*0.92, ch*treeMax)/3.8, llMax) / 2
	if ls := int(math.Log2(float64(bytes >> 6))); bytes >= 64 && ls < len(treeCorrectionLL) {
		treeBw *= treeCorrectionLL[ls]
	}
	return min(ringLat+float64(bytes)/(1e3*ringBw), treeLat+float64(bytes)/(1e3*treeBw))
}

// TestCalibrationSmallMessages: at every size up to 64 KiB an all-reduce alone on the machine takes
// within 20% of what NCCL's cost model predicts for the topology (8×H100: Ring/LL, 6.6 + 14 × 0.6
// = 15.0 µs at 8 B; 2×8: Tree/LL, 6.8 + 2·(7·0.6 + 5.0) = 25.2 µs), computed above from NCCL's
// constants. The published 2×8 run measured 136 µs at 8 B: the model is what NCCL predicts, not
// what that cluster measured (docs/nccl-tests.md).
func TestCalibrationSmallMessages(t *testing.T) {
	for _, tc := range []struct {
		topo  string
		nodes int
		algo  string
	}{{"h100x8", 1, "Ring_LL"}, {"h100x8x2", 2, "Tree_LL"}} {
		for b := int64(8); b <= 64<<10; b *= 2 {
			e, _ := collective(t, tc.topo, timeline.CollAllReduce, b, engine.DefaultOptions(), 1)
			got, want := float64(e.Dur())/1e3, ncclSmallAllReduceUs(tc.nodes, b)
			if !within(got, want, 0.20) || e.AlgoProto() != tc.algo {
				t.Errorf("%s %d B: %.2f µs %s; NCCL's model predicts %.2f µs (±20%%) with %s", tc.topo, b, got, e.AlgoProto(), want, tc.algo)
			}
		}
	}
}

// TestConcurrentCollectivesShareLinks: two all-reduces on the same GPUs at once each get half the
// bandwidth one gets alone (±5%), with the ring, with NVLS and across hosts; a peer copy on one
// of the ring's NVLinks slows the all-reduce and is slowed by it.
func TestConcurrentCollectivesShareLinks(t *testing.T) {
	for _, tc := range []struct {
		topo string
		opts engine.Options
	}{
		{"h100x8", forced(timeline.AlgoRing, 0)},
		{"h100x8", engine.DefaultOptions()},
		{"h100x8x2", engine.DefaultOptions()},
	} {
		e, alone := collective(t, tc.topo, timeline.CollAllReduce, 1<<30, tc.opts, 1)
		_, shared := collective(t, tc.topo, timeline.CollAllReduce, 1<<30, tc.opts, 2)
		if !within(shared, alone/2, 0.05) {
			t.Errorf("%s %s: two concurrent all-reduces %.1f GB/s busbw each; alone %.1f: want half ±5%%", tc.topo, e.AlgoProto(), shared, alone)
		}
	}
	copyAlone, arAlone := copyBeside(t, false)
	copyShared, arShared := copyBeside(t, true)
	if float64(copyShared) < float64(copyAlone)*1.2 || float64(arShared) < float64(arAlone)*1.05 {
		t.Errorf("peer copy 0→1 beside a ring all-reduce: copy %d → %d ns, all-reduce %d → %d ns; want both slower", copyAlone, copyShared, arAlone, arShared)
	}
}

// copyBeside times a 256 MiB peer copy from GPU 0 to 1 and a 1 GiB ring all-reduce over 8 H100,
// at once or each alone.
func copyBeside(t *testing.T, together bool) (copyNs, arNs int64) {
	t.Helper()
	time := func(copy, ar bool) (int64, int64) {
		c, store := newClient(t, "h100x8", forced(timeline.AlgoRing, 0))
		devs := []engine.DeviceID{0, 1, 2, 3, 4, 5, 6, 7}
		warm(t, c, devs)
		if copy {
			s, _ := c.NewStream(0, engine.PriorityNormal)
			if _, err := c.Copy(s, timeline.CopyP2P, 256<<20, 1, false); err != nil {
				t.Fatal(err)
			}
		}
		if ar {
			if _, err := c.Collective(timeline.CollAllReduce, devs, 1<<30, "ar"); err != nil {
				t.Fatal(err)
			}
		}
		run(t, c)
		return lastOf(store.Events(), timeline.KindMemcpy).Dur(), lastOf(store.Events(), timeline.KindCollective).Dur()
	}
	if together {
		return time(true, true)
	}
	copyNs, _ = time(true, false)
	_, arNs = time(false, true)
	return copyNs, arNs
}

// TestBusBandwidthRampsUp: small messages never reach link bandwidth. Over 8 B … 8 GiB the busbw
// of an all-reduce rises with the size (never falls by more than rounding) up to its plateau; it
// is under 2% of the plateau up to 64 KiB and under 90% of it below 64 MiB (one host: NVLS 91%
// at 64 MiB, ring 92% at 128 MiB), 256 MiB (two hosts, NVLS-tree: 89% at 128 MiB; it reaches its
// plateau sooner than rings, as NVIDIA says in NVIDIA/nccl#1649) or 512 MiB (two hosts, ring):
// the pipeline of chunks fills only with large messages.
func TestBusBandwidthRampsUp(t *testing.T) {
	for _, tc := range []struct {
		topo    string
		opts    engine.Options
		fullish int64 // below this size busbw < 90% of the plateau
	}{
		{"h100x8", engine.DefaultOptions(), 64 << 20},
		{"h100x8", forced(timeline.AlgoRing, 0), 128 << 20},
		{"h100x8x2", engine.DefaultOptions(), 256 << 20},
		{"h100x8x2", forced(timeline.AlgoRing, 0), 512 << 20},
	} {
		var sizes []int64
		var bws []float64
		for b := int64(8); b <= 8<<30; b *= 2 {
			_, bw := collective(t, tc.topo, timeline.CollAllReduce, b, tc.opts, 1)
			sizes, bws = append(sizes, b), append(bws, bw)
		}
		plateau := bws[len(bws)-1]
		for i := range bws {
			if i > 0 && bws[i] < bws[i-1]*0.999 {
				t.Errorf("%s algo %v: busbw falls from %.2f at %d B to %.2f at %d B", tc.topo, tc.opts.NCCLAlgo, bws[i-1], sizes[i-1], bws[i], sizes[i])
			}
			if sizes[i] <= 64<<10 && bws[i] > 0.02*plateau {
				t.Errorf("%s: %d B reaches %.1f GB/s, %.0f%% of the plateau", tc.topo, sizes[i], bws[i], 100*bws[i]/plateau)
			}
			if sizes[i] < tc.fullish && bws[i] > 0.9*plateau {
				t.Errorf("%s: %d B already reaches %.1f GB/s, %.0f%% of the plateau", tc.topo, sizes[i], bws[i], 100*bws[i]/plateau)
			}
		}
	}
}

// TestNetworkHopsAddNICLatency: a hop through the NICs costs the NIC's latency. A send/recv
// between hosts takes the model's NIC latency minus its NVLink latency longer than one inside a
// host (8 B: no bandwidth term); an 8-byte all-reduce over two hosts takes NCCL's two network hops
// of the tree (2 × hwLat[NET][Tree][LL] = 10 µs) longer than the same tree inside one host.
func TestNetworkHopsAddNICLatency(t *testing.T) {
	m := sim.DefaultModel()
	p2p := func(dst engine.DeviceID) int64 {
		c, store := newClient(t, "h100x8x2", engine.DefaultOptions())
		warm(t, c, []engine.DeviceID{0, dst})
		id := c.NewOpID()
		if _, err := c.Send(c.TransferStream(0), dst, 8, id); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Recv(c.TransferStream(dst), 0, 8, id); err != nil {
			t.Fatal(err)
		}
		run(t, c)
		return lastOf(store.Events(), timeline.KindSend).Dur()
	}
	intra, inter := p2p(1), p2p(8)
	if d := inter - intra; math.Abs(float64(d-(m.NICLatencyNs-m.NVLinkLatencyNs))) > 2 {
		t.Errorf("8-byte send across hosts %d ns, inside a host %d ns: %d ns more; want the NIC's %d − NVLink's %d", inter, intra, d, m.NICLatencyNs, m.NVLinkLatencyNs)
	}
	one, _ := collective(t, "h100x8", timeline.CollAllReduce, 8, forced(timeline.AlgoTree, timeline.ProtoLL), 1)
	two, _ := collective(t, "h100x8x2", timeline.CollAllReduce, 8, forced(timeline.AlgoTree, timeline.ProtoLL), 1)
	if d := float64(two.Dur()-one.Dur()) / 1e3; math.Abs(d-2*hwLatNetTreeLL) > 0.05 {
		t.Errorf("8-byte tree all-reduce: 2 hosts %d ns, 1 host %d ns: %.2f µs more; want 2 network hops of %.1f µs", two.Dur(), one.Dur(), d, hwLatNetTreeLL)
	}
}

// TestCrossHostAllReduceIsHierarchical: across hosts the all-reduce runs NCCL's hierarchical
// algorithms, as NCCL 2.28's tuner picks them (TestNCCLChoiceAcrossNodes has the whole table): the
// tree (chains inside each host, a tree across hosts) up to a few MiB, then NVLS-tree (NVLink SHARP
// inside each host, a tree across); rings forced with NCCL_ALGO=Ring cross each host's boundary
// once per ring, so that every GPU's NIC carries one ring and the slower of the NICs (8 × 47 GB/s)
// and NCCL's NVLink ring (370 GB/s) bounds them. Inside one host the tree never wins (NCCL: ring
// or NVLS).
func TestCrossHostAllReduceIsHierarchical(t *testing.T) {
	ring := forced(timeline.AlgoRing, 0)
	for _, tc := range []struct {
		topo  string
		bytes int64
		opts  engine.Options
		algo  timeline.NCCLAlgo
	}{
		{"h100x8x2", 8, engine.DefaultOptions(), timeline.AlgoTree},
		{"h100x8x2", 1 << 20, engine.DefaultOptions(), timeline.AlgoTree},
		{"h100x8x2", 16 << 20, engine.DefaultOptions(), timeline.AlgoNVLSTree},
		{"h100x8x2", 1 << 30, engine.DefaultOptions(), timeline.AlgoNVLSTree},
		{"h100x8x2", 1 << 30, ring, timeline.AlgoRing},
		{"h100x8x4", 1 << 20, engine.DefaultOptions(), timeline.AlgoTree},
		{"h100x8x4", 1 << 30, engine.DefaultOptions(), timeline.AlgoNVLSTree},
		// NCCL 2.28's NVLS latency (25 µs, 23 in 2.20) and bandwidth (8 heads × 40 GB/s × 0.85 ×
		// 7/8 × 2 = 476 GB/s busbw) leave 1 MiB to Ring/LL (28.0 µs against 28.9); 2 MiB is NVLS.
		{"h100x8", 1 << 20, engine.DefaultOptions(), timeline.AlgoRing},
		{"h100x8", 2 << 20, engine.DefaultOptions(), timeline.AlgoNVLS},
		{"h100x8", 8, engine.DefaultOptions(), timeline.AlgoRing},
	} {
		e, bw := collective(t, tc.topo, timeline.CollAllReduce, tc.bytes, tc.opts, 1)
		if a, _, _ := e.NCCLChoice(); a != tc.algo {
			t.Errorf("%s %d B: %s; want %v", tc.topo, tc.bytes, e.AlgoProto(), tc.algo)
		}
		if tc.topo == "h100x8x2" && tc.bytes == 1<<30 && tc.algo == timeline.AlgoRing {
			tp, err := sim.TopologyByName(tc.topo)
			if err != nil {
				t.Fatal(err)
			}
			m := sim.ModelOf(tp)
			bound := min(8*m.NICBps*m.NCCLNICEff, m.NVLinkBps*m.NCCLNVLinkEff) / 1e9
			if bw > bound || bw < 0.9*bound {
				t.Errorf("2×8 ring 1 GiB: busbw %.1f GB/s; want just under the NICs' and NVLink ring's %.1f", bw, bound)
			}
		}
	}
}

// TestCalibrationMultiHostAllReduce compares 2 and 4 hosts × 8 H100 (400 Gb/s NIC per GPU) with
// published all_reduce_perf runs (docs/nccl-tests.md has the sources and why they differ). The
// tolerances are the spread of the published runs themselves, widened by what the model is known
// to leave out:
//
//   - ≥ 1 GiB, 2 hosts: 430 GB/s busbw (NVIDIA/nccl#1221, 8 × 400 Gb/s RoCE, NVLS on) and 384–391
//     (wutz/k8s-in-action, 8 × 400 Gb/s InfiniBand): 10% apart on the same hardware. The simulator
//     runs NCCL's own prediction for NVLS-tree, 8 heads × 57.7 GB/s (perChMaxNVLSTreeBw, NVIDIA's
//     figure) = 461.6, above both: the band is the lowest less 5% to the highest plus 10%. A ring
//     (358) or a tree would fall below it.
//   - ≥ 1 GiB, 4 hosts: 320 GB/s (NVIDIA/nccl#1221, NVLS on or off alike) and 370–380 (NVIDIA's
//     GTC 2024 figures for multi-node NVLS-tree and rings, quoted in NVIDIA/nccl#1649): the band is
//     the lowest less 5% to the highest plus 5%; and 4 hosts are slower than 2, as both NCCL's model
//     (45.5 GB/s per head beyond 2 nodes) and #1221 (430 → 320) have it.
//   - ≤ 64 KiB, 2 hosts: 46–48 µs (NVIDIA/nccl#1244, 2 × 8 H20 on NDR, NVLS-tree forced) and
//     123–159 µs (Google Cloud A3 Mega, report/nccltests/testdata/h100x8x2_all_reduce.log). The
//     simulator takes NCCL's predicted latency (tree, 25 µs), which leaves out the kernel launch
//     and the proxy's network round trips: it must lie under every published figure and above a
//     fifth of the lowest. On 4 hosts no published small-message run was found; the tree's one more
//     level across hosts costs NCCL's 2 × 5 µs there.
func TestCalibrationMultiHostAllReduce(t *testing.T) {
	for _, tc := range []struct {
		topo   string
		bytes  int64
		lo, hi float64 // busbw band, GB/s
	}{
		{"h100x8x2", 1 << 30, 384 * 0.95, 430 * 1.10},
		{"h100x8x2", 8 << 30, 391 * 0.95, 430 * 1.10},
		{"h100x8x4", 1 << 30, 320 * 0.95, 380 * 1.05},
		{"h100x8x4", 8 << 30, 320 * 0.95, 380 * 1.05},
	} {
		e, bw := collective(t, tc.topo, timeline.CollAllReduce, tc.bytes, engine.DefaultOptions(), 1)
		t.Logf("%s %d B: %s busbw %.1f GB/s", tc.topo, tc.bytes, e.AlgoProto(), bw)
		if bw < tc.lo || bw > tc.hi {
			t.Errorf("%s all-reduce %d B: %s busbw %.1f GB/s; published runs give %.0f–%.0f", tc.topo, tc.bytes, e.AlgoProto(), bw, tc.lo, tc.hi)
		}
	}
	_, two := collective(t, "h100x8x2", timeline.CollAllReduce, 8<<30, engine.DefaultOptions(), 1)
	_, four := collective(t, "h100x8x4", timeline.CollAllReduce, 8<<30, engine.DefaultOptions(), 1)
	if four >= two {
		t.Errorf("8 GiB: 4 hosts %.1f GB/s, 2 hosts %.1f; published runs and NCCL's model have 4 hosts slower", four, two)
	}
	var us [2]float64
	for i, topo := range []string{"h100x8x2", "h100x8x4"} {
		for _, b := range []int64{8, 1 << 10, 64 << 10} {
			e, _ := collective(t, topo, timeline.CollAllReduce, b, engine.DefaultOptions(), 1)
			got := float64(e.Dur()) / 1e3
			if b == 8 {
				us[i] = got
			}
			if topo == "h100x8x2" && (got > 46.25 || got < 46.25/5) {
				t.Errorf("%s %d B: %.1f µs; want under the published 46–159 µs and above a fifth of 46", topo, b, got)
			}
		}
	}
	if d := us[1] - us[0]; math.Abs(d-10) > 0.5 {
		t.Errorf("8 B: 4 hosts take %.1f µs more than 2; want NCCL's tree network level, 2 × 5 µs", d)
	}
}
