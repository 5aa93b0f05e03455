package engine

import (
	"slices"
	"strconv"

	"github.com/xfertop/xfertop/timeline"
)

// DeviceID is a global device id: host × devices-per-host + local index.
type DeviceID int32

// Priority is a stream priority in CUDA's convention: 0 is normal, lower numbers run first.
type Priority int8

// Stream priorities. The H100 offers 0 (lowest) to -3 (highest), see FACTS.md.
const (
	PriorityNormal Priority = 0
	PriorityHigh   Priority = -3
)

// StreamID names a stream; ids are unique within a backend.
type StreamID uint32

// EventID names an event a stream can record and other streams or host threads can wait for.
type EventID uint32

// MemKind is where a buffer lives.
type MemKind uint8

// Memory kinds.
const (
	MemDevice MemKind = iota
	MemPinned
	MemPageable
)

// OpKind is the kind of work a StreamOp does on its stream.
type OpKind uint8

// Stream op kinds.
const (
	OpKernel     OpKind = iota + 1 // compute for Duration ns
	OpCopy                         // memcpy; Dir gives the direction
	OpSend                         // point-to-point send to Peer; ID pairs it with the recv
	OpRecv                         // point-to-point receive from Peer
	OpCollective                   // one rank's part of collective instance ID over Comm
	OpBarrier                      // one rank's arrival at barrier instance ID
	OpRecord                       // record Event
	OpWaitEvent                    // wait until Event is recorded
	OpGroup                        // Parts launched as one fused op
)

// StreamOp is one piece of work on a stream. Backends execute ops of one stream in order.
type StreamOp struct {
	Kind     OpKind
	Stream   StreamID
	Device   DeviceID
	Peer     DeviceID
	Dir      timeline.CopyDir
	Pageable bool
	Bytes    int64
	Duration int64 // kernels: ns of work
	Event    EventID
	ID       uint64 // pairs a send with its recv; names a collective or barrier instance
	Coll     timeline.CollOp
	Ranks    []DeviceID // collective / barrier participants, in rank order
	Sizes    []int64    // ragged all-to-all: bytes this rank sends to each rank of Ranks
	// RecvSizes is, for a ragged all-to-all, the bytes this rank receives from each rank of Ranks
	// (its column of the size matrix): NCCL needs each receive sized as its peer's send.
	RecvSizes []int64
	Comm      uint32
	Group     uint32
	Barrier   uint32
	Label     uint32
	// NCCLAlgo and NCCLProto force a collective's algorithm and protocol, as NCCL_ALGO and
	// NCCL_PROTO do; zero lets the backend's tuner choose.
	NCCLAlgo  timeline.NCCLAlgo
	NCCLProto timeline.NCCLProto
	Future    *Future    // resolved when the op completes (nil: none)
	Parts     []StreamOp // OpGroup: the fused ops
	// Graph is the graph launch that replays this op (0: launched on its own): its event is
	// marked captured and its host launch was the graph's.
	Graph uint32
}

// CmdKind is the kind of a host-thread command.
type CmdKind uint8

// Host command kinds.
const (
	CmdLaunch      CmdKind = iota + 1 // enqueue Op on its stream (costs a launch on the host)
	CmdHostWait                       // block the host thread until Event is recorded
	CmdCommInit                       // create communicator Comm over Devices (costs creation time)
	CmdSleep                          // the host is busy for Duration ns (a slow data loader, a straggler)
	CmdBatch                          // add Op to the host thread's batching window
	CmdFlush                          // launch what the batching window holds now
	CmdGraphLaunch                    // launch Graph, captured ops, with one launch (cudaGraphLaunch)
)

// Command is one entry of a host thread's queue. Host threads run their commands in order.
type Command struct {
	Kind     CmdKind
	Op       StreamOp
	Event    EventID
	Duration int64
	Comm     uint32
	Devices  []DeviceID
	Label    uint32
	// Graph is a CmdGraphLaunch's ops in the order they were captured; each has Graph set.
	Graph []StreamOp
	// GraphKey names the graph a CmdGraphLaunch launches, the same at every launch of it (a
	// backend that instantiates a graph once keys it by this).
	GraphKey uint32
}

// DeviceRanges names a set of devices for people: its sorted ids, runs of three or more as
// first-last ("0-7,16,17"), so a 4,096-rank communicator reads "0-4095", not 20 kB of ids.
func DeviceRanges(devs []DeviceID) string {
	s := slices.Clone(devs)
	slices.Sort(s)
	s = slices.Compact(s)
	var b []byte
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(s[i]), 10)
		switch {
		case j-i >= 2:
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(s[j]), 10)
		case j == i+1:
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(s[j]), 10)
		}
		i = j + 1
	}
	return string(b)
}

// OpName names an op in messages: "send", "all_reduce", "copy h2d", ...
func OpName(op *StreamOp) string {
	switch op.Kind {
	case OpKernel:
		return "kernel"
	case OpCopy:
		return "copy " + op.Dir.String()
	case OpSend:
		return "send"
	case OpRecv:
		return "recv"
	case OpCollective:
		return op.Coll.String()
	case OpBarrier:
		return "barrier"
	case OpGroup:
		return "group"
	case OpWaitEvent:
		return "event wait"
	case OpRecord:
		return "event record"
	}
	return "op"
}
