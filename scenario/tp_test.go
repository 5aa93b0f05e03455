package scenario

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

type sinks []timeline.Sink

func (s sinks) Emit(e *timeline.Event) {
	for _, x := range s {
		x.Emit(e)
	}
}

// runTPOverlap runs the tp-overlap built-in with sets on the simulator with model m, and returns
// the analysis of the run and its events.
func runTPOverlap(t *testing.T, sets map[string]string, m sim.Model, steps int) (*analysis.Result, *timeline.Store, *Scenario) {
	t.Helper()
	f, err := Builtin("tp-overlap")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := sim.TopologyByName(f.Topology)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Resolve(f, sets, topo)
	if err != nil {
		t.Fatal(err)
	}
	store := timeline.NewStore(nil)
	an := analysis.New(timeline.Meta{Devices: topo.Devices(), GPUsPerHost: topo.GPUsPerHost, IdleMode: timeline.IdleEngine,
		KernelWaitNs: analysis.DefaultKernelWaitNs})
	fan := sinks{store, an}
	b, err := sim.New(sim.Config{Topology: topo, Seed: 1, Model: m}, fan, store.Strings)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(b, fan, sc.Options)
	res, err := sc.Run(context.Background(), c, fan, RunConfig{Steps: steps, Seed: 1})
	if err != nil || res.Err != nil || res.Steps != steps {
		t.Fatalf("run: %+v, %v", res, err)
	}
	return an.Result(store.Strings), store, sc
}

// tpHand is the step time of tp-overlap worked out by hand from its knobs and the simulator's link
// model, valid where the claim is about: each chunk's transfer is shorter than the GEMM
// kernel on a chunk, which is at least one thread-block wave long.
type tpHand struct {
	tp, layers, chunks int
	shard, gemm        int64 // bytes of a rank's shard; GEMM ns on a shard
}

func tpKnobs(t *testing.T, sc *Scenario) tpHand {
	t.Helper()
	atoi := func(k string) int {
		v, err := strconv.Atoi(sc.Knobs[k])
		if err != nil {
			t.Fatalf("knob %s=%q", k, sc.Knobs[k])
		}
		return v
	}
	shard, err := ParseSize(sc.Knobs["shard_bytes"])
	if err != nil {
		t.Fatal(err)
	}
	gemm, err := ParseDuration(sc.Knobs["gemm"])
	if err != nil {
		t.Fatal(err)
	}
	return tpHand{tp: atoi("tp"), layers: atoi("layers"), chunks: atoi("chunks"), shard: shard, gemm: gemm.Nanoseconds()}
}

// collective is an all-gather (or reduce-scatter, which NCCL's model prices the same) of tp shards
// alone on the machine: the latency plus total bytes over the algorithm bandwidth of the
// (algorithm, protocol) NCCL's cost model picks for it (16 MiB shards on 8 GPUs: Ring/Simple,
// 8.4 + 7 × 3.4 µs and (tp−1) shards per link at NCCL's share of NVLink).
func (h tpHand) collective(m sim.Model) float64 {
	ranks := make([]engine.DeviceID, h.tp)
	for i := range ranks {
		ranks[i] = engine.DeviceID(i)
	}
	total := int64(h.tp) * h.shard
	topo := engine.Topology{Name: "hand", Hosts: 1, GPUsPerHost: 8}
	return sim.PredictNCCL(m, topo, timeline.CollAllGather, ranks, total, 0, 0).TimeNs(total)
}

// chunk is one ring transfer: an NCCL send/recv over one NVLink hop of shard/chunks bytes.
func (h tpHand) chunk(m sim.Model) float64 {
	bw := m.NVLinkBps * m.NCCLNVLinkEff / 1e9 // bytes per ns
	return float64(m.NCCLBaseNs+m.NVLinkLatencyNs) + float64(h.shard)/float64(h.chunks)/bw
}

// hidden reports whether the hand calculation holds: a reduce-scatter chunk that waits for the
// next thread-block wave of the next GEMM kernel (a high-priority NCCL kernel gets SMs only there)
// still arrives before that kernel ends, so the chain of chunks keeps pace with the GEMMs.
func (h tpHand) hidden(m sim.Model) bool {
	return float64(m.WaveNs)+h.chunk(m) <= float64(h.gemm)/float64(h.chunks)
}

// exposed is the communication of a ring layer that no GEMM hides: the last reduce-scatter chunk,
// which leaves an event latency after the last GEMM and after which the next layer's first GEMM
// starts an event latency later.
func (h tpHand) exposed(m sim.Model) float64 {
	return h.chunk(m) + 2*float64(m.EventLatencyNs)
}

// step is the hand-calculated step time. off: per layer, the all-gather, an event latency, the
// GEMMs, an event latency, the reduce-scatter; the step starts with one NCCL launch. ring: the
// GEMMs back to back with one exposed chunk between layers; the step starts with one kernel launch
// and ends when the last layer's last chunk has arrived (no GEMM waits for it).
func (h tpHand) step(m sim.Model, ring bool) float64 {
	compute := float64(int64(h.tp) * h.gemm)
	if !ring {
		layer := 2*h.collective(m) + 2*float64(m.EventLatencyNs) + compute
		return float64(m.NCCLLaunchNs) + float64(h.layers)*layer
	}
	return float64(m.HostLaunchNs) + float64(h.layers)*compute + float64(h.layers-1)*h.exposed(m) +
		h.exposed(m) - float64(m.EventLatencyNs)
}

// The step time of both modes matches the hand calculation, and the ring exposes about one chunk
// of communication per layer where the bulk collectives expose two whole collectives.
func TestTPOverlapMatchesHandCalculation(t *testing.T) {
	exact := sim.DefaultModel()
	exact.KernelJitter = 0
	cases := []struct {
		sets map[string]string
		m    sim.Model
		tol  float64 // relative
	}{
		{map[string]string{"overlap": "off"}, exact, 0.0005},
		{map[string]string{"overlap": "ring"}, exact, 0.0005},
		{map[string]string{"overlap": "ring", "chunks": "2"}, exact, 0.0005},
		{map[string]string{"overlap": "ring", "chunks": "4"}, exact, 0.0005},
		{map[string]string{"overlap": "off", "tp": "4", "layers": "2"}, exact, 0.0005},
		{map[string]string{"overlap": "ring", "tp": "4", "layers": "2"}, exact, 0.0005},
		{map[string]string{"overlap": "ring", "tp": "2", "shard_bytes": "32MiB"}, exact, 0.0005},
		// As a user runs it: kernel durations jitter by ±2%, and a layer waits for the slowest of
		// the ranks it depends on.
		{map[string]string{"overlap": "off"}, sim.DefaultModel(), 0.01},
		{map[string]string{"overlap": "ring"}, sim.DefaultModel(), 0.01},
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%v jitter=%g", tc.sets, tc.m.KernelJitter)
		t.Run(name, func(t *testing.T) {
			res, _, sc := runTPOverlap(t, tc.sets, tc.m, 4)
			h := tpKnobs(t, sc)
			ring := sc.Knobs["overlap"] == "ring"
			want := h.step(tc.m, ring)
			if res.Steps.P50Ns == nil {
				t.Fatal("no step time")
			}
			got := float64(*res.Steps.P50Ns)
			t.Logf("step p50 %.1f µs; hand calculation %.1f µs", got/1e3, want/1e3)
			switch {
			case ring && !h.hidden(tc.m):
				// Chunk kernels shorter than a wave plus a transfer: the chain may fall a chunk
				// behind the GEMMs, and a layer ends up to a chunk later.
				if got < want*(1-tc.tol) || got > want*(1+tc.tol)+float64(h.layers)*h.chunk(tc.m) {
					t.Errorf("step p50 = %.1f µs; want between the hand calculation %.1f µs and a chunk more per layer", got/1e3, want/1e3)
				}
			case math.Abs(got-want) > tc.tol*want:
				t.Errorf("step p50 = %.1f µs; hand calculation %.1f µs (tolerance %.2f%%)", got/1e3, want/1e3, 100*tc.tol)
			}
			// What the GEMMs do not hide, per layer.
			exposed := (got - float64(h.layers)*float64(int64(h.tp)*h.gemm)) / float64(h.layers)
			if ring {
				if exposed > 2*h.chunk(tc.m) {
					t.Errorf("ring exposes %.1f µs per layer; want about one chunk (%.1f µs)", exposed/1e3, h.chunk(tc.m)/1e3)
				}
			} else if exposed < 2*h.collective(tc.m) {
				t.Errorf("bulk exposes %.1f µs per layer; want both collectives (%.1f µs)", exposed/1e3, 2*h.collective(tc.m)/1e3)
			}
		})
	}
}

// The report's overlap: none with bulk collectives; with the ring, everything but the last chunk
// of each layer's 2(tp−1) chunks (and the start of the next layer's first, which begins as the
// GEMM waits an event latency to start).
func TestTPOverlapOverlap(t *testing.T) {
	for _, mode := range []string{"off", "ring"} {
		res, _, sc := runTPOverlap(t, map[string]string{"overlap": mode}, sim.DefaultModel(), 4)
		ov := res.Breakdown.OverlapPct
		if ov == nil {
			t.Fatalf("%s: no overlap computed", mode)
		}
		if mode == "off" {
			if *ov != 0 {
				t.Errorf("off: overlap %.1f%%; bulk collectives never run beside a GEMM", *ov)
			}
			continue
		}
		h := tpKnobs(t, sc)
		want := 100 * (1 - 1/float64(2*(h.tp-1)))
		if math.Abs(*ov-want) > 1.5 {
			t.Errorf("ring: overlap %.1f%%; want about %.1f%% (all but one chunk of %d)", *ov, want, 2*(h.tp-1))
		}
	}
}

// tpOps is one device's events of one step: GEMM kernels by layer and ring index, and the
// transfers of each ring stream in order.
type tpOps struct {
	gemm   map[[2]int]timeline.Event
	ag, rs []timeline.Event // receives on the all-gather stream, sends on the reduce-scatter stream
	coll   []timeline.Event
}

func tpDeviceOps(t *testing.T, st *timeline.Store, dev int32, tp int) tpOps {
	t.Helper()
	var last timeline.Event
	for _, e := range st.Events() {
		if e.Kind == timeline.KindStep {
			last = e
		}
	}
	ops := tpOps{gemm: map[[2]int]timeline.Event{}}
	var p2p []timeline.Event
	for _, e := range st.Events() {
		if e.Device != dev || e.Start < last.Start || e.End > last.End {
			continue
		}
		switch e.Kind {
		case timeline.KindKernel:
			var l, i int
			if _, err := fmt.Sscanf(st.Strings.Lookup(e.Label), "layer %d gemm %d", &l, &i); err != nil {
				t.Fatalf("kernel %q", st.Strings.Lookup(e.Label))
			}
			if _, dup := ops.gemm[[2]int{l, i}]; !dup { // chunks > 1: the first kernel of the GEMM
				ops.gemm[[2]int{l, i}] = e
			}
		case timeline.KindSend, timeline.KindRecv:
			p2p = append(p2p, e)
		case timeline.KindCollective:
			ops.coll = append(ops.coll, e)
		}
	}
	slices.SortStableFunc(p2p, func(a, b timeline.Event) int { return int(a.Start - b.Start) })
	if len(p2p) == 0 {
		return ops
	}
	agStream := p2p[0].Stream // the first transfer of a step is the all-gather's first step
	for _, e := range p2p {
		switch {
		case e.Stream == agStream && e.Kind == timeline.KindRecv:
			ops.ag = append(ops.ag, e)
		case e.Stream != agStream && e.Kind == timeline.KindSend:
			ops.rs = append(ops.rs, e)
		}
	}
	return ops
}

// The timeline interleaves GEMM chunks with the ring steps: each GEMM starts once its own chunk
// arrived, before the all-gather is over; each reduce-scatter chunk leaves after its GEMM and
// arrives under the next GEMM, but the last, which is the one exposed. With bulk collectives no
// transfer runs beside a GEMM.
func TestTPOverlapTimelineInterleaves(t *testing.T) {
	const layers = 3
	_, st, sc := runTPOverlap(t, map[string]string{"overlap": "ring", "layers": strconv.Itoa(layers)}, sim.DefaultModel(), 2)
	tp := tpKnobs(t, sc).tp
	for dev := range int32(tp) {
		ops := tpDeviceOps(t, st, dev, tp)
		if len(ops.ag) != layers*(tp-1) || len(ops.rs) != layers*(tp-1) || len(ops.gemm) != layers*tp {
			t.Fatalf("device %d: %d all-gather receives, %d reduce-scatter sends, %d GEMMs; want %d, %d, %d",
				dev, len(ops.ag), len(ops.rs), len(ops.gemm), layers*(tp-1), layers*(tp-1), layers*tp)
		}
		for l := range layers {
			ag, rs := ops.ag[l*(tp-1):(l+1)*(tp-1)], ops.rs[l*(tp-1):(l+1)*(tp-1)]
			if g := ops.gemm[[2]int{l, 1}]; g.Start >= ag[tp-2].End {
				t.Errorf("device %d layer %d: GEMM 1 starts at %d, after the whole all-gather (%d)", dev, l, g.Start, ag[tp-2].End)
			}
			for i := 1; i < tp; i++ {
				g := ops.gemm[[2]int{l, i}]
				if g.Start < ag[i-1].End {
					t.Errorf("device %d layer %d: GEMM %d starts at %d, before its chunk arrived (%d)", dev, l, i, g.Start, ag[i-1].End)
				}
				if rs[i-1].Start < g.End {
					t.Errorf("device %d layer %d: reduce-scatter chunk %d leaves at %d, before its GEMM ended (%d)", dev, l, i, rs[i-1].Start, g.End)
				}
				if next, ok := ops.gemm[[2]int{l, i + 1}]; ok && rs[i-1].End > next.End {
					t.Errorf("device %d layer %d: reduce-scatter chunk %d ends at %d, after the next GEMM (%d): not hidden", dev, l, i, rs[i-1].End, next.End)
				}
			}
			if next, ok := ops.gemm[[2]int{l + 1, 0}]; ok && next.Start < rs[tp-2].End {
				t.Errorf("device %d: layer %d starts at %d before layer %d's output arrived (%d)", dev, l+1, next.Start, l, rs[tp-2].End)
			}
		}
	}
	_, st, _ = runTPOverlap(t, map[string]string{"overlap": "off", "layers": strconv.Itoa(layers)}, sim.DefaultModel(), 2)
	for dev := range int32(tp) {
		ops := tpDeviceOps(t, st, dev, tp)
		if len(ops.coll) != 2*layers {
			t.Fatalf("device %d: %d collectives; want %d", dev, len(ops.coll), 2*layers)
		}
		for _, c := range ops.coll {
			for k, g := range ops.gemm {
				if c.Start < g.End && g.Start < c.End {
					t.Errorf("device %d: %s overlaps GEMM %v", dev, c.OpName(), k)
				}
			}
		}
	}
}
