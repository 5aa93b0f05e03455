package sim_test

import (
	"context"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/timeline"
)

// TestDefaultModelUnchanged: the calibration moved from Go constants into h100x8.yaml unchanged.
// These are the constants DefaultModel held before, but for NVLS-tree, which the tuner may now
// pick across hosts as NCCL 2.28 does; every H100 built-in runs with them.
func TestDefaultModelUnchanged(t *testing.T) {
	want := sim.Model{
		HostLaunchNs: 3_000, NCCLLaunchNs: 4_000, GroupLaunchNs: 4_000, GroupPerOpNs: 400, WaitLaunchNs: 1_000,
		BatchAddNs: 300, CopyLatencyNs: 6_000, NotifyNs: 800, EventLatencyNs: 1_500, HBMBps: 1512e9, PCIeBps: 55.0e9,
		PageableBps: 17.7e9, NVLinkBps: 450e9, NICBps: 50e9, NVLinkLatencyNs: 700, NICLatencyNs: 4_000, NCCLBaseNs: 6_000,
		NCCLNVLinkEff: 0.822, NCCLNICEff: 0.90, P2PCopyEff: 0.85, NVLinkLinks: 18, NCCLChannels: 16, NVLSChannels: 16,
		NVLS: true, NVLSTree: true, Hopper: true, Interconnect: engine.NVSwitch, NetOverheadUs: 1.0, BarrierStepNs: 1_500,
		WaveNs: 40_000, CommInitFirstNs: 920_000_000, CommInitNs: 20_000_000, GraphLaunchNs: 2_500, KernelJitter: 0.02,
	}
	if got := sim.DefaultModel(); got != want {
		t.Errorf("DefaultModel() = %+v; want %+v", got, want)
	}
	for _, name := range []string{"h100x1", "h100x2", "h100x4", "h100x8", "h100x8x2", "h100x8x4"} {
		tp, err := sim.TopologyByName(name)
		if err != nil {
			t.Fatal(err)
		}
		w := want
		if tp.Hosts > 1 {
			// The multi-host files hold NCCL to NVIDIA's 46-48 GB/s per 400 Gb/s NIC (nccl-tests
			// #290); nothing on one host measures a NIC.
			w.NCCLNICEff = 0.94
		}
		if got := sim.ModelOf(tp); got != w {
			t.Errorf("ModelOf(%s) = %+v; want DefaultModel's, NIC efficiency %.2f", name, got, w.NCCLNICEff)
		}
	}
	if got := sim.ModelOf(engine.Topology{Name: "shape", Hosts: 1, GPUsPerHost: 4}); got != want {
		t.Errorf("ModelOf(a shape) = %+v; want DefaultModel's", got)
	}
}

// TestTopologyAllReduce: 1 GiB all-reduce over every GPU of each built-in 8-GPU box, against
// published figures. a100x8: NCCL's A100 model (12 channels × 20 GB/s) gives a ring busbw of
// 240 GB/s; published DGX A100 all_reduce_perf runs report ~200-230 (nccl-tests #149, #178), so
// within 8% of 230, with NCCL's Ampere tables and no NVLS. h200x8: the H100's NVLink 4, so the
// same NVLS busbw (~475 published, nccl-tests #272) within 2% of h100x8's. l40sx8: no NVLink;
// the ring crosses PCIe at ~21 GB/s, far below NVLink boxes (published PCIe boxes: 28 GB/s on
// 8×RTX 5090 gen5, NVIDIA/nccl #1639).
func TestTopologyAllReduce(t *testing.T) {
	_, h100 := allReduce(t, "h100x8", 1<<30, engine.DefaultOptions())
	tests := []struct {
		topo      string
		lo, hi    float64
		algoProto string
	}{
		{"a100x8", 230 * 0.92, 230 * 1.08, "Ring_Simple"},
		{"h200x8", h100 * 0.98, h100 * 1.02, "NVLS_Simple"},
		{"l40sx8", 15, 25, "Ring_Simple"},
	}
	for _, tc := range tests {
		e, got := allReduce(t, tc.topo, 1<<30, engine.DefaultOptions())
		t.Logf("%s all-reduce 1 GiB: %s busbw %.1f GB/s (h100x8 %.1f)", tc.topo, e.AlgoProto(), got, h100)
		if got < tc.lo || got > tc.hi || e.AlgoProto() != tc.algoProto {
			t.Errorf("%s all-reduce 1 GiB: %s %.1f GB/s; want %s in [%.1f, %.1f]", tc.topo, e.AlgoProto(), got, tc.algoProto, tc.lo, tc.hi)
		}
	}
	if _, pcie := allReduce(t, "l40sx8", 1<<30, engine.DefaultOptions()); pcie > h100/10 {
		t.Errorf("l40sx8 busbw %.1f GB/s; want far below h100x8's %.1f (PCIe, not NVLink)", pcie, h100)
	}
}

// TestTopologyCopies: a 1 GiB copy on one H200 moves what one moved on an H200; a
// peer copy on the PCIe-only box crosses PCIe, not NVLink; an NVLink mesh gives a pair its share of
// a GPU's links.
func TestTopologyCopies(t *testing.T) {
	copyGBps := func(topo string, dir timeline.CopyDir, peer engine.DeviceID, edit func(*engine.Topology)) float64 {
		t.Helper()
		tp, err := sim.TopologyByName(topo)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(&tp)
		}
		store := timeline.NewStore(nil)
		s, err := sim.New(sim.Config{Topology: tp, Seed: 1}, store, store.Strings)
		if err != nil {
			t.Fatal(err)
		}
		c := engine.NewClient(s, store, engine.DefaultOptions())
		if _, err := c.Copy(c.ComputeStream(0), dir, 1<<30, peer, false); err != nil {
			t.Fatal(err)
		}
		if err := c.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		e := lastOf(store.Events(), timeline.KindMemcpy)
		return float64(e.Bytes) / float64(e.Dur())
	}
	// Measured on an H200 SXM (docs/performance.md, "On the GPU"): 2101 and 2117 GB/s by raw
	// copies, 2130 through the cuda backend; the datasheet ratio to the H100 (4.8/3.35) said 2 % more.
	if h200 := copyGBps("h200x8", timeline.CopyD2D, -1, nil); !within(h200, 2116, 0.01) {
		t.Errorf("D2D 1 GiB: h200x8 %.0f GB/s; want the 2116 GB/s measured on an H200 (within 1%%)", h200)
	}
	nv, pcie := copyGBps("h100x8", timeline.CopyP2P, 1, nil), copyGBps("l40sx8", timeline.CopyP2P, 1, nil)
	if !within(nv, 450*0.85, 0.05) || !within(pcie, 27.5*0.85, 0.05) {
		t.Errorf("peer copy 1 GiB: h100x8 %.1f GB/s, l40sx8 %.1f; want NVLink ×0.85 (382) and PCIe ×0.85 (23.4)", nv, pcie)
	}
	mesh := copyGBps("h100x8", timeline.CopyP2P, 1, func(tp *engine.Topology) { tp.Interconnect, tp.NVLS = engine.NVLinkMesh, false })
	if !within(mesh, nv/7, 0.05) {
		t.Errorf("peer copy on an 8-GPU NVLink mesh: %.1f GB/s; want a seventh of the switch's %.1f", mesh, nv)
	}
}

// TestH200CopiesAsMeasured holds the h200x8 topology's copies to what an H200 ran through the cuda
// backend (docs/performance.md, "On the GPU": the copy-sweep scenario, each copy timed on the GPU,
// back to back on a stream). Host copies agree within 6 % and large copies on the GPU within 2 %;
// mid-sized ones on the GPU run faster on the hardware than a fixed per-copy latency and the HBM
// rate give (the tolerances say by how much, at most).
func TestH200CopiesAsMeasured(t *testing.T) {
	tp, err := sim.TopologyByName("h200x8")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir      timeline.CopyDir
		size     int64
		measured float64 // GB/s on the H200
		tol      float64
	}{
		{timeline.CopyH2D, 1 << 20, 43.81, 0.06},
		{timeline.CopyH2D, 4 << 20, 49.77, 0.06},
		{timeline.CopyH2D, 64 << 20, 54.32, 0.06},
		{timeline.CopyH2D, 1 << 30, 55.48, 0.06},
		{timeline.CopyD2D, 1 << 20, 253.39, 0.10},
		{timeline.CopyD2D, 4 << 20, 795.39, 0.15},
		{timeline.CopyD2D, 16 << 20, 1743.07, 0.20},
		{timeline.CopyD2D, 64 << 20, 1895.71, 0.02},
		{timeline.CopyD2D, 1 << 30, 2129.55, 0.02},
	} {
		store := timeline.NewStore(nil)
		s, err := sim.New(sim.Config{Topology: tp, Seed: 1}, store, store.Strings)
		if err != nil {
			t.Fatal(err)
		}
		c := engine.NewClient(s, store, engine.DefaultOptions())
		if _, err := c.Copy(c.ComputeStream(0), tc.dir, tc.size, -1, false); err != nil {
			t.Fatal(err)
		}
		if err := c.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		e := lastOf(store.Events(), timeline.KindMemcpy)
		if got := float64(e.Bytes) / float64(e.Dur()); !within(got, tc.measured, tc.tol) {
			t.Errorf("%v %d B: %.1f GB/s; the H200 ran %.1f (want within %.0f%%)", tc.dir, tc.size, got, tc.measured, 100*tc.tol)
		}
	}
}

// TestTopologyTuner: NCCL's cost model takes its inputs from the topology: Ampere tables and no
// NVLS on the A100, PCIe latencies and bandwidth on the PCIe-only box.
func TestTopologyTuner(t *testing.T) {
	ranks := []engine.DeviceID{0, 1, 2, 3, 4, 5, 6, 7}
	predict := func(name string, bytes int64) sim.NCCLPrediction {
		tp, err := topology.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		return sim.PredictNCCL(sim.ModelOf(tp), tp, timeline.CollAllReduce, ranks, bytes, 0, 0)
	}
	// 8 B on one host: Ring/LL, 6.6 µs base + 14 steps × the link's LL latency: NVLink 0.6, PCIe 1.0.
	for name, want := range map[string]float64{"h100x8": 6.6 + 14*0.6, "a100x8": 6.6 + 14*0.6, "l40sx8": 6.6 + 14*1.0} {
		if p := predict(name, 8); p.Algo != timeline.AlgoRing || p.Proto != timeline.ProtoLL || !within(p.LatencyUs, want, 1e-9) {
			t.Errorf("%s 8 B: %v/%v %.2f µs; want Ring/LL %.2f", name, p.Algo, p.Proto, p.LatencyUs, want)
		}
	}
	// 1 GiB: the H100 picks NVLS, the A100 (no NVLS) the ring at 12 × 20 GB/s; LL on the A100 is
	// capped by the Ampere table (87.7 GB/s), not the Hopper one (141).
	if p := predict("a100x8", 1<<30); p.Algo != timeline.AlgoRing || p.Proto != timeline.ProtoSimple || !within(p.AlgBwGBps, 240*8/14.0, 1e-9) {
		t.Errorf("a100x8 1 GiB: %v/%v %.1f GB/s; want Ring/Simple %.1f", p.Algo, p.Proto, p.AlgBwGBps, 240*8/14.0)
	}
	tp, _ := topology.Builtin("a100x8")
	if p := sim.PredictNCCL(sim.ModelOf(tp), tp, timeline.CollAllReduce, ranks, 1<<30, timeline.AlgoRing, timeline.ProtoLL); !within(p.AlgBwGBps, 87.7*8/14.0, 1e-9) {
		t.Errorf("a100x8 Ring/LL: %.2f GB/s; want the Ampere LL cap %.2f", p.AlgBwGBps, 87.7*8/14.0)
	}
	if p := predict("l40sx8", 1<<30); p.Algo != timeline.AlgoRing || !within(p.AlgBwGBps, 27.5*0.75*8/14.0, 1e-9) {
		t.Errorf("l40sx8 1 GiB: %v/%v %.2f GB/s; want Ring at PCIe %.2f", p.Algo, p.Proto, p.AlgBwGBps, 27.5*0.75*8/14.0)
	}
}

// TestTwoNICsPerGPUStaysUnderNVLink: with 200 Gb/s NICs, one per GPU, the network bounds a 2×8
// ring all-reduce (NCCL_ALGO=Ring, as NVIDIA advises for measuring the network on 2 nodes,
// nccl-tests #290); with two per GPU it no longer does, but every ring still crosses each host's
// NVLink ports, so its busbw rises towards NCCL's ring bandwidth inside a host (82.2% of 450 GB/s)
// and never above it, as NCCL's own model (a ring's bandwidth is the minimum of its intra- and
// inter-node bandwidths) says. (With 400 Gb/s NICs at NCCL's 47 GB/s, one per GPU is already
// above the NVLink ring.)
func TestTwoNICsPerGPUStaysUnderNVLink(t *testing.T) {
	busbw := func(nicsPerHost int) float64 {
		t.Helper()
		tp, err := sim.TopologyByName("h100x8x2")
		if err != nil {
			t.Fatal(err)
		}
		tp.NICs.PerHost, tp.NICs.Bps = nicsPerHost, 25e9
		c, store := newClientOf(t, tp, forced(timeline.AlgoRing, 0))
		_, bus := allReduceOn(t, c, store, 1<<30)
		return bus
	}
	one, two := busbw(8), busbw(16)
	nvlinkRing := 450 * 0.822
	t.Logf("2×8 all-reduce 1 GiB: %.1f GB/s busbw with one NIC per GPU, %.1f with two (NVLink ring %.1f)", one, two, nvlinkRing)
	if two <= one || two > nvlinkRing*1.01 {
		t.Errorf("two NICs per GPU: %.1f GB/s; want above one NIC's %.1f and at most the NVLink ring's %.1f", two, one, nvlinkRing)
	}
}
