package depgraph

import (
	"errors"
	"fmt"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// ev builders for hand-built traces. Times are µs, turned into ns.
func kern(dev int32, stream uint32, start, end int64, op uint64) timeline.Event {
	return timeline.Event{Kind: timeline.KindKernel, Device: dev, Peer: timeline.NoDevice, Stream: stream, Start: start * 1000, End: end * 1000, Op: op}
}

func call(strs *timeline.Strings, name string, start, end int64, op uint64) timeline.Event {
	return timeline.Event{Kind: timeline.KindRuntime, Device: timeline.NoDevice, Peer: timeline.NoDevice, Start: start * 1000, End: end * 1000,
		Op: op, Aux: 1, Label: strs.ID(name)}
}

func coll(dev int32, stream uint32, start, end int64, op uint64) timeline.Event {
	return timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Device: dev, Peer: timeline.NoDevice,
		Stream: stream, Start: start * 1000, End: end * 1000, Op: op, Ranks: 2, Bytes: 1 << 20}
}

func step(start, end int64) timeline.Event {
	return timeline.Event{Kind: timeline.KindStep, Device: timeline.NoDevice, Peer: timeline.NoDevice, Start: start * 1000, End: end * 1000}
}

// TestBuildOneRank: a host launches two kernels and synchronises; the graph has the stream,
// thread, launch and host-sync edges, the sync's inferred, and the critical path is worked out by
// hand: the launch edge from the first call's start at 0 to its kernel at 5 (5 µs, launch: start to
// start, as HTA's), kernel 5-15 (compute 10), kernel 15-35 (compute 20), the sync's end at 36
// after the kernel (1 µs, launch: the host's), then the step's end at 40 (4 µs, waits).
func TestBuildOneRank(t *testing.T) {
	s := timeline.NewStrings()
	evs := []timeline.Event{
		step(0, 40),
		call(s, "cudaLaunchKernel", 0, 2, 11),
		call(s, "cudaLaunchKernel", 3, 4, 12),
		call(s, "cudaDeviceSynchronize", 5, 36, 0),
		kern(0, 7, 5, 15, 11),
		kern(0, 7, 15, 35, 12),
	}
	g, err := Build(evs, s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[EdgeKind]int{EdgeDuration: 6, EdgeStream: 1, EdgeThread: 2, EdgeLaunch: 2, EdgeHostSync: 1, EdgeStep: 2}
	for _, k := range EdgeKinds() {
		if g.Counts[k] != want[k] {
			t.Errorf("%s edges = %d; want %d", k, g.Counts[k], want[k])
		}
	}
	if g.Inferred[EdgeHostSync] != 1 {
		t.Errorf("inferred host syncs = %d; want 1", g.Inferred[EdgeHostSync])
	}
	paths := g.CriticalPaths(nil, nil)
	if len(paths) != 1 {
		t.Fatalf("paths = %d; want 1", len(paths))
	}
	got := paths[0].ByCategory
	wantCat := [catCount]int64{CatCompute: 30000, CatLaunch: 6000, CatWaits: 4000}
	if got != wantCat {
		t.Errorf("critical path by category = %v; want %v", got, wantCat)
	}
	if len(paths[0].Nodes) != 2 { // the two kernels
		t.Errorf("critical path nodes = %v; want the 2 kernels", paths[0].Nodes)
	}
}

// TestBuildCollectiveStraggler: two ranks all-reduce; rank 1 computes longer before it, so the
// collective's parts are one instance whose join waits for rank 1, and the critical path runs
// through rank 1's kernel (40 µs), not rank 0's wait inside the collective.
func TestBuildCollectiveStraggler(t *testing.T) {
	evs := []timeline.Event{
		kern(0, 1, 0, 10, 0),
		kern(1, 2, 0, 40, 0),
		coll(0, 3, 10, 60, 99), // rank 0 waits in the kernel from 10 to 40
		coll(1, 4, 40, 60, 99),
	}
	evs[2].Stream, evs[3].Stream = 1, 2
	g, err := Build(evs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Instances) != 1 || g.Unmatched != 0 {
		t.Fatalf("instances = %d, unmatched %d; want 1, 0", len(g.Instances), g.Unmatched)
	}
	if j := g.Instances[0].Join; g.Time[j] != 40000 {
		t.Errorf("join at %d; want 40000 (the last rank ready)", g.Time[j])
	}
	p := g.CriticalPaths(nil, nil)[0]
	want := [catCount]int64{CatCompute: 40000, CatCommunication: 20000}
	if p.ByCategory != want {
		t.Errorf("critical path = %v; want %v", p.ByCategory, want)
	}
}

// TestBuildInferredEventWait: an Nsight-style event wait (no record in the trace) on stream 2 is
// bound to the op of stream 1 that ended while it waited, and counted inferred; a wait during
// which nothing ended gets no edge.
func TestBuildInferredEventWait(t *testing.T) {
	wait := func(stream uint32, start, end int64) timeline.Event {
		return timeline.Event{Kind: timeline.KindEventWait, Device: 0, Peer: timeline.NoDevice, Stream: stream, Start: start * 1000, End: end * 1000, Aux: 5}
	}
	evs := []timeline.Event{kern(0, 1, 0, 30, 0), wait(2, 10, 31), kern(0, 2, 31, 40, 0), wait(3, 50, 52)}
	g, err := Build(evs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g.Counts[EdgeEvent] != 1 || g.Inferred[EdgeEvent] != 1 {
		t.Errorf("event edges = %d, inferred %d; want 1, 1", g.Counts[EdgeEvent], g.Inferred[EdgeEvent])
	}
}

// TestBuildContradicted: of two ops of one stream that overlap, the second depends on the first's
// start, not its end, and the contradicted finish-to-start is counted.
func TestBuildContradicted(t *testing.T) {
	g, err := Build([]timeline.Event{kern(0, 1, 0, 10, 0), kern(0, 1, 9, 20, 0)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g.Counts[EdgeStream] != 1 || g.Contradicted[EdgeStream] != 1 {
		t.Errorf("stream edges = %d, contradicted %d; want 1, 1", g.Counts[EdgeStream], g.Contradicted[EdgeStream])
	}
	for _, e := range g.Edges {
		if e.Kind == EdgeStream && (e.From != Start(0) || e.To != Start(1)) {
			t.Errorf("stream edge %v; want the first op's start to the second's", e)
		}
	}
}

// TestBuildSendRecv: a send and its receive (one op id) are one instance; a collective whose
// other rank is not in the trace is unmatched.
func TestBuildSendRecv(t *testing.T) {
	send := timeline.Event{Kind: timeline.KindSend, Device: 0, Peer: 1, Stream: 1, Start: 0, End: 5000, Op: 7}
	recv := timeline.Event{Kind: timeline.KindRecv, Device: 1, Peer: 0, Stream: 2, Start: 1000, End: 5000, Op: 7}
	g, err := Build([]timeline.Event{send, recv, coll(0, 1, 10, 20, 8)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Instances) != 1 || g.Instances[0].Kind != timeline.KindSend || g.Counts[EdgeSendRecv] != 4 || g.Unmatched != 1 {
		t.Errorf("instances %v, send_recv edges %d, unmatched %d; want one send/recv, 4, 1", g.Instances, g.Counts[EdgeSendRecv], g.Unmatched)
	}
}

// TestOrderCycle: points that must each come before the other are refused.
func TestOrderCycle(t *testing.T) {
	g := &Graph{Time: []int64{0, 0}, Edges: []Edge{{From: 0, To: 1}, {From: 1, To: 0}}}
	if err := g.order(); !errors.Is(err, ErrCycle) {
		t.Errorf("order = %v; want ErrCycle", err)
	}
}

// A profiler's step begins where the host got to: after the host's last call before it, not
// after the step before (whose end a slow GPU op may have bound).
func TestBuildStepAfterHostCall(t *testing.T) {
	s := timeline.NewStrings()
	evs := []timeline.Event{step(0, 10), call(s, "cudaLaunchKernel", 11, 12, 0), step(15, 30)}
	g, err := Build(evs, s)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range g.Edges {
		if e.Kind == EdgeStep && e.To == Start(g.Steps[1]) {
			found = e.From == End(1) // the call
			if !found {
				t.Errorf("the second step starts after point %d; want the call's end %d", e.From, End(1))
			}
		}
	}
	if !found {
		t.Error("no edge into the second step's start")
	}
}

// Collective parts whose op ids are each rank's own (an importer's correlation ids) are matched by
// sequence: the n-th all-reduce of a size on each device is one instance, inferred; a part left
// without a partner, or whose partner never overlapped it, is unmatched.
func TestBuildCollectiveBySequence(t *testing.T) {
	evs := []timeline.Event{
		coll(0, 1, 0, 50, 101), coll(0, 1, 100, 150, 102), coll(0, 1, 200, 250, 103),
		coll(1, 2, 10, 50, 201), coll(1, 2, 120, 150, 202), coll(1, 2, 260, 300, 203), // the third never overlaps rank 0's
	}
	g, err := Build(evs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Instances) != 2 || g.Unmatched != 2 {
		t.Fatalf("instances %d, unmatched %d; want 2, 2", len(g.Instances), g.Unmatched)
	}
	if g.Inferred[EdgeCollective] != g.Counts[EdgeCollective] || g.Counts[EdgeCollective] != 8 {
		t.Errorf("collective edges %d, inferred %d; want 8, all inferred", g.Counts[EdgeCollective], g.Inferred[EdgeCollective])
	}
	if j := g.Instances[1].Join; g.Time[j] != 120000 {
		t.Errorf("the second instance joins at %d; want 120000 (rank 1 ready last)", g.Time[j])
	}
}

// TestJobSteps: two ranks' traces merged, each rank marking steps 551 and 552 (on its device):
// the job ran 2 steps, each from its first rank's start to its last rank's end, and its critical
// path ends with the rank that ended it last.
func TestJobSteps(t *testing.T) {
	s := timeline.NewStrings()
	rankStep := func(n uint32, dev int32, start, end int64) timeline.Event {
		e := step(start, end)
		e.Aux, e.Device = n, dev
		return e
	}
	rankCall := func(dev int32, start, end int64, op uint64) timeline.Event {
		e := call(s, "cudaLaunchKernel", start, end, op)
		e.Device = dev
		return e
	}
	evs := []timeline.Event{
		rankStep(551, 0, 0, 100), rankCall(0, 0, 2, 1), kern(0, 7, 5, 95, 1),
		rankStep(551, 1, 2, 105), rankCall(1, 2, 4, 2), kern(1, 7, 6, 103, 2),
		rankStep(552, 0, 100, 200), rankCall(0, 100, 102, 3), kern(0, 7, 105, 195, 3),
		rankStep(552, 1, 105, 210), rankCall(1, 105, 107, 4), kern(1, 7, 110, 208, 4),
	}
	g, err := Build(evs, s)
	if err != nil {
		t.Fatal(err)
	}
	if jobs := g.JobSteps(); len(jobs) != 2 || len(jobs[0]) != 2 || len(jobs[1]) != 2 {
		t.Fatalf("JobSteps = %v; want 2 steps of 2 ranks", jobs)
	}
	type span struct{ start, end, compute int64 }
	want := []span{{0, 105000, 97000}, {100000, 210000, 98000}}
	for name, paths := range map[string][]Path{"binding": g.CriticalPaths(nil, nil), "hta": g.CriticalPathsHTA(nil, nil, nil)} {
		if len(paths) != len(want) {
			t.Fatalf("%s: %d paths; want %d (one per step of the job)", name, len(paths), len(want))
		}
		for i, p := range paths {
			if p.StartNs != want[i].start || p.EndNs != want[i].end {
				t.Errorf("%s: step %d spans %d–%d ns; want %d–%d", name, i, p.StartNs, p.EndNs, want[i].start, want[i].end)
			}
			if p.ByCategory[CatCompute] != want[i].compute {
				t.Errorf("%s: step %d compute on the path = %d ns; want %d (the kernel of the rank that ended last)",
					name, i, p.ByCategory[CatCompute], want[i].compute)
			}
		}
	}
}

// An NCCL op admitted at the nanosecond a compute kernel of another stream of its device ended
// waited for the kernel's SMs: an inferred sm edge, kernel end to op start (to its peer wait's
// start when it waited for its peers there). None from a kernel of its own stream (the stream
// edge), of another device, that ended a nanosecond earlier, nor to an op a recorded call
// launched (its launch explains its start).
func TestBuildSMWait(t *testing.T) {
	s := timeline.NewStrings()
	wait := timeline.Event{Kind: timeline.KindPeerWait, Device: 1, Peer: timeline.NoDevice, Stream: 3, Start: 40000, End: 45000}
	launched := coll(2, 3, 40, 50, 11)
	late := coll(3, 2, 10, 20, 0)
	late.Start++
	evs := []timeline.Event{
		kern(0, 1, 0, 10, 0), coll(0, 2, 10, 20, 0), // admitted as the kernel ended: an edge
		kern(0, 2, 20, 30, 0), coll(0, 2, 30, 35, 0), // the kernel of its own stream: none
		kern(1, 1, 0, 40, 0), wait, coll(1, 3, 45, 50, 0), // to the peer wait's start
		kern(1, 1, 50, 60, 0), coll(0, 4, 60, 70, 0), // another device's kernel: none
		call(s, "ncclKernel", 30, 31, 11), kern(2, 1, 0, 40, 0), launched, // launched: none
		kern(3, 1, 0, 10, 0), late, // a nanosecond after the kernel ended: none
	}
	g, err := Build(evs, s)
	if err != nil {
		t.Fatal(err)
	}
	type hop struct {
		from, to timeline.Kind
		dev      int32
		at       int64
	}
	var got []hop
	for _, e := range g.Edges {
		if e.Kind == EdgeSM {
			from, to := g.Event(g.NodeOf(e.From)), g.Event(g.NodeOf(e.To))
			if e.From != End(g.NodeOf(e.From)) || e.To != Start(g.NodeOf(e.To)) || !e.Inferred || from.Device != to.Device {
				t.Errorf("sm edge %+v: want an inferred edge from a kernel's end to an op's start on its device", e)
			}
			got = append(got, hop{from.Kind, to.Kind, to.Device, to.Start})
		}
	}
	want := []hop{{timeline.KindKernel, timeline.KindCollective, 0, 10000}, {timeline.KindKernel, timeline.KindPeerWait, 1, 40000}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sm edges %v; want %v", got, want)
	}
}

// TestUnknownTimeNoNode: an op of unknown time (timeline.AuxTimeUnknown) is no node of the graph,
// so the critical path and the graph's counts are those of the trace without it: as a node of 0 µs
// it would be an unmatched collective part and a stream dependency at a time it may not have run.
func TestUnknownTimeNoNode(t *testing.T) {
	base := []timeline.Event{
		step(0, 80),
		kern(0, 1, 0, 10, 0),
		kern(1, 2, 0, 40, 0),
		coll(0, 1, 10, 60, 99),
		coll(1, 2, 40, 60, 99),
		kern(0, 1, 60, 70, 0),
	}
	unknown := coll(0, 1, 62, 62, 100)
	unknown.Aux |= timeline.AuxTimeUnknown
	with := append(append([]timeline.Event{}, base...), unknown)
	g0, err := Build(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	g1, err := Build(with, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g1.Stats != g0.Stats {
		t.Errorf("stats with an op of unknown time %+v; want %+v (as without it)", g1.Stats, g0.Stats)
	}
	p0, p1 := g0.CriticalPaths(nil, nil), g1.CriticalPaths(nil, nil)
	if len(p0) != 1 || len(p1) != 1 || p1[0].ByCategory != p0[0].ByCategory || p1[0].EndNs != p0[0].EndNs {
		t.Errorf("critical paths with an op of unknown time %+v; want %+v", p1, p0)
	}
}
