package scenario

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/fileerr"
	"github.com/xfertop/xfertop/timeline"
)

// phase is one workload pattern, built and validated once, then issued every step.
type phase interface {
	issue(r *runner, step int) error
}

type builder func(p *params, topo engine.Topology) (phase, error)

var builders = map[string]builder{
	"compute":         buildCompute,
	"copy":            buildCopy,
	"collective":      buildCollective,
	"sweep":           buildSweep,
	"ragged_alltoall": buildRagged,
	"barrier":         buildBarrier,
	"pipeline":        buildPipeline,
	"overlap":         buildOverlap,
	"crosshost":       buildCrosshost,
	"sendrecv":        buildSendRecv,
	"copy_sweep":      buildCopySweep,
	"tp_layers":       buildTP,
	"llm_train":       buildLLM,
}

// PhaseKinds returns the names of the workload patterns a phase can use.
func PhaseKinds() []string {
	out := make([]string, 0, len(builders))
	for k := range builders {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func collOp(p *params, key, def string) timeline.CollOp {
	op, _ := timeline.ParseCollOp(p.str(key, def, "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce"))
	return op
}

// ---- compute ----

type computePhase struct {
	ranks []engine.DeviceID
	dur   int64
	count int
	label string
}

func buildCompute(p *params, topo engine.Topology) (phase, error) {
	ph := &computePhase{ranks: p.ranks("ranks", topo), dur: p.dur("duration", 1_000_000),
		count: int(p.integer("count", 1, 1, 1_000_000)), label: p.str("label", "compute")}
	return ph, p.done()
}

func (ph *computePhase) issue(r *runner, _ int) error {
	for _, d := range ph.ranks {
		for range ph.count {
			if err := r.c.Kernel(r.c.ComputeStream(d), ph.dur, ph.label); err != nil {
				return err
			}
		}
	}
	return nil
}

// ---- copy ----

type copyPhase struct {
	ranks    []engine.DeviceID
	dir      timeline.CopyDir
	bytes    int64
	count    int
	pageable bool
	offset   int
	streams  map[engine.DeviceID]engine.StreamID
}

func buildCopy(p *params, topo engine.Topology) (phase, error) {
	dirs := map[string]timeline.CopyDir{"h2d": timeline.CopyH2D, "d2h": timeline.CopyD2H, "d2d": timeline.CopyD2D, "p2p": timeline.CopyP2P}
	ph := &copyPhase{ranks: p.ranks("ranks", topo), dir: dirs[p.str("dir", "h2d", "h2d", "d2h", "d2d", "p2p")],
		bytes: p.size("bytes", 64<<20), count: int(p.integer("count", 1, 1, 1_000_000)), pageable: p.boolean("pageable", false),
		offset: int(p.integer("peer_offset", 1, 1, 1<<20)), streams: map[engine.DeviceID]engine.StreamID{}}
	if ph.dir == timeline.CopyP2P && topo.GPUsPerHost < 2 {
		return nil, fileerr.At(p.src, p.line, "copy: p2p needs at least 2 GPUs per host; topology %s has %d", topo.Name, topo.GPUsPerHost)
	}
	return ph, p.done()
}

// ownStream returns the phase's own stream on dev, created on first use, so its copies queue behind
// each other and not behind other phases' work.
func ownStream(c *engine.Client, streams map[engine.DeviceID]engine.StreamID, dev engine.DeviceID) (engine.StreamID, error) {
	if s, ok := streams[dev]; ok {
		return s, nil
	}
	s, err := c.NewStream(dev, engine.PriorityNormal)
	if err != nil {
		return 0, err
	}
	streams[dev] = s
	return s, nil
}

func (ph *copyPhase) issue(r *runner, _ int) error {
	for _, d := range ph.ranks {
		s, err := ownStream(r.c, ph.streams, d)
		if err != nil {
			return err
		}
		peer := engine.DeviceID(-1)
		if ph.dir == timeline.CopyP2P {
			g := r.topo.GPUsPerHost
			peer = engine.DeviceID(int(d)/g*g + (int(d)%g+ph.offset)%g)
		}
		for range ph.count {
			if _, err := r.c.Copy(s, ph.dir, ph.bytes, peer, ph.pageable); err != nil {
				return err
			}
		}
	}
	return nil
}

// ---- collective ----

type collectivePhase struct {
	op    timeline.CollOp
	ranks []engine.DeviceID
	bytes int64
	count int
	label string
}

func buildCollective(p *params, topo engine.Topology) (phase, error) {
	ph := &collectivePhase{op: collOp(p, "op", "all_reduce"), ranks: p.ranks("ranks", topo), bytes: p.size("bytes", 64<<20),
		count: int(p.integer("count", 1, 1, 1_000_000)), label: p.str("label", "")}
	return ph, p.done()
}

func (ph *collectivePhase) issue(r *runner, _ int) error {
	for range ph.count {
		if _, err := r.c.CollectiveAll(ph.op, ph.ranks, ph.bytes, ph.label); err != nil {
			return err
		}
	}
	return nil
}

// ---- ragged all-to-all (mixture of experts) ----

type raggedPhase struct {
	ranks   []engine.DeviceID
	bytes   int64
	skew    float64
	compute int64
}

func buildRagged(p *params, topo engine.Topology) (phase, error) {
	ph := &raggedPhase{ranks: p.ranks("ranks", topo), bytes: p.size("bytes", 64<<20), skew: p.float("skew", 1.0, 0, 8),
		compute: p.dur("expert_compute", 0)}
	return ph, p.done()
}

// issue routes each rank's tokens to experts (one per rank) with Zipf-like popularity: expert j gets
// a share proportional to 1/(j+1)^skew, the hot experts rotating with the step, with ±20% noise.
func (ph *raggedPhase) issue(r *runner, step int) error {
	n := len(ph.ranks)
	rng := rand.New(rand.NewSource(r.seed*7919 + int64(step)))
	pop := make([]float64, n)
	var sum float64
	for j := range n {
		pop[j] = 1 / math.Pow(float64((j+step)%n+1), ph.skew)
		sum += pop[j]
	}
	sizes := make([][]int64, n)
	for i := range n {
		sizes[i] = make([]int64, n)
		for j := range n {
			if i != j {
				sizes[i][j] = int64(float64(ph.bytes) * pop[j] / sum * (0.8 + 0.4*rng.Float64()))
			}
		}
	}
	if _, err := r.c.RaggedAllToAll(ph.ranks, sizes, "moe dispatch"); err != nil {
		return err
	}
	if ph.compute > 0 {
		for j, d := range ph.ranks {
			// An expert's work grows with the tokens routed to it.
			w := int64(float64(ph.compute) * pop[j] / sum * float64(n))
			s := r.c.TransferStream(d)
			ev, err := r.c.Record(s)
			if err != nil {
				return err
			}
			_ = r.c.WaitEvent(r.c.ComputeStream(d), ev)
			_ = r.c.Kernel(r.c.ComputeStream(d), max(w, 1), "expert")
		}
	}
	return nil
}

// ---- barrier with a straggler ----

type barrierPhase struct {
	ranks   []engine.DeviceID
	compute int64
	late    int
	delay   int64
	jitter  float64
	count   int
}

func buildBarrier(p *params, topo engine.Topology) (phase, error) {
	ph := &barrierPhase{ranks: p.ranks("ranks", topo), compute: p.dur("compute", 2_000_000), late: int(p.integer("late_rank", -1, -1, 1<<20)),
		delay: p.dur("delay", 0), jitter: p.float("jitter", 0.05, 0, 1), count: int(p.integer("count", 1, 1, 1000))}
	if err := p.done(); err != nil {
		return nil, err
	}
	if ph.late >= 0 && !engine.Topology.Valid(topo, engine.DeviceID(ph.late)) {
		return nil, fileerr.At(p.src, p.line, "barrier: late_rank %d does not exist in topology %s", ph.late, topo.Name)
	}
	return ph, nil
}

// issue runs count iterations of compute then barrier. Each rank's host waits for its previous
// iteration's barrier before launching the next (as a training loop that reads its loss does), so a
// host that is late really arrives late.
func (ph *barrierPhase) issue(r *runner, step int) error {
	rng := rand.New(rand.NewSource(r.seed*104729 + int64(step)))
	prev := make([]engine.EventID, len(ph.ranks))
	for range ph.count {
		for i, d := range ph.ranks {
			r.c.HostWait(d, prev[i])
			if int(d) == ph.late && ph.delay > 0 {
				r.c.HostSleep(d, ph.delay, "straggler delay")
			}
			w := int64(float64(ph.compute) * (1 + ph.jitter*(2*rng.Float64()-1)))
			if err := r.c.Kernel(r.c.ComputeStream(d), w, "work"); err != nil {
				return err
			}
		}
		if _, err := r.c.Barrier(ph.ranks, "barrier"); err != nil {
			return err
		}
		for i, d := range ph.ranks {
			prev[i], _ = r.c.Record(r.c.ComputeStream(d))
		}
	}
	return nil
}

// ---- pipeline-parallel forward ----

type pipelinePhase struct {
	devs    []engine.DeviceID // device of each stage
	micro   int
	compute int64
	bytes   int64
	recv    []engine.StreamID
}

func buildPipeline(p *params, topo engine.Topology) (phase, error) {
	if topo.Devices() < 2 {
		return nil, fileerr.At(p.src, p.line, "pipeline needs at least 2 devices; topology %s has %d", topo.Name, topo.Devices())
	}
	if x, ok := p.m["stages"]; ok {
		if n, err := parseInt(x.Value); err == nil && n > int64(topo.Devices()) {
			return nil, fileerr.At(p.src, x.Line, "pipeline: %d stages need %d devices, one each; topology %s has %d", n, n, topo.Name, topo.Devices())
		}
	}
	stages := int(p.integer("stages", int64(min(topo.Devices(), 8)), 2, int64(topo.Devices())))
	stride := int(p.integer("stride", int64(max(topo.Devices()/stages, 1)), 1, int64(topo.Devices())))
	first := int(p.integer("first_device", 0, 0, int64(topo.Devices()-1)))
	ph := &pipelinePhase{micro: int(p.integer("microbatches", 8, 1, 10_000)), compute: p.dur("compute", 20_000_000),
		bytes: p.size("activation_bytes", 64<<20)}
	if err := p.done(); err != nil {
		return nil, err
	}
	for s := range stages {
		d := first + s*stride
		if d >= topo.Devices() {
			return nil, fileerr.At(p.src, p.line, "pipeline: stage %d would be on device %d; topology %s has %d devices (lower stages or stride)", s, d, topo.Name, topo.Devices())
		}
		ph.devs = append(ph.devs, engine.DeviceID(d))
	}
	return ph, nil
}

// issue runs one forward pass: each microbatch flows stage to stage. A stage computes microbatch m
// once its activations arrived (recv on its own stream, waited on by the compute stream), then sends
// its output on the transfer stream, which waits for the compute's event (early enqueue) or whose
// launch waits on the host (no early enqueue).
func (ph *pipelinePhase) issue(r *runner, _ int) error {
	c := r.c
	S := len(ph.devs)
	if ph.recv == nil {
		for _, d := range ph.devs {
			s, err := c.NewStream(d, c.Options().D2DPriority)
			if err != nil {
				return err
			}
			ph.recv = append(ph.recv, s)
		}
	}
	for m := range ph.micro {
		for s, d := range ph.devs {
			comp := c.ComputeStream(d)
			if s > 0 {
				id := r.pairID(s-1, m)
				if _, err := c.RecvLabeled(ph.recv[s], ph.devs[s-1], ph.bytes, id, pipeLabel(s-1, m)); err != nil {
					return err
				}
				ev, _ := c.Record(ph.recv[s])
				_ = c.WaitEvent(comp, ev)
			}
			if err := c.Kernel(comp, ph.compute, fmt.Sprintf("stage%d fwd", s)); err != nil {
				return err
			}
			if s < S-1 {
				ev, _ := c.Record(comp)
				x := c.TransferStream(d)
				if c.Options().EarlyEnqueue {
					_ = c.WaitEvent(x, ev)
				} else {
					c.HostWait(d, ev)
				}
				if _, err := c.SendLabeled(x, ph.devs[s+1], ph.bytes, r.pairID(s, m), pipeLabel(s, m)); err != nil {
					return err
				}
			}
		}
	}
	r.resetPairs()
	return nil
}

// pipeLabel names the activations of microbatch m moving from stage s to the next, on both halves
// of the transfer: what a finding about it says beside its op id.
func pipeLabel(s, m int) string { return fmt.Sprintf("stage %d→%d microbatch %d", s, s+1, m) }

// ---- data-parallel backward with bucketed all-reduce ----

type overlapPhase struct {
	ranks     []engine.DeviceID
	buckets   int
	bytes     int64
	compute   int64
	kernels   int
	groups    bool
	groupSize int
}

func buildOverlap(p *params, topo engine.Topology) (phase, error) {
	ph := &overlapPhase{ranks: p.ranks("ranks", topo), buckets: int(p.integer("buckets", 16, 1, 10_000)), bytes: p.size("bucket_bytes", 25<<20),
		compute: p.dur("compute", 4_000_000), kernels: int(p.integer("kernels_per_bucket", 8, 1, 1000)),
		groups: p.boolean("groups", true), groupSize: int(p.integer("group_size", 4, 1, 1000))}
	return ph, p.done()
}

// issue runs one backward pass: per bucket, its gradient kernels, then the bucket's all-reduce on the
// transfer stream after the gradient's event. With groups, group_size buckets' all-reduces launch as
// one NCCL group (one launch instead of group_size).
func (ph *overlapPhase) issue(r *runner, _ int) error {
	c := r.c
	per := ph.compute / int64(ph.kernels)
	inGroup := 0
	for b := range ph.buckets {
		evs := make([]engine.EventID, len(ph.ranks))
		for i, d := range ph.ranks {
			comp := c.ComputeStream(d)
			for range ph.kernels {
				if err := c.Kernel(comp, per, "backward"); err != nil {
					return err
				}
			}
			evs[i], _ = c.Record(comp)
			if c.Options().EarlyEnqueue {
				_ = c.WaitEvent(c.TransferStream(d), evs[i])
			} else {
				c.HostWait(d, evs[i])
			}
		}
		if ph.groups && inGroup == 0 {
			c.GroupStart()
		}
		if _, err := c.CollectiveAll(timeline.CollAllReduce, ph.ranks, ph.bytes, fmt.Sprintf("bucket %d", b)); err != nil {
			return err
		}
		if ph.groups {
			inGroup++
			if inGroup == ph.groupSize || b == ph.buckets-1 {
				c.GroupEnd()
				inGroup = 0
			}
		}
	}
	return nil
}

// ---- cross-host send/receive buffers ----

type crosshostPhase struct {
	bytes    int64
	prepared bool
	sets     int
	compute  int64
	plans    map[int]*engine.Prepared
	topo     engine.Topology
}

func buildCrosshost(p *params, topo engine.Topology) (phase, error) {
	ph := &crosshostPhase{bytes: p.size("bytes", 32<<20), prepared: p.boolean("prepared", true), sets: int(p.integer("peer_sets", 1, 1, 64)),
		compute: p.dur("compute", 2_000_000), plans: map[int]*engine.Prepared{}, topo: topo}
	if err := p.done(); err != nil {
		return nil, err
	}
	if topo.Hosts < 2 {
		return nil, fileerr.At(p.src, p.line, "crosshost needs at least 2 hosts; topology %s has %d (try --topology h100x8x2)", topo.Name, topo.Hosts)
	}
	return ph, nil
}

// pairs returns pairing k: GPU i of host 0 exchanges with GPU (i+k) mod G of host 1, both ways.
func (ph *crosshostPhase) pairs(k int) []engine.Pair {
	g := ph.topo.GPUsPerHost
	var out []engine.Pair
	for i := range g {
		a, b := engine.DeviceID(i), engine.DeviceID(g+(i+k)%g)
		out = append(out, engine.Pair{Src: a, Dst: b, Bytes: ph.bytes}, engine.Pair{Src: b, Dst: a, Bytes: ph.bytes})
	}
	return out
}

// issue produces a buffer on every GPU of hosts 0 and 1 (a kernel whose event defines it), then
// exchanges the buffers across hosts: through a prepared plan (planned once per pairing) or through
// SendBuffers/ReceiveBuffers every step.
func (ph *crosshostPhase) issue(r *runner, step int) error {
	c := r.c
	k := step % ph.sets
	g := ph.topo.GPUsPerHost
	evs := map[engine.DeviceID]engine.EventID{}
	for d := range engine.DeviceID(2 * g) {
		comp := c.ComputeStream(d)
		if err := c.Kernel(comp, ph.compute, "produce"); err != nil {
			return err
		}
		evs[d], _ = c.Record(comp)
	}
	pairs := ph.pairs(k)
	if ph.prepared {
		plan, ok := ph.plans[k]
		if !ok {
			var err error
			if plan, err = c.Prepare(pairs, fmt.Sprintf("exchange %d", k)); err != nil {
				return err
			}
			ph.plans[k] = plan
		}
		// One event defines all sources here: wait on the last producer's (all run in parallel).
		return plan.Execute(evs[engine.DeviceID(2*g-1)])
	}
	key := uint64(step+1)<<20 | uint64(k)
	for i, pr := range pairs {
		sub := key<<8 | uint64(i)
		if _, err := c.ReceiveBuffers(sub, pr.Dst, []int64{pr.Bytes}, []engine.DeviceID{pr.Src}); err != nil {
			return err
		}
		buf := c.NewBuffer(pr.Src, pr.Bytes, evs[pr.Src])
		futs, err := c.SendBuffers(sub, []*engine.Buffer{buf}, []engine.DeviceID{pr.Dst})
		if err != nil {
			return err
		}
		_ = futs
	}
	return nil
}

// ---- a single send/receive, optionally with the receive never posted ----

type sendrecvPhase struct {
	from, to  engine.DeviceID
	bytes     int64
	postRecv  bool
	recvFirst bool // an exchange in which each rank receives before it sends: a wait cycle
}

func buildSendRecv(p *params, topo engine.Topology) (phase, error) {
	ph := &sendrecvPhase{from: engine.DeviceID(p.integer("from", 0, 0, int64(topo.Devices()-1))),
		to: engine.DeviceID(p.integer("to", 1, 0, int64(topo.Devices()-1))), bytes: p.size("bytes", 16<<20), postRecv: p.boolean("post_recv", true),
		recvFirst: p.boolean("recv_first", false)}
	if err := p.done(); err != nil {
		return nil, err
	}
	if ph.recvFirst && !ph.postRecv {
		return nil, fileerr.At(p.src, p.line, "sendrecv: recv_first needs the receives posted (post_recv on)")
	}
	if ph.from == ph.to {
		return nil, fileerr.At(p.src, p.line, "sendrecv: from and to are both device %d", ph.from)
	}
	return ph, nil
}

func (ph *sendrecvPhase) issue(r *runner, step int) error {
	id := r.c.NewOpID()
	if ph.recvFirst {
		// Each rank posts its receive of the other's send before its own send, on one stream:
		// each waits for a send queued behind the other's wait. Neither can move.
		back := r.c.NewOpID()
		for _, x := range []struct {
			self, peer engine.DeviceID
			in, out    uint64
		}{{ph.from, ph.to, back, id}, {ph.to, ph.from, id, back}} {
			s := r.c.TransferStream(x.self)
			if _, err := r.c.Recv(s, x.peer, ph.bytes, x.in); err != nil {
				return err
			}
			if _, err := r.c.Send(s, x.peer, ph.bytes, x.out); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := r.c.Send(r.c.TransferStream(ph.from), ph.to, ph.bytes, id); err != nil {
		return err
	}
	if ph.postRecv {
		if _, err := r.c.Recv(r.c.TransferStream(ph.to), ph.from, ph.bytes, id); err != nil {
			return err
		}
	}
	return nil
}

// ---- copy sweep: every direction at every size, like a bandwidth test ----

type copySweepPhase struct {
	ranks   []engine.DeviceID
	dirs    []timeline.CopyDir
	sizes   []int64
	iters   int
	streams map[engine.DeviceID]engine.StreamID
}

func buildCopySweep(p *params, topo engine.Topology) (phase, error) {
	names := map[string]timeline.CopyDir{"h2d": timeline.CopyH2D, "d2h": timeline.CopyD2H, "d2d": timeline.CopyD2D}
	ph := &copySweepPhase{ranks: p.ranks("ranks", topo), iters: int(p.integer("iters", 5, 1, 10_000)), streams: map[engine.DeviceID]engine.StreamID{}}
	dirs := p.str("dirs", "h2d,d2h,d2d")
	lo, hi := p.size("min_bytes", 4<<10), p.size("max_bytes", 1<<30)
	factor := p.integer("factor", 4, 2, 1024)
	if err := p.done(); err != nil {
		return nil, err
	}
	for _, d := range strings.Split(dirs, ",") {
		dir, ok := names[strings.TrimSpace(d)]
		if !ok {
			p.fail(p.m["dirs"], "%q is not one of h2d, d2h, d2d", d)
			return nil, p.err
		}
		ph.dirs = append(ph.dirs, dir)
	}
	if lo < 1 || hi < lo {
		return nil, fileerr.At(p.src, p.line, "copy_sweep: need 1 <= min_bytes <= max_bytes, got %d and %d", lo, hi)
	}
	for s := lo; s <= hi; s *= factor {
		ph.sizes = append(ph.sizes, s)
	}
	return ph, nil
}

// issue copies each size iters times in each direction, one after another on one stream per device,
// so each copy has the link to itself (what a bandwidth test measures).
func (ph *copySweepPhase) issue(r *runner, _ int) error {
	for _, d := range ph.ranks {
		s, err := ownStream(r.c, ph.streams, d)
		if err != nil {
			return err
		}
		for _, dir := range ph.dirs {
			for _, size := range ph.sizes {
				for range ph.iters {
					if _, err := r.c.Copy(s, dir, size, -1, false); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}
