package fold

import (
	"fmt"
	"hash/fnv"

	"github.com/xfertop/xfertop/join"
	"github.com/xfertop/xfertop/timeline"
)

// Config tunes a Folder.
type Config struct {
	// GlobalRank is the process's rank in the job (RANK, as torchrun sets it); −1 when unknown,
	// and then each context's rank in its communicator is its device.
	GlobalRank int
	// Mask is the activation mask NCCL was given: what children a task can expect.
	Mask uint64
	// Epoch is the host time (ns, the records' clock) that becomes time 0.
	Epoch int64
	// GraceNs is how long a stopped task waits for proxy children that may still start (NCCL
	// starts proxy ops on its proxy thread after the task's stop); 50 ms when 0.
	GraceNs int64
	// StaleNs: an event not stopped after this long is given up (a stop lost); 60 s when 0.
	StaleNs int64
	// Posted emits a mark for every collective posted (for hang detection on a live stream).
	Posted bool
	// TagNames names NCCL 2.31's per-call profiler tags (userTag) in labels: "tag fwd" rather than
	// "tag 1". A tag without a name is shown as its number.
	TagNames map[uint64]string
}

// Comm describes one profiler context: a communicator as one rank in this process sees it.
type Comm struct {
	Hash   uint64
	Name   string
	NNodes int
	NRanks int
	Rank   int
}

// Stats counts what the folder could not use.
type Stats struct {
	Orphans int64 // records for an event id never started (its start dropped, or given up)
	Stale   int64 // events given up because their stop never came
	Unknown int64 // records of event types this folder does not know
	OpNs    int64 // the summed time of the collectives, sends and receives emitted
}

type ctxInfo struct {
	Comm
	comm32 uint32
	device int32
	stream uint32 // the stream for tasks whose API event is not enabled
	p2pSeq map[[2]int32]uint64
}

// node is one NCCL event while it is open or may still be referred to by a child.
type node struct {
	typ           uint64
	ctx           uint32
	parent        uint64
	start, stop   int64
	stopped, done bool
	touched       int64
	children      int   // open children (proxy ops, kernel channels)
	count         int   // children started (tasks of a group)
	chSeen        int   // kernel channels stopped
	gpuMin        int64 // earliest kernel channel GPU start
	gpuMax        int64 // latest kernel channel GPU stop
	gpuStart      int64 // this kernel channel's GPU start
	gpuStop       int64
	lastChild     int64 // host time of the last child's stop
	bytes         int64 // moved bytes (task), or transferred (proxy op/step)
	a, b, c, d    uint64
	peer          int32
	funcID        uint32
	label         uint32
	stream        uint32
	queued        int64
	group         uint32
	state         uint16
	stateAt       int64
	waitNs        int64
	waitStart     int64
	isSend        bool
	collOp        timeline.CollOp
	opID          uint64
	nChannels     int
	choice        uint32 // collectives: NCCL's algorithm, protocol and channels (timeline.PackNCCL)
	apiFuncLabels uint32
	// captured: the API call that made this task was captured into a CUDA graph (graphCaptured):
	// the task runs when the graph is launched, not when the call returned.
	captured bool
	tag      uint64 // v7 userTag (API calls and tasks)
	// phases: a task's kernel phases (v7), the union over its channels of each phase's GPU span.
	phases [numPhases]phase
}

// phase is one kernel phase of a task on the GPU's clock; label 0: not seen.
type phase struct {
	start, stop int64
	label       uint32
}

// numPhases is how many kernel phases NCCL 2.31 names: initial_sync, compute, final_sync.
const numPhases = 3

// Folder turns the plugin's records into timeline events: a collective's or point-to-point
// task's parts (its API call, its group, proxy ops, kernel channels with GPU timers) become one
// event with its real duration once its children are done. It is not safe for concurrent use: the
// plugin's one sender goroutine owns it.
type Folder struct {
	cfg     Config
	strs    *timeline.Strings
	emit    func(*timeline.Event)
	ctxs    map[uint32]*ctxInfo
	nodes   map[uint64]*node
	free    []*node
	pending []uint64 // stopped tasks waiting for their children or the grace period
	retired []uint64 // finished events kept for late children, oldest first
	streams map[streamKey]uint32
	stats   Stats
	lastGC  int64
	labels  map[string]uint32
	now     int64
}

type streamKey struct {
	ctx  uint32
	kind uint8 // 0 CUDA stream, 1 context default, 2 network channel
	v    uint64
}

const (
	maxRetired = 8192
	maxNodes   = 1 << 18
)

// New returns a folder emitting into emit with labels interned in strs.
func New(strs *timeline.Strings, emit func(*timeline.Event), cfg Config) *Folder {
	if cfg.GraceNs <= 0 {
		cfg.GraceNs = 50e6
	}
	if cfg.StaleNs <= 0 {
		cfg.StaleNs = 60e9
	}
	return &Folder{cfg: cfg, strs: strs, emit: emit, ctxs: map[uint32]*ctxInfo{}, nodes: map[uint64]*node{},
		streams: map[streamKey]uint32{}, labels: map[string]uint32{}}
}

// Stats returns what could not be used so far.
func (f *Folder) Stats() Stats { return f.stats }

// Comm32 folds a communicator hash to the 32-bit id events carry (the same on every rank).
func Comm32(hash uint64) uint32 { return uint32(hash) ^ uint32(hash>>32) | 1 }

// CollOpID is the op id every rank's part of one collective shares: its communicator, its NCCL
// function and its sequence number in that communicator.
func CollOpID(hash uint64, fn string, seq uint64) uint64 {
	h := fnv.New64a()
	var b [16]byte
	put64(b[:8], hash)
	put64(b[8:], seq)
	h.Write(b[:])
	h.Write([]byte(fn))
	return h.Sum64()
}

// P2POpID is the op id a send and its receive share: the k-th message from src to dst in a
// communicator (ranks in the communicator).
func P2POpID(hash uint64, src, dst int32, k uint64) uint64 {
	h := fnv.New64a()
	var b [24]byte
	put64(b[:8], hash)
	put64(b[8:16], uint64(uint32(src))|uint64(uint32(dst))<<32)
	put64(b[16:], k)
	h.Write(b[:])
	return h.Sum64() | 1<<63 // apart from collective ids
}

func put64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

func (f *Folder) label(b []byte) uint32 {
	if id, ok := f.labels[string(b)]; ok { // no allocation for the lookup
		return id
	}
	s := string(b)
	id := f.strs.ID(s)
	f.labels[s] = id
	return id
}

func (f *Folder) labelf(format string, args ...any) uint32 {
	return f.label([]byte(fmt.Sprintf(format, args...)))
}

// Init registers a context (a communicator in this process) at host time t and emits its
// communicator init event.
func (f *Folder) Init(ctx uint32, c Comm, t int64) {
	ci := &ctxInfo{Comm: c, comm32: Comm32(c.Hash), device: int32(c.Rank), p2pSeq: map[[2]int32]uint64{}}
	if f.cfg.GlobalRank >= 0 {
		ci.device = int32(f.cfg.GlobalRank)
	}
	f.ctxs[ctx] = ci
	ci.stream = f.streamID(streamKey{ctx: ctx, kind: 1})
	name := c.Name
	if name == "" {
		name = fmt.Sprintf("%016x", c.Hash)
	}
	at := t - f.cfg.Epoch
	f.emit(&timeline.Event{Kind: timeline.KindCommInit, Start: at, End: at, Device: ci.device, Peer: timeline.NoDevice,
		Comm: ci.comm32, Ranks: uint16(min(c.NRanks, 1<<16-1)), Aux: uint32(c.Rank), Queued: -1,
		Label: f.labelf("comm %s rank %d/%d nodes %d", name, c.Rank, c.NRanks, c.NNodes)})
}

func (f *Folder) streamID(k streamKey) uint32 {
	if id, ok := f.streams[k]; ok {
		return id
	}
	id := uint32(len(f.streams) + 1)
	f.streams[k] = id
	return id
}

func (f *Folder) newNode() *node {
	if n := len(f.free); n > 0 {
		nd := f.free[n-1]
		f.free = f.free[:n-1]
		*nd = node{}
		return nd
	}
	return &node{}
}

// Add folds one record.
func (f *Folder) Add(r *Record) {
	f.now = max(f.now, r.T)
	switch r.Op {
	case RecStart:
		f.start(r)
	case RecStop:
		n := f.nodes[r.ID]
		if n == nil || n.stopped {
			f.stats.Orphans++
			return
		}
		n.stop, n.stopped, n.touched = r.T, true, r.T
		f.stopped(r.ID, n)
	case RecState:
		n := f.nodes[r.ID]
		if n == nil {
			f.stats.Orphans++
			return
		}
		f.state(n, r)
	case RecFinalize:
		delete(f.ctxs, r.Ctx)
	}
}

func (f *Folder) start(r *Record) {
	ci := f.ctxs[r.Ctx]
	if ci == nil {
		f.stats.Orphans++
		return
	}
	if len(f.nodes) >= maxNodes {
		f.gc(true)
	}
	n := f.newNode()
	n.typ, n.ctx, n.parent, n.start, n.touched = r.Type, r.Ctx, r.Parent, r.T, r.T
	n.a, n.b, n.c, n.d, n.peer = r.A, r.B, r.C, r.D, r.Peer
	n.queued = -1
	p := f.nodes[r.Parent]
	switch r.Type {
	case TypeGroupAPI, TypeKernelLaunch:
	case TypeCollAPI, TypeP2pAPI:
		n.funcID = f.label(cstr(r.Func[:]))
		n.stream = f.streamID(streamKey{ctx: r.Ctx, v: r.B})
		n.tag = r.Tag
	case TypeGroup:
		n.group = uint32(r.ID)
	case TypeColl, TypeCeColl:
		f.task(ci, n, r, p)
	case TypeP2p:
		f.task(ci, n, r, p)
	case TypeProxyOp, TypeKernelCh:
		if p == nil {
			if r.Parent != 0 {
				f.stats.Orphans++
			}
		} else {
			p.children++
			p.touched = r.T
		}
		if r.Type == TypeKernelCh {
			n.gpuStart = int64(r.A)
		} else {
			n.isSend = r.D != 0
			n.stream = f.streamID(streamKey{ctx: r.Ctx, kind: 2, v: r.C<<1 | r.D&1})
		}
	case TypeKernelPhase:
		n.gpuStart = int64(r.A)
		n.funcID = f.label(cstr(r.Func[:]))
	case TypeProxyStep, TypeCeSync, TypeCeBatch, TypeProxyCtrl, TypeNetPlugin:
	default:
		f.stats.Unknown++
		f.put(n)
		return
	}
	f.nodes[r.ID] = n
}

// task fills a collective's or point-to-point task's node at its start.
func (f *Folder) task(ci *ctxInfo, n *node, r *Record, parent *node) {
	fn := cstr(r.Func[:])
	n.funcID = f.label(fn)
	n.stream = ci.stream
	if r.Type == TypeCeColl && r.D != 0 {
		n.stream = f.streamID(streamKey{ctx: r.Ctx, v: r.D})
	}
	n.queued = r.T
	n.tag = r.Tag
	if parent != nil {
		if parent.typ == TypeCollAPI || parent.typ == TypeP2pAPI {
			n.stream, n.queued, n.apiFuncLabels = parent.stream, parent.start, parent.funcID
			n.captured = parent.c != 0 // collApi/p2pApi.graphCaptured
			if n.tag == 0 {
				n.tag = parent.tag
			}
		}
		if parent.typ == TypeGroup {
			n.group = parent.group
			parent.count++
		}
	}
	if g := f.nodes[r.D]; r.Type != TypeCeColl && g != nil && g.typ == TypeGroup && (parent == nil || parent.typ != TypeGroup) {
		n.group = g.group
		g.count++
	}
	size := typeSize(cstr(r.Dtype[:]))
	count := int64(r.B)
	switch r.Type {
	case TypeP2p:
		n.bytes = count * size
		n.isSend = string(fn) == "Send"
		n.nChannels = int(r.C & 0xff)
		dir := [2]int32{r.Peer, 0}
		if !n.isSend {
			dir[1] = 1
		}
		k := ci.p2pSeq[dir]
		ci.p2pSeq[dir] = k + 1
		if n.tag != 0 {
			api := n.apiFuncLabels
			if api == 0 {
				api = n.funcID
			}
			n.label = f.labelf("%s%s", f.strs.Lookup(api), f.tagText(n.tag))
		}
		self := int32(ci.Rank)
		if n.isSend {
			n.opID = P2POpID(ci.Hash, self, r.Peer, k)
		} else {
			n.opID = P2POpID(ci.Hash, r.Peer, self, k)
		}
	default:
		op, _ := timeline.ParseCollOp(string(fn))
		n.collOp = op
		n.bytes = count * size
		if op == timeline.CollAllGather || op == timeline.CollReduceScatter || op == timeline.CollAllToAll {
			n.bytes *= int64(max(ci.NRanks, 1)) // nccl-tests' size: NCCL's count is per rank
		}
		if r.Type == TypeCeColl {
			// Copy-engine collectives are numbered apart from kernel ones (NCCL's ceSeqNum): their
			// op ids must not meet.
			n.opID = CollOpID(ci.Hash, "ce "+string(fn), r.A)
		} else {
			n.opID = CollOpID(ci.Hash, string(fn), r.A)
		}
		tag := ""
		if n.tag != 0 {
			tag = f.tagText(n.tag)
		}
		if r.Type == TypeColl && r.Flags&RecSym != 0 {
			n.nChannels = int(r.C & 0xff)
			n.label = f.labelf("sym %s %dch%s", cstr(r.Variant[:]), n.nChannels, tag)
		} else if r.Type == TypeColl {
			n.nChannels = int(r.C & 0xff)
			n.label = f.labelf("%s %s %dch%s", cstr(r.Algo[:]), cstr(r.Proto[:]), n.nChannels, tag)
			// NCCL names them RING, NVLS_TREE, LL128, SIMPLE; CollNet and PAT stay unknown (0).
			a, _ := timeline.ParseNCCLAlgo(string(cstr(r.Algo[:])))
			p, _ := timeline.ParseNCCLProto(string(cstr(r.Proto[:])))
			n.choice = timeline.PackNCCL(a, p, n.nChannels)
		} else {
			n.label = f.labelf("copy engine %s%s", cstr(r.Algo[:]), tag)
		}
		if f.cfg.Posted {
			at := r.T - f.cfg.Epoch
			// With its stream and size, so that the console can draw it running until it ends.
			f.emit(&timeline.Event{Kind: timeline.KindMark, Start: at, End: at, Queued: -1, Device: ci.device, Stream: n.stream,
				Bytes: n.bytes, Op: n.opID, Sub: uint8(op), Comm: ci.comm32, Ranks: uint16(min(ci.NRanks, 1<<16-1)), Aux: uint32(r.A),
				Peer: int32(ci.Rank), Label: f.label([]byte(join.PostedLabel))})
		}
	}
}

func (f *Folder) state(n *node, r *Record) {
	n.touched = r.T
	switch n.typ {
	case TypeKernelCh:
		if r.State == StateKernelChStop {
			n.gpuStop = int64(r.A)
		}
	case TypeKernelPhase:
		if r.State == StateKernelPhaseStop {
			n.gpuStop = int64(r.A)
		}
	case TypeProxyStep:
		if r.A > 0 {
			n.bytes = int64(r.A)
		}
		if n.state == StateSendPeerWait || n.state == StateRecvWait {
			n.waitNs += r.T - n.stateAt
			if n.waitStart == 0 {
				n.waitStart = n.stateAt
			}
		}
		n.state, n.stateAt = r.State, r.T
	}
}

// stopped handles an event's stop: API calls and groups are emitted now, children report to their
// task, tasks wait for their children.
func (f *Folder) stopped(id uint64, n *node) {
	ci := f.ctxs[n.ctx]
	if ci == nil {
		f.retire(id, n)
		return
	}
	switch n.typ {
	case TypeGroupAPI:
		if n.a >= 2 { // depth 1 is the implicit group NCCL makes around a single call
			f.runtime(ci, n, f.label([]byte("ncclGroupStart…ncclGroupEnd")))
		}
	case TypeCollAPI, TypeP2pAPI:
		f.runtime(ci, n, f.labelf("nccl%s", f.strs.Lookup(n.funcID)))
	case TypeKernelLaunch:
		f.runtime(ci, n, f.label([]byte("cuLaunchKernel (NCCL)")))
	case TypeGroup:
		f.emit(&timeline.Event{Kind: timeline.KindGroupLaunch, Start: n.start - f.cfg.Epoch, End: n.stop - f.cfg.Epoch, Queued: -1,
			Device: ci.device, Peer: timeline.NoDevice, Group: n.group, Comm: ci.comm32, Aux: uint32(n.count)})
	case TypeColl, TypeP2p, TypeCeColl:
		f.pending = append(f.pending, id)
		f.maybeFinish(id, n)
		return
	case TypeProxyOp, TypeKernelCh:
		if p := f.nodes[n.parent]; p != nil && !p.done {
			p.children--
			p.lastChild = max(p.lastChild, n.stop)
			p.touched = n.stop
			if n.typ == TypeKernelCh && n.gpuStop > 0 {
				p.chSeen++
				if p.gpuMin == 0 || n.gpuStart < p.gpuMin {
					p.gpuMin = n.gpuStart
				}
				p.gpuMax = max(p.gpuMax, n.gpuStop)
			}
			f.maybeFinish(n.parent, p)
		}
		if n.typ == TypeProxyOp {
			dir := "recv"
			if n.isSend {
				dir = "send"
			}
			f.emit(&timeline.Event{Kind: timeline.KindMark, Start: n.start - f.cfg.Epoch, End: n.stop - f.cfg.Epoch, Queued: -1,
				Device: ci.device, Peer: n.peer, Stream: n.stream, Comm: ci.comm32, Bytes: n.bytes, Aux: uint32(n.a),
				Label: f.labelf("net %s ch%d", dir, n.c)})
		}
	case TypeKernelPhase:
		f.phaseStopped(n)
	case TypeProxyStep:
		if n.state == StateSendPeerWait || n.state == StateRecvWait {
			n.waitNs += n.stop - n.stateAt
			if n.waitStart == 0 {
				n.waitStart = n.stateAt
			}
		}
		if p := f.nodes[n.parent]; p != nil && p.typ == TypeProxyOp {
			p.bytes += n.bytes
			if n.waitNs > 0 {
				f.emit(&timeline.Event{Kind: timeline.KindPeerWait, Start: n.waitStart - f.cfg.Epoch, End: n.waitStart + n.waitNs - f.cfg.Epoch,
					Queued: -1, Device: ci.device, Peer: p.peer, Stream: p.stream, Comm: ci.comm32, Bytes: n.bytes, Aux: uint32(n.a)})
			}
		}
	}
	f.retire(id, n)
}

// phaseStopped adds a kernel phase (parent: a kernel channel, whose parent is the task) to its
// task's span of that phase.
func (f *Folder) phaseStopped(n *node) {
	id := int(n.c >> 8 & 0xff)
	ch := f.nodes[n.parent]
	if ch == nil || ch.typ != TypeKernelCh || id >= numPhases || n.gpuStop <= n.gpuStart {
		return
	}
	t := f.nodes[ch.parent]
	if t == nil || t.done {
		return
	}
	p := &t.phases[id]
	if p.label == 0 {
		p.start, p.stop, p.label = n.gpuStart, n.gpuStop, n.funcID
		return
	}
	p.start, p.stop = min(p.start, n.gpuStart), max(p.stop, n.gpuStop)
}

// emitPhases emits a GPU-timed task's kernel phases as marks on its stream, placed on the host's
// clock as the task is (its GPU end at host time end).
func (f *Folder) emitPhases(ci *ctxInfo, n *node, end int64) {
	for i := range n.phases {
		p := &n.phases[i]
		if p.label == 0 {
			continue
		}
		f.emit(&timeline.Event{Kind: timeline.KindMark, Start: end - (n.gpuMax - p.start) - f.cfg.Epoch, End: end - (n.gpuMax - p.stop) - f.cfg.Epoch,
			Queued: -1, Device: ci.device, Peer: timeline.NoDevice, Stream: n.stream, Comm: ci.comm32, Aux: uint32(i),
			Label: f.labelf("kernel phase %s", f.strs.Lookup(p.label))})
	}
}

// tagText is a tag as labels show it: " tag NAME", or " tag N" when it has no name.
func (f *Folder) tagText(tag uint64) string {
	if name, ok := f.cfg.TagNames[tag]; ok {
		return " tag " + name
	}
	return fmt.Sprintf(" tag %d", tag)
}

func (f *Folder) runtime(ci *ctxInfo, n *node, label uint32) {
	f.emit(&timeline.Event{Kind: timeline.KindRuntime, Start: n.start - f.cfg.Epoch, End: n.stop - f.cfg.Epoch, Queued: -1,
		Device: ci.device, Peer: timeline.NoDevice, Stream: n.stream, Comm: ci.comm32, Label: label})
}

// maybeFinish emits a stopped task whose children are all done, once it has every kernel channel
// it expects; otherwise Tick finishes it after the grace period (proxy ops), or a later task's
// kernel finishing gives up on its missing channels (awaitsChannels).
func (f *Folder) maybeFinish(id uint64, n *node) {
	if !n.stopped || n.done || n.children > 0 {
		return
	}
	if f.awaitsChannels(n) {
		return
	}
	if f.cfg.Mask&TypeKernelCh == 0 && f.cfg.Mask&TypeProxyOp != 0 {
		return // more proxy ops may still start: Tick finishes it after the grace period
	}
	f.finish(id, n)
}

// awaitsChannels reports whether a task still expects kernel channels. NCCL starts them on its
// proxy thread after the task's stop, however late that thread runs (a loaded host), so the wait is
// told by events, not by the clock: the channels arrive, or a task of the same communicator that
// stopped later has all its channels (NCCL's proxy works through a channel's tasks in order, so
// this one's missing channels were lost: dropped from the ring), or StaleNs passes, or the process
// ends (Flush).
func (f *Folder) awaitsChannels(n *node) bool {
	return f.cfg.Mask&TypeKernelCh != 0 && n.typ != TypeCeColl && n.chSeen < n.nChannels
}

// giveUpBefore finishes the tasks of ctx that stopped before a task that had all its kernel
// channels, and still wait for some of theirs with nothing open: those channels are not coming.
func (f *Folder) giveUpBefore(ctx uint32, stop int64) {
	for _, id := range f.pending {
		if n := f.nodes[id]; n != nil && !n.done && n.ctx == ctx && n.stop < stop && n.children == 0 && f.awaitsChannels(n) {
			f.finish(id, n)
		}
	}
}

// finish emits a task: its time is its kernel's (GPU timers, placed so that it ends when the host
// saw its last channel end), else until its last proxy op, else its enqueue on the host.
func (f *Folder) finish(id uint64, n *node) {
	n.done = true
	ci := f.ctxs[n.ctx]
	if ci == nil {
		f.retire(id, n)
		return
	}
	start, end := n.start, max(n.stop, n.lastChild)
	gpuTimed := n.gpuMax > n.gpuMin && n.gpuMin > 0
	if gpuTimed {
		end = n.lastChild
		start = end - (n.gpuMax - n.gpuMin)
	}
	e := timeline.Event{Start: start - f.cfg.Epoch, End: end - f.cfg.Epoch, Queued: n.queued - f.cfg.Epoch, Bytes: n.bytes, Op: n.opID,
		Device: ci.device, Peer: timeline.NoDevice, Stream: n.stream, Group: n.group, Comm: ci.comm32, Label: n.label, Aux: uint32(n.a)}
	if n.queued < 0 {
		e.Queued = -1
	}
	switch n.typ {
	case TypeP2p:
		e.Kind, e.Peer, e.Ranks = timeline.KindRecv, n.peer, 2
		if n.isSend {
			e.Kind = timeline.KindSend
		}
		e.Label, e.Aux = n.apiFuncLabels, 0 // the API call (Send, AlltoAll …) when known
		if e.Label == 0 {
			e.Label = n.funcID
		}
		if n.label != 0 {
			e.Label = n.label // with its tag
		}
	default:
		// A collective's Aux is the NCCL choice it ran with, as the simulator records it (the
		// sequence number is in its op id already).
		e.Kind, e.Sub, e.Ranks, e.Aux = timeline.KindCollective, uint8(n.collOp), uint16(min(ci.NRanks, 1<<16-1)), n.choice
		if n.collOp == timeline.CollBroadcast || n.collOp == timeline.CollReduce {
			e.Peer = n.peer // the root
		}
	}
	if n.captured {
		// The same mark the engine gives a graph's replayed op; its launch was the graph's, which
		// the plugin does not see, not the captured API call.
		e.Aux |= timeline.AuxCaptured
		e.Queued = -1
	}
	f.stats.OpNs += e.End - e.Start
	f.emit(&e)
	if gpuTimed {
		f.emitPhases(ci, n, end)
	}
	f.retire(id, n)
	if f.cfg.Mask&TypeKernelCh != 0 && n.nChannels > 0 && n.chSeen >= n.nChannels {
		f.giveUpBefore(n.ctx, n.stop)
	}
}

// retire keeps a finished event referable for children that start late, up to maxRetired.
func (f *Folder) retire(id uint64, n *node) {
	n.done = true
	f.retired = append(f.retired, id)
	if len(f.retired) > 2*maxRetired {
		for _, old := range f.retired[:maxRetired] {
			if o := f.nodes[old]; o != nil && o.done {
				delete(f.nodes, old)
				f.put(o)
			}
		}
		f.retired = append(f.retired[:0], f.retired[maxRetired:]...)
	}
}

func (f *Folder) put(n *node) {
	if len(f.free) < 4096 {
		f.free = append(f.free, n)
	}
}

// Tick finishes tasks whose grace period has passed at host time now, and gives up stale events.
func (f *Folder) Tick(now int64) {
	now = max(now, f.now)
	keep := f.pending[:0]
	for _, id := range f.pending {
		n := f.nodes[id]
		if n == nil || n.done {
			continue
		}
		if n.children == 0 && (now-n.touched >= f.cfg.StaleNs || (now-n.touched >= f.cfg.GraceNs && !f.awaitsChannels(n))) {
			f.finish(id, n)
			continue
		}
		keep = append(keep, id)
	}
	f.pending = keep
	if now-f.lastGC >= 1e9 {
		f.lastGC = now
		f.now = now
		f.gc(false)
	}
}

// Flush finishes every stopped task now (the process is ending).
func (f *Folder) Flush() {
	for _, id := range f.pending {
		if n := f.nodes[id]; n != nil && !n.done {
			f.finish(id, n)
		}
	}
	f.pending = f.pending[:0]
}

// gc gives up events untouched for StaleNs (all open ones when forced: the table is full).
func (f *Folder) gc(force bool) {
	for id, n := range f.nodes {
		if n.done || (!force && f.now-n.touched < f.cfg.StaleNs) {
			continue
		}
		if force && f.now-n.touched < f.cfg.GraceNs {
			continue
		}
		f.stats.Stale++
		delete(f.nodes, id)
		f.put(n)
	}
}
