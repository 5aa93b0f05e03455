package scenario

import (
	"fmt"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/fileerr"
	"github.com/xfertop/xfertop/timeline"
)

// ---- tensor-parallel layers with the collectives split into ring steps ----

// tpPhase is a stack of tensor-parallel layers (sequence parallel, as Megatron-LM and Transformer
// Engine run them) on the first tp GPUs of host 0. Rank r holds shard r of each layer's input
// activations (the tokens of block r). A layer all-gathers the shards, runs its GEMMs on every
// block, and reduce-scatters the partial outputs so rank r ends with block r of the output, the next
// layer's input. The GEMM work on block b (the layer's MLP on b's tokens: it works token by token)
// needs only input block b and yields only output block b's partial sum; that is what lets the ring
// overlap it.
//
// overlap=off: a bulk all-gather, the GEMMs (waiting on the all-gather's event), then a bulk
// reduce-scatter (waiting on the GEMMs' event), on the transfer stream.
//
// overlap=ring (Transformer Engine's ring exchange over userbuffers): rank r computes the blocks in
// the order r, r−1, …, r−tp+1. The all-gather is tp−1 ring steps on a stream of its own, of the
// transfer priority (high by default): at step i rank r sends block r−i+1 to r+1 and receives block
// r−i from r−1, both halves in one NCCL group; GEMM i waits (an event) only for step i. The
// reduce-scatter is the same ring on a second such stream, behind the GEMMs (on the first, it would
// queue behind the all-gather's steps): at step i (after GEMM i) rank r sends the partial sum of block
// r−i (its own plus what it received for that block) to r+1 and receives the partial of block r−i−1;
// the last step brings rank r its own block, summed over all ranks. Only that last transfer
// follows the last GEMM: the exposed communication is one chunk, not the collective. The
// summation of a received partial with the rank's own is taken to be fused into the transfer
// (NCCL's reduce-scatter also reduces inside its kernel) and costs nothing here.
//
// chunks splits each shard further: each ring step moves its shard in chunks transfers, and the
// GEMM on a block runs as chunks kernels, each waiting only for its own chunk (fewer bytes exposed
// at the end of a layer, more launches and latencies on the way).
type tpPhase struct {
	ranks  []engine.DeviceID
	layers int
	bytes  int64 // one rank's shard of a layer's activations
	gemm   int64 // GEMM time on one shard
	chunks int
	ring   bool
	labels [][]string        // [layer][ring index]: kernel labels, built once
	ag, rs []engine.StreamID // ring mode: each rank's streams for the all-gather's and the reduce-scatter's ring steps
}

func buildTP(p *params, topo engine.Topology) (phase, error) {
	tp := int(p.integer("tp", int64(min(topo.GPUsPerHost, 8)), 2, 1<<10))
	ph := &tpPhase{layers: int(p.integer("layers", 4, 1, 1000)), bytes: p.size("shard_bytes", 16<<20), gemm: p.dur("gemm", 200_000),
		chunks: int(p.integer("chunks", 1, 1, 64)), ring: p.str("overlap", "ring", "off", "ring") == "ring"}
	if err := p.done(); err != nil {
		return nil, err
	}
	if tp > topo.GPUsPerHost {
		return nil, fileerr.At(p.src, p.line, "tp_layers: tp %d needs %d GPUs on one host; topology %s has %d per host", tp, tp, topo.Name, topo.GPUsPerHost)
	}
	if ph.bytes < int64(ph.chunks) || ph.gemm < int64(ph.chunks) {
		return nil, fileerr.At(p.src, p.line, "tp_layers: shard_bytes (%d) and gemm (%d ns) must each be at least chunks (%d)", ph.bytes, ph.gemm, ph.chunks)
	}
	for d := range tp {
		ph.ranks = append(ph.ranks, engine.DeviceID(d))
	}
	ph.labels = make([][]string, ph.layers)
	for l := range ph.labels {
		for i := range tp {
			ph.labels[l] = append(ph.labels[l], fmt.Sprintf("layer %d gemm %d", l, i))
		}
	}
	return ph, nil
}

func (ph *tpPhase) issue(r *runner, _ int) error {
	if ph.ring {
		return ph.issueRing(r.c)
	}
	return ph.issueBulk(r.c)
}

// gemms enqueues the GEMM on ring index i (all its chunks) on dev's compute stream, each chunk
// kernel after waiting for wait[j] (0: no wait), and returns the event each chunk recorded when
// rec is set.
func (ph *tpPhase) gemms(c *engine.Client, dev engine.DeviceID, layer, i int, wait []engine.EventID, rec bool) ([]engine.EventID, error) {
	comp := c.ComputeStream(dev)
	var out []engine.EventID
	for j := range ph.chunks {
		if wait != nil {
			_ = c.WaitEvent(comp, wait[j])
		}
		if err := c.Kernel(comp, ph.gemm/int64(ph.chunks), ph.labels[layer][i]); err != nil {
			return nil, err
		}
		if rec {
			ev, _ := c.Record(comp)
			out = append(out, ev)
		}
	}
	return out, nil
}

// issueBulk runs the layers with bulk collectives: nothing overlaps within a layer.
func (ph *tpPhase) issueBulk(c *engine.Client) error {
	tp := len(ph.ranks)
	total := ph.bytes * int64(tp) // nccl-tests size of the all-gather's output / reduce-scatter's input
	for l := range ph.layers {
		if _, err := c.CollectiveAll(timeline.CollAllGather, ph.ranks, total, fmt.Sprintf("layer %d all-gather", l)); err != nil {
			return err
		}
		for _, d := range ph.ranks {
			gathered, _ := c.Record(c.TransferStream(d))
			_ = c.WaitEvent(c.ComputeStream(d), gathered)
			for i := range tp {
				if _, err := ph.gemms(c, d, l, i, nil, false); err != nil {
					return err
				}
			}
			done, _ := c.Record(c.ComputeStream(d))
			_ = c.WaitEvent(c.TransferStream(d), done)
		}
		if _, err := c.CollectiveAll(timeline.CollReduceScatter, ph.ranks, total, fmt.Sprintf("layer %d reduce-scatter", l)); err != nil {
			return err
		}
	}
	return nil
}

// ringStep enqueues one ring step's chunk on every rank: rank k sends chunkBytes to k+1 and receives
// from k−1, both in one NCCL group on its ring stream (a group, so no rank's send waits for a receive
// queued behind it). It returns the event each rank's ring stream records after the step.
func (ph *tpPhase) ringStep(c *engine.Client, streams []engine.StreamID, chunkBytes int64) ([]engine.EventID, error) {
	tp := len(ph.ranks)
	ids := make([]uint64, tp) // ids[k]: the transfer from rank k to rank k+1
	for k := range ids {
		ids[k] = c.NewOpID()
	}
	c.GroupStart()
	for k := range ph.ranks {
		next, prev := ph.ranks[(k+1)%tp], ph.ranks[(k+tp-1)%tp]
		if _, err := c.Send(streams[k], next, chunkBytes, ids[k]); err != nil {
			c.GroupEnd()
			return nil, err
		}
		if _, err := c.Recv(streams[k], prev, chunkBytes, ids[(k+tp-1)%tp]); err != nil {
			c.GroupEnd()
			return nil, err
		}
	}
	c.GroupEnd()
	evs := make([]engine.EventID, tp)
	for k := range ph.ranks {
		evs[k], _ = c.Record(streams[k])
	}
	return evs, nil
}

// issueRing runs the layers with ring-exchanged, chunked collectives overlapped with the GEMMs.
func (ph *tpPhase) issueRing(c *engine.Client) error {
	tp := len(ph.ranks)
	if ph.ag == nil {
		for _, d := range ph.ranks {
			ag, err := c.NewStream(d, c.Options().D2DPriority)
			if err != nil {
				return err
			}
			rs, err := c.NewStream(d, c.Options().D2DPriority)
			if err != nil {
				return err
			}
			ph.ag, ph.rs = append(ph.ag, ag), append(ph.rs, rs)
		}
		// Create the ring's communicators before the first GEMM, as a runtime sets up its
		// userbuffers at start: their creation is setup, not time the first layer waits.
		for k := range ph.ranks {
			if _, err := c.Communicator([]engine.DeviceID{ph.ranks[k], ph.ranks[(k+1)%tp]}); err != nil {
				return err
			}
		}
	}
	chunk := ph.bytes / int64(ph.chunks)
	// layerIn[k]: the event after which rank k's input of the next layer (its own block) is whole.
	layerIn := make([]engine.EventID, tp)
	for l := range ph.layers {
		// Ring index 0: the rank's own block needs no transfer.
		for k, d := range ph.ranks {
			comp := c.ComputeStream(d)
			_ = c.WaitEvent(comp, layerIn[k])
			if _, err := ph.gemms(c, d, l, 0, nil, false); err != nil {
				return err
			}
		}
		// All-gather: tp−1 steps, each in chunks; arrived[i][j][k] is rank k's chunk j of step i.
		// Step 1 sends the rank's own block: the previous layer's output.
		for k := range ph.ranks {
			_ = c.WaitEvent(ph.ag[k], layerIn[k])
		}
		arrived := make([][][]engine.EventID, tp)
		for i := 1; i < tp; i++ {
			for range ph.chunks {
				evs, err := ph.ringStep(c, ph.ag, chunk)
				if err != nil {
					return err
				}
				arrived[i] = append(arrived[i], evs)
			}
		}
		// GEMM i on each rank waits only for its own chunks; computed[i][k][j] is its chunk j's event.
		computed := make([][][]engine.EventID, tp)
		for i := 1; i < tp; i++ {
			computed[i] = make([][]engine.EventID, tp)
			for k, d := range ph.ranks {
				wait := make([]engine.EventID, ph.chunks)
				for j := range wait {
					wait[j] = arrived[i][j][k]
				}
				evs, err := ph.gemms(c, d, l, i, wait, true)
				if err != nil {
					return err
				}
				computed[i][k] = evs
			}
		}
		// Reduce-scatter: step i's chunk j leaves once GEMM i's chunk j is done (and, by the ring
		// stream's order, the partial received at step i−1 is in).
		for i := 1; i < tp; i++ {
			for j := range ph.chunks {
				for k := range ph.ranks {
					_ = c.WaitEvent(ph.rs[k], computed[i][k][j])
				}
				evs, err := ph.ringStep(c, ph.rs, chunk)
				if err != nil {
					return err
				}
				copy(layerIn, evs)
			}
		}
	}
	return nil
}
