package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/eventslot"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/timeline"
)

// Config configures a simulator.
type Config struct {
	Topology engine.Topology
	Seed     int64
	// Speed paces the simulation to the wall clock: simulated seconds per wall second. 0 runs unpaced.
	Speed float64
	Model Model
	// Faults are injected into the run (engine/fault); each is checked against the topology.
	Faults []fault.Fault
	// Warn, when set, is told once when an all-to-all starts that will take the simulator
	// minutes of CPU or more (allToAllCost), so that a run that seems stuck says why.
	Warn func(msg string)
}
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
	linkFlows [][]int32 // the active flows on each link
	armed     bool
	ops       [][]opState // op slots in chunks of opChunk (see op)
	nOps      int         // slots taken so far
	gens      []uint32    // each slot's generation (opState.gen), apart from the slots
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

	pace        timeline.Pace // simulated time against the wall clock, when paced (Wall set at the first Run)
	pendingCmds int
	pendingOps  int
	batched     int // ops held in batching windows
	runErr      error
	handled     uint64
	// work counts items handled plus flows visited by the bandwidth solver: what the run loop
	// spends. The ops in flight are published, and a cancel looked for, when it reaches
	// nextPublish: counting items alone, an all-to-all of 1,024 ranks (a million flows, each
	// completion a re-solve of them all) went minutes between looks, and q or ctrl+c did not end it.
	work        uint64
	nextPublish uint64

	// scratch for the bandwidth solver
	residual []float64
	count    []int32
	share    []float64
	mark     []uint32
	epoch    uint32
	solves   int     // solves that had flows to fill (the others only bank their links: allEnded)
	touched  []int32 // the links of the component last solved
	comp     []int32 // its flows
	// the flows not yet frozen and the links with flows left, in a level of the solve
	open, openLinks []int32
	// warnAbove is the estimated CPU time of an all-to-all above which Warn is told (once)
	warnAbove time.Duration
	warned    bool
	// visits counts the flows and links the solver's levels looked at (its work), spans the flows
	// and links of the component solved, once a level (what looking at all of it at each gave):
	// for tests
	visits, spans uint64
	// links whose flows changed since the last solve
	dirtyLinks []int32
	isDirty    []bool
	pending    []int32 // flows of the collective being started
	// collectives' flows started as classes (classes.go): the blocks, those free, each link's
	// block + 1 (0: none), the extra work of the blocks in the solve under way (their flows and
	// links but one each), and, for tests, whether blocks are off
	blocks     []flowBlock
	freeBlocks []int32
	linkBlock  []int32
	linkForm   []uint32 // linkForm[l] == formEpoch: a member of the block being formed has l
	proto      ringProto
	formEpoch  uint32
	blockWork  uint64
	classesOff bool
	// blocks started, split back into their flows, split before their first solve, and when the
	// last started: for tests
	blocksStarted, blockSplits, earlySplits int
	lastBlockAt                             int64
	a2aRuns                                 map[int32]*a2aRun // the all-to-alls across nodes running, by instance (alltoall.go)
	// hostSeen[h] == hostEpoch marks host h as counted among a communicator's nodes
	hostSeen  []uint32
	hostEpoch uint32

	ringScratch ringScratch // rings' answer
	edges       edgeScratch // a collective's edges inside nodes, as its rings are expanded

	freeCmds   [][]hostCmd         // blocks of host commands, cleared, for any host's cmdQueue
	graphs     [][]engine.StreamOp // graph launches' ops, until the launch ends (keepGraph)
	freeGraphs []int32

	running running   // the ops in flight, as InFlight reads them
	lb      linkBytes // what each link carried, reported per window
	fab     fabric    // the network's switch ports, after the devices' links in linkBW
	flt     faults    // injected faults (faults.go)
}

// New builds a simulator of cfg.Topology that emits its events to sink, interning labels in strs.
func New(cfg Config, sink timeline.Sink, strs *timeline.Strings) (*Sim, error) {
	t := cfg.Topology
	if t.Hosts <= 0 || t.GPUsPerHost <= 0 {
		return nil, fmt.Errorf("sim: topology %q has no devices", t.Name)
	}
	if cfg.Model == (Model{}) {
		cfg.Model = ModelOf(t)
	}
	if cfg.Speed < 0 || math.IsNaN(cfg.Speed) || math.IsInf(cfg.Speed, 0) {
		return nil, fmt.Errorf("sim: speed %v must be a positive number (0 runs unpaced)", cfg.Speed)
	}
	if strs == nil {
		strs = timeline.NewStrings()
	}
	n := t.Devices()
	s := &Sim{cfg: cfg, m: cfg.Model, topo: t, sink: sink, strs: strs, rng: rand.New(rand.NewSource(cfg.Seed)),
		hosts: make([]host, n), streams: []stream{{first: -1, last: -1}}, devs: make([]device, n), // stream 0: no stream, its queue empty
		pairs: map[uint64]int32{}, insts: map[uint64]int32{}, batchMax: 8, batchWin: 50_000, warnAbove: warnCPU}
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
	s.initFabric()
	nl := len(s.linkBW)
	s.residual, s.count, s.share, s.mark = make([]float64, nl), make([]int32, nl), make([]float64, nl), make([]uint32, nl)
	s.linkFlows, s.isDirty, s.linkBlock = make([][]int32, nl), make([]bool, nl), make([]int32, nl)
	s.linkForm = make([]uint32, nl)
	s.lb.init(nl)
	if err := s.setFaults(cfg.Faults); err != nil {
		return nil, err
	}
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
	s.streams = append(s.streams, stream{dev: dev, prio: prio, first: -1, last: -1, running: -1})
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
	c := s.cmdOf(&cmd)
	*s.pushCmd(&s.hosts[dev].q) = c
	s.submitted(dev)
}

// Launch queues the launch of op on dev's host thread, as Submit of a CmdLaunch command does
// (engine.Launcher).
func (s *Sim) Launch(dev engine.DeviceID, op *engine.StreamOp) {
	oi := s.reserve(op)
	*s.pushCmd(&s.hosts[dev].q) = hostCmd{Kind: engine.CmdLaunch, ref: oi, Duration: s.launchCost(&s.op(oi).op)}
	s.submitted(dev)
}

// submitted counts the command just queued on dev's host thread and wakes the thread if idle.
func (s *Sim) submitted(dev engine.DeviceID) {
	h := &s.hosts[dev]
	s.pendingCmds++
	if !h.busy && !h.kicked {
		h.kicked = true
		s.at(s.now, evHostReady, int32(dev), 0)
	}
}

func (s *Sim) at(t int64, typ uint8, a int32, ver uint32) {
	s.seq++
	s.q.push(item{t: t, key: s.seq<<8 | uint64(typ), a: a, ver: ver})
}

// atOp schedules a timer for the op r names; it is dropped if that op is gone by then.
func (s *Sim) atOp(t int64, typ uint8, r opRef) { s.at(t, typ, r.oi, r.gen) }

// publishEvery is the fewest items the simulation handles between two publications of what is in
// flight (more on a cluster with more op slots and hosts than that).
const publishEvery = 1024

// Run executes what was submitted until it has all completed.
func (s *Sim) Run(ctx context.Context) error {
	if s.runErr != nil {
		return s.runErr
	}
	if s.cfg.Speed > 0 && s.pace.Wall.IsZero() {
		// One anchor for the whole session: re-anchoring at every Run (every step) would let each
		// step finish early by the sleep threshold and the drift add up.
		s.pace = timeline.Pace{Wall: time.Now(), At: s.now, Speed: s.cfg.Speed}
	}
	defer s.publish() // what is left running when Run returns (nothing, unless it ended early)
	// The links' bytes up to the end of the run are reported with it, not a window later.
	defer func() { s.linkWindow(s.now) }()
	err := s.run(ctx, math.MaxInt64)
	s.orderFreeSlots()
	return err
}

// run dispatches the simulation's items up to simulated time until (inclusive), while anything
// submitted is still pending.
func (s *Sim) run(ctx context.Context, until int64) error {
	for s.pendingCmds+s.pendingOps+s.batched > 0 {
		if s.q.len() == 0 {
			s.runErr = s.deadlock()
			return s.runErr
		}
		if s.q.minT() > until {
			return nil
		}
		it := s.q.pop()
		if s.stale(it) {
			continue
		}
		s.handled++
		s.work++
		if s.work >= s.nextPublish {
			// Publishing scans every op slot and host: once per that much work, its cost per item
			// stays constant however large the cluster.
			s.nextPublish = s.work + uint64(max(publishEvery, s.nOps+len(s.hosts)))
			if s.running.watched.Load() {
				s.publish()
			}
			if ctx.Err() != nil {
				return engine.Canceled(ctx, s.now)
			}
		}
		if s.cfg.Speed > 0 && it.t > s.now {
			if d := time.Until(s.pace.WallAt(it.t)); d > time.Millisecond {
				s.publishSleep(true, it.t) // the console reads what runs while the simulation waits for the wall clock
				select {
				case <-ctx.Done():
					return engine.Canceled(ctx, s.now)
				case <-time.After(d):
				}
			}
		}
		if len(s.lb.used) > 0 {
			s.crossWindows(it.t)
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
	switch it.typ() {
	case evFlowDone:
		f := &s.flows[it.a]
		return !f.on || f.ver != it.ver
	case evWatchdog:
		return !s.wdDue(it.t)
	case evBatchTimer:
		h := &s.hosts[it.a]
		return h.batchGen != it.ver || len(h.batch) == 0
	case evOpDone, evStreamWake:
		return !s.current(opRef{it.a, it.ver})
	case evCollStart:
		return s.instPool[it.a].gen != it.ver
	case evClassDone:
		return s.blocks[it.a].gen != it.ver
	}
	return false
}

func (s *Sim) dispatch(it item) {
	switch it.typ() {
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
	case evCollFlows:
		if !s.startBlock(it.a) {
			for _, fi := range s.instPool[it.a].starts {
				s.flowStart(fi)
			}
		}
	case evClassDone:
		s.classDone(it.a, it.key)
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
	case evFault:
		s.faultStep(it.a)
	}
}
