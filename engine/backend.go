package engine

import (
	"context"

	"github.com/xfertop/xfertop/timeline"
)

// Backend executes the commands a Client queues. The sim backend runs them in a discrete-event
// simulation; the cuda backend on real GPUs. Both emit the same timeline events.
//
// Submit, NewStream and NewEvent are called between runs, from one goroutine; they never block.
// Run executes everything submitted so far and returns when all of it has completed, when ctx is
// cancelled (ErrCanceled), when the watchdog fires (*WatchdogError), or when nothing can make
// progress (*DeadlockError). Futures are completed from Run's goroutine.
type Backend interface {
	Name() string
	Topology() Topology
	NewStream(dev DeviceID, prio Priority) StreamID
	NewEvent() EventID
	Submit(dev DeviceID, cmd Command)
	Run(ctx context.Context) error
	// Now returns the backend's clock in ns since the session epoch.
	Now() int64
	// SetWatchdog sets how long a transfer may wait for its peer before the run ends with an
	// alert; 0 disarms it.
	SetWatchdog(ns int64)
	// SetBatching sets the batching window of every host thread: ops added with CmdBatch launch as
	// one group once maxOps are held or windowNs after the first one was added.
	SetBatching(maxOps int, windowNs int64)
	// Strings returns the table labels are interned in.
	Strings() *timeline.Strings
}

// Launcher is a Backend that takes a launch (Submit of a CmdLaunch command) without a Command
// around its op: a Command is some 300 bytes, built and then copied again to pass it by value,
// once per op. Launch(dev, op) must do what Submit(dev, Command{Kind: CmdLaunch, Op: *op}) does,
// and must not keep op past its return: the client builds every op in one scratch StreamOp of its
// own (a pointer to an op on the caller's stack, through an interface, would put every op the
// client builds on the heap; passing it by value copied its 200 bytes once more per op).
type Launcher interface {
	Launch(dev DeviceID, op *StreamOp)
}

// CommFault is an error a backend found in a communicator's background work (NCCL's
// ncclCommGetAsyncError): the communicator was aborted, and the client evicts it so the next use
// of its devices creates a fresh one.
type CommFault struct {
	Comm uint32
	Err  error
}
