package scenario

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// llm64 is the 64-GPU topology of the hand calculation in docs/scenarios.md: h100x8x4's hosts, 8 of them.
const llm64 = "testdata/topologies/h100x8x8.yaml"

// stepSink keeps the step events of a run and counts the rest.
type stepSink struct {
	steps []timeline.Event
	kinds map[timeline.Kind]int
}

func (s *stepSink) Emit(e *timeline.Event) {
	if e.Kind == timeline.KindStep {
		s.steps = append(s.steps, *e)
	}
	s.kinds[e.Kind]++
}

// runLLM runs llm-train with sets on topology topoName for steps steps with model m (nil: the
// topology's own) and returns the step events and the count of events of each kind.
func runLLM(t *testing.T, topoName string, sets map[string]string, steps int, m *sim.Model) *stepSink {
	t.Helper()
	f, err := Builtin("llm-train")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := sim.TopologyByName(topoName)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Resolve(f, sets, topo)
	if err != nil {
		t.Fatal(err)
	}
	sink := &stepSink{kinds: map[timeline.Kind]int{}}
	cfg := sim.Config{Topology: topo, Seed: 1}
	if m != nil {
		cfg.Model = *m
	}
	b, err := sim.New(cfg, sink, timeline.NewStrings())
	if err != nil {
		t.Fatal(err)
	}
	c := engine.NewClient(b, sink, sc.Options)
	res, err := sc.Run(context.Background(), c, sink, RunConfig{Steps: steps, Seed: 1})
	if err != nil || res.Err != nil || res.Steps != steps {
		t.Fatalf("run: %+v, %v", res, err)
	}
	return sink
}

// llmHand is one step of llm-train worked out by hand, as docs/scenarios.md does it: from the
// transformer's FLOPs, the H100's datasheet peak, and the simulator's NCCL model for each
// collective alone on the machine. It shares no code with the scenario.
type llmHand struct {
	tp, pp, dp, micro, layers int
	hidden, seq               float64
	mfu                       float64
}

const h100BF16 = 989.4e12 // H100 SXM dense BF16 tensor-core peak, FLOPS (NVIDIA H100 datasheet)

// forward is one layer's forward on one microbatch on one GPU, ns: attention 2·T·4h² + 4·T·s·h
// and MLP 2·T·8h² FLOPs over tp GPUs at mfu of the peak, plus two all-gathers and two
// reduce-scatters of T·h bf16 elements over the tp GPUs of a host.
func (h llmHand) compute() float64 {
	T := h.seq
	flops := 2*T*4*h.hidden*h.hidden + 4*T*h.seq*h.hidden + 2*T*8*h.hidden*h.hidden
	return flops / float64(h.tp) / (h100BF16 * h.mfu) * 1e9
}

func (h llmHand) coll(m sim.Model, topo engine.Topology, op timeline.CollOp, ranks []engine.DeviceID, bytes int64) float64 {
	return sim.PredictNCCL(m, topo, op, ranks, bytes, 0, 0).TimeNs(bytes)
}

func (h llmHand) tpComm(m sim.Model, topo engine.Topology) float64 {
	ranks := make([]engine.DeviceID, h.tp)
	for i := range ranks {
		ranks[i] = engine.DeviceID(i)
	}
	act := int64(h.seq * h.hidden * 2)
	return 2*h.coll(m, topo, timeline.CollAllGather, ranks, act) + 2*h.coll(m, topo, timeline.CollReduceScatter, ranks, act)
}

// step is the 1F1B step: stage 0 waits for its first layer's parameters (a dp all-gather of the
// layer's 12h²/tp bf16 parameters between two hosts), the first microbatch reaches the last stage
// after pp−1 forwards and sends, the last stage then runs m forwards and backwards back to back,
// the last backward returns through pp−1 backwards and sends, and stage 0's first layer's
// gradients are reduce-scattered at the end. A send is NCCL's base latency, a network hop and
// T·h/tp bf16 elements at the NIC's share NCCL reaches, plus an event latency on each side.
func (h llmHand) step(m sim.Model, topo engine.Topology) float64 {
	lps := float64(h.layers / h.pp)
	F := lps * (h.compute() + h.tpComm(m, topo))
	B := lps * (2*h.compute() + h.tpComm(m, topo))
	shard := h.seq * h.hidden * 2 / float64(h.tp)
	x := float64(m.NCCLBaseNs+m.NICLatencyNs+2*m.EventLatencyNs) + shard/(m.NICBps*m.NCCLNICEff)*1e9
	grads := int64(12 * h.hidden * h.hidden / float64(h.tp) * 2)
	dp := []engine.DeviceID{0, engine.DeviceID(h.tp)} // dp ranks 0 and 1 of stage 0: two hosts
	ag := h.coll(m, topo, timeline.CollAllGather, dp, grads)
	rs := h.coll(m, topo, timeline.CollReduceScatter, dp, grads)
	p, mb := float64(h.pp), float64(h.micro)
	return ag + (p-1)*(F+x) + mb*(F+B) + (p-1)*(B+x) + rs
}

// One step of llm-train with 32 layers on 64 H100s (tp 8 × pp 4 × dp 2, the defaults there) is the hand
// calculation of docs/scenarios.md within ±5%; the second step, the first paying communicator
// creation.
func TestLLMTrainMatchesHandCalculation(t *testing.T) {
	topo, err := sim.TopologyByName(llm64)
	if err != nil {
		t.Fatal(err)
	}
	m := sim.ModelOf(topo)
	h := llmHand{tp: 8, pp: 4, dp: 2, micro: 8, layers: 32, hidden: 8192, seq: 4096, mfu: 0.5}
	want := h.step(m, topo)
	sink := runLLM(t, llm64, map[string]string{"layers": "32"}, 2, nil)
	if len(sink.steps) != 2 {
		t.Fatalf("%d steps", len(sink.steps))
	}
	got := float64(sink.steps[1].End - sink.steps[1].Start)
	t.Logf("step %.2f ms; hand calculation %.2f ms (layer forward %.3f ms compute + %.3f ms tp collectives)",
		got/1e6, want/1e6, h.compute()/1e6, h.tpComm(m, topo)/1e6)
	if math.Abs(got-want) > 0.05*want {
		t.Errorf("step = %.2f ms; hand calculation %.2f ms (±5%%)", got/1e6, want/1e6)
	}
	// Without data or pipeline parallelism the step is m forwards and backwards of all layers.
	one := runLLM(t, "h100x8", map[string]string{"layers": "4", "microbatches": "2"}, 2, nil)
	h1 := llmHand{tp: 8, pp: 1, dp: 1, micro: 2, layers: 4, hidden: 8192, seq: 4096, mfu: 0.5}
	m1 := sim.DefaultModel()
	want1 := 2 * 4 * (3*h1.compute() + 2*h1.tpComm(m1, engine.Topology{Name: "h100x8", Hosts: 1, GPUsPerHost: 8}))
	got1 := float64(one.steps[1].End - one.steps[1].Start)
	if math.Abs(got1-want1) > 0.05*want1 {
		t.Errorf("h100x8: step = %.2f ms; hand calculation %.2f ms (±5%%)", got1/1e6, want1/1e6)
	}
}

// The 1F1B schedule: every stage runs each microbatch's forward before its backward, at most
// pp−s forwards ahead, and ends with all of them.
func TestOneFOneB(t *testing.T) {
	for _, c := range []struct{ pp, m int }{{1, 4}, {4, 8}, {4, 2}, {8, 8}} {
		for s := range c.pp {
			items := oneFOneB(c.pp, s, c.m)
			if len(items) != 2*c.m {
				t.Fatalf("pp %d stage %d m %d: %d items", c.pp, s, c.m, len(items))
			}
			f, b := 0, 0
			for _, it := range items {
				if it.fwd {
					if it.micro != f {
						t.Fatalf("pp %d stage %d: forward %d out of order", c.pp, s, it.micro)
					}
					f++
				} else {
					if it.micro != b || b >= f {
						t.Fatalf("pp %d stage %d: backward %d before its forward or out of order", c.pp, s, it.micro)
					}
					b++
				}
				if f-b > c.pp-s {
					t.Fatalf("pp %d stage %d: %d forwards in flight; 1F1B keeps at most %d", c.pp, s, f-b, c.pp-s)
				}
			}
		}
	}
}

// tp, pp and dp default from the topology; a product the topology cannot hold is refused naming
// the knob.
func TestLLMTrainShape(t *testing.T) {
	f, err := Builtin("llm-train")
	if err != nil {
		t.Fatal(err)
	}
	shapes := []struct {
		topo       string
		sets       map[string]string
		tp, pp, dp int
	}{
		{"h100x8", nil, 8, 1, 1},
		{"h100x8x2", nil, 8, 2, 1},
		{"h100x8x4", nil, 8, 4, 1},
		{llm64, nil, 8, 4, 2},
		{llm64, map[string]string{"tp": "4"}, 4, 4, 4},
		{llm64, map[string]string{"pp": "8"}, 8, 8, 1},
		{llm64, map[string]string{"pp": "2", "dp": "2"}, 8, 2, 2},
		{"h100x4", nil, 4, 1, 1},
	}
	for _, c := range shapes {
		topo, err := sim.TopologyByName(c.topo)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := Resolve(f, c.sets, topo)
		if err != nil {
			t.Errorf("%s %v: %v", c.topo, c.sets, err)
			continue
		}
		ph := sc.phases[0].(*llmPhase)
		if ph.tp != c.tp || ph.pp != c.pp || ph.dp != c.dp {
			t.Errorf("%s %v: tp %d pp %d dp %d; want %d %d %d", c.topo, c.sets, ph.tp, ph.pp, ph.dp, c.tp, c.pp, c.dp)
		}
	}
	bad := []struct {
		topo string
		sets map[string]string
		want string // the error names the knob the user gave
	}{
		{llm64, map[string]string{"dp": "4"}, "--set dp=4: tp 8 × pp 4 × dp 4 = 128 GPUs; topology h100x8x8 has 64"},
		{llm64, map[string]string{"tp": "16"}, "--set tp=16: tp 16 must divide the 8 GPUs of a host"},
		{llm64, map[string]string{"tp": "3"}, "--set tp=3: tp 3 must divide"},
		{llm64, map[string]string{"pp": "16"}, "--set pp=16: tp 8 × pp 16 = 128 GPUs"},
		{llm64, map[string]string{"pp": "3"}, "--set pp=3: the 64 GPUs of topology h100x8x8 do not divide into tp 8 × pp 3"},
		{llm64, map[string]string{"ep": "4"}, "--set ep=4: ep 4 must divide dp 2"},
		{llm64, map[string]string{"layers": "2"}, "--set layers=2: 2 layers cannot fill pp 4 stages"},
		{llm64, map[string]string{"ep": "2", "experts": "3"}, "--set experts=3: experts 3 must be a multiple of ep 2"},
		{llm64, map[string]string{"tp": "x"}, `--set tp=x: "x" is not an integer`},
		{llm64, map[string]string{"peak": "fast"}, `--set peak=fast: "fast" is not a peak in TFLOPS`},
		{"a100x8", map[string]string{"dtype": "fp8"}, "A100 SXM has no fp8 tensor cores"},
	}
	for _, c := range bad {
		topo, err := sim.TopologyByName(c.topo)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Resolve(f, c.sets, topo)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: error %v; want it to contain %q", c.topo, c.sets, err, c.want)
		}
		var se *SetError
		if err != nil && strings.HasPrefix(c.want, "--set") && !errors.As(err, &se) {
			t.Errorf("%s %v: %T, not a *SetError naming the knob", c.topo, c.sets, err)
		}
	}
}

// Each parallelism's traffic is there: tp collectives on every stage, pipeline sends and receives
// between stages, dp gradient and parameter collectives, and the experts' all-to-alls with ep.
func TestLLMTrainTraffic(t *testing.T) {
	sets := map[string]string{"layers": "4", "microbatches": "4", "hidden": "1024", "seq": "1024"}
	dense := runLLM(t, llm64, sets, 1, nil)
	// 4 stages × 2 dp × 8 GPUs; each layer: 4 tp collectives per microbatch and direction; 3
	// boundaries × 16 lanes × 4 microbatches × 2 directions of sends; 1 layer of dp all-gather and
	// reduce-scatter per stage and GPU.
	wantColl := 64*1*4*4*2 + 64*2
	if got := dense.kinds[timeline.KindCollective]; got != wantColl {
		t.Errorf("dense: %d collective events; want %d", got, wantColl)
	}
	if got, want := dense.kinds[timeline.KindSend], 3*16*4*2; got != want {
		t.Errorf("dense: %d sends; want %d", got, want)
	}
	moe := runLLM(t, llm64, map[string]string{"layers": "4", "microbatches": "4", "hidden": "1024", "seq": "1024", "ep": "2"}, 1, nil)
	// The MLP's two tp collectives become two all-to-alls; expert gradients have no dp/ep group.
	if got := moe.kinds[timeline.KindCollective]; got != wantColl {
		t.Errorf("moe: %d collective events; want %d", got, wantColl)
	}
}
