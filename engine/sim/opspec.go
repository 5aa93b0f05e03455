package sim

import (
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/timeline"
)

// opSpec is what an op slot keeps of its engine.StreamOp: the same fields, packed by size, with
// the ones few ops have (a ragged all-to-all's sizes, a group's parts: three slices) behind one
// pointer. A slot is touched at each stage of its op (queued, started, finished, freed) and a
// step queues thousands of ops ahead of the devices, so most of those touches miss the caches:
// 176 bytes a slot instead of 264 is fewer lines per touch, and at 1,024 GPUs, where a step's
// quarter of a million slots are new memory, fewer pages to fault in and fewer bytes for the
// garbage collector to scan.
type opSpec struct {
	Bytes    int64
	Duration int64
	ID       uint64
	Ranks    []engine.DeviceID
	Future   *engine.Future
	more     *opMore // nil: no sizes and no parts
	Stream   engine.StreamID
	Device   engine.DeviceID
	Peer     engine.DeviceID
	Event    engine.EventID
	Comm     uint32
	Group    uint32
	Barrier  uint32
	Label    uint32
	Graph    uint32
	Kind     engine.OpKind
	Dir      timeline.CopyDir
	Coll     timeline.CollOp
	NCCLAlgo timeline.NCCLAlgo
	// NCCLProto and Pageable close the struct: the small fields share its last word.
	NCCLProto timeline.NCCLProto
	Pageable  bool
}

// opMore is the part of an engine.StreamOp that few ops have.
type opMore struct {
	Sizes     []int64
	RecvSizes []int64
	Parts     []engine.StreamOp
}

// specOf is op as a slot keeps it.
func specOf(op *engine.StreamOp) opSpec {
	o := opSpec{Bytes: op.Bytes, Duration: op.Duration, ID: op.ID, Ranks: op.Ranks, Future: op.Future,
		Stream: op.Stream, Device: op.Device, Peer: op.Peer, Event: op.Event, Comm: op.Comm, Group: op.Group,
		Barrier: op.Barrier, Label: op.Label, Graph: op.Graph, Kind: op.Kind, Dir: op.Dir, Coll: op.Coll,
		NCCLAlgo: op.NCCLAlgo, NCCLProto: op.NCCLProto, Pageable: op.Pageable}
	if op.Sizes != nil || op.RecvSizes != nil || op.Parts != nil {
		o.more = &opMore{Sizes: op.Sizes, RecvSizes: op.RecvSizes, Parts: op.Parts}
	}
	return o
}

// set makes o what specOf(op) returns, written in place.
func (o *opSpec) set(op *engine.StreamOp) {
	o.Bytes, o.Duration, o.ID, o.Ranks, o.Future = op.Bytes, op.Duration, op.ID, op.Ranks, op.Future
	o.more = nil
	if op.Sizes != nil || op.RecvSizes != nil || op.Parts != nil {
		o.more = &opMore{Sizes: op.Sizes, RecvSizes: op.RecvSizes, Parts: op.Parts}
	}
	o.Stream, o.Device, o.Peer, o.Event = op.Stream, op.Device, op.Peer, op.Event
	o.Comm, o.Group, o.Barrier, o.Label, o.Graph = op.Comm, op.Group, op.Barrier, op.Label, op.Graph
	o.Kind, o.Dir, o.Coll, o.NCCLAlgo, o.NCCLProto, o.Pageable = op.Kind, op.Dir, op.Coll, op.NCCLAlgo, op.NCCLProto, op.Pageable
}

// streamOp is the engine.StreamOp o was made from, for the few places that need one whole.
func (o *opSpec) streamOp() engine.StreamOp {
	op := engine.StreamOp{Bytes: o.Bytes, Duration: o.Duration, ID: o.ID, Ranks: o.Ranks, Future: o.Future,
		Stream: o.Stream, Device: o.Device, Peer: o.Peer, Event: o.Event, Comm: o.Comm, Group: o.Group,
		Barrier: o.Barrier, Label: o.Label, Graph: o.Graph, Kind: o.Kind, Dir: o.Dir, Coll: o.Coll,
		NCCLAlgo: o.NCCLAlgo, NCCLProto: o.NCCLProto, Pageable: o.Pageable}
	if o.more != nil {
		op.Sizes, op.RecvSizes, op.Parts = o.more.Sizes, o.more.RecvSizes, o.more.Parts
	}
	return op
}

// sizes is a ragged all-to-all's bytes to each rank (nil: none).
func (o *opSpec) sizes() []int64 {
	if o.more == nil {
		return nil
	}
	return o.more.Sizes
}

// parts is a group's fused ops (nil: none).
func (o *opSpec) parts() []engine.StreamOp {
	if o.more == nil {
		return nil
	}
	return o.more.Parts
}

// opName names o's kind for people (engine.OpName).
func opName(o *opSpec) string {
	op := engine.StreamOp{Kind: o.Kind, Dir: o.Dir, Coll: o.Coll}
	return engine.OpName(&op)
}

// hangsAt reports whether hang fault f stops op on device d (fault.Fault.HangsAt), given the
// collectives d's host thread has posted so far.
func (s *Sim) hangsAt(f *fault.Fault, d engine.DeviceID, o *opSpec) bool {
	op := o.streamOp()
	return f.HangsAt(&op, s.flt.collPosted[d])
}

// hostCmd is what a host thread's queue keeps of an engine.Command. A launch's op is not in it:
// it waits in the op slot it will run in (ref), written once as it is submitted, so a step's op is
// not copied from its command into its slot and a step's commands take no memory of their own
// beside their ops. At 1,024 GPUs a step of llm-train queues a quarter of a million commands
// before the first runs: 32 bytes each instead of 152 (and its ops' slots, 240 bytes, which it
// took anyway). Without pointers, the blocks of commands are not scanned by the garbage collector.
type hostCmd struct {
	Duration int64 // a sleep's length; a launch's cost to the host thread
	// ref is a launch's or a batched op's op slot (Sim.reserve), a graph launch's graph in
	// Sim.graphs.
	ref     int32
	Event   engine.EventID
	Comm    uint32
	Label   uint32
	devices int32 // a communicator init's devices
	Kind    engine.CmdKind
}

// cmdOf is cmd as a host thread's queue keeps it: its op put in the slot it will run in, its
// graph among the graphs waiting for their launch.
func (s *Sim) cmdOf(cmd *engine.Command) hostCmd {
	c := hostCmd{Duration: cmd.Duration, Event: cmd.Event, Comm: cmd.Comm, Label: cmd.Label,
		devices: int32(len(cmd.Devices)), Kind: cmd.Kind}
	switch cmd.Kind {
	case engine.CmdLaunch:
		c.ref = s.reserve(&cmd.Op)
		c.Duration = s.launchCost(&s.op(c.ref).op)
	case engine.CmdBatch:
		c.ref = s.reserve(&cmd.Op)
	case engine.CmdGraphLaunch:
		c.ref = s.keepGraph(cmd.Graph)
	}
	return c
}
