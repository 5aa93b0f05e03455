package whatif

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/engine/sim"
	"github.com/xfertop/xfertop/timeline"
)

// DeviceKernel names a kernel on one device (its global id).
type DeviceKernel struct {
	Device int32
	Name   string
}

// Options say what to change in a replay. The zero value changes nothing and keeps every
// measured duration.
type Options struct {
	// Topology, when set (Topology.Hosts > 0), re-times collectives whose size and ranks the trace
	// records with the engine's NCCL cost model on it; trace device d is its device d.
	Topology engine.Topology
	// Scale multiplies the duration of the compute kernels whose name contains a key ("*": all);
	// a kernel that several keys match takes the product of their factors.
	Scale map[string]float64
	// ScaleExact multiplies the duration of the compute kernels named exactly as a key (it is
	// looked at before Scale): the ratios another trace's durations give (--kernels-from).
	ScaleExact map[string]float64
	// ScaleDevice is ScaleExact for a kernel name on one device, looked at before it: a rank
	// whose kernels ran slower or faster than its peers' keeps that in the ratio, where the
	// name's mean over every rank would spread it over all of them.
	ScaleDevice map[DeviceKernel]float64
	// FromDevice is each kernel name's mean duration (ns) on a device in another trace of the
	// workload (--kernels-from), looked at before ScaleDevice: a kernel takes it over the mean
	// duration of the kernels of its name on its device in its own window (a step, as Stream
	// cuts the trace; the whole trace for Run), times its own. A GPU that slowed down during the
	// trace (a throttle from 1.1 s on) has its later steps' kernels scaled by their own mean, not
	// by one mixing the healthy first step's: the trace's mean left them 6.7% slower than the
	// other trace's and predicted a job 3.6% slower than its healthy run (128 GPUs). ScaleDevice
	// (the whole trace's ratio) stands in for a name the window's counted kernels do not have.
	FromDevice map[DeviceKernel]float64
	// Algo and Proto force NCCL's algorithm and protocol (0: the tuner's choice), as NCCL_ALGO
	// and NCCL_PROTO do.
	Algo  timeline.NCCLAlgo
	Proto timeline.NCCLProto
	// TraceDevices is the number of devices of the trace. With ScaleOut (the topology was given
	// more hosts than the trace ran on), a collective over all of them spans all of the
	// topology's: the job scaled out, each rank doing the work it did.
	TraceDevices int
	ScaleOut     bool
	// Recorded is the topology the trace ran on (a recording's own; zero when the trace does not
	// say). The unchanged replay, whose error is the noise floor, times collectives on it, not on
	// Topology: on the changed topology its error would be the very effect measured. On it, a
	// collective keeps the algorithm and protocol it was recorded with unless Algo or Proto force
	// others.
	Recorded engine.Topology
	// RunAlgo and RunProto are the algorithm and protocol the run itself forced (its nccl_algo and
	// nccl_proto knobs; 0: NCCL chose). They hold on any topology unless Algo or Proto override them.
	RunAlgo  timeline.NCCLAlgo
	RunProto timeline.NCCLProto
	// Faults are the link faults the collectives and sends are timed with on Topology (nil: none):
	// a recording's own faults, less those the change heals. A collective or send whose links a
	// fault slowed when it ran (its measured start) takes the time the simulator's links would
	// give it with the fault (sim.LinkFaults).
	Faults *sim.LinkFaults
	// RecordedFaults are the recording's link faults on Recorded: the unchanged replay's faults,
	// and what a send's measured time holds (a send on a healed link is re-timed).
	RecordedFaults *sim.LinkFaults
	// HealGPU are the recording's throttled GPUs (gpu_slow faults, bound to Recorded) the change
	// takes out: the kernels that ran on such a GPU while the fault was in effect take factor of
	// their measured duration (the throttle made them 1/factor as long).
	HealGPU []fault.Fault
}

// Result is one replay: the replayed ops and what the replay did.
type Result struct {
	Events []timeline.Event // the graph's ops at their replayed times, in start order
	Node   []int32          // the graph node of each of Events
	Times  []int64          // each point's replayed time
	Weight []int64          // each edge's replayed weight
	// Bound is the edge that bound each point in the replay (its time is the edge's source time
	// plus weight, plus the lag the edge kept when it bound the point as measured), -1 for a point
	// with no incoming edge. The replayed critical path follows it: the edges that bind after the
	// change, not those whose source plus weight is latest without the kept lags.
	Bound []int32
	// Retimed counts the collective instances (or lone rank parts) the NCCL model timed; Kept
	// those that kept their measured time, by reason.
	Retimed int
	Kept    map[string]int
	// RetimedP2P counts the sends (each with its receive) timed on a path the change touched.
	RetimedP2P int
	Scaled     int // compute kernels whose duration was scaled
	// FaultedColl and FaultedP2P count the collectives and sends timed with a link fault
	// (Options.Faults) that slowed them; Healed the kernels of a healed GPU (Options.HealGPU).
	FaultedColl, FaultedP2P, Healed int
	// NotForced counts the re-timed collectives that could not take Options' forced algorithm or
	// protocol (NCCL has no such algorithm for the op, or the model has none on the topology), by
	// what was kept instead: NCCL's own choice, as NCCL_ALGO falls back.
	NotForced  map[string]int
	choice     map[int32]uint32 // each re-timed collective part's modelled choice, packed as Aux
	ScaledComm int              // collective parts (or instances' parts) scaled by ScaleExact
	matched    map[string]int   // the kernels each --scale-kernel name scaled
	// commMatched counts the NCCL kernels each --scale-kernel name (not *) contains: a name that
	// matched only those is told so.
	commMatched map[string]int
}

// KeptReasons lists Kept's reasons with their counts, most first.
func (r *Result) KeptReasons() []string {
	whys := make([]string, 0, len(r.Kept))
	for why := range r.Kept {
		whys = append(whys, why)
	}
	sort.Slice(whys, func(i, j int) bool {
		a, b := r.Kept[whys[i]], r.Kept[whys[j]]
		return a > b || a == b && whys[i] < whys[j]
	})
	out := make([]string, len(whys))
	for i, why := range whys {
		out[i] = fmt.Sprintf("%d kept at their measured time (%s)", r.Kept[why], why)
	}
	return out
}

// Replay re-executes g under o: every point comes after its dependencies plus their (changed)
// weights; the dependency that bound it as measured keeps its lag, the time it did not explain (a
// host gap, a launch latency). A point that another dependency now binds loses that lag: a
// kernel whose stream is now the later of its dependencies starts as its stream frees, not a
// launch latency after. Compute kernels keep their measured duration or are scaled;
// collectives are re-timed by the engine's NCCL model where o has a topology and the trace their
// sizes, else keep the measured time of the instance (the last ready rank's start to the first
// rank's end). This is a list-scheduling pass over the graph with the engine's cost model for
// collectives, not a run of the simulator: contention between concurrent transfers and link
// sharing are not modelled beyond what the NCCL model's bandwidths assume.
func Replay(g *depgraph.Graph, names depgraph.Names, o Options) (*Result, error) {
	r, err := replay(g, names, o, nil)
	if err != nil {
		return nil, err
	}
	if err := r.unmatchedScale(o); err != nil {
		return nil, err
	}
	r.events(g)
	return r, nil
}

// window is what a replay of a window's graph takes from the windows before: the points they
// finalised, pinned at their replayed times, and which points it finalises (only what lies at
// those is counted).
type window struct {
	final func(p int32) bool
	// pin is point p's replayed time and binding edge when an earlier window finalised it.
	pin func(p int32) (t int64, bound int32, ok bool)
}

// counts reports whether what lies at point p is counted in the replay's tallies.
func (w *window) counts(p int32) bool { return w == nil || w.final(p) }

// replay is Replay in window w (nil: the whole graph), without its events.
func replay(g *depgraph.Graph, names depgraph.Names, o Options, w *window) (*Result, error) {
	r := &Result{Kept: map[string]int{}, NotForced: map[string]int{}, choice: map[int32]uint32{}, matched: map[string]int{}, commMatched: map[string]int{}}
	r.Weight = make([]int64, len(g.Edges))
	for i, e := range g.Edges {
		r.Weight[i] = e.W
	}
	if err := r.scale(g, names, o, w); err != nil {
		return nil, err
	}
	if err := r.retime(g, o, w); err != nil {
		return nil, err
	}
	r.Times = make([]int64, len(g.Time))
	r.Bound = make([]int32, len(g.Time))
	for _, p := range g.Order {
		in := g.In[p]
		r.Bound[p] = -1
		if w != nil {
			if t, b, ok := w.pin(p); ok {
				r.Times[p], r.Bound[p] = t, b
				continue
			}
		}
		if len(in) == 0 {
			r.Times[p] = g.Time[p]
			continue
		}
		measured := int64(-1 << 63)
		for _, i := range in {
			e := &g.Edges[i]
			measured = max(measured, g.Time[e.From]+e.W)
		}
		lag := max(0, g.Time[p]-measured)
		replayed, bound := int64(-1<<63), int32(-1)
		for _, i := range in {
			e := &g.Edges[i]
			t := r.Times[e.From] + r.Weight[i]
			if g.Time[e.From]+e.W == measured {
				t += lag // the binding dependency's lag: a launch latency, a host gap
			}
			// A duration binds before a dependency on ties, as the critical path's walk prefers.
			if t > replayed || t == replayed && g.Edges[bound].Kind != depgraph.EdgeDuration && e.Kind == depgraph.EdgeDuration {
				replayed, bound = t, i
			}
		}
		r.Times[p], r.Bound[p] = replayed, bound
	}
	return r, nil
}

// ErrOption is wrapped by the errors that blame an option (what the change asks for), not the trace.
var ErrOption = errors.New("not a change this trace can take")

// scale scales the duration edges of the kernels o.Scale names.
func (r *Result) scale(g *depgraph.Graph, names depgraph.Names, o Options, w *window) error {
	if len(o.Scale) == 0 && len(o.ScaleExact) == 0 && len(o.ScaleDevice) == 0 && len(o.HealGPU) == 0 && len(o.FromDevice) == 0 {
		return nil
	}
	here := windowMeans(g, names, o, w)
	for k, x := range o.Scale {
		if x < 0 {
			return fmt.Errorf("--scale-kernel %s=%g: %w: a factor is 0 or more", k, x, ErrOption)
		}
	}
	for i, e := range g.Edges {
		counted := w.counts(e.To)
		n, coll := g.NodeOf(e.From), false
		switch {
		case e.Kind == depgraph.EdgeDuration && n >= 0 && g.Event(n).Kind == timeline.KindKernel:
		case e.Kind == depgraph.EdgeDuration && n >= 0 && g.Event(n).Kind == timeline.KindCollective && e.W > 0:
			coll = true // a lone rank part
		case e.Kind == depgraph.EdgeCollective && n < 0 && e.To%2 == 1 && g.Event(g.NodeOf(e.To)).Kind == timeline.KindCollective:
			n, coll = g.NodeOf(e.To), true // an instance's join to a part's end
		default:
			continue
		}
		if !coll && o.healGPU(g.Event(n)) {
			r.Weight[i] = int64(float64(r.Weight[i]) * o.healFactor(g.Event(n)))
			if counted {
				r.Healed++
			}
		}
		name := ""
		if names != nil {
			name = names.Lookup(g.Event(n).Label)
		}
		dk := DeviceKernel{g.Event(n).Device, name}
		x, ok := 0.0, false
		if m, in := here[dk]; in && m[1] > 0 && m[0] > 0 {
			x, ok = o.FromDevice[dk]/(m[0]/m[1]), true
		}
		if !ok {
			x, ok = o.ScaleDevice[dk]
		}
		if !ok {
			x, ok = o.ScaleExact[name]
		}
		if ok {
			r.Weight[i] = int64(float64(r.Weight[i]) * x)
			switch {
			case !counted:
			case coll:
				r.ScaledComm++
			default:
				r.Scaled++
			}
			continue
		}
		if coll {
			for k := range o.Scale {
				if k != "*" && strings.Contains(name, k) && counted {
					r.commMatched[k]++
				}
			}
			continue // --scale-kernel scales compute kernels
		}
		// Every NAME the kernel's name contains applies, their factors multiplied: the answer
		// does not depend on the order the flags came in (a map's, here).
		f, hit := 1.0, false
		for k, x := range o.Scale {
			if k == "*" || strings.Contains(name, k) {
				f, hit = f*x, true
				if counted {
					r.matched[k]++
				}
			}
		}
		if hit {
			r.Weight[i] = int64(float64(r.Weight[i]) * f)
			if counted {
				r.Scaled++
			}
		}
	}
	return nil
}

// unmatchedScale refuses a --scale-kernel name that matched no kernel: it would predict "no
// change" for a change never made.
func (r *Result) unmatchedScale(o Options) error {
	for k, x := range o.Scale {
		if r.matched[k] == 0 && r.commMatched[k] > 0 {
			return fmt.Errorf("--scale-kernel %s=%g: %w: the kernels whose name contains %q are NCCL's (%d), communication, not compute: their time is the NCCL model's (give --comm to change its algorithm or protocol, --topology its machine) or, measured, another trace's (--kernels-from)", k, x, ErrOption, k, r.commMatched[k])
		}
		if r.matched[k] == 0 {
			return fmt.Errorf("--scale-kernel %s=%g: %w: no kernel's name contains %q (NAME is matched as a substring, not a pattern; * alone scales every kernel)", k, x, ErrOption, k)
		}
	}
	return nil
}

// retime times the collectives with the NCCL model where it can: an instance's join-to-end
// edges, or a lone rank part's duration.
func (r *Result) retime(g *depgraph.Graph, o Options, w *window) error {
	inst := map[int32]int{} // a join point's instance
	for i, in := range g.Instances {
		inst[in.Join] = i
	}
	if err := r.retimeP2P(g, o, inst, w); err != nil {
		return err
	}
	type timed struct {
		ns  int64
		why string
	}
	seen := map[int32]timed{}
	for i, e := range g.Edges {
		var parts []int32
		switch n := g.NodeOf(e.From); {
		case n < 0 && e.Kind == depgraph.EdgeCollective && g.Instances[inst[e.From]].Kind == timeline.KindCollective &&
			g.Event(g.NodeOf(e.To)).Kind == timeline.KindCollective:
			// The join's edges to the parts' ends: not those to the ends of the peer waits before
			// them, which end as the collective begins (weight 0), not as it ends.
			parts = g.Instances[inst[e.From]].Parts
		case n >= 0 && e.Kind == depgraph.EdgeDuration && g.Event(n).Kind == timeline.KindCollective && e.W > 0:
			parts = []int32{n}
		default:
			continue
		}
		t, ok := seen[e.From]
		if !ok {
			// An instance is counted at its join, a lone part at its end.
			counted := w.counts(e.From)
			if len(parts) == 1 {
				counted = w.counts(e.To)
			}
			ns, why, err := r.model(g, parts, o, counted)
			if err != nil {
				return err
			}
			t = timed{ns, why}
			seen[e.From] = t
			switch {
			case !counted:
			case why != "":
				r.Kept[why]++
			default:
				r.Retimed++
			}
		}
		if t.why == "" {
			r.Weight[i] = t.ns
		}
	}
	r.fuseGroups(g, inst, func(from int32) (int64, bool) { t, ok := seen[from]; return t.ns, ok && t.why == "" })
	return nil
}

// fuseGroups gives the collectives of one NCCL group launch, which run as one fused kernel
// sharing its links (their parts start and end together), the sum of their modelled times each:
// the model times a collective alone on the machine.
func (r *Result) fuseGroups(g *depgraph.Graph, inst map[int32]int, modelled func(join int32) (int64, bool)) {
	type groupKey struct {
		group uint32
		dev   int32
		start int64
	}
	sum := map[groupKey]int64{}
	keyOf := func(j int32) (groupKey, bool) {
		in := g.Instances[inst[j]]
		e := g.Event(in.Parts[0])
		return groupKey{e.Group, e.Device, e.Start}, e.Group != 0 && in.Kind == timeline.KindCollective
	}
	for _, in := range g.Instances {
		if k, ok := keyOf(in.Join); ok {
			if ns, ok := modelled(in.Join); ok {
				sum[k] += ns
			}
		}
	}
	for i, e := range g.Edges {
		if g.NodeOf(e.From) >= 0 || e.Kind != depgraph.EdgeCollective || g.NodeOf(e.To) < 0 || e.To%2 == 0 {
			continue
		}
		if k, ok := keyOf(e.From); ok {
			if _, ok := modelled(e.From); ok && g.Event(g.NodeOf(e.To)).Kind == timeline.KindCollective {
				r.Weight[i] = sum[k]
			}
		}
	}
}

// model is the NCCL model's time for the collective whose rank parts are parts, or why it keeps
// its measured time.
func (r *Result) model(g *depgraph.Graph, parts []int32, o Options, counted bool) (int64, string, error) {
	e := g.Event(parts[0])
	op := timeline.CollOp(e.Sub)
	// What the trace lacks comes first: a topology would not help those.
	switch {
	case op == timeline.CollSendRecv || op == 0:
		return 0, "send/receive kernels: peers and sizes unknown", nil
	case e.Bytes <= 0:
		return 0, "the trace does not record their size", nil
	case e.Ranks < 2:
		return 0, "the trace does not record their ranks", nil
	case o.Topology.Hosts == 0:
		return 0, "no topology to model them on: give --topology", nil
	}
	var ranks []engine.DeviceID
	if len(parts) == int(e.Ranks) {
		for _, p := range parts {
			ranks = append(ranks, engine.DeviceID(g.Event(p).Device))
		}
		if o.ScaleOut && len(ranks) == o.TraceDevices && o.Topology.Devices() > len(ranks) {
			ranks = o.Topology.AllDevices() // the job scaled out: the collective over all its ranks
		}
	} else if int(e.Ranks) <= o.Topology.Devices() {
		ranks = o.Topology.AllDevices()[:e.Ranks] // the other ranks are not in the trace
	} else {
		return 0, fmt.Sprintf("%d ranks, more than topology %s has devices", e.Ranks, o.Topology.Name), nil
	}
	for _, d := range ranks {
		if !o.Topology.Valid(d) {
			return 0, "", fmt.Errorf("--topology %s has %d devices; the trace uses device %d", o.Topology.Name, o.Topology.Devices(), d)
		}
	}
	algo, proto := o.ncclAsk(e)
	p := sim.PredictNCCL(sim.ModelOf(o.Topology), o.Topology, op, ranks, e.Bytes, algo, proto)
	for _, n := range parts {
		r.choice[n] = timeline.PackNCCL(p.Algo, p.Proto, p.Channels)
	}
	ns := int64(p.TimeNs(e.Bytes))
	if !o.Faults.Empty() {
		start := e.Start // its parts start together, as the last rank posts it
		for _, n := range parts {
			start = max(start, g.Event(n).Start)
		}
		x, touched, ends := o.Faults.Collective(op, ranks, e.Bytes, p, start)
		if touched && !ends {
			return 0, "a fault takes a link of theirs down for the rest of the run", nil
		}
		if touched && x > 0 && counted {
			r.FaultedColl++
		}
		ns += x
	}
	if !counted {
		return ns, "", nil
	}
	if o.Algo != 0 && p.Algo != o.Algo && o.Proto != 0 && sim.PredictNCCL(sim.ModelOf(o.Topology), o.Topology, op, ranks, e.Bytes, o.Algo, 0).Algo == o.Algo {
		// The algorithm alone is there: the pair is not (NVLS runs Simple only).
		r.NotForced[fmt.Sprintf("algo=%s,proto=%s: %s has no %s protocol in NCCL: kept %s_%s", strings.ToLower(o.Algo.String()), strings.ToLower(o.Proto.String()), o.Algo, o.Proto, p.Algo, p.Proto)]++
	} else if o.Algo != 0 && p.Algo != o.Algo {
		r.NotForced[fmt.Sprintf("algo=%s: %s for %s: kept %s", strings.ToLower(o.Algo.String()), whyNoAlgo(op, o.Algo), op, p.Algo)]++
	} else if o.Proto != 0 && p.Proto != o.Proto {
		r.NotForced[fmt.Sprintf("proto=%s: %s has no %s protocol: kept %s", strings.ToLower(o.Proto.String()), p.Algo, o.Proto, p.Proto)]++
	}
	return ns, "", nil
}

// ncclAlgos are the algorithms NCCL (2.28) has for each collective; the others have Ring only
// (broadcast, reduce) or none (all-to-all, sends and receives run point to point).
var ncclAlgos = map[timeline.CollOp][]timeline.NCCLAlgo{
	timeline.CollAllReduce:     {timeline.AlgoRing, timeline.AlgoTree, timeline.AlgoNVLS, timeline.AlgoNVLSTree},
	timeline.CollAllGather:     {timeline.AlgoRing, timeline.AlgoNVLS},
	timeline.CollReduceScatter: {timeline.AlgoRing, timeline.AlgoNVLS},
	timeline.CollBroadcast:     {timeline.AlgoRing},
	timeline.CollReduce:        {timeline.AlgoRing},
}

// whyNoAlgo says why a forced algorithm a was not used for op: NCCL has none such for it, or the
// engine's model has not (on this topology).
func whyNoAlgo(op timeline.CollOp, a timeline.NCCLAlgo) string {
	for _, x := range ncclAlgos[op] {
		if x == a {
			return "not in the engine's NCCL model on this topology"
		}
	}
	return "not an NCCL algorithm"
}

// NotForcedReasons lists NotForced with its counts, most first.
func (r *Result) NotForcedReasons() []string {
	whys := make([]string, 0, len(r.NotForced))
	for why := range r.NotForced {
		whys = append(whys, why)
	}
	sort.Slice(whys, func(i, j int) bool {
		a, b := r.NotForced[whys[i]], r.NotForced[whys[j]]
		return a > b || a == b && whys[i] < whys[j]
	})
	out := make([]string, len(whys))
	for i, why := range whys {
		n, noun := r.NotForced[why], "collectives"
		if n == 1 {
			noun = "collective"
		}
		out[i] = fmt.Sprintf("%s for %d %s", why, n, noun)
	}
	return out
}

// events writes the replayed ops, in start order, as analyses read them.
func (r *Result) events(g *depgraph.Graph) {
	r.Node = make([]int32, len(g.Nodes))
	for n := range r.Node {
		r.Node[n] = int32(n)
	}
	start := func(n int32) int64 { return r.Times[depgraph.Start(n)] }
	sort.SliceStable(r.Node, func(i, j int) bool { return start(r.Node[i]) < start(r.Node[j]) })
	r.Events = make([]timeline.Event, len(g.Nodes))
	for i, n := range r.Node {
		r.Events[i] = r.event(g, n)
	}
}

// event is node n's event at its replayed times. Its Queued (when the host enqueued it) moves as
// its readiness did: as the waits just before it on its stream began, where it waited there (for
// an event, for its peers: the stream reached it, and it was posted, as the first wait began),
// else as it started. Moved with its start, the op's enqueue left the wait before it: a stage replayed
// faster, whose receives now waited long for their peers, was enqueued after the gap before the
// wait in A (host wait) and before it in B, which the analysis can only call "other" (0.6 ms a
// step of "other" gaps read as 304 ms).
func (r *Result) event(g *depgraph.Graph, n int32) timeline.Event {
	e := *g.Event(n)
	s, end := r.Times[depgraph.Start(n)], r.Times[depgraph.End(n)]
	if e.Queued > 0 {
		if w, ok := waitJustBefore(g, n); ok {
			e.Queued = max(0, min(e.Queued+r.Times[depgraph.Start(w)]-g.Time[depgraph.Start(w)], s))
		} else {
			e.Queued = max(0, e.Queued+s-e.Start)
		}
	}
	e.Start, e.End = s, max(s, end)
	if c, ok := r.choice[n]; ok {
		e.Aux = c // B's algorithm and protocol, not the measured ones
	}
	return e
}

// waitJustBefore is the first of the waits before busy op n on its stream that it waited in: the
// event or peer wait that ended as n began, or, where another wait ended as that one began (an
// event wait, then the wait for the peers), the first of them.
func waitJustBefore(g *depgraph.Graph, n int32) (int32, bool) {
	if !g.Event(n).Kind.IsBusy() {
		return 0, false
	}
	first, found := n, false
	for {
		w, ok := waitEndingAt(g, first)
		if !ok {
			return first, found
		}
		first, found = w, true
	}
}

// waitEndingAt is the event or peer wait on n's stream that ended as n began, by the stream
// dependency between them.
func waitEndingAt(g *depgraph.Graph, n int32) (int32, bool) {
	for _, i := range g.In[depgraph.Start(n)] {
		e := &g.Edges[i]
		w := g.NodeOf(e.From)
		if e.Kind != depgraph.EdgeStream || w < 0 || e.From != depgraph.End(w) {
			continue
		}
		if k := g.Event(w).Kind; (k == timeline.KindEventWait || k == timeline.KindPeerWait) && g.Time[e.From] == g.Time[depgraph.Start(n)] {
			return w, true
		}
	}
	return 0, false
}

// healGPU reports whether kernel e ran on a throttled GPU that the change heals, while the
// throttle was in effect.
func (o *Options) healGPU(e *timeline.Event) bool {
	for i := range o.HealGPU {
		if f := &o.HealGPU[i]; f.Active(e.Start) && int32(f.Device(o.Recorded)) == e.Device {
			return true
		}
	}
	return false
}

// healFactor is what a kernel on a healed GPU takes of its measured duration: the throttles'
// factors (a throttle at 0.5 made it twice as long).
func (o *Options) healFactor(e *timeline.Event) float64 {
	x := 1.0
	for i := range o.HealGPU {
		if f := &o.HealGPU[i]; f.Active(e.Start) && int32(f.Device(o.Recorded)) == e.Device {
			x *= f.Factor
		}
	}
	return x
}

// windowMeans is, for --kernels-from (Options.FromDevice), the total measured duration and count
// of the kernels and collective parts of each name on each device that this window counts (its
// own ops, not those kept of earlier windows), as the plan sums them in the other trace: the
// events' durations.
func windowMeans(g *depgraph.Graph, names depgraph.Names, o Options, w *window) map[DeviceKernel][2]float64 {
	if len(o.FromDevice) == 0 || names == nil {
		return nil
	}
	here := map[DeviceKernel][2]float64{}
	for n := range g.Nodes {
		e := g.Event(int32(n))
		if (e.Kind != timeline.KindKernel && e.Kind != timeline.KindCollective) || !w.counts(depgraph.End(int32(n))) {
			continue
		}
		dk := DeviceKernel{e.Device, names.Lookup(e.Label)}
		if _, ok := o.FromDevice[dk]; !ok {
			continue
		}
		v := here[dk]
		here[dk] = [2]float64{v[0] + float64(e.Dur()), v[1] + 1}
	}
	return here
}
