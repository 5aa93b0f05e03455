//go:build cuda

package cuda

/*
#include <cuda.h>
static CUresult xfer_begin_capture(CUstream s) { return cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); }
static CUresult xfer_end_capture(CUstream s, CUgraph *g) { return cuStreamEndCapture(s, g); }
static CUresult xfer_instantiate(CUgraphExec *x, CUgraph g) { return cuGraphInstantiateWithFlags(x, g, 0); }
static CUresult xfer_graph_launch(CUgraphExec x, CUstream s) { return cuGraphLaunch(x, s); }
static CUresult xfer_graph_destroy(CUgraph g) { return cuGraphDestroy(g); }
static CUresult xfer_exec_destroy(CUgraphExec x) { return cuGraphExecDestroy(x); }
static CUresult xfer_record_external(CUevent e, CUstream s) { return cuEventRecordWithFlags(e, s, CU_EVENT_RECORD_EXTERNAL); }
static const char *xfer_err_name(CUresult r) { const char *s = 0; cuGetErrorName(r, &s); return s; }
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// Driver results of stream capture (cuda.h).
const (
	errCaptureUnsupported = 900 // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
	errCaptureInvalidated = 901 // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
	errCaptureMerge       = 902 // CUDA_ERROR_STREAM_CAPTURE_MERGE
	errCaptureIsolation   = 905 // CUDA_ERROR_STREAM_CAPTURE_ISOLATION
)

// DriverError is a CUDA driver call that failed, with the driver's name for the result.
type DriverError struct {
	Call string
	Code int
	Name string
}

func (e *DriverError) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
}

func check(call string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	name := "CUDA error"
	if s := C.xfer_err_name(r); s != nil {
		name = C.GoString(s)
	}
	return &DriverError{Call: call, Code: int(r), Name: name}
}

func cstream(s cu.Stream) C.CUstream { return C.CUstream(unsafe.Pointer(s.C())) }

// graphExec is an instantiated CUDA graph, launched with one cuGraphLaunch.
type graphExec struct{ x C.CUgraphExec }

// beginCapture starts capturing s's work into a graph (thread-local mode: other threads' calls
// are not affected): until endCapture, work queued on s, and on streams that wait on events
// recorded in the capture, is recorded, not run.
func beginCapture(s cu.Stream) error {
	return check("cuStreamBeginCapture", C.xfer_begin_capture(cstream(s)))
}

// endCapture ends the capture begun on s and instantiates its graph. A capture the driver
// invalidated (a synchronisation inside it, a wait on outside work) is an error naming why.
func endCapture(s cu.Stream) (*graphExec, error) {
	var g C.CUgraph
	if err := check("cuStreamEndCapture", C.xfer_end_capture(cstream(s), &g)); err != nil {
		return nil, err
	}
	defer C.xfer_graph_destroy(g)
	var x C.CUgraphExec
	if err := check("cuGraphInstantiateWithFlags", C.xfer_instantiate(&x, g)); err != nil {
		return nil, err
	}
	return &graphExec{x: x}, nil
}

// launch replays the graph after the work already queued on s: one host call for all its work.
func (g *graphExec) launch(s cu.Stream) error {
	return check("cuGraphLaunch", C.xfer_graph_launch(g.x, cstream(s)))
}

// destroy frees the instantiated graph.
func (g *graphExec) destroy() error {
	return check("cuGraphExecDestroy", C.xfer_exec_destroy(g.x))
}

// recordExternal records e on a capturing stream s as an event record node of the graph
// (CU_EVENT_RECORD_EXTERNAL): e is recorded each time the graph runs, so the ops' timing and the
// streams outside the graph can use it. A plain cuEventRecord inside a capture only orders the
// captured work; the driver never records the event when the graph runs (on an H200, every timed
// op of a replayed graph failed: its events had not been recorded). The flag is invalid outside
// a capture.
func recordExternal(e cu.Event, s cu.Stream) error {
	return check("cuEventRecordWithFlags", C.xfer_record_external(cevent(e), cstream(s)))
}

// cevent is e's driver handle: gorgonia.org/cu keeps it in an Event's only field and exports no
// accessor (cuEventRecordWithFlags is not in its API).
func cevent(e cu.Event) C.CUevent { return *(*C.CUevent)(unsafe.Pointer(&e)) }
