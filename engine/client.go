package engine

import (
	"context"
	"fmt"

	"github.com/xfertop/xfertop/timeline"
)

// Options are the engine's knobs. The zero value is not useful: start from DefaultOptions.
type Options struct {
	// EarlyEnqueue enqueues a send as soon as its source buffer's definition event is recorded,
	// making the stream wait on the device; off, the host thread waits for the producer first.
	EarlyEnqueue bool
	// D2DPriority is the priority of the streams device-to-device transfers run on.
	D2DPriority Priority
	// CommCacheSize bounds the communicator cache; 0 disables it (every use creates one).
	CommCacheSize int
	// RecvPoolSlots receive buffers of RecvPoolSlotBytes are preallocated on each device.
	RecvPoolSlots     int
	RecvPoolSlotBytes int64
	// CollMemBytes bounds the collective memory cache.
	CollMemBytes int64
	// BatchOps and BatchWindowNs configure the batching window for BatchSend/BatchRecv.
	BatchOps      int
	BatchWindowNs int64
	// WatchdogNs is how long a transfer may wait for its peer; 0 disarms the watchdog.
	WatchdogNs int64
	// NCCLAlgo and NCCLProto force every collective's algorithm and protocol (NCCL_ALGO,
	// NCCL_PROTO); zero lets the tuner choose.
	NCCLAlgo  timeline.NCCLAlgo
	NCCLProto timeline.NCCLProto
	// Graphs makes a scenario run its first step as is (it creates the communicators), capture its
	// second into a CUDA graph and replay that graph for every later step, as XLA's command
	// buffers do: one launch per device and step instead of one per op.
	Graphs bool
}

// DefaultOptions returns the engine's defaults.
func DefaultOptions() Options {
	return Options{
		EarlyEnqueue:      true,
		D2DPriority:       PriorityHigh,
		CommCacheSize:     16,
		RecvPoolSlots:     8,
		RecvPoolSlotBytes: 256 << 20,
		CollMemBytes:      4 << 30,
		BatchOps:          8,
		BatchWindowNs:     50_000,
		WatchdogNs:        10_000_000_000,
	}
}

type streamInfo struct {
	dev  DeviceID
	prio Priority
}

// Client is the engine's API over one backend. It is not safe for concurrent use: one goroutine
// builds a step's work, then calls Run.
type Client struct {
	b    Backend
	fast Launcher // b, when it takes launches without a Command (nil: it does not)
	sink timeline.Sink
	strs *timeline.Strings
	topo Topology
	// nDevs is topo.Devices(): Topology's methods take it by value, and the compiler copies its
	// some 400 bytes at each call, which checking every op's device did twice.
	nDevs int
	opts  Options
	comms *CommCache
	pool  *RecvPool
	coll  *CollMem

	streams  []streamInfo // indexed by StreamID
	xferStrm []StreamID   // per device: stream for transfers (D2DPriority)
	compStrm []StreamID   // per device: default compute stream
	nextOp   uint64
	// xfers holds the op id of each SendBuffers/ReceiveBuffers half posted whose other half is
	// not yet (transferID): at most the transfers in flight.
	xfers     map[xferKey]xferHalf
	nextGroup uint32
	nextBar   uint32
	nextBuf   uint32

	nextGraph    uint32   // graph launches
	nextGraphKey uint32   // graphs captured
	capt         *capture // the open capture region, nil when none

	group     bool
	groupOps  [][]StreamOp // per device, while a group is open
	groupDevs []DeviceID

	// seen[d] == seenEpoch marks device d as met in the device set checkSet is reading: a
	// duplicate is found in one pass, not by comparing every pair of a 4,096-rank set.
	seen      []uint32
	seenEpoch uint32

	ev timeline.Event // scratch for emit: handed to the sink by pointer, so emitting does not allocate
	// lop is scratch for a launch: an op is built in it and handed to the backend by pointer,
	// where an op built on the stack was copied again to pass it by value (a pointer to it
	// through the Launcher interface would have put every op on the heap).
	lop StreamOp
}

// NewClient builds a client over b. Events the client itself produces (cache hits, evictions,
// buffer allocations) go to sink, which must be the sink the backend emits to.
func NewClient(b Backend, sink timeline.Sink, opts Options) *Client {
	topo := b.Topology()
	n := topo.Devices()
	c := &Client{b: b, sink: sink, strs: b.Strings(), topo: topo, nDevs: n, opts: opts,
		comms:    NewCommCache(opts.CommCacheSize),
		coll:     NewCollMem(opts.CollMemBytes),
		streams:  make([]streamInfo, 1),
		xferStrm: make([]StreamID, n),
		compStrm: make([]StreamID, n),
		groupOps: make([][]StreamOp, n),
		seen:     make([]uint32, n),
		xfers:    map[xferKey]xferHalf{},
	}
	c.fast, _ = b.(Launcher)
	c.pool = newRecvPool(n, opts.RecvPoolSlots, opts.RecvPoolSlotBytes, &c.nextBuf)
	for d := range n {
		for range opts.RecvPoolSlots {
			c.emit(timeline.Event{Kind: timeline.KindBufferAlloc, Device: int32(d), Peer: timeline.NoDevice,
				Bytes: opts.RecvPoolSlotBytes, Host: uint16(topo.HostOf(DeviceID(d))), Label: c.strs.ID("recv pool")})
		}
	}
	c.coll.onAlloc = func(comm uint32, bytes int64) {
		c.emit(timeline.Event{Kind: timeline.KindBufferAlloc, Device: timeline.NoDevice, Peer: timeline.NoDevice, Comm: comm, Bytes: bytes, Label: c.strs.ID("collective memory")})
	}
	c.coll.onFree = func(comm uint32, bytes int64) {
		c.emit(timeline.Event{Kind: timeline.KindBufferFree, Device: timeline.NoDevice, Peer: timeline.NoDevice, Comm: comm, Bytes: bytes, Label: c.strs.ID("collective memory")})
	}
	b.SetWatchdog(opts.WatchdogNs)
	b.SetBatching(opts.BatchOps, opts.BatchWindowNs)
	return c
}

func (c *Client) emit(e timeline.Event) {
	now := c.b.Now()
	e.Start, e.End = now, now
	if e.Status == 0 && e.End < e.Start {
		e.End = e.Start
	}
	c.ev = e
	c.sink.Emit(&c.ev)
}

// Topology returns the cluster's shape.
func (c *Client) Topology() Topology { return c.topo }

// Backend returns the backend the client runs on.
func (c *Client) Backend() Backend { return c.b }

// Options returns the options the client was built with.
func (c *Client) Options() Options { return c.opts }

// Strings returns the session's string table.
func (c *Client) Strings() *timeline.Strings { return c.strs }

// NewOpID returns a fresh op id.
func (c *Client) NewOpID() uint64 { c.nextOp++; return c.nextOp }

func (c *Client) checkDevice(op string, d DeviceID) error {
	if d < 0 || int(d) >= c.nDevs {
		return &GuardError{Op: op, Kind: ErrUnknownPeer, Devices: []DeviceID{d},
			Detail: fmt.Sprintf("topology %s has devices 0..%d", c.topo.Name, c.topo.Devices()-1)}
	}
	return nil
}

// checkSet validates a device set: not empty, every id known, none repeated.
func (c *Client) checkSet(op string, devs []DeviceID) error {
	if len(devs) == 0 {
		return &GuardError{Op: op, Kind: ErrEmptyDevices}
	}
	c.seenEpoch++
	if c.seenEpoch == 0 { // wrapped: marks of 2^32 sets ago would read as this one's
		clear(c.seen)
		c.seenEpoch = 1
	}
	for _, d := range devs {
		if err := c.checkDevice(op, d); err != nil {
			return err
		}
		if c.seen[d] == c.seenEpoch {
			return &GuardError{Op: op, Kind: ErrDuplicateDevice, Devices: []DeviceID{d}}
		}
		c.seen[d] = c.seenEpoch
	}
	return nil
}

// NewStream creates a stream on dev with the given priority.
func (c *Client) NewStream(dev DeviceID, prio Priority) (StreamID, error) {
	if err := c.checkDevice("NewStream", dev); err != nil {
		return 0, err
	}
	id := c.b.NewStream(dev, prio)
	for int(id) >= len(c.streams) {
		c.streams = append(c.streams, streamInfo{})
	}
	c.streams[id] = streamInfo{dev, prio}
	return id, nil
}

// ComputeStream returns dev's default compute stream (normal priority), creating it on first use.
func (c *Client) ComputeStream(dev DeviceID) StreamID {
	if c.compStrm[dev] == 0 {
		c.compStrm[dev], _ = c.NewStream(dev, PriorityNormal)
	}
	return c.compStrm[dev]
}

// TransferStream returns dev's transfer stream, whose priority is Options.D2DPriority.
func (c *Client) TransferStream(dev DeviceID) StreamID {
	if c.xferStrm[dev] == 0 {
		c.xferStrm[dev], _ = c.NewStream(dev, c.opts.D2DPriority)
	}
	return c.xferStrm[dev]
}

func (c *Client) streamDev(s StreamID) (DeviceID, error) {
	if s == 0 || int(s) >= len(c.streams) {
		return 0, fmt.Errorf("unknown stream %d", s)
	}
	return c.streams[s].dev, nil
}

// launch takes op by pointer, as submit takes its command: an op is 200 bytes, a command 300, and
// copying them at each call on the way down was a tenth of the cost of issuing one.
func (c *Client) launch(op *StreamOp) {
	if c.group && (op.Kind == OpSend || op.Kind == OpRecv || op.Kind == OpCollective) {
		if len(c.groupOps[op.Device]) == 0 {
			c.groupDevs = append(c.groupDevs, op.Device)
		}
		c.groupOps[op.Device] = append(c.groupOps[op.Device], *op)
		return
	}
	if c.fast != nil && c.capt == nil {
		c.fast.Launch(op.Device, op)
		return
	}
	c.submit(op.Device, &Command{Kind: CmdLaunch, Op: *op})
}

// Kernel enqueues compute of dur ns on stream s.
func (c *Client) Kernel(s StreamID, dur int64, label string) error {
	dev, err := c.streamDev(s)
	if err != nil {
		return err
	}
	c.lop = StreamOp{Kind: OpKernel, Stream: s, Device: dev, Peer: -1, Duration: dur, Label: c.strs.ID(label)}
	c.launch(&c.lop)
	return nil
}

// Record enqueues the recording of a new event on s and returns it: the definition event of
// whatever s produced so far.
func (c *Client) Record(s StreamID) (EventID, error) {
	dev, err := c.streamDev(s)
	if err != nil {
		return 0, err
	}
	ev := c.b.NewEvent()
	c.lop = StreamOp{Kind: OpRecord, Stream: s, Device: dev, Peer: -1, Event: ev}
	c.launch(&c.lop)
	return ev, nil
}

// WaitEvent makes s wait, on the device, until ev is recorded.
func (c *Client) WaitEvent(s StreamID, ev EventID) error {
	dev, err := c.streamDev(s)
	if err != nil {
		return err
	}
	if ev != 0 {
		c.lop = StreamOp{Kind: OpWaitEvent, Stream: s, Device: dev, Peer: -1, Event: ev}
		c.launch(&c.lop)
	}
	return nil
}

// HostWait blocks dev's host thread until ev is recorded (what a runtime without early enqueue does).
func (c *Client) HostWait(dev DeviceID, ev EventID) {
	if ev != 0 {
		c.submit(dev, &Command{Kind: CmdHostWait, Event: ev})
	}
}

// HostSleep keeps dev's host thread busy for ns (a slow input pipeline, a straggler).
func (c *Client) HostSleep(dev DeviceID, ns int64, label string) {
	c.submit(dev, &Command{Kind: CmdSleep, Duration: ns, Label: c.strs.ID(label)})
}

// Copy enqueues a memcpy on s. For CopyP2P, peer is the destination device; for the others it is
// ignored. The future resolves when the copy completes.
func (c *Client) Copy(s StreamID, dir timeline.CopyDir, bytes int64, peer DeviceID, pageable bool) (*Future, error) {
	dev, err := c.streamDev(s)
	if err != nil {
		return nil, err
	}
	if bytes < 0 {
		return nil, &GuardError{Op: "Copy", Kind: ErrSizeMismatch, Devices: []DeviceID{dev}, Detail: "negative size"}
	}
	if dir == timeline.CopyP2P {
		if err := c.checkDevice("Copy", peer); err != nil {
			return nil, err
		}
		if c.topo.HostOf(peer) != c.topo.HostOf(dev) {
			return nil, &GuardError{Op: "Copy", Kind: ErrUnknownPeer, Devices: []DeviceID{dev, peer}, Detail: "peer copies stay within a host; use SendBuffers across hosts"}
		}
	} else {
		peer = -1
	}
	id := c.NewOpID()
	f := NewFuture(id)
	c.lop = StreamOp{Kind: OpCopy, Stream: s, Device: dev, Peer: peer, Dir: dir, Bytes: bytes, Pageable: pageable, ID: id, Future: f}
	c.launch(&c.lop)
	return f, nil
}

// Send enqueues a point-to-point send of bytes to peer on s, paired with the Recv that uses the
// same id. A send blocks its stream until the peer posts the matching receive.
func (c *Client) Send(s StreamID, peer DeviceID, bytes int64, id uint64) (*Future, error) {
	return c.p2p(OpSend, s, peer, bytes, id, 0)
}

// Recv enqueues the receiving half of the Send with the same id.
func (c *Client) Recv(s StreamID, peer DeviceID, bytes int64, id uint64) (*Future, error) {
	return c.p2p(OpRecv, s, peer, bytes, id, 0)
}

// SendLabeled is Send with a label on its events ("stage 1→2 microbatch 3"): what the transfer
// is in the workload's terms, which the events view and the findings about it show beside its
// op id.
func (c *Client) SendLabeled(s StreamID, peer DeviceID, bytes int64, id uint64, label string) (*Future, error) {
	return c.p2p(OpSend, s, peer, bytes, id, c.strs.ID(label))
}

// RecvLabeled is Recv with a label on its events (SendLabeled).
func (c *Client) RecvLabeled(s StreamID, peer DeviceID, bytes int64, id uint64, label string) (*Future, error) {
	return c.p2p(OpRecv, s, peer, bytes, id, c.strs.ID(label))
}

func (c *Client) p2p(kind OpKind, s StreamID, peer DeviceID, bytes int64, id uint64, label uint32) (*Future, error) {
	name := "Send" // not a map literal: that built a map on every call
	if kind == OpRecv {
		name = "Recv"
	}
	dev, err := c.streamDev(s)
	if err != nil {
		return nil, err
	}
	if err := c.checkDevice(name, peer); err != nil {
		return nil, err
	}
	if bytes < 0 {
		return nil, &GuardError{Op: name, Kind: ErrSizeMismatch, Devices: []DeviceID{dev, peer}, Detail: "negative size"}
	}
	comm := c.commFor(name, []DeviceID{dev, peer})
	f := NewFuture(id)
	c.lop = StreamOp{Kind: kind, Stream: s, Device: dev, Peer: peer, Bytes: bytes, ID: id, Comm: comm.ID, Label: label, Future: f}
	c.launch(&c.lop)
	return f, nil
}

// GroupStart opens an NCCL-style group: sends, receives and collectives issued until GroupEnd are
// launched as one fused op per device (one launch), so the order in which peers post their halves
// cannot deadlock.
func (c *Client) GroupStart() { c.group = true }

// GroupEnd closes the group and launches it.
func (c *Client) GroupEnd() {
	c.group = false
	for _, d := range c.groupDevs {
		ops := c.groupOps[d]
		c.nextGroup++
		g := StreamOp{Kind: OpGroup, Stream: ops[0].Stream, Device: d, Peer: -1, Group: c.nextGroup,
			Parts: append([]StreamOp(nil), ops...)}
		for i := range g.Parts {
			g.Parts[i].Group = c.nextGroup
		}
		c.submit(d, &Command{Kind: CmdLaunch, Op: g})
		c.groupOps[d] = ops[:0]
	}
	c.groupDevs = c.groupDevs[:0]
}

// Batch adds a send or receive to dev's batching window instead of launching it: the window
// launches as one group once Options.BatchOps ops are held or BatchWindowNs after the first.
func (c *Client) Batch(kind OpKind, s StreamID, peer DeviceID, bytes int64, id uint64) (*Future, error) {
	dev, err := c.streamDev(s)
	if err != nil {
		return nil, err
	}
	if err := c.checkDevice("Batch", peer); err != nil {
		return nil, err
	}
	comm := c.commFor("Batch", []DeviceID{dev, peer})
	f := NewFuture(id)
	c.submit(dev, &Command{Kind: CmdBatch, Op: StreamOp{Kind: kind, Stream: s, Device: dev, Peer: peer, Bytes: bytes, ID: id, Comm: comm.ID, Future: f}})
	return f, nil
}

// FlushBatch launches whatever dev's batching window holds.
func (c *Client) FlushBatch(dev DeviceID) { c.submit(dev, &Command{Kind: CmdFlush}) }

// commFor returns the cached communicator for devs, queueing its creation on a miss.
func (c *Client) commFor(op string, devs []DeviceID) *Communicator {
	comm, created, evicted := c.comms.Get(devs)
	for _, e := range evicted {
		c.emit(timeline.Event{Kind: timeline.KindCommEvict, Device: timeline.NoDevice, Peer: timeline.NoDevice, Comm: e.ID, Status: timeline.StatusLRU, Ranks: uint16(len(e.Devices))})
		c.release(e)
	}
	for _, e := range c.comms.TakeRetired() {
		c.release(e) // the cache is off: destroyed, with no eviction to report
	}
	if !created {
		c.emit(timeline.Event{Kind: timeline.KindCommHit, Device: int32(devs[0]), Peer: timeline.NoDevice, Comm: comm.ID, Ranks: uint16(len(devs))})
		return comm
	}
	label := c.strs.ID(op + " comm " + DeviceRanges(comm.Devices))
	for _, d := range comm.Devices {
		c.submit(d, &Command{Kind: CmdCommInit, Comm: comm.ID, Devices: comm.Devices, Label: label})
	}
	return comm
}

// CommFault evicts a communicator that reported an error, with an alert; the next use of its
// devices creates a fresh one.
func (c *Client) CommFault(comm *Communicator, err error) {
	if c.comms.Fault(comm) {
		c.emit(timeline.Event{Kind: timeline.KindCommEvict, Device: timeline.NoDevice, Peer: timeline.NoDevice, Comm: comm.ID, Status: timeline.StatusFaulted, Ranks: uint16(len(comm.Devices))})
		c.emit(timeline.Event{Kind: timeline.KindAlert, Device: timeline.NoDevice, Peer: timeline.NoDevice, Comm: comm.ID, Status: timeline.StatusError,
			Label: c.strs.ID(fmt.Sprintf("communicator %d over devices %v evicted: %v", comm.ID, comm.Devices, err))})
		c.release(comm)
	}
}

// commReleaser is a backend holding real resources per communicator (NCCL communicators): it
// frees one the cache dropped once the ops already submitted on it have run.
type commReleaser interface {
	ReleaseComm(id uint32)
}

// commFaultReporter is a backend whose communicators can fail in the background; it hands over
// the faults found since the last call.
type commFaultReporter interface {
	TakeCommFaults() []CommFault
}

func (c *Client) release(comm *Communicator) {
	if r, ok := c.b.(commReleaser); ok {
		r.ReleaseComm(comm.ID)
	}
}

// Communicator returns the cached communicator for devs (creating it if needed).
func (c *Client) Communicator(devs []DeviceID) (*Communicator, error) {
	if err := c.checkSet("Communicator", devs); err != nil {
		return nil, err
	}
	return c.commFor("Communicator", devs), nil
}

// Collective enqueues collective op over devs, each rank on its transfer stream. bytes is the
// nccl-tests size: the per-rank buffer for all-reduce and broadcast, the total output for
// all-gather, reduce-scatter and all-to-all. It returns one future per rank.
func (c *Client) Collective(op timeline.CollOp, devs []DeviceID, bytes int64, label string) ([]*Future, error) {
	if err := c.checkCollective(op, devs, bytes); err != nil {
		return nil, err
	}
	_, futs := c.collectiveOn(op, devs, c.transferStreams(devs), bytes, nil, label, true)
	return futs, nil
}

// CollectiveOn is Collective with an explicit stream per rank.
func (c *Client) CollectiveOn(op timeline.CollOp, devs []DeviceID, streams []StreamID, bytes int64, label string) ([]*Future, error) {
	if err := c.checkStreams(op, devs, streams); err != nil {
		return nil, err
	}
	_, futs := c.collectiveOn(op, devs, streams, bytes, nil, label, true)
	return futs, nil
}

// checkCollective is Collective's guard: a valid set of ranks and a size not below 0.
func (c *Client) checkCollective(op timeline.CollOp, devs []DeviceID, bytes int64) error {
	name := op.String()
	if err := c.checkSet(name, devs); err != nil {
		return err
	}
	if bytes < 0 {
		return &GuardError{Op: name, Kind: ErrSizeMismatch, Devices: devs, Detail: "negative size"}
	}
	return nil
}

// checkStreams is CollectiveOn's guard: a valid set of ranks and a stream of its own rank's device
// for each.
func (c *Client) checkStreams(op timeline.CollOp, devs []DeviceID, streams []StreamID) error {
	name := op.String()
	if err := c.checkSet(name, devs); err != nil {
		return err
	}
	if len(streams) != len(devs) {
		return &GuardError{Op: name, Kind: ErrSizeMismatch, Devices: devs, Detail: fmt.Sprintf("%d streams for %d ranks", len(streams), len(devs))}
	}
	for i, s := range streams {
		if d, err := c.streamDev(s); err != nil || d != devs[i] {
			return &GuardError{Op: name, Kind: ErrUnknownPeer, Devices: []DeviceID{devs[i]}, Detail: fmt.Sprintf("stream %d is not on device %d", s, devs[i])}
		}
	}
	return nil
}

// transferStreams is each device's transfer stream.
func (c *Client) transferStreams(devs []DeviceID) []StreamID {
	streams := make([]StreamID, len(devs))
	for i, d := range devs {
		streams[i] = c.TransferStream(d)
	}
	return streams
}

// RaggedAllToAll enqueues an all-to-all in which rank i sends sizes[i][j] bytes to rank j
// (mixture-of-experts routing). sizes must be len(devs) × len(devs).
func (c *Client) RaggedAllToAll(devs []DeviceID, sizes [][]int64, label string) ([]*Future, error) {
	if err := c.checkSet("ragged_all_to_all", devs); err != nil {
		return nil, err
	}
	if len(sizes) != len(devs) {
		return nil, &GuardError{Op: "ragged_all_to_all", Kind: ErrSizeMismatch, Devices: devs, Detail: fmt.Sprintf("%d size rows for %d ranks", len(sizes), len(devs))}
	}
	var total int64
	for i, row := range sizes {
		if len(row) != len(devs) {
			return nil, &GuardError{Op: "ragged_all_to_all", Kind: ErrSizeMismatch, Devices: []DeviceID{devs[i]}, Detail: fmt.Sprintf("rank %d has %d sizes for %d peers", i, len(row), len(devs))}
		}
		for _, v := range row {
			if v < 0 {
				return nil, &GuardError{Op: "ragged_all_to_all", Kind: ErrSizeMismatch, Devices: []DeviceID{devs[i]}, Detail: "negative size"}
			}
			total += v
		}
	}
	_, futs := c.collectiveOn(timeline.CollRaggedAllToAll, devs, c.transferStreams(devs), total/int64(len(devs)), sizes, label, true)
	return futs, nil
}

// CollectiveAll is Collective with one future for the whole collective rather than one per rank:
// it resolves when the last rank has completed, at that rank's completion, or fails with the first
// failure a rank reported once every rank has reported. The backend reports each rank as Collective's
// futures would be (the same events); a caller that does not wait on a rank alone saves a future a
// rank (at 1,024 GPUs, llm-train's step made 135,000 of them).
func (c *Client) CollectiveAll(op timeline.CollOp, devs []DeviceID, bytes int64, label string) (*Future, error) {
	if err := c.checkCollective(op, devs, bytes); err != nil {
		return nil, err
	}
	f, _ := c.collectiveOn(op, devs, c.transferStreams(devs), bytes, nil, label, false)
	return f, nil
}

// CollectiveOnAll is CollectiveOn with one future for the whole collective (CollectiveAll).
func (c *Client) CollectiveOnAll(op timeline.CollOp, devs []DeviceID, streams []StreamID, bytes int64, label string) (*Future, error) {
	if err := c.checkStreams(op, devs, streams); err != nil {
		return nil, err
	}
	f, _ := c.collectiveOn(op, devs, streams, bytes, nil, label, false)
	return f, nil
}

// collectiveOn enqueues op's ranks. With perRank it returns a future per rank, and no future for
// the whole; without, the whole's future, whose pending count takes each rank's completion, and no
// futures per rank. Either way the collective's scratch buffer stays in flight until every rank
// is done.
func (c *Client) collectiveOn(op timeline.CollOp, devs []DeviceID, streams []StreamID, bytes int64, sizes [][]int64, label string, perRank bool) (*Future, []*Future) {
	comm := c.commFor(op.String(), devs)
	scratch := c.coll.Acquire(comm.ID, max(bytes, 1))
	id := c.NewOpID()
	var whole *Future
	var futs []*Future
	var slab []Future
	var onDone func(*Future)
	if perRank {
		futs = make([]*Future, len(devs))
		// The ranks' futures in one allocation, and one callback for all of them: a collective
		// on 4,096 ranks is not 8,192 small objects for the garbage collector.
		slab = make([]Future, len(devs))
		remaining := len(devs)
		onDone = func(*Future) {
			remaining--
			if remaining == 0 {
				c.coll.Release(scratch) // in flight until every rank is done
			}
		}
	} else {
		whole = &Future{op: id, pending: int32(len(devs) - 1)}
		whole.OnDone = func(*Future) { c.coll.Release(scratch) }
	}
	lbl := c.strs.ID(label)
	ranks := append([]DeviceID(nil), devs...)
	for i, d := range devs {
		f := whole
		if perRank {
			f = &slab[i]
			f.op, f.OnDone = id, onDone
			futs[i] = f
		}
		var row, col []int64
		var rb int64 = bytes
		if sizes != nil {
			row = sizes[i]
			col = make([]int64, len(sizes))
			for j := range sizes {
				col[j] = sizes[j][i]
			}
			rb = 0
			for _, v := range row {
				rb += v
			}
		}
		c.lop = StreamOp{Kind: OpCollective, Stream: streams[i], Device: d, Peer: -1, Coll: op, Bytes: rb, ID: id,
			Ranks: ranks, Sizes: row, RecvSizes: col, Comm: comm.ID, Label: lbl, Future: f,
			NCCLAlgo: c.opts.NCCLAlgo, NCCLProto: c.opts.NCCLProto}
		c.launch(&c.lop)
	}
	return whole, futs
}

// Barrier enqueues a cross-device barrier over devs on each device's compute stream: every rank's
// stream waits until all ranks have arrived. It returns the barrier's id.
func (c *Client) Barrier(devs []DeviceID, label string) (uint32, error) {
	if err := c.checkSet("Barrier", devs); err != nil {
		return 0, err
	}
	c.nextBar++
	id := c.NewOpID()
	ranks := append([]DeviceID(nil), devs...)
	lbl := c.strs.ID(label)
	for _, d := range devs {
		c.lop = StreamOp{Kind: OpBarrier, Stream: c.ComputeStream(d), Device: d, Peer: -1, ID: id, Barrier: c.nextBar, Ranks: ranks, Label: lbl}
		c.launch(&c.lop)
	}
	return c.nextBar, nil
}

// SendBuffers sends each buffer to the device with the same index in dsts, under key, and returns a
// future per send at once. With early enqueue, a send waits for its buffer's definition event on
// the device; without, the host thread waits for it first. The receiver calls ReceiveBuffers with
// the same key.
func (c *Client) SendBuffers(key uint64, bufs []*Buffer, dsts []DeviceID) ([]*Future, error) {
	if len(bufs) == 0 || len(bufs) != len(dsts) {
		return nil, &GuardError{Op: "SendBuffers", Kind: ErrSizeMismatch, Devices: dsts, Detail: fmt.Sprintf("%d buffers for %d destinations", len(bufs), len(dsts))}
	}
	futs := make([]*Future, len(bufs))
	for i, b := range bufs {
		if err := c.checkDevice("SendBuffers", dsts[i]); err != nil {
			return nil, err
		}
		if b.Device == dsts[i] {
			return nil, &GuardError{Op: "SendBuffers", Kind: ErrDuplicateDevice, Devices: []DeviceID{b.Device}, Detail: "a device cannot send to itself"}
		}
		s := c.TransferStream(b.Device)
		if c.opts.EarlyEnqueue {
			_ = c.WaitEvent(s, b.Def)
		} else {
			c.HostWait(b.Device, b.Def)
		}
		f, err := c.Send(s, dsts[i], b.Bytes, c.transferID(key, i, true))
		if err != nil {
			return nil, err
		}
		futs[i] = f
	}
	return futs, nil
}

// ReceiveBuffers posts receives on dst for buffers of the given sizes from srcs, under key, with
// buffers taken from dst's preallocated receive pool. Each future delivers its buffer; release it
// with ReleaseBuffer when done.
func (c *Client) ReceiveBuffers(key uint64, dst DeviceID, sizes []int64, srcs []DeviceID) ([]*Future, error) {
	if err := c.checkDevice("ReceiveBuffers", dst); err != nil {
		return nil, err
	}
	if len(sizes) == 0 || len(sizes) != len(srcs) {
		return nil, &GuardError{Op: "ReceiveBuffers", Kind: ErrSizeMismatch, Devices: srcs, Detail: fmt.Sprintf("%d sizes for %d sources", len(sizes), len(srcs))}
	}
	futs := make([]*Future, len(sizes))
	s := c.TransferStream(dst)
	for i, n := range sizes {
		if err := c.checkDevice("ReceiveBuffers", srcs[i]); err != nil {
			return nil, err
		}
		buf, _ := c.pool.get(dst, n)
		f, err := c.Recv(s, srcs[i], n, c.transferID(key, i, false))
		if err != nil {
			c.pool.Release(buf)
			return nil, err
		}
		f.buffer = buf
		futs[i] = f
	}
	return futs, nil
}

// ReleaseBuffer returns a received buffer to its pool.
func (c *Client) ReleaseBuffer(b *Buffer) { c.pool.Release(b) }

// NewBuffer describes a buffer of n bytes on dev whose contents are defined by event def.
func (c *Client) NewBuffer(dev DeviceID, n int64, def EventID) *Buffer {
	c.nextBuf++
	return &Buffer{ID: c.nextBuf, Kind: MemDevice, Device: dev, Bytes: n, Def: def}
}

// xferKey is the i-th buffer of transfer key (SendBuffers, ReceiveBuffers).
type xferKey struct {
	key uint64
	i   int
}

// xferHalf is the op id given to the first half of a transfer's buffer posted, and which half.
type xferHalf struct {
	id   uint64
	send bool
}

// transferID is the op id of buffer i of transfer key, a send or a receive: a fresh one from the
// op counter (NewOpID) for the first half posted, the same for the other half. So a transfer's
// ops are numbered as every other op is ("send op 3372"), a number a person can say and search
// for, not the key and index packed into 17 digits.
func (c *Client) transferID(key uint64, i int, send bool) uint64 {
	k := xferKey{key, i}
	if h, ok := c.xfers[k]; ok && h.send != send {
		delete(c.xfers, k)
		return h.id
	}
	id := c.NewOpID()
	c.xfers[k] = xferHalf{id: id, send: send}
	return id
}

// Run executes everything queued so far; see Backend.Run.
func (c *Client) Run(ctx context.Context) error {
	if c.group {
		return fmt.Errorf("run: a group is still open (GroupStart without GroupEnd)")
	}
	if c.capt != nil {
		c.refuse(-1, "a run", "running the device waits for it (a synchronize inside the region)")
		return c.capt.err
	}
	err := c.b.Run(ctx)
	if fr, ok := c.b.(commFaultReporter); ok {
		// Evicted whether or not the run failed, so the next use of the devices starts afresh.
		for _, f := range fr.TakeCommFaults() {
			if comm := c.comms.Lookup(f.Comm); comm != nil {
				c.CommFault(comm, f.Err)
			}
		}
	}
	return err
}

// Stats reports the state of the client's caches and pools.
type Stats struct {
	CommCache CommCacheStats
	RecvPool  RecvPoolStats
	CollMem   CollMemStats
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{CommCache: c.comms.Stats(), RecvPool: c.pool.Stats(), CollMem: c.coll.Stats()}
}
