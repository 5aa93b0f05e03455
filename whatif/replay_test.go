package whatif

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/timeline"
)

const us = 1000

func kern(s *timeline.Strings, name string, dev int32, stream uint32, start, end int64, op uint64) timeline.Event {
	return timeline.Event{Kind: timeline.KindKernel, Device: dev, Peer: timeline.NoDevice, Stream: stream, Start: start * us, End: end * us,
		Op: op, Queued: -1, Label: s.ID(name)}
}

func launch(s *timeline.Strings, start, end int64, op uint64) timeline.Event {
	return timeline.Event{Kind: timeline.KindRuntime, Device: timeline.NoDevice, Peer: timeline.NoDevice, Start: start * us, End: end * us,
		Queued: start * us, Op: op, Aux: 1, Label: s.ID("cudaLaunchKernel")}
}

func allReduce(dev int32, start, end int64, bytes int64) timeline.Event {
	return timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Device: dev, Peer: timeline.NoDevice,
		Stream: uint32(10 + dev), Start: start * us, End: end * us, Op: 77, Ranks: 2, Bytes: bytes}
}

// oneRank is a host launching gemm (10 µs) and relu (5 µs) with a 20 µs host gap between the
// launches: the host gap binds relu's start, so it is kept.
func oneRank(s *timeline.Strings) []timeline.Event {
	return []timeline.Event{
		launch(s, 0, 2, 1), launch(s, 22, 24, 2),
		kern(s, "gemm", 0, 7, 3, 13, 1), kern(s, "relu", 0, 7, 25, 30, 2),
	}
}

// Unchanged, the replay puts every point where it was measured.
func TestReplayUnchanged(t *testing.T) {
	s := timeline.NewStrings()
	evs := oneRank(s)
	g, err := depgraph.Build(evs, s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Replay(g, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for p, tm := range g.Time {
		if r.Times[p] != tm {
			t.Errorf("point %d replayed at %d; measured %d", p, r.Times[p], tm)
		}
	}
}

// Scaling gemm by 3 (30 µs, ending at 33) makes the stream, not relu's launch at 22 (3 µs of
// launch latency), the dependency that binds relu: it starts as gemm ends, at 33, and ends at 38.
// The host's calls keep their times: nothing they wait for changed.
func TestReplayScaleKernel(t *testing.T) {
	s := timeline.NewStrings()
	g, err := depgraph.Build(oneRank(s), s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Replay(g, s, Options{Scale: map[string]float64{"gemm": 3}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Scaled != 1 {
		t.Errorf("scaled %d kernels; want 1", r.Scaled)
	}
	want := [][2]int64{{0, 2 * us}, {3 * us, 33 * us}, {22 * us, 24 * us}, {33 * us, 38 * us}} // in start order
	for i, e := range r.Events {
		if got := [2]int64{e.Start, e.End}; got != want[i] {
			t.Errorf("%s replayed at %v; want %v", s.Lookup(e.Label), got, want[i])
		}
	}
	// Halving it instead leaves relu bound by its launch: it keeps its time.
	r, _ = Replay(g, s, Options{Scale: map[string]float64{"gemm": 0.5}})
	if e := r.Events[3]; e.Start != 25*us || e.End != 30*us {
		t.Errorf("relu after gemm halved: [%d, %d]; want [25 µs, 30 µs]", e.Start, e.End)
	}
	// A name no kernel contains (a glob, say) is refused rather than predict no change.
	if _, err := Replay(g, s, Options{Scale: map[string]float64{"ge*": 0.5}}); err == nil || !strings.Contains(err.Error(), `no kernel's name contains "ge*"`) {
		t.Errorf("--scale-kernel ge*=0.5: %v; want it refused, naming the NAME", err)
	}
}

// A two-rank all-reduce of 64 MiB on h100x8 is re-timed by the engine's NCCL model: both parts end
// when the later-ready rank (rank 1, after its 40 µs kernel) started plus the model's time.
func TestReplayCollectiveModel(t *testing.T) {
	s := timeline.NewStrings()
	const bytes = 64 << 20
	evs := []timeline.Event{
		kern(s, "fwd", 0, 10, 0, 10, 0), kern(s, "fwd", 1, 11, 0, 40, 0),
		allReduce(0, 10, 900, bytes), allReduce(1, 40, 900, bytes),
	}
	g, err := depgraph.Build(evs, s)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Builtin("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Replay(g, s, Options{Topology: topo, TraceDevices: 2})
	if err != nil {
		t.Fatal(err)
	}
	p := sim.PredictNCCL(sim.ModelOf(topo), topo, timeline.CollAllReduce, []engine.DeviceID{0, 1}, bytes, 0, 0)
	want := 40*us + int64(p.TimeNs(bytes))
	if r.Retimed != 1 {
		t.Fatalf("re-timed %d; want 1 (kept: %v)", r.Retimed, r.Kept)
	}
	for _, e := range r.Events {
		if e.Kind == timeline.KindCollective && e.End != want {
			t.Errorf("rank %d's part ends at %d; want %d (40 µs + the model's %d ns)", e.Device, e.End, want, int64(p.TimeNs(bytes)))
		}
	}
	// Without a topology, or without sizes, the measured time stays, and the reason is said.
	r, _ = Replay(g, s, Options{})
	if r.Retimed != 0 || len(r.KeptReasons()) != 1 || !strings.Contains(r.KeptReasons()[0], "no topology") {
		t.Errorf("no topology: re-timed %d, kept %v", r.Retimed, r.KeptReasons())
	}
	evs[2].Bytes, evs[3].Bytes = 0, 0
	g, _ = depgraph.Build(evs, s)
	r, _ = Replay(g, s, Options{Topology: topo})
	if r.Retimed != 0 || !strings.Contains(strings.Join(r.KeptReasons(), ";"), "does not record their size") {
		t.Errorf("no sizes: re-timed %d, kept %v", r.Retimed, r.KeptReasons())
	}
}

// A factor below 0 is refused.
func TestReplayBadScale(t *testing.T) {
	s := timeline.NewStrings()
	g, _ := depgraph.Build(oneRank(s), s)
	if _, err := Replay(g, s, Options{Scale: map[string]float64{"gemm": -1}}); err == nil || !strings.Contains(err.Error(), "gemm=-1") {
		t.Errorf("Replay with gemm=-1: %v; want an error naming it", err)
	}
}

// A synchronisation the host called after the GPU had finished did not wait; made slower, the
// GPU makes it wait: gemm ×3 ends at 33, and cudaDeviceSynchronize (20-21 as measured) returns then.
func TestReplaySyncWaitsForSlowerGPU(t *testing.T) {
	s := timeline.NewStrings()
	sync := launch(s, 20, 21, 0)
	sync.Label = s.ID("cudaDeviceSynchronize")
	evs := []timeline.Event{launch(s, 0, 2, 1), kern(s, "gemm", 0, 7, 3, 13, 1), sync}
	g, err := depgraph.Build(evs, s)
	if err != nil {
		t.Fatal(err)
	}
	if g.Inferred[depgraph.EdgeHostSync] != 1 {
		t.Fatalf("inferred host syncs %d; want 1", g.Inferred[depgraph.EdgeHostSync])
	}
	r, err := Replay(g, s, Options{Scale: map[string]float64{"gemm": 3}})
	if err != nil {
		t.Fatal(err)
	}
	if e := r.Events[2]; e.Start != 20*us || e.End != 33*us {
		t.Errorf("the synchronisation replayed at [%d, %d]; want [20 µs, 33 µs]", e.Start, e.End)
	}
}

// ScaleExact scales kernels named exactly as a key, and collectives too (an instance through its
// parts' name): the all-reduce's 860 µs together become 1,720 µs; "gem" names no kernel exactly.
func TestReplayScaleExact(t *testing.T) {
	s := timeline.NewStrings()
	ar0, ar1 := allReduce(0, 10, 900, 0), allReduce(1, 40, 900, 0)
	ar0.Label, ar1.Label = s.ID("nccl_ar"), s.ID("nccl_ar")
	evs := []timeline.Event{kern(s, "gemm", 0, 10, 0, 10, 0), kern(s, "gemm", 1, 11, 0, 40, 0), ar0, ar1}
	g, err := depgraph.Build(evs, s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Replay(g, s, Options{ScaleExact: map[string]float64{"nccl_ar": 2, "gem": 5}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Scaled != 0 || r.ScaledComm != 2 {
		t.Errorf("scaled %d compute, %d NCCL; want 0, 2", r.Scaled, r.ScaledComm)
	}
	for _, e := range r.Events {
		if e.Kind == timeline.KindCollective && e.End != (40+1720)*us {
			t.Errorf("rank %d's part ends at %d; want %d", e.Device, e.End, (40+1720)*us)
		}
	}
}

// lateWait is oneRank's pattern with gemm 100 µs and relu queued behind it, then a host that
// synchronises with the GPU and enqueues a stream wait (cudaStreamWaitEvent) on a second stream,
// whose only earlier op ran at the start: the wait ends the trace.
func lateWait(s *timeline.Strings) []timeline.Event {
	wait := func(start, end int64, op uint64) timeline.Event { // enqueued by the call of correlation op, at 116
		return timeline.Event{Kind: timeline.KindEventWait, Device: 0, Peer: timeline.NoDevice, Stream: 8, Start: start * us, End: end * us,
			Op: op, Queued: 116 * us, Label: s.ID("wait")}
	}
	call := func(name string, start, end int64, op uint64) timeline.Event {
		e := launch(s, start, end, op)
		e.Label = s.ID(name)
		return e
	}
	evs := []timeline.Event{
		launch(s, 0, 1, 1), launch(s, 2, 3, 2), launch(s, 4, 5, 3),
		kern(s, "copy", 0, 8, 1, 2, 1), kern(s, "gemm", 0, 7, 4, 104, 2), kern(s, "relu", 0, 7, 104, 114, 3),
		call("cudaDeviceSynchronize", 6, 115, 4), call("cudaStreamWaitEvent", 116, 117, 5), wait(118, 119, 5),
	}
	evs[3].Queued, evs[4].Queued, evs[5].Queued = 0, 2*us, 4*us
	return evs
}

// The replayed critical path's categories sum to its length and follow the change: gemm at 0.5
// and 1.01 takes its compute on the path to 60 and 111 µs (from 110), and the stream wait the host
// enqueued after synchronising moves with the host, not held at its measured time by its stream's
// lag (which put a whole trace's path in waits when its kernels were made faster).
func TestReplayCriticalPathFollowsScale(t *testing.T) {
	s := timeline.NewStrings()
	g, err := depgraph.Build(lateWait(s), s)
	if err != nil {
		t.Fatal(err)
	}
	a := g.CriticalPaths(nil, nil)[0]
	if got := a.ByCategory[depgraph.CatCompute]; got != 110*us {
		t.Fatalf("measured compute on the path %d ns; want 110 µs (%+v)", got, a)
	}
	for _, x := range []float64{0.5, 1.01} {
		r, err := Replay(g, s, Options{Scale: map[string]float64{"gemm": x}})
		if err != nil {
			t.Fatal(err)
		}
		b := g.CriticalPathsBound(r.Times, r.Weight, r.Bound)[0]
		var sum int64
		for _, v := range b.ByCategory {
			sum += v
		}
		if sum != b.EndNs-b.StartNs {
			t.Errorf("×%g: the path's categories sum to %d; its length is %d", x, sum, b.EndNs-b.StartNs)
		}
		wantCompute := int64(float64(100*us)*x) + 10*us
		if got := b.ByCategory[depgraph.CatCompute]; got != wantCompute {
			t.Errorf("×%g: compute on the path %d ns; want %d (%+v)", x, got, wantCompute, b)
		}
		if want := a.EndNs - a.StartNs + wantCompute - 110*us; b.EndNs-b.StartNs != want {
			t.Errorf("×%g: the path is %d ns long; want %d (the measured %d moved by gemm's change)", x, b.EndNs-b.StartNs, want, a.EndNs-a.StartNs)
		}
	}
}

// A forced algorithm applies where NCCL has it for the collective (Tree for an all-reduce) and B's
// events carry the choice the model made, not the measured one; where NCCL has no such algorithm
// for the op (Tree for an all-gather) NCCL's own choice is kept and counted.
func TestReplayForcedAlgorithm(t *testing.T) {
	topo, err := topology.Builtin("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	measured := timeline.PackNCCL(timeline.AlgoNVLS, timeline.ProtoSimple, 16)
	for _, c := range []struct {
		op        timeline.CollOp
		wantAlgo  timeline.NCCLAlgo
		notForced string
	}{
		{timeline.CollAllReduce, timeline.AlgoTree, ""},
		{timeline.CollAllGather, timeline.AlgoRing, "algo=tree: not an NCCL algorithm for all_gather: kept Ring for 1 collective"},
	} {
		s := timeline.NewStrings()
		evs := []timeline.Event{allReduce(0, 0, 100, 1<<20), allReduce(1, 0, 100, 1<<20)}
		for i := range evs {
			evs[i].Sub, evs[i].Aux = uint8(c.op), measured
		}
		g, err := depgraph.Build(evs, s)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Replay(g, s, Options{Topology: topo, TraceDevices: 2, Algo: timeline.AlgoTree, Proto: timeline.ProtoLL})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range r.Events {
			if a, p, _ := e.NCCLChoice(); a != c.wantAlgo || p != timeline.ProtoLL {
				t.Errorf("%s: B's part runs %s_%s; want %s_LL", c.op, a, p, c.wantAlgo)
			}
		}
		if got := strings.Join(r.NotForcedReasons(), "; "); got != c.notForced {
			t.Errorf("%s: not forced %q; want %q", c.op, got, c.notForced)
		}
	}
}

// --comm algo=nvls applies to all-gathers and reduce-scatters inside one host, as NCCL_ALGO=NVLS
// does, and times them as the engine's model does: NCCL's 25 µs NVLS latency, then the gathered
// 64 MiB through each rank's NVLink at NCCL's share of it (450 GB/s × 0.822; the tuner's own
// figure, 2 heads × 40 × 0.85 × ½ × ½ = 17 GB/s here, only chooses). Across hosts NCCL runs them
// with NVLS only with CollNet, which the model has not: the ring is kept and counted.
func TestReplayForcedNVLSAllGather(t *testing.T) {
	const bytes = 64 << 20
	one, err := topology.Builtin("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	two, err := topology.Builtin("h100x8x2")
	if err != nil {
		t.Fatal(err)
	}
	want := 25*us + int64(math.Round(bytes/(450*0.822)))
	for _, op := range []timeline.CollOp{timeline.CollAllGather, timeline.CollReduceScatter} {
		for _, c := range []struct {
			topo      engine.Topology
			peer      int32
			wantAlgo  timeline.NCCLAlgo
			notForced string
		}{
			{one, 1, timeline.AlgoNVLS, ""},
			{two, 8, timeline.AlgoRing, "algo=nvls: not in the engine's NCCL model on this topology for " + op.String() + ": kept Ring for 1 collective"},
		} {
			s := timeline.NewStrings()
			evs := []timeline.Event{allReduce(0, 0, 100, bytes), allReduce(c.peer, 0, 100, bytes)}
			for i := range evs {
				evs[i].Sub = uint8(op)
			}
			g, err := depgraph.Build(evs, s)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Replay(g, s, Options{Topology: c.topo, TraceDevices: 2, Algo: timeline.AlgoNVLS})
			if err != nil {
				t.Fatal(err)
			}
			if r.Retimed != 1 {
				t.Fatalf("%s on %s: re-timed %d; want 1 (kept: %v)", op, c.topo.Name, r.Retimed, r.Kept)
			}
			for _, e := range r.Events {
				a, p, _ := e.NCCLChoice()
				if a != c.wantAlgo || p != timeline.ProtoSimple {
					t.Errorf("%s on %s: B's part runs %s_%s; want %s_Simple", op, c.topo.Name, a, p, c.wantAlgo)
				}
				if c.wantAlgo == timeline.AlgoNVLS && math.Abs(float64(e.End-e.Start-want)) > 1 {
					t.Errorf("%s on %s: B's part takes %d ns; want %d (25 µs + 64 MiB at 369.9 GB/s)", op, c.topo.Name, e.End-e.Start, want)
				}
			}
			if got := strings.Join(r.NotForcedReasons(), "; "); got != c.notForced {
				t.Errorf("%s on %s: not forced %q; want %q", op, c.topo.Name, got, c.notForced)
			}
		}
	}
}

// A rank part that waited for its peers (a peer wait just before it) starts as the collective
// begins, replayed as measured: the join's edge to the wait's end weighs nothing. Re-timed by the
// NCCL model, it was given the collective's time too, so the wait ended, and the part began, as
// the collective ended: every such part replayed with no duration, and the stream's time in it
// became a gap without a cause.
func TestReplayPartAfterPeerWaitStartsAtTheJoin(t *testing.T) {
	topo, err := topology.Builtin("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	wait := timeline.Event{Kind: timeline.KindPeerWait, Sub: uint8(timeline.CollAllReduce), Device: 0, Peer: timeline.NoDevice, Stream: 10, Start: 0, End: 50 * us, Op: 77}
	evs := []timeline.Event{wait, allReduce(0, 50, 60, 64<<20), allReduce(1, 50, 60, 64<<20)}
	s := timeline.NewStrings()
	g, err := depgraph.Build(evs, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{}, {Topology: topo}} {
		r, err := Replay(g, s, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range r.Events {
			if e.Kind == timeline.KindCollective && e.Start != 50*us {
				t.Errorf("topology %q: device %d's part replayed at %d..%d; want it to start at the join, %d", o.Topology.Name, e.Device, e.Start, e.End, 50*us)
			}
			if e.Kind == timeline.KindPeerWait && e.End != 50*us {
				t.Errorf("topology %q: the peer wait replayed at %d..%d; want it to end at the join, %d", o.Topology.Name, e.Start, e.End, 50*us)
			}
		}
		if o.Topology.Hosts > 0 && r.Retimed != 1 {
			t.Errorf("re-timed %d collectives; want 1", r.Retimed)
		}
	}
}

// An op's enqueue moves as its readiness did: as the first of the waits just before it began.
// Stream 1 runs k1 (0–10 µs), then waits for an event x records on stream 2 (12–101 µs: the host
// enqueued k2 at 12, and the wait began then), then runs k2 (101–111). With x halved the event
// comes at 50 and k2 runs at 51, but its enqueue stays at 12, as the wait's start does: the 2 µs
// before the wait are host wait, as measured. Moved with k2's start (to before time 0), it left
// the gap before the wait without a cause, and the analysis called the time "other". The same
// with two waits in a row (the second for an event y records on stream 3 at 100, as an event
// wait and then a wait for the peers are), whose second begins later than measured.
func TestReplayQueuedMovesWithTheWaitBefore(t *testing.T) {
	wait := func(start, end int64, ev uint32) timeline.Event {
		return timeline.Event{Kind: timeline.KindEventWait, Device: 0, Peer: timeline.NoDevice, Stream: 1, Start: start * us, End: end * us, Aux: ev, Queued: 12 * us}
	}
	record := func(stream uint32, at int64, ev uint32) timeline.Event {
		return timeline.Event{Kind: timeline.KindEventRecord, Device: 0, Peer: timeline.NoDevice, Stream: stream, Start: at * us, End: at * us, Aux: ev}
	}
	for _, tc := range []struct {
		name string
		evs  func(s *timeline.Strings) []timeline.Event
	}{
		{"one wait", func(s *timeline.Strings) []timeline.Event {
			return []timeline.Event{kern(s, "x", 0, 2, 0, 100, 0), record(2, 100, 5), wait(12, 101, 5), kern(s, "y", 0, 3, 0, 1, 0)}
		}},
		{"two waits", func(s *timeline.Strings) []timeline.Event {
			return []timeline.Event{kern(s, "x", 0, 2, 0, 59, 0), record(2, 59, 5), wait(12, 60, 5),
				kern(s, "y", 0, 3, 0, 100, 0), record(3, 100, 6), wait(60, 101, 6)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := timeline.NewStrings()
			k2 := kern(s, "k2", 0, 1, 101, 111, 0)
			k2.Queued = 12 * us
			evs := append(append([]timeline.Event{kern(s, "k1", 0, 1, 0, 10, 0)}, tc.evs(s)...), k2)
			sort.SliceStable(evs, func(i, j int) bool { return evs[i].Start < evs[j].Start })
			g, err := depgraph.Build(evs, s)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Replay(g, s, Options{Scale: map[string]float64{"x": 0.5, "y": 0.5}})
			if err != nil {
				t.Fatal(err)
			}
			a := analysis.New(timeline.Meta{})
			for i, e := range r.Events {
				if s.Lookup(e.Label) == "k2" && (e.Start != 51*us || e.Queued != 12*us) {
					t.Errorf("k2 replayed at %d, enqueued at %d; want 51 µs, enqueued at 12 µs", e.Start, e.Queued)
				}
				a.Emit(&r.Events[i])
			}
			by := a.Result(nil).StreamIdle.ByCause
			if by["other"] != 0 || by["host_wait"] != 2*us {
				t.Errorf("replayed stream gaps by cause %v; want 2 µs of host wait and no other, as measured", by)
			}
		})
	}
}
