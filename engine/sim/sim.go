package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/eventslot"
	"github.com/xfertop/xfertop/timeline"
)

// Config configures a simulator.
type Config struct {
	Topology engine.Topology
	Seed     int64
	// Speed paces the simulation to the wall clock: simulated seconds per wall second. 0 runs unpaced.
	Speed float64
	Model Model
}

// Link indices within a device's block of links.
const (
	linkHBM = iota
	linkPCIeIn
	linkPCIeOut
	linkNVOut
	linkNVIn
	linkNICOut
	linkNICIn
	linksPerDevice
)

type host struct {
	dev         engine.DeviceID
	q           []engine.Command
	head        int
	busy        bool
	waiting     bool
	kicked      bool
	cur         engine.Command
	comms       int
	batch       []engine.StreamOp
	batchGen    uint32
	flushWanted bool
}

type stream struct {
	dev     engine.DeviceID
	prio    engine.Priority
	q       []int32
	head    int
	running int32
}

type evState struct {
	recorded bool
	at       int64
	ops      []opRef // stream ops waiting for it
	hosts    []int32 // host threads waiting for it
}

// opRef names an op slot and the generation of the op it meant: a reference kept while the op may
// finish (a timer, a watchdog entry, a wait list) must not come to mean the slot's next op.
type opRef struct {
	oi  int32
	gen uint32
}

// retired is the state of an event recorded so long ago that its slot was reused (eventslot).
var retired = evState{recorded: true}

type device struct {
	running   int32 // compute kernel holding the SMs, -1 when none
	runStart  int64
	runPrio   engine.Priority
	waitq     []int32
	waveArmed bool
}

type opState struct {
	op     engine.StreamOp
	seq    uint64
	queued int64
	start  int64
	waitAt int64 // when it started waiting for peers or an event; -1 when it did not
	parts  int32
	parent int32
	inst   int32
	// gen is the slot's generation: it grows each time the slot takes a new op and survives
	// freeing, so a watchdog entry or timer left from an earlier op never matches a later one.
	gen     uint32
	group   uint32
	aux     uint32 // collectives: the tuner's choice, packed as timeline.PackNCCL
	live    bool
	matched bool
	failed  bool
	status  uint8 // recorded on the op's event when it did not complete normally
}

// compactFrom is how many consumed entries a FIFO kept in a slice may hold before it is compacted.
const compactFrom = 1024

type wdEntry struct {
	deadline int64
	op       opRef
}

type inst struct {
	gen      uint32 // as opState.gen, for the instance's timer
	id       uint64
	n        int
	barrier  bool
	ops      []int32
	flows    int32
	released int64
}

const (
	ownerCopy = iota
	ownerP2P
	ownerInst
)

type flow struct {
	owner  int32
	peer   int32 // p2p: the recv op
	kind   uint8
	links  [2]int32
	nl     int8
	rem    float64
	rate   float64
	cap    float64
	last   int64
	ver    uint32
	pos    int32 // index in active, -1 when not active
	frozen bool
	// scheduled is true once a completion for the current rate is in the heap.
	scheduled bool
}

// Sim is the simulated backend. It implements engine.Backend.
type Sim struct {
	cfg  Config
	m    Model
	topo engine.Topology
	sink timeline.Sink
	strs *timeline.Strings
	rng  *rand.Rand
	ev   timeline.Event // scratch for Emit, so emitting does not allocate

	now int64
	q   queue
	seq uint64

	hosts     []host
	streams   []stream
	events    eventslot.Table[evState]
	devs      []device
	linkBW    []float64 // bytes per ns
	flows     []flow
	freeFlows []int32
	active    []int32
	armed     bool
	ops       []opState
	freeOps   []int32
	pairs     map[uint64]int32
	insts     map[uint64]int32
	instPool  []inst
	freeInsts []int32
	nextGroup uint32

	watchdog int64
	// Watchdog deadlines are now+watchdog with one timeout, so they arrive in order: a FIFO with one
	// timer in the heap replaces a heap item per waiting op.
	wdQueue  []wdEntry
	wdHead   int
	wdArmed  bool
	batchMax int
	batchWin int64

	paceWall    time.Time // wall-clock time of simulated time paceSim, when paced
	paceSim     int64
	pendingCmds int
	pendingOps  int
	batched     int // ops held in batching windows
	runErr      error
	handled     uint64

	// scratch for the bandwidth solver
	residual []float64
	count    []int32
	share    []float64
	mark     []uint32
	epoch    uint32
	touched  []int32
	pending  []int32 // flows of the collective being started
	hostSeen []int   // scratch: hosts of a communicator
}

// New builds a simulator of cfg.Topology that emits its events to sink, interning labels in strs.
func New(cfg Config, sink timeline.Sink, strs *timeline.Strings) (*Sim, error) {
	t := cfg.Topology
	if t.Hosts <= 0 || t.GPUsPerHost <= 0 {
		return nil, fmt.Errorf("sim: topology %q has no devices", t.Name)
	}
	if cfg.Model == (Model{}) {
		cfg.Model = DefaultModel()
	}
	if cfg.Speed < 0 || math.IsNaN(cfg.Speed) || math.IsInf(cfg.Speed, 0) {
		return nil, fmt.Errorf("sim: speed %v must be a positive number (0 runs unpaced)", cfg.Speed)
	}
	if strs == nil {
		strs = timeline.NewStrings()
	}
	n := t.Devices()
	s := &Sim{cfg: cfg, m: cfg.Model, topo: t, sink: sink, strs: strs, rng: rand.New(rand.NewSource(cfg.Seed)),
		hosts: make([]host, n), streams: make([]stream, 1), devs: make([]device, n),
		pairs: map[uint64]int32{}, insts: map[uint64]int32{}, batchMax: 8, batchWin: 50_000}
	for i := range s.hosts {
		s.hosts[i].dev = engine.DeviceID(i)
		s.devs[i].running = -1
	}
	m := cfg.Model
	s.linkBW = make([]float64, n*linksPerDevice)
	for d := range n {
		b := d * linksPerDevice
		s.linkBW[b+linkHBM] = m.HBMBps / 1e9
		s.linkBW[b+linkPCIeIn] = m.PCIeBps / 1e9
		s.linkBW[b+linkPCIeOut] = m.PCIeBps / 1e9
		s.linkBW[b+linkNVOut] = m.NVLinkBps / 1e9
		s.linkBW[b+linkNVIn] = m.NVLinkBps / 1e9
		s.linkBW[b+linkNICOut] = m.NICBps / 1e9
		s.linkBW[b+linkNICIn] = m.NICBps / 1e9
	}
	nl := len(s.linkBW)
	s.residual, s.count, s.share, s.mark = make([]float64, nl), make([]int32, nl), make([]float64, nl), make([]uint32, nl)
	return s, nil
}

// Name returns "sim".
func (s *Sim) Name() string { return "sim" }

// Topology returns the simulated cluster's shape.
func (s *Sim) Topology() engine.Topology { return s.topo }

// Strings returns the label table.
func (s *Sim) Strings() *timeline.Strings { return s.strs }

// Now returns the simulated clock.
func (s *Sim) Now() int64 { return s.now }

// Handled returns how many scheduled simulation events have been processed.
func (s *Sim) Handled() uint64 { return s.handled }

// SetWatchdog arms the watchdog (0 disarms it).
func (s *Sim) SetWatchdog(ns int64) { s.watchdog = ns }

// SetBatching configures every host thread's batching window.
func (s *Sim) SetBatching(maxOps int, windowNs int64) {
	if maxOps < 1 {
		maxOps = 1
	}
	s.batchMax, s.batchWin = maxOps, windowNs
}

// NewStream creates a stream.
func (s *Sim) NewStream(dev engine.DeviceID, prio engine.Priority) engine.StreamID {
	s.streams = append(s.streams, stream{dev: dev, prio: prio, running: -1})
	return engine.StreamID(len(s.streams) - 1)
}

// NewEvent creates an unrecorded event.
func (s *Sim) NewEvent() engine.EventID {
	id, _, _, ok := s.events.New()
	if !ok {
		// A million events created and none recorded: the workload is broken. End the run.
		s.runErr = fmt.Errorf("sim: more than %d events created and not yet recorded", eventslot.MaxLive)
		return 0
	}
	return engine.EventID(id)
}

// event returns the state of id; a retired id reads as recorded long ago.
func (s *Sim) event(id engine.EventID) *evState {
	if ev := s.events.Get(uint32(id)); ev != nil {
		return ev
	}
	r := retired
	return &r
}

// Submit queues cmd on dev's host thread.
func (s *Sim) Submit(dev engine.DeviceID, cmd engine.Command) {
	h := &s.hosts[dev]
	h.q = append(h.q, cmd)
	s.pendingCmds++
	if !h.busy && !h.kicked {
		h.kicked = true
		s.at(s.now, evHostReady, int32(dev), 0)
	}
}

func (s *Sim) at(t int64, typ uint8, a int32, ver uint32) {
	s.seq++
	s.q.push(item{t: t, seq: s.seq, typ: typ, a: a, ver: ver})
}

// atOp schedules a timer for the op r names; it is dropped if that op is gone by then.
func (s *Sim) atOp(t int64, typ uint8, r opRef) { s.at(t, typ, r.oi, r.gen) }

// Run executes what was submitted until it has all completed.
func (s *Sim) Run(ctx context.Context) error {
	if s.runErr != nil {
		return s.runErr
	}
	if s.cfg.Speed > 0 && s.paceWall.IsZero() {
		// One anchor for the whole session: re-anchoring at every Run (every step) would let each
		// step finish early by the sleep threshold and the drift add up.
		s.paceWall, s.paceSim = time.Now(), s.now
	}
	for s.pendingCmds+s.pendingOps+s.batched > 0 {
		if len(s.q) == 0 {
			s.runErr = s.deadlock()
			return s.runErr
		}
		it := s.q.pop()
		if s.stale(it) {
			continue
		}
		s.handled++
		if s.handled&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%w at %.3f ms simulated: %v", engine.ErrCanceled, float64(s.now)/1e6, err)
			}
		}
		if s.cfg.Speed > 0 && it.t > s.now {
			target := s.paceWall.Add(time.Duration(float64(it.t-s.paceSim) / s.cfg.Speed))
			if d := time.Until(target); d > time.Millisecond {
				select {
				case <-ctx.Done():
					return fmt.Errorf("%w at %.3f ms simulated: %v", engine.ErrCanceled, float64(s.now)/1e6, ctx.Err())
				case <-time.After(d):
				}
			}
		}
		s.now = it.t
		s.dispatch(it)
		if s.runErr != nil {
			return s.runErr
		}
	}
	return nil
}

func (s *Sim) stale(it item) bool {
	switch it.typ {
	case evFlowDone:
		f := &s.flows[it.a]
		return f.pos < 0 || f.ver != it.ver
	case evWatchdog:
		return !s.wdDue(it.t)
	case evBatchTimer:
		h := &s.hosts[it.a]
		return h.batchGen != it.ver || len(h.batch) == 0
	case evOpDone, evStreamWake:
		return !s.current(opRef{it.a, it.ver})
	case evCollStart:
		return s.instPool[it.a].gen != it.ver
	}
	return false
}

func (s *Sim) dispatch(it item) {
	switch it.typ {
	case evHostReady:
		h := &s.hosts[it.a]
		h.kicked = false
		if h.waiting {
			h.waiting, h.busy = false, false
			s.pendingCmds--
		}
		s.hostStep(it.a)
	case evHostDone:
		s.hostDone(it.a)
	case evOpDone:
		s.opDone(it.a)
	case evFlowStart:
		s.flowStart(it.a)
	case evFlowDone:
		s.flowDone(it.a)
	case evRecompute:
		s.armed = false
		s.recompute()
	case evWave:
		s.wave(engine.DeviceID(it.a))
	case evWatchdog:
		s.wdArmed = false
		s.fireWatchdog(s.wdQueue[s.wdHead].op.oi)
	case evBatchTimer:
		h := &s.hosts[it.a]
		if h.busy {
			h.flushWanted = true
		} else {
			s.launchBatch(it.a)
		}
	case evCollStart:
		s.instDone(it.a)
	case evStreamWake:
		s.opDone(it.a)
	}
}

// ---- host threads ----

func (s *Sim) launchCost(op *engine.StreamOp) int64 {
	switch op.Kind {
	case engine.OpSend, engine.OpRecv, engine.OpCollective:
		return s.m.NCCLLaunchNs
	case engine.OpGroup:
		return s.m.GroupLaunchNs + s.m.GroupPerOpNs*int64(len(op.Parts))
	case engine.OpRecord, engine.OpWaitEvent:
		return s.m.WaitLaunchNs
	}
	return s.m.HostLaunchNs
}

func (s *Sim) hostStep(hi int32) {
	h := &s.hosts[hi]
	for !h.busy {
		if h.flushWanted {
			h.flushWanted = false
			if len(h.batch) > 0 {
				s.launchBatch(hi)
				return
			}
		}
		if h.head >= len(h.q) {
			h.q, h.head = h.q[:0], 0
			return
		}
		cmd := h.q[h.head]
		h.q[h.head] = engine.Command{}
		h.head++
		switch cmd.Kind {
		case engine.CmdLaunch:
			h.cur, h.busy = cmd, true
			s.at(s.now+s.launchCost(&cmd.Op), evHostDone, hi, 0)
		case engine.CmdHostWait:
			ev := s.event(cmd.Event)
			if ev.recorded {
				s.pendingCmds--
				continue
			}
			h.busy, h.waiting = true, true
			ev.hosts = append(ev.hosts, hi)
		case engine.CmdCommInit:
			cost := s.m.CommInitNs
			if h.comms == 0 {
				cost = s.m.CommInitFirstNs
			}
			h.comms++
			s.emit(timeline.Event{Kind: timeline.KindCommInit, Start: s.now, End: s.now + cost, Device: int32(h.dev),
				Peer: timeline.NoDevice, Comm: cmd.Comm, Ranks: uint16(len(cmd.Devices)), Label: cmd.Label})
			h.cur, h.busy = cmd, true
			s.at(s.now+cost, evHostDone, hi, 0)
		case engine.CmdSleep:
			s.emit(timeline.Event{Kind: timeline.KindMark, Start: s.now, End: s.now + cmd.Duration, Device: int32(h.dev),
				Peer: timeline.NoDevice, Label: cmd.Label})
			h.cur, h.busy = cmd, true
			s.at(s.now+cmd.Duration, evHostDone, hi, 0)
		case engine.CmdBatch:
			h.batch = append(h.batch, cmd.Op)
			s.batched++
			h.cur, h.busy = cmd, true
			if len(h.batch) == 1 {
				h.batchGen++
				s.at(s.now+s.batchWin, evBatchTimer, hi, h.batchGen)
			}
			s.at(s.now+s.m.BatchAddNs, evHostDone, hi, 0)
		case engine.CmdFlush:
			s.pendingCmds--
			if len(h.batch) > 0 {
				s.launchBatch(hi)
			}
		default:
			s.pendingCmds--
		}
	}
}

// launchBatch launches the batching window's ops as one group; the host pays the group launch.
func (s *Sim) launchBatch(hi int32) {
	h := &s.hosts[hi]
	parts := make([]engine.StreamOp, len(h.batch))
	copy(parts, h.batch)
	s.batched -= len(parts)
	h.batch = h.batch[:0]
	h.batchGen++
	g := engine.StreamOp{Kind: engine.OpGroup, Stream: parts[0].Stream, Device: h.dev, Peer: -1, Parts: parts}
	h.cur, h.busy = engine.Command{Kind: engine.CmdLaunch, Op: g}, true
	s.pendingCmds++
	s.at(s.now+s.launchCost(&g), evHostDone, hi, 0)
}

func (s *Sim) hostDone(hi int32) {
	h := &s.hosts[hi]
	cmd := h.cur
	h.cur, h.busy = engine.Command{}, false
	s.pendingCmds--
	switch cmd.Kind {
	case engine.CmdLaunch:
		s.enqueue(&cmd.Op)
	case engine.CmdBatch:
		if len(h.batch) >= s.batchMax {
			s.launchBatch(hi)
			return
		}
	}
	s.hostStep(hi)
}

// ---- streams ----

// newOp puts o in a free slot (or a new one) as the slot's next generation and returns the slot.
func (s *Sim) newOp(o opState) int32 {
	var oi int32
	if n := len(s.freeOps); n > 0 {
		oi = s.freeOps[n-1]
		s.freeOps = s.freeOps[:n-1]
	} else {
		s.ops = append(s.ops, opState{})
		oi = int32(len(s.ops) - 1)
	}
	o.gen = s.ops[oi].gen + 1
	s.ops[oi] = o
	return oi
}

// freeOp clears a finished op's slot (dropping its future and parts) but keeps its generation.
func (s *Sim) freeOp(oi int32) {
	s.ops[oi] = opState{gen: s.ops[oi].gen}
	s.freeOps = append(s.freeOps, oi)
}

// ref names the op now in slot oi.
func (s *Sim) ref(oi int32) opRef { return opRef{oi, s.ops[oi].gen} }

// current reports whether r still names the op in its slot.
func (s *Sim) current(r opRef) bool {
	o := &s.ops[r.oi]
	return o.live && o.gen == r.gen
}

func (s *Sim) enqueue(op *engine.StreamOp) {
	s.seq++
	oi := s.newOp(opState{op: *op, seq: s.seq, queued: s.now, start: s.now, waitAt: -1, parent: -1, inst: -1, live: true})
	st := &s.streams[op.Stream]
	st.q = append(st.q, oi)
	s.pendingOps++
	if st.running < 0 {
		s.streamKick(op.Stream)
	}
}

func (s *Sim) streamKick(sid engine.StreamID) {
	st := &s.streams[sid]
	for st.running < 0 && st.head < len(st.q) {
		oi := st.q[st.head]
		st.running = oi
		if s.startOp(oi) {
			s.finish(oi, false)
		}
		st = &s.streams[sid]
	}
}

// startOp begins the op at the head of its stream; it returns true when the op completed at once.
func (s *Sim) startOp(oi int32) bool {
	o := &s.ops[oi]
	o.start = s.now
	switch o.op.Kind {
	case engine.OpRecord:
		s.record(o.op.Event, oi)
		return true
	case engine.OpWaitEvent:
		ev := s.event(o.op.Event)
		if ev.recorded && ev.at+s.m.EventLatencyNs <= s.now {
			return true
		}
		o.waitAt = s.now
		if ev.recorded {
			s.atOp(ev.at+s.m.EventLatencyNs, evStreamWake, s.ref(oi))
		} else {
			ev.ops = append(ev.ops, s.ref(oi))
		}
		return false
	case engine.OpCopy:
		s.startCopy(oi)
	case engine.OpBarrier:
		s.arrive(oi)
	case engine.OpKernel, engine.OpSend, engine.OpRecv, engine.OpCollective, engine.OpGroup:
		s.admit(oi)
	}
	return false
}

func (s *Sim) record(evID engine.EventID, oi int32) {
	ev := s.event(evID)
	if ev.recorded {
		return // recorded twice: the first recording stands
	}
	ev.recorded, ev.at = true, s.now
	s.events.Done(uint32(evID))
	o := &s.ops[oi]
	s.emit(timeline.Event{Kind: timeline.KindEventRecord, Start: s.now, End: s.now, Queued: o.queued, Device: int32(o.op.Device),
		Peer: timeline.NoDevice, Stream: uint32(o.op.Stream), Aux: uint32(evID), Host: s.hostOf(o.op.Device)})
	for _, w := range ev.ops {
		s.atOp(s.now+s.m.EventLatencyNs, evStreamWake, w)
	}
	for _, hi := range ev.hosts {
		s.at(s.now+s.m.NotifyNs, evHostReady, hi, 0)
	}
	ev.ops, ev.hosts = nil, nil
}

func (s *Sim) hostOf(d engine.DeviceID) uint16 { return uint16(s.topo.HostOf(d)) }

// ---- device block scheduler ----

func (s *Sim) prioOf(oi int32) engine.Priority { return s.streams[s.ops[oi].op.Stream].prio }

// popFront drops the head of the admission queue, keeping the backing array (no allocation).
func (dv *device) popFront() {
	copy(dv.waitq, dv.waitq[1:])
	dv.waitq = dv.waitq[:len(dv.waitq)-1]
}

// admit queues a kernel for the device's SMs, ordered by priority, then arrival.
func (s *Sim) admit(oi int32) {
	d := s.ops[oi].op.Device
	dv := &s.devs[d]
	p, sq := s.prioOf(oi), s.ops[oi].seq
	i := len(dv.waitq)
	dv.waitq = append(dv.waitq, oi)
	for i > 0 {
		prev := dv.waitq[i-1]
		pp := s.prioOf(prev)
		if pp < p || (pp == p && s.ops[prev].seq < sq) {
			break
		}
		dv.waitq[i] = prev
		i--
	}
	dv.waitq[i] = oi
	s.tryAdmit(d)
}

func (s *Sim) tryAdmit(d engine.DeviceID) {
	dv := &s.devs[d]
	for len(dv.waitq) > 0 {
		oi := dv.waitq[0]
		o := &s.ops[oi]
		if o.op.Kind == engine.OpKernel {
			if dv.running >= 0 {
				return
			}
			dv.popFront()
			dv.running, dv.runStart, dv.runPrio = oi, s.now, s.prioOf(oi)
			o.start = s.now
			dur := o.op.Duration
			if j := s.m.KernelJitter; j > 0 && dur > 0 {
				dur += int64(float64(dur) * j * (2*s.rng.Float64() - 1))
			}
			s.atOp(s.now+max(dur, 0), evOpDone, s.ref(oi))
			continue
		}
		if dv.running < 0 {
			dv.popFront()
			s.launchNCCL(oi)
			dv = &s.devs[d]
			continue
		}
		if s.prioOf(oi) < dv.runPrio && !dv.waveArmed {
			el := s.now - dv.runStart
			next := dv.runStart + (el/s.m.WaveNs+1)*s.m.WaveNs
			dv.waveArmed = true
			s.at(next, evWave, int32(d), 0)
		}
		return
	}
}

// wave is a wave boundary of the running compute kernel: higher-priority NCCL kernels get SMs.
func (s *Sim) wave(d engine.DeviceID) {
	dv := &s.devs[d]
	dv.waveArmed = false
	for len(dv.waitq) > 0 {
		oi := dv.waitq[0]
		if s.ops[oi].op.Kind == engine.OpKernel || (dv.running >= 0 && s.prioOf(oi) >= dv.runPrio) {
			break
		}
		dv.popFront()
		s.launchNCCL(oi)
		dv = &s.devs[d]
	}
	s.tryAdmit(d)
}

// launchNCCL starts an admitted NCCL kernel: it now waits for its peers, then moves data.
func (s *Sim) launchNCCL(oi int32) {
	o := &s.ops[oi]
	o.start = s.now
	switch o.op.Kind {
	case engine.OpSend, engine.OpRecv:
		s.matchP2P(oi)
	case engine.OpCollective:
		s.arrive(oi)
	case engine.OpGroup:
		s.nextGroup++
		gid := s.nextGroup
		o.group = gid
		n := len(o.op.Parts)
		o.parts = int32(n)
		children := make([]int32, 0, 8)
		for i := range n {
			o = &s.ops[oi]
			part := o.op.Parts[i]
			part.Group = gid
			s.seq++
			ci := s.newOp(opState{op: part, seq: s.seq, queued: o.queued, start: s.now, waitAt: -1, parent: oi, inst: -1, live: true, group: gid})
			children = append(children, ci)
		}
		for _, ci := range children {
			switch s.ops[ci].op.Kind {
			case engine.OpSend, engine.OpRecv:
				s.matchP2P(ci)
			case engine.OpCollective:
				s.arrive(ci)
			default:
				s.finish(ci, true)
			}
		}
	}
}

// ---- point to point ----

func (s *Sim) matchP2P(oi int32) {
	o := &s.ops[oi]
	other, ok := s.pairs[o.op.ID]
	if !ok || s.ops[other].op.Kind == o.op.Kind {
		s.pairs[o.op.ID] = oi
		o.waitAt = s.now
		s.arm(oi)
		return
	}
	delete(s.pairs, o.op.ID)
	snd, rcv := oi, other
	if o.op.Kind == engine.OpRecv {
		snd, rcv = other, oi
	}
	so, ro := &s.ops[snd], &s.ops[rcv]
	if so.op.Peer != ro.op.Device || ro.op.Peer != so.op.Device || so.op.Bytes != ro.op.Bytes {
		err := &engine.GuardError{Op: "send/recv", Kind: engine.ErrSizeMismatch, Devices: []engine.DeviceID{so.op.Device, ro.op.Device},
			Detail: fmt.Sprintf("op %d: send of %d bytes %d→%d does not match recv of %d bytes %d←%d",
				so.op.ID, so.op.Bytes, so.op.Device, so.op.Peer, ro.op.Bytes, ro.op.Device, ro.op.Peer)}
		s.alert(snd, err.Error(), timeline.StatusError)
		for _, x := range [2]int32{snd, rcv} {
			s.ops[x].matched = true
			s.fail(x, err)
			s.finish(x, true) // the streams go on; the failed op is recorded with an error status
		}
		return
	}
	for _, x := range [2]int32{snd, rcv} {
		xo := &s.ops[x]
		xo.matched = true
		s.peerWait(x)
		xo.start = s.now
	}
	src, dst := so.op.Device, ro.op.Device
	lat := s.m.NCCLBaseNs
	fi := s.newFlow(ownerP2P, snd, so.op.Bytes)
	s.flows[fi].peer = rcv
	switch {
	case src == dst:
		s.route(fi, int32(src)*linksPerDevice+linkHBM, -1, s.m.HBMBps)
	case s.topo.HostOf(src) == s.topo.HostOf(dst):
		lat += s.m.NVLinkLatencyNs
		s.route(fi, int32(src)*linksPerDevice+linkNVOut, int32(dst)*linksPerDevice+linkNVIn, s.m.NVLinkBps*s.m.NCCLNVLinkEff)
	default:
		lat += s.m.NICLatencyNs
		s.route(fi, int32(src)*linksPerDevice+linkNICOut, int32(dst)*linksPerDevice+linkNICIn, s.m.NICBps*s.m.NCCLNICEff)
	}
	s.at(s.now+lat, evFlowStart, fi, 0)
}

func (s *Sim) peerWait(oi int32) {
	o := &s.ops[oi]
	if o.waitAt >= 0 && o.waitAt < s.now {
		s.emit(timeline.Event{Kind: timeline.KindPeerWait, Start: o.waitAt, End: s.now, Queued: o.queued, Device: int32(o.op.Device),
			Peer: int32(o.op.Peer), Stream: uint32(o.op.Stream), Op: o.op.ID, Bytes: o.op.Bytes, Comm: o.op.Comm, Group: o.group,
			Barrier: o.op.Barrier, Host: s.hostOf(o.op.Device), Priority: int8(s.streams[o.op.Stream].prio)})
	}
	o.waitAt = -1
}

// ---- copies ----

func (s *Sim) startCopy(oi int32) {
	o := &s.ops[oi]
	d := int32(o.op.Device)
	b := d * linksPerDevice
	if o.op.Bytes <= 0 {
		s.atOp(s.now+s.m.CopyLatencyNs, evOpDone, s.ref(oi))
		return
	}
	fi := s.newFlow(ownerCopy, oi, o.op.Bytes)
	switch o.op.Dir {
	case timeline.CopyH2D:
		c := s.m.PCIeBps
		if o.op.Pageable {
			c = s.m.PageableBps
		}
		s.route(fi, b+linkPCIeIn, -1, c)
	case timeline.CopyD2H:
		c := s.m.PCIeBps
		if o.op.Pageable {
			c = s.m.PageableBps
		}
		s.route(fi, b+linkPCIeOut, -1, c)
	case timeline.CopyP2P:
		if o.op.Peer == o.op.Device || o.op.Peer < 0 {
			s.route(fi, b+linkHBM, -1, s.m.HBMBps)
		} else {
			s.route(fi, b+linkNVOut, int32(o.op.Peer)*linksPerDevice+linkNVIn, s.m.NVLinkBps*s.m.P2PCopyEff)
		}
	default:
		s.route(fi, b+linkHBM, -1, s.m.HBMBps)
	}
	s.at(s.now+s.m.CopyLatencyNs, evFlowStart, fi, 0)
}

// ---- collectives and barriers ----

func (s *Sim) arrive(oi int32) {
	o := &s.ops[oi]
	ii, ok := s.insts[o.op.ID]
	if !ok {
		if n := len(s.freeInsts); n > 0 {
			ii = s.freeInsts[n-1]
			s.freeInsts = s.freeInsts[:n-1]
		} else {
			s.instPool = append(s.instPool, inst{})
			ii = int32(len(s.instPool) - 1)
		}
		in := &s.instPool[ii]
		in.id, in.n, in.barrier, in.ops, in.flows = o.op.ID, len(o.op.Ranks), o.op.Kind == engine.OpBarrier, in.ops[:0], 0
		s.insts[o.op.ID] = ii
	}
	in := &s.instPool[ii]
	o.inst = ii
	o.waitAt = s.now
	in.ops = append(in.ops, oi)
	if len(in.ops) == 1 && in.n > 1 {
		s.arm(oi)
	}
	if len(in.ops) < in.n {
		return
	}
	delete(s.insts, in.id)
	for _, x := range in.ops {
		s.ops[x].matched = true
	}
	if in.barrier {
		steps := int64(math.Ceil(math.Log2(float64(in.n))))
		in.released = s.now + s.m.BarrierStepNs*max(steps, 1)
		s.at(in.released, evCollStart, ii, in.gen)
		return
	}
	for _, x := range in.ops {
		s.peerWait(x)
		s.ops[x].start = s.now
	}
	s.startCollective(ii)
}

func (s *Sim) instDone(ii int32) {
	in := &s.instPool[ii]
	ops := in.ops
	for _, x := range ops {
		s.finish(x, true)
	}
	in = &s.instPool[ii]
	in.ops = in.ops[:0]
	in.gen++ // its timers, if any were left, are stale from now on
	s.freeInsts = append(s.freeInsts, ii)
}

// ---- completion ----

func (s *Sim) opDone(oi int32) {
	o := &s.ops[oi]
	if o.op.Kind == engine.OpKernel && o.parent < 0 {
		d := o.op.Device
		if s.devs[d].running == oi {
			s.devs[d].running = -1
			defer s.tryAdmit(d)
		}
	}
	s.finish(oi, true)
}

// finish completes an op at s.now: emits its event, resolves its future, frees the stream.
func (s *Sim) finish(oi int32, kick bool) {
	o := &s.ops[oi]
	if !o.live {
		return
	}
	s.emitOp(oi)
	if f := o.op.Future; f != nil {
		s.resolve(o, nil)
	}
	parent, sid := o.parent, o.op.Stream
	s.freeOp(oi)
	if parent >= 0 {
		p := &s.ops[parent]
		p.parts--
		if p.parts == 0 {
			s.finish(parent, true)
		}
		return
	}
	st := &s.streams[sid]
	st.running = -1
	st.head++
	if st.head >= len(st.q) {
		st.q, st.head = st.q[:0], 0
	}
	s.pendingOps--
	if kick {
		s.streamKick(sid)
	}
}

func (s *Sim) resolve(o *opState, err error) {
	f := o.op.Future
	t := s.now + s.m.NotifyNs
	k := timeline.KindPromiseFulfilled
	st := timeline.StatusOK
	if err != nil {
		k, st, t = timeline.KindPromiseFailed, timeline.StatusError, s.now
		if errorsIsTimeout(err) {
			st = timeline.StatusTimeout
		}
	}
	s.emit(timeline.Event{Kind: k, Start: t, End: t, Device: int32(o.op.Device), Peer: int32(o.op.Peer), Op: o.op.ID,
		Stream: uint32(o.op.Stream), Bytes: o.op.Bytes, Status: st, Host: s.hostOf(o.op.Device)})
	f.Complete(t, err)
}

func (s *Sim) emitOp(oi int32) {
	o := &s.ops[oi]
	e := timeline.Event{Start: o.start, End: s.now, Queued: o.queued, Bytes: o.op.Bytes, Op: o.op.ID, Device: int32(o.op.Device),
		Peer: int32(o.op.Peer), Stream: uint32(o.op.Stream), Group: o.group, Comm: o.op.Comm, Barrier: o.op.Barrier,
		Label: o.op.Label, Host: s.hostOf(o.op.Device), Priority: int8(s.streams[o.op.Stream].prio)}
	if o.failed {
		e.Status = timeline.StatusError
	}
	if o.status != 0 {
		e.Status = o.status
	}
	switch o.op.Kind {
	case engine.OpKernel:
		e.Kind, e.Peer = timeline.KindKernel, timeline.NoDevice
	case engine.OpCopy:
		e.Kind, e.Sub = timeline.KindMemcpy, uint8(o.op.Dir)
	case engine.OpSend:
		e.Kind = timeline.KindSend
	case engine.OpRecv:
		e.Kind = timeline.KindRecv
	case engine.OpCollective:
		e.Kind, e.Sub, e.Ranks, e.Peer, e.Aux = timeline.KindCollective, uint8(o.op.Coll), uint16(len(o.op.Ranks)), timeline.NoDevice, o.aux
	case engine.OpBarrier:
		e.Kind, e.Ranks, e.Peer = timeline.KindBarrier, uint16(len(o.op.Ranks)), timeline.NoDevice
		e.Start = o.waitAt
		if o.waitAt < 0 {
			e.Start = o.start
		}
	case engine.OpGroup:
		e.Kind, e.Aux, e.Peer, e.Op = timeline.KindGroupLaunch, uint32(len(o.op.Parts)), timeline.NoDevice, 0
	case engine.OpWaitEvent:
		if o.waitAt < 0 {
			return
		}
		e.Kind, e.Start, e.Aux, e.Peer, e.Op = timeline.KindEventWait, o.waitAt, uint32(o.op.Event), timeline.NoDevice, 0
	default:
		return
	}
	s.emit(e)
}

func (s *Sim) emit(e timeline.Event) {
	s.ev = e
	s.sink.Emit(&s.ev)
}

// ---- failure, alerts, watchdog ----

func (s *Sim) arm(oi int32) {
	if s.watchdog <= 0 {
		return
	}
	s.wdQueue = append(s.wdQueue, wdEntry{deadline: s.now + s.watchdog, op: s.ref(oi)})
	if !s.wdArmed {
		s.wdArmed = true
		s.at(s.wdQueue[s.wdHead].deadline, evWatchdog, 0, 0)
	}
}

// wdLive reports whether a watchdog entry still stands for an op waiting for its peers.
func (s *Sim) wdLive(w wdEntry) bool {
	return s.current(w.op) && !s.ops[w.op.oi].matched
}

// wdDue drops watchdog entries whose ops are no longer waiting and reports whether the first live
// one is due at t. When it is not, the timer is re-armed for it (or disarmed when none is left), and
// the popped timer item is stale: it must not advance the clock.
func (s *Sim) wdDue(t int64) bool {
	for s.wdHead < len(s.wdQueue) && !s.wdLive(s.wdQueue[s.wdHead]) {
		s.wdHead++
	}
	if s.wdHead == len(s.wdQueue) {
		s.wdQueue, s.wdHead, s.wdArmed = s.wdQueue[:0], 0, false
		return false
	}
	if s.wdHead >= compactFrom && 2*s.wdHead >= len(s.wdQueue) {
		// Some op is nearly always waiting, so the queue rarely empties: drop its consumed half
		// rather than let appends grow the array for ever.
		n := copy(s.wdQueue, s.wdQueue[s.wdHead:])
		s.wdQueue, s.wdHead = s.wdQueue[:n], 0
	}
	if d := s.wdQueue[s.wdHead].deadline; d > t {
		s.at(d, evWatchdog, 0, 0)
		return false
	}
	return true
}

func (s *Sim) alert(oi int32, msg string, status uint8) {
	o := &s.ops[oi]
	s.emit(timeline.Event{Kind: timeline.KindAlert, Start: s.now, End: s.now, Device: int32(o.op.Device), Peer: int32(o.op.Peer),
		Op: o.op.ID, Bytes: o.op.Bytes, Stream: uint32(o.op.Stream), Comm: o.op.Comm, Status: status,
		Ranks: uint16(max(len(o.op.Ranks), 2)), Label: s.strs.ID(msg), Host: s.hostOf(o.op.Device)})
}

// fail ends an op with err: its future fails and, if it is part of a group, the group's other parts
// are left to the watchdog or the end of the run.
func (s *Sim) fail(oi int32, err error) {
	o := &s.ops[oi]
	if !o.live {
		return
	}
	o.failed = true
	if o.op.Future != nil {
		s.resolve(o, err)
		o.op.Future = nil
	}
}

func (s *Sim) fireWatchdog(oi int32) {
	o := &s.ops[oi]
	werr := &engine.WatchdogError{Op: engine.OpName(&o.op), OpID: o.op.ID, Rank: o.op.Device, Peer: o.op.Peer, Bytes: o.op.Bytes, WaitedNs: s.now - o.waitAt}
	if o.inst >= 0 {
		in := &s.instPool[o.inst]
		werr.Peer = -1
		for _, r := range o.op.Ranks {
			found := false
			for _, x := range in.ops {
				if s.ops[x].op.Device == r {
					found = true
				}
			}
			if !found {
				werr.Missing = append(werr.Missing, r)
			}
		}
		for _, x := range in.ops {
			s.fail(x, werr)
		}
	}
	s.alert(oi, werr.Error(), timeline.StatusTimeout)
	s.fail(oi, werr)
	// Record what the stuck ops did: waited for their peers until now, then failed (an instant, not
	// busy time), so the timeline, the idle analysis and the exported spans all show it.
	stuck := []int32{oi}
	if o := &s.ops[oi]; o.inst >= 0 {
		stuck = s.instPool[o.inst].ops
	}
	for _, x := range stuck {
		xo := &s.ops[x]
		if !xo.live {
			continue
		}
		s.peerWait(x)
		xo.status, xo.start = timeline.StatusTimeout, s.now
		s.emitOp(x)
	}
	s.runErr = werr
}

func (s *Sim) deadlock() error {
	n, first := 0, ""
	for sid := range s.streams {
		st := &s.streams[sid]
		for _, oi := range st.q[st.head:] {
			n++
			if first == "" {
				o := &s.ops[oi]
				first = fmt.Sprintf("%s on device %d stream %d (op %d)", engine.OpName(&o.op), o.op.Device, sid, o.op.ID)
			}
		}
	}
	for hi := range s.hosts {
		h := &s.hosts[hi]
		if h.waiting {
			n++
			if first == "" {
				first = fmt.Sprintf("host thread of device %d waits for an event that is never recorded", h.dev)
			}
		}
	}
	return &engine.DeadlockError{Pending: n, First: first}
}

func errorsIsTimeout(err error) bool {
	_, ok := err.(*engine.WatchdogError)
	return ok
}
