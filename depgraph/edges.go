package depgraph

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// streamKey names one device stream.
type streamKey struct {
	dev    int32
	stream uint32
}

// threadKey names one host process's runtime calls (a rank's, in a job's merged traces).
type threadKey struct {
	host uint16
	dev  int32
	pid  uint32
}

// byStream is the nodes of each device stream, in start order.
func (b *builder) byStream() map[streamKey][]int32 {
	m := map[streamKey][]int32{}
	for n := range b.g.Nodes {
		e := b.g.Event(int32(n))
		if e.Stream != 0 && e.Device >= 0 && e.Kind != timeline.KindRuntime && e.Kind != timeline.KindGraphLaunch {
			k := streamKey{e.Device, e.Stream}
			m[k] = append(m[k], int32(n))
		}
	}
	return m
}

// streams adds each op's dependency on the previous op of its stream.
func (b *builder) streams() {
	for _, ns := range b.byStream() {
		b.streamOrder(ns)
	}
}

// streamOrder links the ops of one stream. The ops of one NCCL group launch run as one fused op:
// they start together, each after the op before the group, and the op after the group follows
// the member that ended last.
func (b *builder) streamOrder(ns []int32) {
	pred, last := int32(-1), ns[0]
	for i := 1; i < len(ns); i++ {
		prev, e := b.g.Event(ns[i-1]), b.g.Event(ns[i])
		if e.Group != 0 && e.Group == prev.Group && e.Start == prev.Start {
			if pred >= 0 {
				b.stream(pred, ns[i])
			}
		} else {
			pred = last
			b.stream(pred, ns[i])
		}
		if e.Start != prev.Start || e.End >= b.g.Time[End(last)] {
			last = ns[i]
		}
	}
}

// stream adds n's dependency on the end of pred, the op before it on its stream; where n started
// before pred ended (a wait the trace records as it was enqueued, clocks rounded apart), that one
// is counted contradicted and n depends on pred's start instead: a stream runs its ops in order.
func (b *builder) stream(pred, n int32) {
	if b.g.Time[End(pred)] <= b.g.Time[Start(n)] {
		b.add(End(pred), Start(n), 0, EdgeStream, false)
		return
	}
	b.contradicted(EdgeStream, Start(n))
	b.add(Start(pred), Start(n), 0, EdgeStream, false)
}

// threads adds each runtime call's dependency on the latest-ending earlier call of its process
// that ended before it began. Calls that overlap it (nested driver calls, other threads: the
// event model keeps the process, not the thread) are not ordered with it.
func (b *builder) threads() {
	last := map[threadKey]int32{}
	for n := range b.g.Nodes {
		e := b.g.Event(int32(n))
		if e.Kind != timeline.KindRuntime && e.Kind != timeline.KindGraphLaunch {
			continue
		}
		k := threadKey{e.Host, e.Device, e.Aux}
		if e.Kind == timeline.KindGraphLaunch {
			k.pid = 0 // a graph launch's Aux is its node count
		}
		p, ok := last[k]
		switch {
		case !ok:
			last[k] = int32(n)
		case b.g.Time[End(p)] <= e.Start:
			b.add(End(p), Start(int32(n)), 0, EdgeThread, false)
			last[k] = int32(n)
		case e.End > b.g.Time[End(p)]:
			b.contradicted(EdgeThread, Start(int32(n)))
			last[k] = int32(n)
		default:
			b.contradicted(EdgeThread, Start(int32(n)))
		}
	}
}

// launchKey finds a runtime call by correlation: within a rank (merged traces) or a host.
type launchKey struct {
	op   uint64
	dev  int32
	host uint16
}

// runtimeCalls maps correlation ids to the runtime calls that carry them (several where the
// processes of a host number their correlations alike).
func (b *builder) runtimeCalls() map[launchKey][]int32 {
	m := map[launchKey][]int32{}
	for n := range b.g.Nodes {
		e := b.g.Event(int32(n))
		if (e.Kind == timeline.KindRuntime || e.Kind == timeline.KindGraphLaunch) && e.Op != 0 {
			k := launchKey{e.Op, e.Device, e.Host}
			m[k] = append(m[k], int32(n))
		}
	}
	return m
}

// launcher is the runtime call that launched GPU op e, if the trace has it: the one of its
// correlation that started at e's launch time (importers set Queued to it), or the only one.
func (b *builder) launcher(calls map[launchKey][]int32, e *timeline.Event) (int32, bool) {
	if e.Op == 0 {
		return 0, false
	}
	ns := calls[launchKey{e.Op, e.Device, e.Host}]
	if len(ns) == 0 {
		ns = calls[launchKey{e.Op, timeline.NoDevice, e.Host}]
	}
	for _, n := range ns {
		if e.Queued > 0 && b.g.Time[Start(n)] == e.Queued {
			return n, true
		}
	}
	if len(ns) == 1 && e.Queued <= 0 {
		return ns[0], true
	}
	return 0, false
}

// launches adds each GPU op's dependency on the start of the runtime call that launched it (the
// launch may return before the op starts, or after: start to start, as Holistic Trace Analysis's
// launch edge). A stream's event wait is enqueued by a runtime call too (cudaStreamWaitEvent):
// without that edge a wait the host enqueued late is held in place only by its stream's lag from
// the trace's start, and a replay that shortens the GPU's work leaves it, and the chain of waits
// after it, at its measured time: the end of a trace whose kernels were made faster.
func (b *builder) launches() {
	calls := b.runtimeCalls()
	for n := range b.g.Nodes {
		e := b.g.Event(int32(n))
		if !e.Kind.IsBusy() && (e.Kind != timeline.KindEventWait || e.Stream == 0 || e.Device < 0) {
			continue
		}
		if r, ok := b.launcher(calls, e); ok {
			b.add(Start(r), Start(int32(n)), 0, EdgeLaunch, false)
		}
	}
}

// endIndex is busy GPU nodes by device, in end order: what a wait may have waited for.
type endIndex map[int32][]int32

func (b *builder) endIndex() endIndex {
	ix := endIndex{}
	for n := range b.g.Nodes {
		e := b.g.Event(int32(n))
		if e.Kind.IsBusy() && e.Device >= 0 {
			ix[e.Device] = append(ix[e.Device], int32(n))
		}
	}
	for _, ns := range ix {
		slices.SortFunc(ns, func(x, y int32) int { return cmp.Compare(b.g.Time[End(x)], b.g.Time[End(y)]) })
	}
	return ix
}

// latestEnd is the node of ns (in end order), not excluded, that ended last within [lo, hi].
func (b *builder) latestEnd(ns []int32, lo, hi int64, exclude func(int32) bool) (int32, bool) {
	i, _ := slices.BinarySearchFunc(ns, hi+1, func(n int32, t int64) int { return cmp.Compare(b.g.Time[End(n)], t) })
	for i--; i >= 0 && b.g.Time[End(ns[i])] >= lo; i-- {
		if !exclude(ns[i]) {
			return ns[i], true
		}
	}
	return 0, false
}

// events adds each event wait's dependency on its record (the latest record of its event before
// the wait ended). A trace that records waits but not records (Nsight's CUPTI synchronisation
// table) gets one inferred: the op of another stream of the device that ended last while the
// wait lasted. A wait during which no such op ended did not wait, and gets none.
func (b *builder) events() {
	records := map[uint32][]int32{}
	for n := range b.g.Nodes {
		if e := b.g.Event(int32(n)); e.Kind == timeline.KindEventRecord {
			records[e.Aux] = append(records[e.Aux], int32(n))
		}
	}
	var ix endIndex
	for n := range b.g.Nodes {
		w := b.g.Event(int32(n))
		if w.Kind != timeline.KindEventWait {
			continue
		}
		if rs := records[w.Aux]; len(rs) > 0 {
			// The latest record before the wait ended, on another stream: a stream's own record
			// is ordered with its wait by the stream.
			i, _ := slices.BinarySearchFunc(rs, w.End+1, func(r int32, t int64) int { return cmp.Compare(b.g.Time[Start(r)], t) })
			for i--; i >= 0 && b.g.Event(rs[i]).Device == w.Device && b.g.Event(rs[i]).Stream == w.Stream; i-- {
			}
			if i >= 0 {
				b.add(End(rs[i]), End(int32(n)), 0, EdgeEvent, false)
			}
			continue
		}
		if ix == nil {
			ix = b.endIndex()
		}
		other := func(p int32) bool { return b.g.Event(p).Stream == w.Stream }
		if p, ok := b.latestEnd(ix[w.Device], w.Start, w.End, other); ok {
			b.add(End(p), End(int32(n)), 0, EdgeEvent, true)
		}
	}
}

// sms adds, inferred, each NCCL op's dependency on the compute kernel that held its device's SMs:
// an NCCL kernel needs SMs, and one admitted at the very nanosecond a compute kernel of another
// stream of its device ended waited for that kernel (the engine's device scheduler admits it
// then; a GPU's, when the kernel's blocks leave). Its admission is its start, or the start of the
// peer wait just before it (it waited there for its peers once admitted). Without the edge the
// wait was a lag the replay kept as measured: a what-if that sped the kernel up (a slow GPU
// replayed with a healthy one's kernels) still waited the slow kernel's time. Only where the trace
// records no launch of the op (the engine's recordings): a launched op's start has its launch and
// stream to explain it, and on a profiler's trace, whose NCCL kernels wait for the gradients on
// their stream by events it does not record, a start at a kernel's end is that wait, not the SMs.
func (b *builder) sms() {
	waitBefore := b.peerWaits()
	launched := map[int32]bool{}
	for _, e := range b.g.Edges {
		if e.Kind == EdgeLaunch {
			launched[b.g.NodeOf(e.To)] = true
		}
	}
	var ix endIndex
	for n := range b.g.Nodes {
		e := b.g.Event(int32(n))
		if _, waited := waitBefore[int32(n)]; waited || launched[int32(n)] || e.Device < 0 || !e.Kind.IsNCCL() && e.Kind != timeline.KindPeerWait {
			continue
		}
		if ix == nil {
			ix = b.endIndex()
		}
		t := b.g.Time[Start(int32(n))]
		other := func(p int32) bool {
			k := b.g.Event(p)
			return k.Kind != timeline.KindKernel || k.Stream == e.Stream
		}
		if p, ok := b.latestEnd(ix[e.Device], t, t, other); ok {
			b.add(End(p), Start(int32(n)), 0, EdgeSM, true)
		}
	}
}

// hostSyncs binds the end of host calls to the GPU ops they waited for: a call's end to the op it
// launched, by correlation, when that op ended inside the call (a synchronous copy, a pageable
// "async" one); and a synchronisation's end to the op of its rank or host that ended last before
// it returned (inferred: the trace does not say which stream or event it waited on, so it waits
// for all of them, as HTA's context synchronisation does). That op may have ended before the call
// began: then the call did not wait, but would, were the op slower.
func (b *builder) hostSyncs() {
	calls := b.runtimeCalls()
	launched := map[int32]int32{}
	for n := range b.g.Nodes {
		if e := b.g.Event(int32(n)); e.Kind.IsBusy() {
			if r, ok := b.launcher(calls, e); ok {
				launched[r] = int32(n)
			}
		}
	}
	ix := b.endIndex()
	for n := range b.g.Nodes {
		c := b.g.Event(int32(n))
		if c.Kind != timeline.KindRuntime {
			continue
		}
		if op, ok := launched[int32(n)]; ok && b.g.Time[End(op)] <= c.End && b.g.Time[End(op)] >= c.Start {
			b.add(End(op), End(int32(n)), 0, EdgeHostSync, false)
			continue
		}
		if !strings.Contains(b.label(int32(n)), "Synchronize") {
			continue
		}
		if p, ok := b.waitedFor(ix, c); ok {
			b.add(End(p), End(int32(n)), 0, EdgeHostSync, true)
		}
	}
}

// waitedFor is the GPU op of c's rank (or host) that ended last before host call c returned.
func (b *builder) waitedFor(ix endIndex, c *timeline.Event) (int32, bool) {
	none := func(int32) bool { return false }
	if c.Device >= 0 {
		return b.latestEnd(ix[c.Device], math.MinInt64, c.End, none)
	}
	best, found := int32(0), false
	for dev, ns := range ix {
		if len(ns) == 0 || b.g.Event(ns[0]).Host != c.Host || dev < 0 {
			continue
		}
		if p, ok := b.latestEnd(ns, math.MinInt64, c.End, none); ok && (!found || b.g.Time[End(p)] > b.g.Time[End(best)]) {
			best, found = p, true
		}
	}
	return best, found
}
