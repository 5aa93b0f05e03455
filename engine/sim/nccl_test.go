package sim

import (
	"math"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/timeline"
)

// a100x2 is the topology of the NCCL 2.23.4 tuning log in FACTS.md: 2×A100 over NVLink as the
// built-in a100x8 file describes them to the tuner (Ampere tables, 12 channels of 20 GB/s for the
// ring). The tree graph NCCL's search found there is faster than the per-channel tree cap (24 GB/s),
// so the cap is what the log shows; the file does not describe the tree graph, so it is set here.
func a100x2(t *testing.T) ncclTopo {
	t.Helper()
	tp, err := topology.Builtin("a100x8")
	if err != nil {
		t.Fatal(err)
	}
	s := &Sim{m: ModelOf(tp), topo: tp}
	nt := s.ncclTopo([]engine.DeviceID{0, 1})
	nt.TreeBus = 320
	return nt
}

// TestNCCLModelA100Log reproduces NCCL's own logged cost model for 2×A100 (FACTS.md): latency µs
// and algorithm bandwidth GB/s per (algorithm, protocol), and its 4 MiB time.
func TestNCCLModelA100Log(t *testing.T) {
	a100x2 := a100x2(t)
	tests := []struct {
		op      timeline.CollOp
		a       timeline.NCCLAlgo
		p       timeline.NCCLProto
		lat, bw float64
	}{
		{timeline.CollAllReduce, timeline.AlgoRing, timeline.ProtoLL, 7.8, 87.7},
		{timeline.CollAllReduce, timeline.AlgoRing, timeline.ProtoLL128, 17.8, 220.8},
		{timeline.CollAllReduce, timeline.AlgoRing, timeline.ProtoSimple, 15.2, 240.0},
		{timeline.CollAllReduce, timeline.AlgoTree, timeline.ProtoLL, 8.0, 37.9},
		{timeline.CollAllReduce, timeline.AlgoTree, timeline.ProtoLL128, 16.5, 112.0},
		{timeline.CollAllReduce, timeline.AlgoTree, timeline.ProtoSimple, 16.4, 144.0},
		{timeline.CollAllGather, timeline.AlgoRing, timeline.ProtoSimple, 11.8, 480.0},
		{timeline.CollReduceScatter, timeline.AlgoRing, timeline.ProtoSimple, 11.8, 480.0},
	}
	for _, tc := range tests {
		lat, bw, ok := a100x2.model(tc.op, tc.a, tc.p)
		if !ok || math.Abs(lat-tc.lat) > 0.05 || math.Abs(bw-tc.bw) > 0.05 {
			t.Errorf("%v %v/%v: %.1f µs / %.1f GB/s (ok=%v); NCCL logged %.1f / %.1f", tc.op, tc.a, tc.p, lat, bw, ok, tc.lat, tc.bw)
		}
	}
	c := a100x2.choose(timeline.CollAllReduce, 4<<20, 0, 0)
	if c.Algo != timeline.AlgoRing || c.Proto != timeline.ProtoSimple || math.Abs(c.TimeUs(4<<20)-32.676) > 0.01 {
		t.Errorf("4 MiB: %v/%v %.3f µs; NCCL chose Ring/Simple, 32.676 µs", c.Algo, c.Proto, c.TimeUs(4<<20))
	}
}

// h100x8 is what the simulator's default model tells the tuner about one 8×H100 NVSwitch host.
func h100x8Topo(t *testing.T, hosts int) ncclTopo {
	t.Helper()
	s := &Sim{m: DefaultModel()}
	s.topo.Hosts, s.topo.GPUsPerHost = hosts, 8
	ranks := make([]engine.DeviceID, hosts*8)
	for i := range ranks {
		ranks[i] = engine.DeviceID(i)
	}
	return s.ncclTopo(ranks)
}

// TestNCCLChoice: the tuner's choice across sizes follows NCCL's shape (LL for small messages,
// LL128 in the middle, NVLS or Simple for large ones), forcing works as NCCL_ALGO/NCCL_PROTO do,
// an impossible forced algorithm falls back, and channels shrink for small messages.
func TestNCCLChoice(t *testing.T) {
	one, two := h100x8Topo(t, 1), h100x8Topo(t, 2)
	tests := []struct {
		name  string
		topo  ncclTopo
		op    timeline.CollOp
		bytes int64
		algo  timeline.NCCLAlgo
		proto timeline.NCCLProto
		wantA timeline.NCCLAlgo
		wantP timeline.NCCLProto
	}{
		{"8B", one, timeline.CollAllReduce, 8, 0, 0, timeline.AlgoRing, timeline.ProtoLL},
		{"1GiB", one, timeline.CollAllReduce, 1 << 30, 0, 0, timeline.AlgoNVLS, timeline.ProtoSimple},
		{"1GiB ring", one, timeline.CollAllReduce, 1 << 30, timeline.AlgoRing, 0, timeline.AlgoRing, timeline.ProtoSimple},
		{"1GiB ring LL", one, timeline.CollAllReduce, 1 << 30, timeline.AlgoRing, timeline.ProtoLL, timeline.AlgoRing, timeline.ProtoLL},
		{"all-gather NVLS forced", one, timeline.CollAllGather, 1 << 30, timeline.AlgoNVLS, 0, timeline.AlgoNVLS, timeline.ProtoSimple},
		{"reduce-scatter NVLS forced", one, timeline.CollReduceScatter, 1 << 30, timeline.AlgoNVLS, 0, timeline.AlgoNVLS, timeline.ProtoSimple},
		{"2 hosts all-gather NVLS falls back", two, timeline.CollAllGather, 1 << 30, timeline.AlgoNVLS, 0, timeline.AlgoRing, timeline.ProtoSimple},
		{"2 hosts reduce-scatter NVLS falls back", two, timeline.CollReduceScatter, 1 << 30, timeline.AlgoNVLS, 0, timeline.AlgoRing, timeline.ProtoSimple},
		{"2 hosts 8B: tree", two, timeline.CollAllReduce, 8, 0, 0, timeline.AlgoTree, timeline.ProtoLL},
		{"2 hosts 1GiB", two, timeline.CollAllReduce, 1 << 30, 0, 0, timeline.AlgoNVLSTree, timeline.ProtoSimple},
		{"2 hosts ring forced", two, timeline.CollAllReduce, 1 << 30, timeline.AlgoRing, 0, timeline.AlgoRing, timeline.ProtoSimple},
		{"2 hosts NVLS falls back", two, timeline.CollAllReduce, 1 << 30, timeline.AlgoNVLS, timeline.ProtoSimple, timeline.AlgoNVLSTree, timeline.ProtoSimple},
	}
	for _, tc := range tests {
		c := tc.topo.choose(tc.op, tc.bytes, tc.algo, tc.proto)
		if c.Algo != tc.wantA || c.Proto != tc.wantP {
			t.Errorf("%s: %v/%v; want %v/%v", tc.name, c.Algo, c.Proto, tc.wantA, tc.wantP)
		}
	}
	mid := one.choose(timeline.CollAllReduce, 16<<20, timeline.AlgoRing, 0)
	if mid.Proto != timeline.ProtoLL128 {
		t.Errorf("ring 16 MiB: %v; want LL128 between LL and Simple", mid.Proto)
	}
	if small, big := one.choose(timeline.CollAllReduce, 8, 0, 0), one.choose(timeline.CollAllReduce, 1<<30, timeline.AlgoRing, 0); small.Channels != 1 || big.Channels != 16 {
		t.Errorf("channels: 8 B %d, 1 GiB %d; want 1 and 16", small.Channels, big.Channels)
	}
}

// TestNCCLModel228 pins the tuner to NCCL 2.28.9's tuning.cc where it differs from earlier NCCL
// (latency µs, algorithm bandwidth GB/s), on the default 8×H100 hosts: a ring all-reduce across
// nodes crosses the network 2·(nodes−1) times (2.20: 2·nodes); LL across nodes is capped by the
// CPU vendor's row of llMaxBws (Intel 39, AMD 22.5 GB/s on 2 nodes), not the GPU's; NVLS takes
// 8 heads × 40 GB/s × nvlsEfficiency 0.85 × 7/8 × 2 (476 GB/s busbw; 2.20: 5/6 of the channels'
// bandwidth) at 25 µs (2.20: 23); NVLS-tree across 2 nodes is capped by perChMaxNVLSTreeBws
// (57.7 GB/s per head) at 25 + 2 × 20.9 µs (2.28.3: 14 µs per network hop).
func TestNCCLModel228(t *testing.T) {
	one, two := h100x8Topo(t, 1), h100x8Topo(t, 2)
	amd := two
	amd.AMD = true
	for _, tc := range []struct {
		name    string
		topo    ncclTopo
		a       timeline.NCCLAlgo
		p       timeline.NCCLProto
		lat, bw float64
	}{
		{"1 host NVLS", one, timeline.AlgoNVLS, timeline.ProtoSimple, 25, 476.0 * 8 / 14},
		{"1 host ring LL", one, timeline.AlgoRing, timeline.ProtoLL, 6.6 + 14*0.6, 141.0 * 8 / 14},
		{"2 hosts ring Simple", two, timeline.AlgoRing, timeline.ProtoSimple, 8.4 + 28*3.4 + 2*14, 360.0 * 16 / 30},
		{"2 hosts ring LL", two, timeline.AlgoRing, timeline.ProtoLL, 6.6 + 28*1.0 + 2*2.7, 39.0 * 16 / 30},
		{"2 AMD hosts ring LL", amd, timeline.AlgoRing, timeline.ProtoLL, 6.6 + 28*1.0 + 2*2.7, 22.5 * 16 / 30},
		{"2 hosts tree LL", two, timeline.AlgoTree, timeline.ProtoLL, 6.8 + 2*(7*0.6+5.0), 39.0 / 2},
		{"2 hosts NVLS-tree", two, timeline.AlgoNVLSTree, timeline.ProtoSimple, 25 + 2*20.9, 8 * 57.7 * 16 / 30},
	} {
		lat, bw, ok := tc.topo.model(timeline.CollAllReduce, tc.a, tc.p)
		if !ok || math.Abs(lat-tc.lat) > 1e-9 || math.Abs(bw-tc.bw) > 1e-6 {
			t.Errorf("%s: %.2f µs / %.3f GB/s (ok=%v); NCCL 2.28.9 gives %.2f / %.3f", tc.name, lat, bw, ok, tc.lat, tc.bw)
		}
	}
	// The ring's plateau factor across nodes (ncclTopoGetAlgoTime) is still there in 2.28.
	c, _ := two.time(timeline.CollAllReduce, timeline.AlgoRing, timeline.ProtoSimple, 1<<30)
	if math.Abs(c.LatUs-1.4*131.6) > 1e-9 {
		t.Errorf("2 hosts ring Simple 1 GiB: %.2f µs; want 1.4 × 131.6", c.LatUs)
	}
}

// TestNCCLNVLSAllGather works out, from NCCL 2.28.9's formulas, where the tuner picks NVLS for
// all-gather and reduce-scatter on one 8×H100 host, and checks the model agrees.
//
// ncclTopoTuneModel (tuning.cc), for these two collectives over n = 8 ranks (nsteps = n−1 = 7):
//
//	NVLS:        8 heads × 40 GB/s (bwIntra) × nvlsEfficiency 0.85 × (8−1)/8 × (ppn−1)/ppn 7/8
//	             = 208.25 GB/s, left as the algorithm bandwidth (only the ring's is converted);
//	             latency hwLat[NVLink][NVLS][Simple] = 25 µs.
//	Ring LL:     min(llMaxBw 141, 369.9 × 0.5) × n/nsteps = 141 × 8/7 = 161.14 GB/s;
//	             6.6 + 7 × 0.6 = 10.8 µs.
//	Ring LL128:  min(369.9 × 0.92, 16 × 36.7) × 8/7 = 388.9 GB/s; 14 + 7 × 1.9 = 27.3 µs.
//	Ring Simple: 369.9 × 8/7 = 422.7 GB/s; 8.4 + 7 × 3.4 = 32.2 µs.
//
// (369.9 GB/s = NVLink's 450 × the calibrated 0.822 is the ring graph's bandwidth.) Time is
// latency + S/bandwidth, so NVLS beats ring LL only above S = (25 − 10.8)/(1/161.14 − 1/208.25)
// = 10.1 MB and ring LL128 only below S = (27.3 − 25)/(1/208.25 − 1/388.9) = 1.03 MB: no size is
// both, and NCCL never picks NVLS for them unforced. With NCCL_PROTO=Simple the ring has Simple
// only, and NVLS wins below S = (32.2 − 25)/(1/208.25 − 1/422.7) = 2.96 MB.
func TestNCCLNVLSAllGather(t *testing.T) {
	one := h100x8Topo(t, 1)
	ring := 450 * 0.822
	tab := []struct {
		name    string
		a       timeline.NCCLAlgo
		p       timeline.NCCLProto
		lat, bw float64
	}{
		{"NVLS", timeline.AlgoNVLS, timeline.ProtoSimple, 25, 8 * 40 * 0.85 * 7 / 8 * 7 / 8},
		{"ring LL", timeline.AlgoRing, timeline.ProtoLL, 6.6 + 7*0.6, 141.0 * 8 / 7},
		{"ring LL128", timeline.AlgoRing, timeline.ProtoLL128, 14 + 7*1.9, ring * 0.92 * 8 / 7},
		{"ring Simple", timeline.AlgoRing, timeline.ProtoSimple, 8.4 + 7*3.4, ring * 8 / 7},
	}
	for _, op := range []timeline.CollOp{timeline.CollAllGather, timeline.CollReduceScatter} {
		for _, tc := range tab {
			lat, bw, ok := one.model(op, tc.a, tc.p)
			if !ok || math.Abs(lat-tc.lat) > 1e-9 || math.Abs(bw-tc.bw) > 1e-6 {
				t.Errorf("%v %s: %.2f µs / %.3f GB/s (ok=%v); NCCL 2.28.9 gives %.2f / %.3f", op, tc.name, lat, bw, ok, tc.lat, tc.bw)
			}
		}
	}
	nvls, ll, ll128, simple := tab[0], tab[1], tab[2], tab[3]
	// cross is the size (bytes) above which x's bandwidth makes up for its higher latency over y.
	cross := func(x, y struct {
		name    string
		a       timeline.NCCLAlgo
		p       timeline.NCCLProto
		lat, bw float64
	}) float64 {
		return (x.lat - y.lat) / (1/y.bw - 1/x.bw) * 1e3
	}
	aboveLL, belowLL128 := cross(nvls, ll), cross(ll128, nvls)
	if aboveLL < 10.0e6 || aboveLL > 10.2e6 || belowLL128 < 1.0e6 || belowLL128 > 1.1e6 {
		t.Fatalf("hand calculation: NVLS beats LL above %.4g B, LL128 below %.4g B; want ~10.1 MB and ~1.03 MB", aboveLL, belowLL128)
	}
	// Unforced, NCCL's choice never is NVLS: around both crossings and at every power of two.
	var sizes []int64
	for b := int64(1); b <= 16<<30; b *= 2 {
		sizes = append(sizes, b)
	}
	for _, x := range []float64{aboveLL, belowLL128} {
		sizes = append(sizes, int64(x*0.99), int64(x), int64(x*1.01))
	}
	for _, op := range []timeline.CollOp{timeline.CollAllGather, timeline.CollReduceScatter} {
		for _, b := range sizes {
			if c := one.choose(op, b, 0, 0); c.Algo == timeline.AlgoNVLS {
				t.Errorf("%v %d B: NVLS; NCCL 2.28.9 never picks it unforced on 8×H100", op, b)
			}
		}
		// NCCL_PROTO=Simple: NVLS below the crossing with ring Simple, the ring above it.
		sw := cross(simple, nvls)
		if sw < 2.9e6 || sw > 3.0e6 {
			t.Fatalf("hand calculation: NVLS beats ring Simple below %.4g B; want ~2.96 MB", sw)
		}
		for _, tc := range []struct {
			bytes int64
			want  timeline.NCCLAlgo
		}{{8, timeline.AlgoNVLS}, {int64(sw * 0.99), timeline.AlgoNVLS}, {int64(sw * 1.01), timeline.AlgoRing}, {1 << 30, timeline.AlgoRing}} {
			if c := one.choose(op, tc.bytes, 0, timeline.ProtoSimple); c.Algo != tc.want || c.Proto != timeline.ProtoSimple {
				t.Errorf("%v %d B, NCCL_PROTO=Simple: %v/%v; want %v/Simple (switch at %.0f B)", op, tc.bytes, c.Algo, c.Proto, tc.want, sw)
			}
		}
	}
	// More local ranks than NVLS's arity (32) run no NVLS all-gather; all-reduce has no such limit.
	wide := one
	wide.Ranks, wide.NVLSHeads = 33, 33
	if wide.available(timeline.CollAllGather, timeline.AlgoNVLS) || !wide.available(timeline.CollAllReduce, timeline.AlgoNVLS) {
		t.Error("33 ranks on one node: want NVLS for all-reduce only")
	}
}
