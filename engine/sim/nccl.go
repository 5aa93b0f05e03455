package sim

import (
	"math"

	"github.com/xfertop/xfertop/engine"

	"github.com/xfertop/xfertop/timeline"
)

// NCCL's cost model, after src/graph/tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime) and the
// channel reduction of src/enqueue.cc (topoGetAlgoInfo) in NVIDIA/nccl v2.28.9-1 (commit dbc86fd0,
// the NCCL PyTorch 2.11 bundles; FACTS.md): for every (algorithm, protocol) the tuner predicts
// time = latency + bytes / bandwidth and the collective runs with the fastest. Latency is a base
// per (algorithm, protocol) plus a per-hop latency by link type (NVLink, PCIe, network) times the
// hops the algorithm takes; bandwidth is the topology's bus bandwidth (channels × per-channel
// bandwidth) refined per protocol and converted to the algorithm bandwidth NCCL divides the
// buffer size by. The constants are 2.28.9's ncclTunerConstantsDefaults; the system NCCL 2.28.3
// differs only in hwLatencies[NET][NVLSTree][Simple] (14 µs, not 20.9) and in Blackwell entries
// this model does not use. CollNet and PAT are not modelled.
//
// NVLS runs all-gather and reduce-scatter too, inside one node (across nodes NCCL needs CollNet
// for them). The tuner rates them at the NVLS graph's bandwidth with one (ppn−1)/ppn where
// all-reduce has its factor 2, and leaves that figure as the algorithm bandwidth (no n/nsteps):
// on 8×H100, 8 heads × 40 GB/s × 0.85 × 7/8 × 7/8 = 208.25 GB/s at 25 µs, against ring LL's
// 161.1 GB/s at 10.8 µs and ring LL128's 388.9 GB/s at 27.3 µs. NVLS beats LL only above 10.1 MB
// and LL128 only below 1.03 MB, so NCCL never picks it unforced on such a host; with
// NCCL_PROTO=Simple it does, below 2.96 MB (nccl_test.go works both out). NCCL also runs it,
// whatever the cost, for registered buffers when the communicator's CTA policy is
// NCCL_CTA_POLICY_EFFICIENCY (config.CTAPolicy, or NCCL_CTA_POLICY=1), which the engine has no
// notion of. Its time is not the tuner's figure, which is well under what it measures
// (NVIDIA/nccl issue 1506: ~300 GB/s busbw on 8 GPUs against the tuner's 182): the flows move the
// bytes NVLink SHARP moves (a rank's share out and the whole buffer in for all-gather, the
// reverse for reduce-scatter) at the rate NCCL's protocol reaches on NVLink (ncclTopo.runBw).
//
// Which algorithms the tuner may pick follows NCCL's init: NVLS exists where the topology says
// NVLink SHARP is usable (ncclNvlsInit: NCCL_NVLS_ENABLE defaults to 2, on wherever CUDA reports
// multicast support, which needs the fabric manager) and a node has at least 2 GPUs; inside one
// node it is NVLS, across nodes NVLS-tree (ncclTopoTuneModel disables NVLS-tree on one node, and
// NVLS across nodes without CollNet). The tree and NVLS-tree are all-reduce only. So across nodes NCCL weighs
// tree, ring and NVLS-tree at every size and takes the fastest; on 8×H100 hosts with a 400 Gb/s
// NIC per GPU that is tree at small and mid sizes, NVLS-tree from a few MiB, and on 4 or more
// nodes the ring again for the largest (nccl_test.go works the table out). The tree graph's
// pattern is NCCL's balanced tree, which the search finds on these hosts, so the 0.85 factor
// NCCL applies to a plain tree pattern does not arise.

const (
	hwNVLink = iota
	hwPCI
	hwNet
)

// Indexed [algorithm][protocol], algorithm and protocol as timeline numbers them (1-based).
type algoProtoTable [5][4]float64

// baseLatUs is the fixed latency per (algorithm, protocol), µs (baseLatencies; NVLS and NVLS-tree
// have none).
var baseLatUs = algoProtoTable{
	timeline.AlgoTree: {0, 6.8, 14.0, 8.4},
	timeline.AlgoRing: {0, 6.6, 14.0, 8.4},
}

// hwLatUs is the latency per hop, µs, by link type (hwLatencies).
var hwLatUs = [3]algoProtoTable{
	hwNVLink: {
		timeline.AlgoTree:     {0, 0.6, 1.25, 4.0},
		timeline.AlgoRing:     {0, 0.6, 1.9, 3.4},
		timeline.AlgoNVLS:     {0, 0, 0, 25},
		timeline.AlgoNVLSTree: {0, 0, 0, 25},
	},
	hwPCI: {
		timeline.AlgoTree: {0, 1.0, 1.9, 4.0},
		timeline.AlgoRing: {0, 1.0, 2.5, 5.7},
	},
	hwNet: {
		timeline.AlgoTree:     {0, 5.0, 8.5, 14},
		timeline.AlgoRing:     {0, 2.7, 4.0, 14},
		timeline.AlgoNVLS:     {0, 0, 0, 18},
		timeline.AlgoNVLSTree: {0, 0, 0, 20.9},
	},
}

// Per-architecture bandwidth limits, GB/s, by scale (1 node, 2 nodes, 4 or more), [Ampere, Hopper]
// (Ada runs with Ampere's, as NCCL does for compute capability 8.9).
var (
	perChMaxRingLL128Bw  = [2][3]float64{{20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}}
	perChMaxTreeLL128Bw  = [2][3]float64{{20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}}
	perChMaxTreeBw       = [2][3]float64{{24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}}
	perChMaxNVLSTreeBw   = [2][3]float64{{24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}}
	treeCorrectionFactor = [4][23]float64{ // tree's measured shortfall at mid sizes, by log2(bytes/64)
		timeline.ProtoLL:     {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
		timeline.ProtoLL128:  {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
		timeline.ProtoSimple: {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
	}
	// Per-thread bytes before NCCL adds a channel (enqueue.cc), and threads per channel.
	threadThreshold = [4]float64{timeline.ProtoLL: 8, timeline.ProtoLL128: 8, timeline.ProtoSimple: 64}
	maxThreads      = [4]float64{timeline.ProtoLL: 512, timeline.ProtoLL128: 640, timeline.ProtoSimple: 512}
)

// llMaxBw is the LL protocol's bandwidth cap, GB/s (llMaxBws). Inside one node NCCL indexes it by
// GPU architecture; across nodes by CPU vendor: AMD hosts take the second row, every other host
// the first ("Volta-N1/Intel-N2/Intel-N4"), so Hopper's own 45 and 35 GB/s are never used.
func (t *ncclTopo) llMaxBw() float64 {
	switch {
	case t.Nodes == 1 && t.Hopper:
		return 141.0
	case t.Nodes == 1:
		return 87.7
	case t.AMD:
		return [3]float64{87.7, 22.5, 19.0}[t.scale()]
	}
	return [3]float64{39.0, 39.0, 20.4}[t.scale()]
}

// nvlsEfficiency is the share of the NVLS graph's bandwidth NVLS reaches on Hopper.
const nvlsEfficiency = 0.85

// maxNVLSArity is the most ranks of a node NVLS runs all-gather and reduce-scatter over
// (NCCL_MAX_NVLS_ARITY).
const maxNVLSArity = 32

// NCCL's graph search settles on a per-channel bandwidth from these steps (src/graph/search.cc,
// sm90SpeedArrayIntra and sm90SpeedArrayInter), the highest its links sustain; the NVLS graph's
// heads take theirs from them.
var (
	sm90SpeedIntra = []float64{60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0}
	sm90SpeedInter = []float64{48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12}
)

// speedStep is the highest of NCCL's search steps not above bw (the lowest when none is).
func speedStep(bw float64, steps []float64) float64 {
	for _, s := range steps {
		if s <= bw {
			return s
		}
	}
	return steps[len(steps)-1]
}

// ncclTopo is what the tuner knows of a communicator's topology.
type ncclTopo struct {
	Ranks, Nodes int
	IntraHW      int     // hwNVLink or hwPCI
	Hopper       bool    // Hopper tables (else Ampere)
	AMD          bool    // AMD hosts (NCCL's LL cap across nodes)
	Channels     int     // ring/tree channels
	RingBus      float64 // ring graph: channels × per-channel bandwidth inside a node, GB/s
	TreeBus      float64 // tree graph, GB/s (the search may find more than the ring's)
	InterBus     float64 // per node through its NICs, GB/s (0 for one node)
	NVLS         bool    // NVSwitch with NVLink SHARP
	NVLSTree     bool    // NVLS-tree open to the tuner across nodes (false: NCCL_ALGO=^NVLSTree)
	NVLSChannels int     // channels (CTAs) NVLS runs with (comm->nvlsChannels)
	NVLSHeads    int     // the NVLS graph's channels: one head GPU each
	NVLSIntra    float64 // the NVLS graph's per-head bandwidth inside a node (bwIntra), GB/s
	NVLSInter    float64 // and through the NICs (bwInter), GB/s
	NetOverhead  float64 // µs a network post costs the proxy (NCCL: 1 on Intel, 2 on AMD)
}

// ncclChoice is the tuner's answer for one collective.
type ncclChoice struct {
	Algo     timeline.NCCLAlgo
	Proto    timeline.NCCLProto
	Channels int
	LatUs    float64 // predicted latency, µs
	AlgBw    float64 // algorithm bandwidth, GB/s: predicted time = LatUs + bytes/(1000·AlgBw) µs
}

// TimeUs is the predicted time of bytes under the choice.
func (c ncclChoice) TimeUs(bytes int64) float64 { return c.LatUs + float64(bytes)/(1000*c.AlgBw) }

// ncclTuned reports whether the tuner models collective op (all-to-all and send/recv are
// point-to-point in NCCL and keep their own path).
func ncclTuned(op timeline.CollOp) bool {
	switch op {
	case timeline.CollAllReduce, timeline.CollAllGather, timeline.CollReduceScatter, timeline.CollBroadcast, timeline.CollReduce:
		return true
	}
	return false
}

// scale is NCCL's tuning scale index: 1 node, 2 nodes, more.
func (t *ncclTopo) scale() int { return min(t.Nodes-1, 2) }

// available reports whether NCCL would run op with algorithm a (before user overrides).
func (t *ncclTopo) available(op timeline.CollOp, a timeline.NCCLAlgo) bool {
	switch a {
	case timeline.AlgoRing:
		return true
	case timeline.AlgoTree:
		return op == timeline.CollAllReduce
	case timeline.AlgoNVLS:
		// Inside one node; across nodes NVLS needs CollNet, which is not modelled. All-gather and
		// reduce-scatter also need no more local ranks than NVLS's arity (updateCollCostTable).
		// Reduce-scatter needs a reduction the switch does (sum, min, max on 16- to 64-bit types:
		// ncclNvlsSupported): the engine's collectives carry no operator and are taken as sums.
		ppn := t.Ranks / t.Nodes
		switch op {
		case timeline.CollAllReduce:
			return t.NVLS && t.Nodes == 1 && ppn > 1
		case timeline.CollAllGather, timeline.CollReduceScatter:
			return t.NVLS && t.Nodes == 1 && ppn > 1 && ppn <= maxNVLSArity
		}
		return false
	case timeline.AlgoNVLSTree:
		return op == timeline.CollAllReduce && t.NVLS && t.Nodes > 1 && t.Ranks/t.Nodes > 1
	}
	return false
}

// model returns the latency (µs) and algorithm bandwidth (GB/s) of (a, p) for op, before the
// size-dependent corrections; ok is false where the pair does not exist.
func (t *ncclTopo) model(op timeline.CollOp, a timeline.NCCLAlgo, p timeline.NCCLProto) (lat, bw float64, ok bool) {
	if (a == timeline.AlgoNVLS || a == timeline.AlgoNVLSTree) && p != timeline.ProtoSimple {
		return 0, 0, false
	}
	n := t.Ranks
	nsteps := n
	switch op {
	case timeline.CollAllReduce:
		nsteps = 2 * (n - 1)
	case timeline.CollAllGather, timeline.CollReduceScatter:
		nsteps = n - 1
	}
	bw = t.busBw(op, a, p)
	switch {
	case a != timeline.AlgoRing && (op == timeline.CollAllGather || op == timeline.CollReduceScatter):
		// NCCL converts no bus bandwidth but the ring's to algorithm bandwidth for these.
	case a == timeline.AlgoTree:
		bw /= 2
	default:
		bw *= float64(n) / float64(nsteps)
	}
	return t.latency(op, a, p, nsteps), bw, bw > 0
}

// busBw is NCCL's bus bandwidth of (a, p) for op, GB/s: the graph's channels × per-channel
// bandwidth with the tuner's refinements.
func (t *ncclTopo) busBw(op timeline.CollOp, a timeline.NCCLAlgo, p timeline.NCCLProto) float64 {
	arch, sc := 0, t.scale()
	if t.Hopper {
		arch = 1
	}
	ch := float64(t.Channels)
	switch a {
	case timeline.AlgoRing:
		bus := t.RingBus
		if t.Nodes > 1 {
			bus = min(bus, t.InterBus) // the ring graph's bwIntra = bwInter: it crosses every node's NICs
		}
		switch p {
		case timeline.ProtoLL:
			return min(t.llMaxBw(), bus*0.5) // 8 data bytes per 16-byte line
		case timeline.ProtoLL128:
			return min(bus*0.92, ch*perChMaxRingLL128Bw[arch][sc]) // 120 of 128 bytes are data
		}
		return bus
	case timeline.AlgoTree:
		bus := t.TreeBus
		switch {
		case t.Nodes == 2:
			bus = min(bus, 2*t.InterBus) // the search raises a 2-node tree's bwIntra up to 2 × bwInter
		case t.Nodes > 2:
			bus = min(bus, t.InterBus) // beyond 2 nodes the tuner takes bwInter
		}
		bus = min(bus*0.92, ch*perChMaxTreeBw[arch][sc])
		switch p {
		case timeline.ProtoLL:
			bus = min(bus/3.8, t.llMaxBw())
		case timeline.ProtoLL128:
			f := 120.0 / 128
			if t.Nodes == 1 {
				f = 7.0 / 9
			}
			bus = min(bus*f, ch*perChMaxTreeLL128Bw[arch][sc])
		}
		return bus
	case timeline.AlgoNVLS, timeline.AlgoNVLSTree:
		heads := float64(t.NVLSHeads)
		if heads < 2 {
			return 0 // NVLS needs at least 2 channels
		}
		intra := t.NVLSIntra * nvlsEfficiency * (heads - 1) / heads
		if op == timeline.CollAllReduce {
			intra *= 2 // all-reduce pipelines two operations
		} else {
			ppn := float64(t.Ranks) / float64(t.Nodes)
			intra *= (ppn - 1) / ppn
		}
		per := intra
		if a == timeline.AlgoNVLSTree {
			inter := t.NVLSInter
			if t.Nodes <= 2 {
				inter *= 2
			}
			per = min(intra, inter, perChMaxNVLSTreeBw[arch][sc])
		}
		return heads * per
	}
	return 0
}

// latency is NCCL's latency of (a, p) for op over nsteps ring steps, µs.
func (t *ncclTopo) latency(op timeline.CollOp, a timeline.NCCLAlgo, p timeline.NCCLProto, nsteps int) float64 {
	n, nodes := t.Ranks, t.Nodes
	intra := hwLatUs[t.IntraHW][a][p]
	inter := hwLatUs[hwNet][a][p] // + the graph's latencyInter: 0 with NCCL's IB and socket transports
	if n == nodes {
		inter = hwLatUs[hwNet][timeline.AlgoTree][p] // one GPU per node: latencies fully exposed
	}
	lat := baseLatUs[a][p]
	switch a {
	case timeline.AlgoRing:
		if op == timeline.CollBroadcast || op == timeline.CollReduce {
			hw := t.IntraHW
			if nodes > 1 {
				hw = hwNet
			}
			l := hwLatUs[hw][a][p]
			if p == timeline.ProtoSimple {
				l = hwLatUs[hw][timeline.AlgoTree][p] // chunk latency of a pipeline
			}
			return lat + float64(nsteps)*l
		}
		nInter := 0
		if nodes > 1 {
			ov := t.NetOverhead // inter-node rings launch nsteps network posts
			if p == timeline.ProtoSimple {
				ov *= 3
			}
			intra = max(intra, ov)
			nInter = nodes - 1
			if op == timeline.CollAllReduce {
				nInter = 2 * (nodes - 1)
			}
		}
		return lat + float64(nsteps-nInter)*intra + float64(nInter)*inter
	case timeline.AlgoTree:
		return lat + 2*(float64(n/nodes-1)*intra+float64(log2i(nodes))*inter)
	case timeline.AlgoNVLS:
		return intra // NVLS across nodes needs CollNet, which is not modelled
	case timeline.AlgoNVLSTree:
		return lat + intra + 2*float64(log2i(nodes))*inter
	}
	return lat
}

// time is the predicted time of (a, p) for bytes, µs, with ncclTopoGetAlgoTime's size corrections.
func (t *ncclTopo) time(op timeline.CollOp, a timeline.NCCLAlgo, p timeline.NCCLProto, bytes int64) (ncclChoice, bool) {
	lat, bw, ok := t.model(op, a, p)
	if !ok {
		return ncclChoice{}, false
	}
	if a == timeline.AlgoTree && op == timeline.CollAllReduce {
		if ls := log2i(int(bytes >> 6)); ls >= 0 && ls < len(treeCorrectionFactor[p]) {
			bw *= treeCorrectionFactor[p][ls]
		}
	}
	if a == timeline.AlgoRing && p == timeline.ProtoSimple && t.Nodes > 1 && op == timeline.CollAllReduce &&
		bytes/int64(t.Channels*t.Ranks) >= 64 {
		lat *= 1.4 // the ring's plateau across nodes (compute capability 8.0 and later)
	}
	return ncclChoice{Algo: a, Proto: p, LatUs: lat, AlgBw: bw}, true
}

// choose picks the fastest (algorithm, protocol) for op over bytes, restricted to algo and proto
// when they are set (NCCL_ALGO, NCCL_PROTO). A forced choice NCCL cannot run falls back as NCCL
// does: to any algorithm that can, with the forced protocol if possible, then to ring.
func (t *ncclTopo) choose(op timeline.CollOp, bytes int64, algo timeline.NCCLAlgo, proto timeline.NCCLProto) ncclChoice {
	best, found := ncclChoice{}, false
	for pass := 0; pass < 3 && !found; pass++ {
		for a := timeline.AlgoRing; a <= timeline.AlgoNVLSTree; a++ {
			if !t.available(op, a) || (pass == 0 && algo != 0 && a != algo) {
				continue
			}
			if a == timeline.AlgoNVLSTree && !t.NVLSTree && algo != timeline.AlgoNVLSTree {
				continue // NCCL_ALGO=^NVLSTree: only a forced NVLS-tree runs
			}
			for p := timeline.ProtoLL; p <= timeline.ProtoSimple; p++ {
				if pass < 2 && proto != 0 && p != proto {
					continue
				}
				c, ok := t.time(op, a, p, bytes)
				if ok && (!found || c.TimeUs(bytes) < best.TimeUs(bytes)) {
					best, found = c, true
				}
			}
		}
	}
	best.Channels = t.channels(best, bytes)
	return best
}

// runBw is the algorithm bandwidth, GB/s, collective op under choice c reaches alone on the
// machine. It is the tuner's own figure, which the simulator's links are calibrated to reach
// (ring/Simple at NCCL's share of NVLink, NVLS all-reduce at 480 GB/s busbw on 8×H100), except for
// NVLS all-gather and reduce-scatter: there each rank's NVLink carries the whole buffer one way
// (the switch's multicast writes every share into every rank, or its ld_reduce pulls every share
// from every rank) and its own share the other, so the buffer crosses the busy direction at the
// rate NCCL's protocol reaches on the link, the ring's per-link rate (RingBus). On 8×H100 that is
// 369 GB/s (busbw 323 at large sizes); NVIDIA/nccl issue 1506 measured ~300 for all-gather.
func (t *ncclTopo) runBw(op timeline.CollOp, c ncclChoice) float64 {
	if c.Algo == timeline.AlgoNVLS && (op == timeline.CollAllGather || op == timeline.CollReduceScatter) {
		return t.RingBus
	}
	return c.AlgBw
}

// channels is the channel count NCCL launches with: it drops channels while each thread would get
// less than its protocol's threshold of bytes (enqueue.cc), so small messages use few channels.
func (t *ncclTopo) channels(c ncclChoice, bytes int64) int {
	if c.Algo == timeline.AlgoNVLS || c.Algo == timeline.AlgoNVLSTree {
		return t.NVLSChannels
	}
	nc, nt := t.Channels, maxThreads[c.Proto]
	thr := threadThreshold[c.Proto]
	if c.Algo == timeline.AlgoRing && c.Proto == timeline.ProtoLL {
		thr *= float64(t.Ranks)
	}
	for float64(bytes) < float64(nc)*nt*thr && nc >= 2 {
		nc--
	}
	return nc
}

func log2i(n int) int {
	if n <= 0 {
		return -1
	}
	return int(math.Floor(math.Log2(float64(n))))
}

// NCCLPrediction is the answer of NCCL's cost model, as the simulator runs it, for one collective.
type NCCLPrediction struct {
	Algo      timeline.NCCLAlgo
	Proto     timeline.NCCLProto
	Channels  int
	LatencyUs float64 // predicted latency
	AlgBwGBps float64 // algorithm bandwidth the collective reaches: time = latency + bytes / bandwidth
	// TunerBwGBps is the algorithm bandwidth NCCL's tuner rates the choice at, which chose it. It
	// is AlgBwGBps but for NVLS all-gather and reduce-scatter, which the tuner underrates.
	TunerBwGBps float64
}

// TimeNs is the predicted time of bytes, ns.
func (p NCCLPrediction) TimeNs(bytes int64) float64 {
	return ncclChoice{LatUs: p.LatencyUs, AlgBw: p.AlgBwGBps}.TimeUs(bytes) * 1e3
}

// PredictNCCL returns the algorithm, protocol, channels, latency and bandwidth the simulator's
// tuner gives collective op of bytes over ranks of topo under model m, with algo and proto forced
// when non-zero. Alone on the machine a collective takes this time; sharing links it takes longer.
func PredictNCCL(m Model, topo engine.Topology, op timeline.CollOp, ranks []engine.DeviceID, bytes int64,
	algo timeline.NCCLAlgo, proto timeline.NCCLProto) NCCLPrediction {
	s := &Sim{m: m, topo: topo}
	t := s.ncclTopo(ranks)
	c := t.choose(op, bytes, algo, proto)
	return NCCLPrediction{Algo: c.Algo, Proto: c.Proto, Channels: c.Channels, LatencyUs: c.LatUs,
		AlgBwGBps: t.runBw(op, c), TunerBwGBps: c.AlgBw}
}
