package timeline

import (
	"fmt"
	"strconv"
)

// Labels resolves interned label ids: a Strings, or a console snapshot.
type Labels interface{ Lookup(id uint32) string }

// Kind says what an Event records. The numbers are part of the recording format: never reuse one.
type Kind uint8

// Event kinds. Intervals have End > Start; instants have End == Start.
const (
	KindNone             Kind = 0
	KindMemcpy           Kind = 1  // a copy; Sub is the CopyDir
	KindSend             Kind = 2  // point-to-point send; Peer is the receiver, Op links it to its Recv
	KindRecv             Kind = 3  // point-to-point receive; Peer is the sender
	KindCollective       Kind = 4  // one rank's part of a collective; Sub is the CollOp
	KindKernel           Kind = 5  // a compute kernel
	KindEventRecord      Kind = 6  // a stream recorded an event (instant); Aux is the event id
	KindEventWait        Kind = 7  // a stream waited for an event (interval); Aux is the event id
	KindBarrier          Kind = 8  // one rank at a barrier: Start is its arrival, End its release
	KindGroupLaunch      Kind = 9  // an NCCL-style group launched; Aux is the number of ops in it
	KindCommInit         Kind = 10 // a communicator was created (interval = creation cost)
	KindCommHit          Kind = 11 // the communicator cache returned an existing communicator (instant)
	KindCommEvict        Kind = 12 // the communicator cache evicted one (instant); Status says why
	KindPromiseFulfilled Kind = 13 // a future resolved (instant); Op is the transfer it belongs to
	KindPromiseFailed    Kind = 14 // a future failed (instant); Status is the error code
	KindBufferAlloc      Kind = 15 // a buffer was allocated (collective memory cache, receive pool)
	KindBufferFree       Kind = 16 // a buffer was freed
	KindDeviceSample     Kind = 17 // a device telemetry sample; Sub is the SampleMetric, Bytes the value
	KindAlert            Kind = 18 // a watchdog or error alert; Label is the message
	KindMark             Kind = 19 // a user annotation (instant or interval)
	KindStep             Kind = 20 // one step of the workload (interval)
	KindPeerWait         Kind = 21 // an op was posted but its peers were not ready (interval); see PeerWaitSend
	KindRuntime          Kind = 22 // host-side API call (imported traces: cudaLaunchKernel and such)
	// KindLinkBytes is the payload one direction of a link carried over [Start, End], as the engine
	// measured it: Sub is PackLink(link, dir), Device the GPU whose port it is. Windows never
	// straddle a LinkWindowNs boundary, so bytes/(End-Start) is never above the link's peak.
	KindLinkBytes Kind = 23
	// KindGraphLaunch is a captured CUDA graph launched by a host thread (cudaGraphLaunch): the
	// interval is the launch's host cost, Device the device it launches on, Aux the number of ops it
	// replays, Op the launch's id, Label the captured region's name. The ops it replays carry
	// AuxCaptured.
	KindGraphLaunch Kind = 24
	kindCount       Kind = 25
)

var kindNames = [kindCount]string{
	"none", "memcpy", "send", "recv", "collective", "kernel", "event_record", "event_wait",
	"barrier", "group_launch", "comm_init", "comm_hit", "comm_evict", "promise_fulfilled",
	"promise_failed", "buffer_alloc", "buffer_free", "device_sample", "alert", "mark", "step",
	"peer_wait", "runtime", "link_bytes", "graph_launch",
}

// A peer wait's Sub is the CollOp of the collective waited in (0: a send or receive, or not
// known), and its Aux says, of a send or receive, which: PeerWaitSend or PeerWaitRecv (0: not
// known); of a collective, its sequence number on its communicator counted from 1, when the source
// knows it (NCCL's, through attach; 0: not known). A hang or deadlock is named by them ("rank 3 in
// recv from 5", "all_reduce #3").
const (
	PeerWaitSend uint32 = 1
	PeerWaitRecv uint32 = 2
)

// AuxCaptured, set in the Aux of a busy op (memcpy, send, recv, collective, kernel), marks an op a
// CUDA graph replayed: its host launch was the graph's, not its own. The other bits of Aux keep
// their meaning (a collective's PackNCCL uses bits 0-15).
const AuxCaptured uint32 = 1 << 31

// Captured reports whether e is a busy op replayed by a CUDA graph.
func (e *Event) Captured() bool { return e.Kind.IsBusy() && e.Aux&AuxCaptured != 0 }

// String returns the kind's stable lower-case name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// IsBusy reports whether an event of this kind occupies its stream (idle gaps are the time between
// busy events). Waits, marks and instants do not.
func (k Kind) IsBusy() bool {
	switch k {
	case KindMemcpy, KindSend, KindRecv, KindCollective, KindKernel:
		return true
	}
	return false
}

// IsNCCL reports whether the kind is communication in Holistic Trace Analysis's sense: NCCL
// kernels (sends, receives, collectives). Copies and memsets are memory operations, not communication.
func (k Kind) IsNCCL() bool {
	switch k {
	case KindSend, KindRecv, KindCollective:
		return true
	}
	return false
}

// IsComm reports whether the kind moves data (copies included): what bandwidth counters count.
func (k Kind) IsComm() bool {
	switch k {
	case KindMemcpy, KindSend, KindRecv, KindCollective:
		return true
	}
	return false
}

// CopyDir is the direction of a KindMemcpy event (its Sub field).
type CopyDir uint8

// Copy directions.
const (
	CopyH2D CopyDir = 1 // host to device
	CopyD2H CopyDir = 2 // device to host
	CopyD2D CopyDir = 3 // within one device
	CopyP2P CopyDir = 4 // device to another device (peer copy)
	CopySet CopyDir = 5 // memset: bytes written, no source
)

// String returns the direction's short name (h2d, d2h, d2d, p2p, memset).
func (d CopyDir) String() string {
	switch d {
	case CopyH2D:
		return "h2d"
	case CopyD2H:
		return "d2h"
	case CopyD2D:
		return "d2d"
	case CopyP2P:
		return "p2p"
	case CopySet:
		return "memset"
	}
	return fmt.Sprintf("copy(%d)", uint8(d))
}

// CollOp is the collective operation of a KindCollective event (its Sub field).
type CollOp uint8

// Collective operations.
const (
	CollAllReduce      CollOp = 1
	CollAllGather      CollOp = 2
	CollReduceScatter  CollOp = 3
	CollAllToAll       CollOp = 4
	CollRaggedAllToAll CollOp = 5
	CollBroadcast      CollOp = 6
	CollReduce         CollOp = 7
	CollSendRecv       CollOp = 8 // imported NCCL SendRecv kernels whose direction is unknown
	collOpCount               = 9
)

var collNames = [collOpCount]string{"", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
	"ragged_all_to_all", "broadcast", "reduce", "send_recv"}

// String returns the nccl-tests style name of the operation.
func (c CollOp) String() string {
	if c > 0 && int(c) < len(collNames) {
		return collNames[c]
	}
	return fmt.Sprintf("coll(%d)", uint8(c))
}

// BusFactor is the nccl-tests factor that turns algorithm bandwidth into bus bandwidth for n ranks.
func (c CollOp) BusFactor(n int) float64 {
	num, den := c.BusFraction(n)
	return float64(num) / float64(den)
}

// BusFraction is BusFactor as the exact fraction num/den, for sums of bus bytes that must not depend
// on the order they are added in (a float sum of b×4/3 does).
func (c CollOp) BusFraction(n int) (num, den int64) {
	if n <= 1 {
		return 0, 1
	}
	switch c {
	case CollAllReduce:
		return 2 * int64(n-1), int64(n)
	case CollAllGather, CollReduceScatter, CollAllToAll, CollRaggedAllToAll:
		return int64(n - 1), int64(n)
	}
	return 1, 1
}

// SampleMetric names what a KindDeviceSample measures (its Sub field).
type SampleMetric uint8

// Device sample metrics. Throughputs are bytes per second; utilisation is percent.
const (
	SampleUtilization SampleMetric = 1
	SampleMemoryUsed  SampleMetric = 2
	SamplePCIeRx      SampleMetric = 3
	SamplePCIeTx      SampleMetric = 4
	SampleNVLinkRx    SampleMetric = 5
	SampleNVLinkTx    SampleMetric = 6
	SamplePowerMilliW SampleMetric = 7
	SampleSMClockMHz  SampleMetric = 8
	SampleTempC       SampleMetric = 9
	// The NCCL profiler plugin's own cost in one rank's process, from its start (a sample about
	// every second): the mean time of a callback in picoseconds (Op: the callbacks so far), and the
	// callbacks' time per million of the time of the NCCL operations it observed (collectives,
	// sends and receives), sent only once it has observed one.
	SampleProfilerCallbackPs  SampleMetric = 10
	SampleProfilerOverheadPPM SampleMetric = 11
)

// Status codes carried by events that can fail.
const (
	StatusOK       uint8 = 0
	StatusError    uint8 = 1 // the op failed
	StatusTimeout  uint8 = 2 // the watchdog gave up on it
	StatusCanceled uint8 = 3 // the run was cancelled before it completed
	StatusLRU      uint8 = 4 // comm eviction: least recently used
	StatusFaulted  uint8 = 5 // comm eviction: the communicator reported an error
	// StatusPending: the op had not completed when its source last saw it (a Flight Recorder
	// dump's scheduled or started collective). Its End is the last time the source knew of, not
	// the op's end; analyses that measure ops leave it out, the diagnosis counts it as entered.
	StatusPending uint8 = 6
	// StatusNoRecord, in a membership mark (a KindMark whose SeqOp sequence number is 0), says its
	// source knows Peer is a member of the communicator but holds no record of it (a Flight
	// Recorder job whose rank left no dump, or one that could not be read): what that rank did is
	// unknown. Its Device is NoDevice, so nothing counts the rank as one that was heard from.
	StatusNoRecord uint8 = 7
	// StatusShadow: a completed op as a second source of the job recorded it, on a rank whose ops
	// another source measured (a Flight Recorder dump's collective, by its watchdog's times, where
	// NCCL Inspector timed the rank's kernels; join.Parts). The diagnosis matches ranks by it as a
	// completed op; analyses that measure ops leave it out, so that nothing counts twice.
	StatusShadow uint8 = 8
	// StatusStalled: an op in flight whose own part made no progress: its rank's kernel stopped
	// inside it (a source that sees each rank's progress inside a collective: NCCL's proxy steps,
	// the simulator's hang of mode in). Its peers' parts, in flight beside it with StatusOK, wait
	// on it: the rank holding the collective is the one whose part is stalled.
	StatusStalled uint8 = 9
)

// Alert causes: the Sub of a KindAlert a source raises about a rank or communicator it watched
// (NCCL RAS), which the diagnosis turns into a finding of the matching kind. 0 is a watchdog's or
// an error's alert without a cause.
const (
	AlertRankDead       uint8 = 1 // a rank RAS considers dead (no keep-alive)
	AlertRankMissing    uint8 = 2 // a rank that did not answer (unresponsive, or never joined)
	AlertCountMismatch  uint8 = 3 // ranks whose collective counts are behind their peers' (Aux: PackCountBehind)
	AlertRankError      uint8 = 4 // a rank reporting an error, an abort or a failed init
	AlertCommIncomplete uint8 = 5 // a communicator fewer ranks are known in than its size
)

// countBehindShift places, in an AlertCountMismatch's Aux, how far behind its rank is above the
// collective (CollOp, the low 8 bits).
const countBehindShift = 8

// PackCountBehind is the Aux of an AlertCountMismatch: the collective whose counts disagree (0:
// not known) and how many of them the rank the alert names is behind the highest count (0: not
// known; capped at 2²⁴−1). One behind and inside the collective the others are in (a source that
// shows it: Flight Recorder) is a rank whose count lagged when it was read, not one that never
// entered it.
func PackCountBehind(op CollOp, behind uint64) uint32 {
	return uint32(op) | uint32(min(behind, 1<<(32-countBehindShift)-1))<<countBehindShift
}

// CountBehind unpacks an AlertCountMismatch's Aux (PackCountBehind); other events give zeros.
func (e *Event) CountBehind() (CollOp, int64) {
	if e.Kind != KindAlert || e.Sub != AlertCountMismatch {
		return 0, 0
	}
	return CollOp(e.Aux & 0xff), int64(e.Aux >> countBehindShift)
}

// AuxSeqOp, set in the Aux of a collective, send, recv or mark, says its Op was made by SeqOp: a
// source that numbers collectives per communicator (PyTorch's Flight Recorder) gives every rank's
// part the same op, and the diagnosis matches ranks by it. Other sources' ops are ids of any bits
// (the NCCL plugin's are hashes), so the mark is in Aux, not in the op. The other bits of Aux keep
// their meaning (a collective's PackNCCL uses bits 0-15).
const AuxSeqOp uint32 = 1 << 30

// NoHost in an event's Host says its rank's host is unknown where the events carry their hosts
// (timeline.HostsInEventsKey): a rank of a joined job that no source placed on a host. The host
// map leaves such a rank unplaced rather than put it on a host.
const NoHost uint16 = 1<<16 - 1

// AuxOneHost, set in the Aux of a collective, says its source knows every rank of it is on one
// host (NCCL Inspector's nnodes, or n_nodes, of 1): its bus bytes go over NVLink, whatever the
// session knows of the hosts' layout. The other bits of Aux keep their meaning.
const AuxOneHost uint32 = 1 << 29

// AuxManyHosts, set in the Aux of a collective, says its source knows its ranks span more than
// one host (NCCL Inspector's nnodes above 1): part of its bus bytes cross NICs, however few
// ranks it has.
const AuxManyHosts uint32 = 1 << 28

// AuxEmulated, set in the Aux of a send, receive or collective, says the op stood in for one the
// machine could not run as the topology has it: the cuda backend under --fit, with ranks sharing a
// GPU (NCCL allows one rank per GPU), carries such a send and its receive by a copy on the GPU, and
// such a collective by NCCL over the GPUs its ranks really span, the other ranks on each waiting
// for it (over one GPU: no NCCL call, nothing moved). Its bytes crossed none of the topology's links
// and its time is no rate of them: the analysis counts it, shows it marked, and gives it no link
// bytes and no bandwidth of the topology. The other bits of Aux keep their meaning.
const AuxEmulated uint32 = 1 << 27

// Emulated reports whether e is a send, receive or collective that stood in for the topology's
// (AuxEmulated).
func (e *Event) Emulated() bool {
	return (e.Kind == KindSend || e.Kind == KindRecv || e.Kind == KindCollective) && e.Aux&AuxEmulated != 0
}

// AuxTimeUnknown, set in the Aux of a busy op (memcpy, send, recv, collective, kernel), says its
// source knows the op ran but not how long: a Flight Recorder entry its watchdog had not retired
// when the dump was taken (its discovered times are the dump's clock) and that carries no
// duration_ms. Its Start is the best the source knows (its creation) and its End equals Start, a
// placeholder, not a duration of 0: the analysis counts it (count, bytes) and leaves it out of every
// time figure (busy time, rates, percentiles, gaps, steps, comparisons between ranks). The other
// bits of Aux keep their meaning (a collective's PackNCCL uses bits 0-15).
const AuxTimeUnknown uint32 = 1 << 26

// TimeUnknown reports whether e is a busy op whose duration its source does not know
// (AuxTimeUnknown).
func (e *Event) TimeUnknown() bool { return e.Kind.IsBusy() && e.Aux&AuxTimeUnknown != 0 }

// SeqOp is the op id of sequence number seq on communicator comm: bit 63 set, the communicator in
// bits 40-62, the sequence number in bits 0-39. Seq 0 names no collective: a KindMark with it
// says its device is a member of the communicator.
func SeqOp(comm uint32, seq uint64) uint64 {
	return 1<<63 | uint64(comm&(1<<23-1))<<40 | seq&(1<<40-1)
}

// P2PSeq is the sequence number SeqOp carries for a send or receive: bit 39 set (it is no
// collective's), pair in bits 0-19, own in bits 20-38. pair is the op's count among its rank's
// sends to (or receives from) one peer on the communicator, from 1; 0: not known (a ring that lost
// its oldest ops). NCCL delivers one pair's messages in order, so the k-th send from A to B is
// matched by the k-th receive on B from A. own is the number its source gave it (PyTorch's
// p2p_seq_id, which counts a rank's sends and receives to every peer together), kept to name it.
// own is cut to its bits; pair wraps from 2²⁰−1 to 1, never to 0 (which says unknown), the same
// on both sides of a pair, so they still match.
func P2PSeq(pair, own uint64) uint64 {
	if pair > 0 {
		pair = (pair-1)%(1<<20-1) + 1
	}
	return 1<<39 | (own&(1<<19-1))<<20 | pair
}

// SplitP2PSeq returns what P2PSeq packed: the pair's count and the source's own number; ok is
// false for a collective's sequence number.
func SplitP2PSeq(seq uint64) (pair, own uint64, ok bool) {
	if seq&(1<<39) == 0 {
		return 0, 0, false
	}
	return seq & (1<<20 - 1), seq >> 20 & (1<<19 - 1), true
}

// OpSeq returns the sequence number of an event whose Op was made by SeqOp (AuxSeqOp set);
// false for any other.
func (e *Event) OpSeq() (uint64, bool) {
	if e.Aux&AuxSeqOp == 0 {
		return 0, false
	}
	return e.Op & (1<<40 - 1), true
}

// NoDevice marks a Device or Peer field that names no device.
const NoDevice int32 = -1

// Event is one thing that happened. It is a fixed-size value without pointers (80 bytes).
//
// Times are nanoseconds since the session's epoch. Device and Peer are global device ids
// (host × devices-per-host + local index). Stream ids are unique within the session.
type Event struct {
	Start  int64  // ns; for waits, when the wait began
	End    int64  // ns; == Start for an instant
	Queued int64  // ns; when the host enqueued the op (HTA's launch time); 0 when unknown
	Bytes  int64  // bytes moved (nccl-tests "size" for collectives), or a sample's value
	Op     uint64 // op id: links a send to its recv, a transfer to its promise, rank parts of a collective

	Device int32 // global device id, NoDevice for host-only events
	Peer   int32 // the other device of a transfer, NoDevice when none

	Stream  uint32 // stream id (0: none)
	Group   uint32 // group launch id (0: not in a group)
	Comm    uint32 // communicator id (0: none)
	Barrier uint32 // barrier id (0: none)
	Label   uint32 // interned string: kernel name, message, scenario label (0: none)
	// Aux is kind-specific: event id, number of ops in a group, step number; a collective's
	// algorithm, protocol and channels packed by PackNCCL (bits 0-3, 4-7, 8-15; 0: not known).
	Aux uint32

	Host     uint16 // host index (NoHost: a rank no source placed on a host)
	Ranks    uint16 // ranks taking part in a collective or barrier
	Kind     Kind
	Sub      uint8 // CopyDir, CollOp, SampleMetric or wait cause, by Kind
	Status   uint8
	Priority int8 // stream priority: 0 normal, negative is higher (CUDA's convention)
}

// Dur returns the event's duration in nanoseconds.
func (e Event) Dur() int64 { return e.End - e.Start }

// OnStream reports whether the event is time a device's stream spends on something: a busy op, or
// a wait for an event, a barrier or a peer. These are the ops a stream's timeline draws, and what a
// source reports as running while they last.
func (e *Event) OnStream() bool {
	return e.Stream != 0 && e.Device >= 0 &&
		(e.Kind.IsBusy() || e.Kind == KindEventWait || e.Kind == KindBarrier || e.Kind == KindPeerWait)
}

// OpName is the name xfertop gives the op an event records, the same in the report, the console,
// the exporter and the importers: a copy's direction (h2d, d2h, d2d, p2p, memset), send, recv, a
// collective's nccl-tests name (all_reduce, ...), or else the kind's name.
func (e *Event) OpName() string {
	switch e.Kind {
	case KindMemcpy:
		return CopyDir(e.Sub).String()
	case KindCollective:
		return CollOp(e.Sub).String()
	}
	return e.Kind.String()
}

// TransferKinds are the op names of copies and point-to-point transfers, in report order.
var TransferKinds = []string{"h2d", "d2h", "d2d", "p2p", "memset", "send", "recv"}

// ParseCollOp reads a collective's name in any of the spellings users and tools write: nccl-tests'
// (all_reduce), NCCL's (AllReduce, as in ncclDevKernel_AllReduce_Sum_f32), or squashed (allreduce).
// NCCL's SendRecv, Send and Recv kernels are CollSendRecv.
func ParseCollOp(name string) (CollOp, bool) {
	var b [32]byte
	n := 0
	for i := 0; i < len(name) && n < len(b); i++ {
		c := name[i]
		switch {
		case c == '_' || c == '-' || c == ' ':
			continue
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		}
		b[n] = c
		n++
	}
	switch string(b[:n]) {
	case "allreduce":
		return CollAllReduce, true
	case "allgather":
		return CollAllGather, true
	case "reducescatter":
		return CollReduceScatter, true
	case "alltoall":
		return CollAllToAll, true
	case "raggedalltoall":
		return CollRaggedAllToAll, true
	case "broadcast":
		return CollBroadcast, true
	case "reduce":
		return CollReduce, true
	case "sendrecv", "send", "recv":
		return CollSendRecv, true
	}
	return 0, false
}

// peerName names a send's or receive's peer device: its number, or "unknown" where the source
// does not say (NoDevice), never −1.
func peerName(p int32) string {
	if p < 0 {
		return "unknown"
	}
	return strconv.Itoa(int(p))
}

// Title is how an event is named to people: in the console, in exported traces and spans.
func (e *Event) Title(labels Labels) string {
	label := labels.Lookup(e.Label)
	switch e.Kind {
	case KindMemcpy:
		return "memcpy " + e.OpName()
	case KindSend:
		return "send → " + peerName(e.Peer)
	case KindRecv:
		return "recv ← " + peerName(e.Peer)
	case KindCollective:
		return e.OpName()
	case KindKernel, KindRuntime, KindMark, KindAlert:
		if label != "" {
			return label
		}
	case KindStep:
		return fmt.Sprintf("step %d", e.Aux)
	case KindLinkBytes:
		if link, dir, ok := UnpackLink(e.Sub); ok {
			return LinkName(link) + [2]string{" out", " in"}[dir]
		}
		if dir, ok := UnpackFabricLink(e.Sub); ok {
			return PortName(e.Aux) + [2]string{" up", " down"}[dir]
		}
	}
	if label != "" {
		return e.Kind.String() + " " + label
	}
	return e.Kind.String()
}
