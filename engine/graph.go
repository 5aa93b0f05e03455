package engine

import (
	"errors"
	"fmt"

	"github.com/xfertop/xfertop/timeline"
)

// ErrCaptureUnsupported is what a capture region refuses: work a CUDA graph cannot hold (a host
// wait, host work, a communicator created inside the region, a batching window, a Run). CUDA fails
// such a call during stream capture with cudaErrorStreamCaptureUnsupported and invalidates the
// capture; so does the engine.
var ErrCaptureUnsupported = errors.New("not capturable in a CUDA graph (cudaErrorStreamCaptureUnsupported)")

// CaptureError says what a capture region refused and where.
type CaptureError struct {
	Region string   // the region's name
	Device DeviceID // the device whose work was refused (-1: the whole client)
	What   string   // "host wait", "communicator creation", ...
	Detail string   // why CUDA refuses it
	Kind   error    // ErrCaptureUnsupported, or the CUDA error naming the misuse
}

func (e *CaptureError) Error() string {
	dev := ""
	if e.Device >= 0 {
		dev = fmt.Sprintf(" on device %d", e.Device)
	}
	return fmt.Sprintf("capture of %q: %s%s is %v: %s", e.Region, e.What, dev, e.Kind, e.Detail)
}

// Unwrap returns the error kind, for errors.Is.
func (e *CaptureError) Unwrap() error { return e.Kind }

// ErrCaptureMisuse is a capture API used out of order (cudaErrorIllegalState,
// cudaErrorStreamCaptureImplicit): a capture begun inside another, ended without being begun, a
// graph launched while a capture is open.
var ErrCaptureMisuse = errors.New("capture used out of order (cudaErrorIllegalState)")

// Graph is a captured region: each device's ops in the order they were captured, replayed by
// LaunchGraph with one launch per device. Dependencies inside it are those of the captured ops:
// stream order and the events recorded and waited on inside the region.
type Graph struct {
	Name  string
	label uint32
	devs  []DeviceID   // devices with ops, in first-capture order
	ops   [][]StreamOp // per device (indexed by DeviceID)
	// recorded marks the events recorded inside the region: each launch records fresh ones.
	recorded map[EventID]bool
	nodes    int
	launches int
	key      uint32 // the same at every launch (Command.GraphKey)
}

// Nodes returns how many ops the graph holds, all devices together (a group counts as one).
func (g *Graph) Nodes() int { return g.nodes }

// Devices returns the devices the graph launches on.
func (g *Graph) Devices() []DeviceID { return g.devs }

// Launches returns how many times the graph was launched.
func (g *Graph) Launches() int { return g.launches }

// capture is an open capture region.
type capture struct {
	g   *Graph
	err error // the first refusal: the capture is invalidated, EndCapture returns it
}

// BeginCapture opens a capture region named name: until EndCapture, the ops the client launches
// (on every device) are recorded into a graph instead of being submitted, as
// cudaStreamBeginCapture does for a stream's work. The futures returned inside the region belong
// to work that never runs as such: they never resolve (each launch has futures of its own).
func (c *Client) BeginCapture(name string) error {
	if c.capt != nil {
		return &CaptureError{Region: name, Device: -1, What: "a capture", Kind: ErrCaptureMisuse,
			Detail: fmt.Sprintf("capture of %q is still open (captures do not nest)", c.capt.g.Name)}
	}
	if c.group {
		return &CaptureError{Region: name, Device: -1, What: "a capture", Kind: ErrCaptureMisuse,
			Detail: "a group is open (GroupStart without GroupEnd)"}
	}
	c.capt = &capture{g: &Graph{Name: name, label: c.strs.ID(name), ops: make([][]StreamOp, c.topo.Devices()),
		recorded: map[EventID]bool{}}}
	return nil
}

// Capturing reports whether a capture region is open.
func (c *Client) Capturing() bool { return c.capt != nil }

// EndCapture closes the region and returns its graph, or the first thing the region refused (a
// *CaptureError; the graph is then discarded, as CUDA invalidates the capture).
func (c *Client) EndCapture() (*Graph, error) {
	cp := c.capt
	if cp == nil {
		return nil, &CaptureError{Region: "", Device: -1, What: "EndCapture", Kind: ErrCaptureMisuse, Detail: "no capture is open"}
	}
	if c.group && cp.err == nil {
		cp.err = &CaptureError{Region: cp.g.Name, Device: -1, What: "an open group", Kind: ErrCaptureMisuse,
			Detail: "GroupStart without GroupEnd inside the region"}
	}
	c.capt = nil
	if cp.err != nil {
		return nil, cp.err
	}
	c.nextGraphKey++
	cp.g.key = c.nextGraphKey
	if cp.g.nodes == 0 {
		return nil, &CaptureError{Region: cp.g.Name, Device: -1, What: "an empty region", Kind: ErrCaptureMisuse,
			Detail: "nothing was launched between BeginCapture and EndCapture"}
	}
	for _, d := range cp.g.devs {
		for _, op := range cp.g.ops[d] {
			if op.Kind == OpWaitEvent && !cp.g.recorded[op.Event] {
				return nil, &CaptureError{Region: cp.g.Name, Device: d, What: fmt.Sprintf("a wait for event %d", op.Event),
					Kind: ErrCaptureIsolation, Detail: "the event was recorded outside the region; record it inside, or wait for it before the graph launch"}
			}
		}
	}
	return cp.g, nil
}

// ErrCaptureIsolation is a captured wait for an event recorded outside the region: the graph
// would depend on work it does not hold (cudaErrorStreamCaptureIsolation).
var ErrCaptureIsolation = errors.New("an unjoined dependency (cudaErrorStreamCaptureIsolation)")

// refuse invalidates the open capture with what, on dev, unless it already was.
func (c *Client) refuse(dev DeviceID, what, detail string) {
	if c.capt.err == nil {
		c.capt.err = &CaptureError{Region: c.capt.g.Name, Device: dev, What: what, Kind: ErrCaptureUnsupported, Detail: detail}
	}
}

// submit hands cmd to the backend, or to the open capture region.
func (c *Client) submit(dev DeviceID, cmd *Command) {
	if c.capt == nil {
		c.b.Submit(dev, *cmd)
		return
	}
	g := c.capt.g
	switch cmd.Kind {
	case CmdLaunch:
		if len(g.ops[dev]) == 0 {
			g.devs = append(g.devs, dev)
		}
		if cmd.Op.Kind == OpRecord {
			g.recorded[cmd.Op.Event] = true
		}
		g.ops[dev] = append(g.ops[dev], cmd.Op)
		g.nodes++
	case CmdHostWait:
		c.refuse(dev, "a host wait", "the host cannot block on the device while capturing (cudaEventSynchronize, cudaStreamSynchronize)")
	case CmdSleep:
		c.refuse(dev, "host work", "work on the host thread is not captured and would not run at replay")
	case CmdCommInit:
		c.refuse(dev, "communicator creation", "ncclCommInitRank allocates and synchronizes; create communicators before the region (warm the cache)")
	case CmdBatch, CmdFlush:
		c.refuse(dev, "a batching window", "a window launches on a host timer; use a group inside the region")
	default:
		c.refuse(dev, fmt.Sprintf("command %d", cmd.Kind), "not a stream launch")
	}
}

// LaunchGraph replays g: each device's host thread pays one graph launch and then all the device's
// captured ops are on their streams at once. Each launch gets fresh events for those recorded
// inside the region and fresh op ids for its transfers, collectives and barriers (the same on
// every device, so peers still pair), and fresh futures.
func (c *Client) LaunchGraph(g *Graph) error {
	if c.capt != nil {
		return &CaptureError{Region: g.Name, Device: -1, What: "a graph launch", Kind: ErrCaptureMisuse,
			Detail: fmt.Sprintf("capture of %q is open", c.capt.g.Name)}
	}
	if c.group {
		return fmt.Errorf("graph %q: a group is open (GroupStart without GroupEnd)", g.Name)
	}
	g.launches++
	c.nextGraph++
	id := c.nextGraph
	events := map[EventID]EventID{}
	ids := map[uint64]uint64{}
	remap := func(op *StreamOp) {
		op.Graph = id
		switch op.Kind {
		case OpRecord, OpWaitEvent:
			ev, ok := events[op.Event]
			if !ok {
				ev = c.b.NewEvent()
				events[op.Event] = ev
			}
			op.Event = ev
		}
		if op.ID != 0 {
			n, ok := ids[op.ID]
			if !ok {
				n = c.NewOpID()
				ids[op.ID] = n
			}
			op.ID = n
		}
		if op.Future != nil {
			op.Future = NewFuture(op.ID)
		}
	}
	for _, d := range g.devs {
		ops := make([]StreamOp, len(g.ops[d]))
		copy(ops, g.ops[d])
		for i := range ops {
			remap(&ops[i])
			if len(ops[i].Parts) > 0 {
				ops[i].Parts = append([]StreamOp(nil), ops[i].Parts...)
				for j := range ops[i].Parts {
					remap(&ops[i].Parts[j])
				}
			}
		}
		c.b.Submit(d, Command{Kind: CmdGraphLaunch, Graph: ops, Label: g.label, GraphKey: g.key})
	}
	return nil
}

// GraphLaunchEvent is the event of a graph launch on dev's host thread over [start, end]: Aux is
// the number of ops it launched, Op the launch's id, Label the region's name.
func GraphLaunchEvent(dev DeviceID, host uint16, start, end int64, nodes int, id uint32, label uint32) timeline.Event {
	return timeline.Event{Kind: timeline.KindGraphLaunch, Start: start, End: end, Device: int32(dev), Peer: timeline.NoDevice,
		Host: host, Aux: uint32(nodes), Op: uint64(id), Label: label}
}
