//go:build cuda

package cuda

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	// Checks the driver before gorgonia.org/cu's init can exit the process without a reason.
	_ "github.com/xfertop/xfertop/engine/cuda/preflight"
	"github.com/xfertop/xfertop/engine/eventslot"
	"github.com/xfertop/xfertop/engine/nccl"
	"github.com/xfertop/xfertop/timeline"
)

// spinPTX is the compute step: every thread spins on the GPU's global timer until ns have passed,
// so a kernel occupies the whole GPU for the time a scenario asks. Loaded through the driver's JIT.
const spinPTX = `
.version 7.0
.target sm_70
.address_size 64
.visible .entry spin(.param .u64 ns)
{
	.reg .pred %p;
	.reg .b64 %t0, %t1, %d, %n;
	ld.param.u64 %n, [ns];
	mov.u64 %t0, %globaltimer;
LOOP:
	mov.u64 %t1, %globaltimer;
	sub.u64 %d, %t1, %t0;
	setp.lt.u64 %p, %d, %n;
	@%p bra LOOP;
	ret;
}
`

// Config configures the backend.
type Config struct {
	Topology engine.Topology
	Fit      engine.Fit
	// NCCLPath is where NCCL is loaded from ("" for XFER_NCCL_LIB or libnccl.so.2). NCCL is loaded
	// on the first communicator, so copy-only workloads run without it.
	NCCLPath string
	// AnchorEvery is how often each GPU's clock is re-anchored (see clock.go); 0 means every second.
	AnchorEvery time.Duration
	// NCCLAlgo and NCCLProto, when set (the nccl_algo and nccl_proto knobs), are put in the
	// process environment as NCCL_ALGO and NCCL_PROTO before NCCL is first used: NCCL reads them
	// when it creates a communicator, so they apply to every communicator created afterwards.
	NCCLAlgo  timeline.NCCLAlgo
	NCCLProto timeline.NCCLProto
	// Faults are injected by holding back ranks' host threads (faults.go): host_slow and hang
	// before a collective. New refuses the others (fault.OnRealGPUs).
	Faults []fault.Fault
}

type gpu struct {
	ctx    cu.CUContext
	start  cu.Event // the session's time 0 on this GPU
	spin   cu.Function
	sms    int
	mu     sync.Mutex
	dev    map[int64][]cu.DevicePtr // scratch device buffers by size class
	pinned map[int64]unsafe.Pointer
	allocs int       // buffers allocated so far (dev and pinned), under mu: tests check none is made while an op is timed
	timing eventPool // events bracketing each op (timed)
	marks  eventPool // events the workload records and waits on (no timing)
	clock  clock     // written by New, then by the poller alone
}

// eventPool keeps one GPU's CUDA events of one kind that are done with, for reuse: creating one per
// use would leak them in an endless run.
type eventPool struct {
	mu    sync.Mutex
	flags cu.EventFlags
	free  []cu.Event
}

// take returns an event of the pool's kind in the caller's current context (the pool's GPU).
func (p *eventPool) take() (cu.Event, error) {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		ev := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return ev, nil
	}
	p.mu.Unlock()
	return cu.MakeEvent(p.flags)
}

// give returns an event no one waits on any more.
func (p *eventPool) give(ev cu.Event) {
	p.mu.Lock()
	p.free = append(p.free, ev)
	p.mu.Unlock()
}

type streamState struct {
	rank engine.DeviceID
	gpu  int
	s    cu.Stream
	prio engine.Priority
	tl   *streamTiming
}

// eventState is one workload event: its CUDA event (taken from its GPU's marks pool when first
// recorded) and a channel closed once it is, since CUDA cannot wait for a record not yet made.
type eventState struct {
	ev       cu.Event
	gpu      int
	recorded chan struct{}
	once     sync.Once
	owned    bool // ev belongs to a captured graph, which records it at each launch: never pooled
}

type inflight struct {
	op         engine.StreamOp
	rank       engine.DeviceID
	gpu        int
	start, end cu.Event
	queued     time.Duration // host time since the session start
	group      uint32
	posted     time.Time
	owned      bool // start and end belong to a captured graph: not given back to the pool
	// tl is the op's stream's timing; seq its number there (0 for a graph's op). A zero start:
	// the op started when the op before it on its stream ended.
	tl  *streamTiming
	seq uint64
}

// Backend runs the engine on real GPUs. It implements engine.Backend.
type Backend struct {
	cfg   Config
	topo  engine.Topology
	fit   engine.Fit
	sink  timeline.Sink
	strs  *timeline.Strings
	gpus  []*gpu
	wall0 time.Time

	mu        sync.Mutex
	streams   []streamState
	events    eventslot.Table[*eventState]
	queues    [][]engine.Command // per rank, submitted since the last Run
	nccl      *nccl.NCCL
	comms     map[uint32]*commState
	nextGroup atomic.Uint32
	followed  atomic.Int64  // ops posted without a start event (streamTiming), for tests
	runs      atomic.Uint64 // Run calls so far: a graph's timing events serve one launch per run
	graphs    map[graphKey]*rankGraph
	watchdog  time.Duration

	anchorEvery time.Duration

	done     chan inflight // host threads → poller
	instant  chan timeline.Event
	barriers map[uint64]*barrier
	pairs    map[pairKey]*pair // send/receive pairs carried by copies (--fit)
	// copies are, by pair, the session times at which the poller saw a copy that carries a send
	// (--fit) begin, until its receive is reported (copyUnknown: the send failed). The poller's
	// alone.
	copies map[pairKey]int64
	err    error

	retired []uint32           // communicators the client dropped: destroyed after the current run
	faults  []engine.CommFault // communicators NCCL reported an asynchronous error for

	running running // the ops running on the GPUs, as InFlight reads them

	rankFaults [][]fault.Fault // by rank: the faults acting on its host thread
	// collPosted[r] is whether rank r's host thread has posted a collective (with rankFaults;
	// each written by its rank's host thread only).
	collPosted []bool
}

// barrier is one barrier instance: each rank's stream records an event where it arrives, and every
// stream waits for all of them on the device.
type barrier struct {
	n       int
	mu      sync.Mutex
	events  []cu.Event
	arrived chan struct{} // closed when all ranks have recorded
}

// commState is one communicator's NCCL handles. ranks is fixed at creation; comms, err and ready
// are written under Backend.mu (comms once, when ready is set; err also when NCCL reports a fault).
type commState struct {
	once  sync.Once
	ranks []engine.DeviceID
	gpus  []int // the ranks' GPUs, each once: NCCL rank i is on gpus[i]
	comms []nccl.Comm
	ready bool
	err   error
}

// New opens every GPU the fit uses and loads the compute kernel on each.
func New(cfg Config, sink timeline.Sink, strs *timeline.Strings) (*Backend, error) {
	// The driver was initialised when the program started (engine/cuda/preflight, then gorgonia.org/cu).
	rankFaults, err := bindFaults(cfg.Faults, cfg.Topology)
	if err != nil {
		return nil, err
	}
	b := &Backend{rankFaults: rankFaults, collPosted: make([]bool, len(rankFaults)), cfg: cfg, topo: cfg.Topology, fit: cfg.Fit, sink: sink, strs: strs, streams: make([]streamState, 1),
		queues: make([][]engine.Command, cfg.Topology.Devices()), comms: map[uint32]*commState{},
		watchdog: 10 * time.Second, anchorEvery: cmp.Or(cfg.AnchorEvery, defaultAnchorEvery), barriers: map[uint64]*barrier{}, pairs: map[pairKey]*pair{}, copies: map[pairKey]int64{}, graphs: map[graphKey]*rankGraph{}}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for g := range cfg.Fit.GPUs {
		dev, err := cu.GetDevice(g)
		if err != nil {
			return nil, fmt.Errorf("cuda: GPU %d: %w", g, err)
		}
		ctx, err := dev.RetainPrimaryCtx()
		if err != nil {
			return nil, fmt.Errorf("cuda: GPU %d context: %w", g, err)
		}
		if err := cu.SetCurrentContext(ctx); err != nil {
			return nil, err
		}
		mod, err := cu.LoadData(spinPTX)
		if err != nil {
			return nil, fmt.Errorf("cuda: GPU %d: loading the compute kernel (PTX JIT): %w", g, err)
		}
		fn, err := mod.Function("spin")
		if err != nil {
			return nil, err
		}
		sms, _ := dev.Attribute(cu.MultiprocessorCount)
		start, err := cu.MakeEvent(cu.DefaultEvent)
		if err != nil {
			return nil, err
		}
		b.gpus = append(b.gpus, &gpu{ctx: ctx, start: start, spin: fn, sms: max(sms, 1), dev: map[int64][]cu.DevicePtr{}, pinned: map[int64]unsafe.Pointer{},
			timing: eventPool{flags: cu.DefaultEvent}, marks: eventPool{flags: cu.DisableTiming}})
	}
	// Time 0 on every GPU, as close together as the host can make it.
	b.wall0 = time.Now()
	for _, g := range b.gpus {
		if err := cu.SetCurrentContext(g.ctx); err != nil {
			return nil, err
		}
		if err := g.start.Record(cu.Stream{}); err != nil {
			return nil, fmt.Errorf("cuda: session start event: %w", err)
		}
	}
	if err := b.alignClocks(); err != nil {
		return nil, fmt.Errorf("cuda: aligning the GPUs' clocks: %w", err)
	}
	return b, nil
}

// Name returns "cuda".
func (b *Backend) Name() string { return "cuda" }

// Topology returns the ranks' topology.
func (b *Backend) Topology() engine.Topology { return b.topo }

// Strings returns the label table.
func (b *Backend) Strings() *timeline.Strings { return b.strs }

// Now returns host time since the session start.
func (b *Backend) Now() int64 { return time.Since(b.wall0).Nanoseconds() }

// SetWatchdog sets how long an op may run before the run ends with an alert.
func (b *Backend) SetWatchdog(ns int64) {
	if ns > 0 {
		b.watchdog = time.Duration(ns)
	}
}

// SetBatching is accepted; batched ops launch one group per flush on this backend.
func (b *Backend) SetBatching(int, int64) {}

// NewStream creates a stream on the rank's GPU with the priority (CUDA's range on the H100 is 0..-3).
func (b *Backend) NewStream(rank engine.DeviceID, prio engine.Priority) engine.StreamID {
	g := b.fit.GPU(rank)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = cu.SetCurrentContext(b.gpus[g].ctx)
	s, err := cu.MakeStreamWithPriority(int(prio), cu.NonBlocking)
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("cuda: stream on GPU %d: %w", g, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.streams = append(b.streams, streamState{rank: rank, gpu: g, s: s, prio: prio, tl: newStreamTiming()})
	return engine.StreamID(len(b.streams) - 1)
}

// NewEvent creates an event; its CUDA event is taken when it is recorded, on the recording stream's
// GPU. Ids are recycled as the simulator's are (eventslot), so an endless live run holds a bounded
// number of CUDA events.
func (b *Backend) NewEvent() engine.EventID {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, st, prev, ok := b.events.New()
	if !ok {
		if b.err == nil {
			b.err = fmt.Errorf("cuda: more than %d events created and not yet recorded", eventslot.MaxLive)
		}
		return 0
	}
	*st = &eventState{recorded: make(chan struct{})}
	if prev != nil && !prev.owned {
		// A slot is reused only once its event was recorded (Done), at least eventslot.ReuseFrom
		// events ago and in an earlier run: nothing waits on its CUDA event any more.
		b.gpus[prev.gpu].marks.give(prev.ev)
	}
	return engine.EventID(id)
}

// Submit queues cmd for the rank's host thread.
func (b *Backend) Submit(rank engine.DeviceID, cmd engine.Command) {
	b.mu.Lock()
	b.queues[rank] = append(b.queues[rank], cmd)
	b.mu.Unlock()
}

// Run executes everything submitted: one goroutine per rank issues its commands on its GPU, and
// the poller reports each op when the GPU says it is done.
func (b *Backend) Run(ctx context.Context) error {
	if b.err != nil {
		return b.err
	}
	b.mu.Lock()
	queues := b.queues
	b.queues = make([][]engine.Command, len(queues))
	b.mu.Unlock()
	b.runs.Add(1)
	b.done = make(chan inflight, 1024)
	b.instant = make(chan timeline.Event, 1024)
	// A run that ends early (the watchdog, a cancel) stops its host threads through ctx and waits
	// for them, so none outlives the run or hands an op to the next run's poller.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var hosts sync.WaitGroup
	errs := make(chan error, len(queues))
	for rank, q := range queues {
		if len(q) == 0 {
			continue
		}
		hosts.Add(1)
		go func() {
			defer hosts.Done()
			if err := b.host(ctx, engine.DeviceID(rank), q); err != nil {
				errs <- err
			}
		}()
	}
	go func() {
		hosts.Wait()
		close(b.done)
	}()
	err := b.poll(ctx)
	stop()
	b.drain()
	select {
	case herr := <-errs:
		if err == nil {
			err = herr
		}
	default:
	}
	b.destroyRetired()
	return err
}

// drain waits until the host threads have ended (the channel they hand ops over on is closed),
// emitting the event records they still report. When the poller stopped early, the ops they still
// hand over are abandoned with the run.
func (b *Backend) drain() {
	for {
		select {
		case _, ok := <-b.done:
			if ok {
				continue
			}
			for {
				select {
				case e := <-b.instant:
					b.sink.Emit(&e)
				default:
					return
				}
			}
		case e := <-b.instant:
			b.sink.Emit(&e)
		}
	}
}

// The client frees communicators it drops and evicts faulted ones through these methods.
var _ interface {
	ReleaseComm(id uint32)
	TakeCommFaults() []engine.CommFault
} = (*Backend)(nil)

// ReleaseComm marks a communicator the client's cache dropped. It is destroyed at the end of the
// next run, since ops already submitted may still use it.
func (b *Backend) ReleaseComm(id uint32) {
	b.mu.Lock()
	b.retired = append(b.retired, id)
	b.mu.Unlock()
}

// TakeCommFaults returns the communicators NCCL reported an asynchronous error for since the last
// call; each was aborted when found.
func (b *Backend) TakeCommFaults() []engine.CommFault {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.faults
	b.faults = nil
	return out
}

// destroyRetired frees the NCCL communicators the client released. A faulted or stuck one was
// aborted already; a failure to destroy becomes an alert, never an error that ends the session.
func (b *Backend) destroyRetired() {
	b.mu.Lock()
	ids := b.retired
	b.retired = nil
	type retiree struct {
		id    uint32
		comms []nccl.Comm
	}
	var free []retiree
	for _, id := range ids {
		if cs := b.comms[id]; cs != nil {
			delete(b.comms, id)
			if cs.err == nil {
				free = append(free, retiree{id, cs.comms})
			}
		}
	}
	b.mu.Unlock()
	b.dropGraphs(ids)
	for _, r := range free {
		for _, c := range r.comms {
			if err := b.nccl.Destroy(c); err != nil {
				now := b.Now()
				a := timeline.Event{Kind: timeline.KindAlert, Start: now, End: now, Device: -1, Peer: -1, Comm: r.id, Status: timeline.StatusError,
					Label: b.strs.ID(fmt.Sprintf("destroying communicator %d: %v", r.id, err))}
				b.sink.Emit(&a)
			}
		}
	}
}
