package scenario

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/fileerr"
)

// ---- a transformer training step: tensor, pipeline, data and expert parallel ----

// llmPhase is one training step of a decoder-only transformer laid out as Megatron-LM lays it out
// (rank order tp, then dp, then pp: tensor-parallel groups inside a host, pipeline stages across
// hosts). Job rank g = (stage·dp + dpRank)·tp + tpRank runs on device g: the job takes the first
// tp·pp·dp GPUs of the topology.
//
// Each layer is an attention block and an MLP block (FFN 4·hidden), tensor parallel with sequence
// parallelism: a block all-gathers its input, runs its GEMMs and reduce-scatters its output, the
// collectives on the compute stream as Megatron-LM issues them without TP overlap. With experts
// (ep > 1 or experts > 0) the MLP is a mixture of experts, each token routed to topk experts
// (balanced): the block dispatches its tokens with an all-to-all over the expert-parallel group,
// runs the experts and combines with a second all-to-all (expert tensor parallelism 1).
//
// Compute is FLOPs at mfu of the GPU's dense peak for dtype, per GPU (the tp ranks split a
// block's FLOPs evenly; T = micro_batch·seq tokens, h = hidden):
//
//	attention forward: 2·T·4h² (QKV and output projections) + 4·T·seq·h (scores and values)
//	MLP forward:       2·T·8h² (one expert per token and topk for a mixture of experts)
//	backward:          2 × forward
//
// Stages run the 1F1B schedule over microbatches: pp−s−1 warm-up forwards on stage s, then one
// forward and one backward in turn, then the remaining backwards. Activations (forward) and their
// gradients (backward) move between neighbouring stages as send/recv of each tp rank's sequence
// shard (T·h/tp elements), on streams of their own.
//
// Data parallel (dp > 1), per layer a bucket of its gradients as the last microbatch's backward
// finishes the layer, on a stream of its own: with dp_comm=zero (Megatron-LM's distributed
// optimizer, ZeRO-1) a reduce-scatter of the gradients at the end and an all-gather of the
// parameters at the start of the step, the first microbatch's forward of a layer waiting for its
// bucket; with allreduce (PyTorch DDP) an all-reduce of the gradients. Expert gradients reduce over
// the dp/ep ranks holding the same experts. Not modelled: embeddings and the output layer, the
// optimizer's own kernels, activation recomputation, and overlap of the tensor-parallel
// collectives with the GEMMs (see tp-overlap).
type llmPhase struct {
	tp, pp, dp, ep int
	micro          int
	layers         []int // layers of each stage
	zero           bool  // dp_comm=zero: reduce-scatter + all-gather; else all-reduce
	moe            bool
	experts, topk  int

	// per layer per microbatch, on one GPU
	attnNs, mlpNs int64 // forward kernel time of each block (backward is twice)
	actBytes      int64 // nccl-tests size of a block's all-gather/reduce-scatter: T·h elements
	shardBytes    int64 // one tp rank's share: what moves between stages
	a2aBytes      int64 // one rank's all-to-all buffer: its tokens × topk × h elements
	denseGrad     int64 // per layer per GPU: bytes of the gradients reduced over dp
	expertGrad    int64 // per layer per GPU: bytes of the expert gradients reduced over dp/ep

	st llmStreams
}

// llmStreams are each GPU's streams besides the compute stream, created on first use.
type llmStreams struct {
	fwdSend, fwdRecv, bwdSend, bwdRecv, dp []engine.StreamID
}

// dtypeBytes are the element sizes of the dtypes the phase knows.
var dtypeBytes = map[string]int64{"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}

// peakTFLOPS is each GPU's dense (no sparsity) tensor-core peak per dtype, TFLOPS, from NVIDIA's
// datasheets: H100 SXM and H200 SXM (same tensor cores) 989.4 bf16/fp16, 1,978.9 fp8, 494.7 tf32;
// A100 SXM 312 bf16/fp16, 156 tf32, no fp8; L40S 362.05 bf16/fp16, 733 fp8, 183 tf32. fp32 GEMMs
// run as TF32, as frameworks run them on these GPUs.
var peakTFLOPS = map[string]map[string]float64{
	"H100": {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "fp32": 494.7},
	"H200": {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "fp32": 494.7},
	"A100": {"bf16": 312, "fp16": 312, "fp32": 156},
	"L40S": {"bf16": 362.05, "fp16": 362.05, "fp8": 733, "fp32": 183},
}

// gpuPeak returns the dense peak of topo's GPU for dtype in FLOPS. A topology with only a shape is
// an H100 SXM host (engine.Topology).
func gpuPeak(topo engine.Topology, dtype string) (float64, error) {
	model := topo.GPU.Model
	if !topo.Described() {
		model = "H100 SXM"
	}
	for name, byType := range peakTFLOPS {
		if strings.Contains(strings.ToUpper(model), name) {
			v, ok := byType[dtype]
			if !ok {
				return 0, fmt.Errorf("the %s has no %s tensor cores; set dtype to another or give peak", model, dtype)
			}
			return v * 1e12, nil
		}
	}
	return 0, fmt.Errorf("the peak FLOPS of GPU model %q are not known; give peak in TFLOPS (for example 989.4)", model)
}

// at returns the parameter key, or where the phase is declared when the file does not give it: what
// an error about its value points at.
func (p *params) at(key string) Param {
	if x, ok := p.m[key]; ok {
		return x
	}
	return Param{Key: key, Line: p.line}
}

// autoInt reads an integer parameter that may be "auto"; given reports whether a number was given.
func (p *params) autoInt(key string, lo, hi int64) (v int, given bool) {
	x, ok := p.m[key]
	if !ok || strings.TrimSpace(x.Value) == "auto" {
		p.used[key] = true
		return 0, false
	}
	return int(p.integer(key, 0, lo, hi)), true
}

// llmShape decides tp, pp and dp from the knobs given and the topology: tp defaults to a host's
// GPUs, pp to the largest divisor of the hosts not above 4, dp to the GPUs left. A product the
// topology cannot hold is an error naming the knob that went over.
func llmShape(p *params, topo engine.Topology) (tp, pp, dp int) {
	tp, tpSet := p.autoInt("tp", 1, 1<<16)
	pp, ppSet := p.autoInt("pp", 1, 1<<16)
	dp, dpSet := p.autoInt("dp", 1, 1<<20)
	if p.err != nil {
		return 0, 0, 0
	}
	n, g := topo.Devices(), topo.GPUsPerHost
	if !tpSet {
		tp = g
	}
	if tp > g || g%tp != 0 {
		p.fail(p.at("tp"), "tp %d must divide the %d GPUs of a host of topology %s (tensor parallel stays inside the NVLink domain)", tp, g, topo.Name)
		return 0, 0, 0
	}
	if !ppSet {
		pp = 1
		for d := min(topo.Hosts, 4); d >= 1; d-- {
			if topo.Hosts%d == 0 && n%(tp*d) == 0 {
				pp = d
				break
			}
		}
	}
	if tp*pp > n {
		p.fail(p.at("pp"), "tp %d × pp %d = %d GPUs; topology %s has %d", tp, pp, tp*pp, topo.Name, n)
		return 0, 0, 0
	}
	if !dpSet {
		if n%(tp*pp) != 0 {
			p.fail(p.at("pp"), "the %d GPUs of topology %s do not divide into tp %d × pp %d groups: set pp (or dp) so that tp × pp × dp fits", n, topo.Name, tp, pp)
			return 0, 0, 0
		}
		dp = n / (tp * pp)
	}
	if tp*pp*dp > n {
		blame := "dp"
		if !dpSet {
			blame = "pp"
		}
		p.fail(p.at(blame), "tp %d × pp %d × dp %d = %d GPUs; topology %s has %d", tp, pp, dp, tp*pp*dp, topo.Name, n)
		return 0, 0, 0
	}
	return tp, pp, dp
}

func buildLLM(p *params, topo engine.Topology) (phase, error) {
	tp, pp, dp := llmShape(p, topo)
	ph := &llmPhase{tp: tp, pp: pp, dp: dp, micro: int(p.integer("microbatches", 8, 1, 10_000)),
		zero: p.str("dp_comm", "zero", "zero", "allreduce") == "zero"}
	ep, epSet := p.autoInt("ep", 1, 1<<16)
	if !epSet {
		ep = 1
	}
	ph.ep = ep
	experts, expSet := p.autoInt("experts", 0, 1<<16)
	ph.topk = int(p.integer("topk", 2, 1, 64))
	nLayers := int(p.integer("layers", 8, 1, 100_000))
	hidden := p.integer("hidden", 8192, 1, 1<<20)
	seq := p.integer("seq", 4096, 1, 1<<24)
	mbs := p.integer("micro_batch", 1, 1, 1<<16)
	dtype := p.str("dtype", "bf16", "bf16", "fp16", "fp8", "fp32")
	mfu := p.float("mfu", 0.5, 1e-3, 1)
	peakX, peakSet := p.m["peak"]
	peakStr := p.str("peak", "auto")
	if err := p.done(); err != nil {
		return nil, err
	}
	if ep > 1 && !expSet {
		experts = ep
	}
	ph.moe, ph.experts = experts > 0, experts
	switch {
	case dp%ep != 0:
		p.fail(p.at("ep"), "ep %d must divide dp %d (expert parallel groups are carved from the data-parallel ranks)", ep, dp)
	case ph.moe && experts%ep != 0:
		p.fail(p.at("experts"), "experts %d must be a multiple of ep %d", experts, ep)
	case ph.moe && ph.topk > experts:
		p.fail(p.at("topk"), "topk %d is more than the %d experts", ph.topk, experts)
	case nLayers < pp:
		p.fail(p.at("layers"), "%d layers cannot fill pp %d stages (each stage needs a layer)", nLayers, pp)
	}
	if p.err != nil {
		return nil, p.err
	}
	peak, err := gpuPeak(topo, dtype)
	if peakSet && strings.TrimSpace(peakStr) != "auto" {
		v, perr := strconv.ParseFloat(strings.TrimSpace(peakStr), 64)
		if perr != nil || !(v > 0) || v > 1e6 {
			p.fail(peakX, "%q is not a peak in TFLOPS (for example 989.4)", peakStr)
			return nil, p.err
		}
		peak, err = v*1e12, nil
	}
	if err != nil {
		return nil, fileerr.At(p.src, p.line, "llm_train: %v", err)
	}
	for s := range pp {
		n := nLayers / pp
		if s < nLayers%pp {
			n++
		}
		ph.layers = append(ph.layers, n)
	}
	ph.size(hidden, seq*mbs, seq, dtypeBytes[dtype], peak*mfu)
	return ph, nil
}

// size works out the per-GPU kernel times and transfer sizes of one layer and microbatch.
func (ph *llmPhase) size(h, tokens, seq, elem int64, flops float64) {
	hf, tf, tpf := float64(h), float64(tokens), float64(ph.tp)
	attn := 2*tf*4*hf*hf + 4*tf*float64(seq)*hf
	mlp := 2 * tf * 8 * hf * hf
	k := int64(1)
	if ph.moe {
		mlp *= float64(ph.topk)
		k = int64(ph.topk)
	}
	ph.attnNs = max(int64(attn/tpf/flops*1e9+0.5), 1)
	ph.mlpNs = max(int64(mlp/tpf/flops*1e9+0.5), 1)
	ph.actBytes = tokens * h * elem
	ph.shardBytes = ph.actBytes / int64(ph.tp)
	ph.a2aBytes = ph.shardBytes * k
	if ph.moe {
		ph.denseGrad = 4 * h * h / int64(ph.tp) * elem
		ph.expertGrad = int64(ph.experts/ph.ep) * 8 * h * h * elem
	} else {
		ph.denseGrad = 12 * h * h / int64(ph.tp) * elem
	}
}

// dev is job rank (stage, dp rank, tp rank)'s device.
func (ph *llmPhase) dev(s, r, t int) engine.DeviceID {
	return engine.DeviceID((s*ph.dp+r)*ph.tp + t)
}
