package nccl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <stdint.h>

// NCCL's ABI, declared here so that building needs no NCCL header: these layouts and values are
// stable across NCCL 2.x.
typedef struct { char internal[128]; } ncclUniqueId;
typedef void* ncclComm_t;
typedef void* cudaStream_t;
typedef int ncclResult_t; // 0 ncclSuccess, 7 ncclInProgress

typedef ncclResult_t (*fnGetVersion)(int*);
typedef const char* (*fnGetErrorString)(ncclResult_t);
typedef ncclResult_t (*fnCommInitAll)(ncclComm_t*, int, const int*);
typedef ncclResult_t (*fnGetUniqueId)(ncclUniqueId*);
typedef ncclResult_t (*fnCommInitRank)(ncclComm_t*, int, ncclUniqueId, int);
typedef ncclResult_t (*fnCommDestroy)(ncclComm_t);
typedef ncclResult_t (*fnCommAbort)(ncclComm_t);
typedef ncclResult_t (*fnCommGetAsyncError)(ncclComm_t, ncclResult_t*);
typedef ncclResult_t (*fnGroup)(void);
typedef ncclResult_t (*fnSendRecv)(const void*, size_t, int, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*fnAllReduce)(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*fnBroadcast)(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*fnReduceScatter)(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*fnAllGather)(const void*, void*, size_t, int, ncclComm_t, cudaStream_t);

typedef struct {
	void* lib;
	fnGetVersion getVersion;
	fnGetErrorString getErrorString;
	fnCommInitAll commInitAll;
	fnGetUniqueId getUniqueId;
	fnCommInitRank commInitRank;
	fnCommDestroy commDestroy;
	fnCommAbort commAbort;
	fnCommGetAsyncError commGetAsyncError;
	fnGroup groupStart, groupEnd;
	fnSendRecv send, recv;
	fnAllReduce allReduce;
	fnBroadcast broadcast;
	fnReduceScatter reduceScatter;
	fnAllGather allGather;
} ncclApi;

static const char* xfer_nccl_open(const char* path, ncclApi* a) {
	a->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!a->lib) return dlerror();
#define SYM(f, n) a->f = dlsym(a->lib, n); if (!a->f) return n;
	SYM(getVersion, "ncclGetVersion")
	SYM(getErrorString, "ncclGetErrorString")
	SYM(commInitAll, "ncclCommInitAll")
	SYM(getUniqueId, "ncclGetUniqueId")
	SYM(commInitRank, "ncclCommInitRank")
	SYM(commDestroy, "ncclCommDestroy")
	SYM(commAbort, "ncclCommAbort")
	SYM(commGetAsyncError, "ncclCommGetAsyncError")
	SYM(groupStart, "ncclGroupStart")
	SYM(groupEnd, "ncclGroupEnd")
	SYM(send, "ncclSend")
	SYM(recv, "ncclRecv")
	SYM(allReduce, "ncclAllReduce")
	SYM(broadcast, "ncclBroadcast")
	SYM(reduceScatter, "ncclReduceScatter")
	SYM(allGather, "ncclAllGather")
#undef SYM
	return 0;
}

static int xfer_nccl_version(ncclApi* a, int* v) { return a->getVersion(v); }
static const char* xfer_nccl_error(ncclApi* a, int r) { return a->getErrorString(r); }
static int xfer_nccl_init_all(ncclApi* a, ncclComm_t* comms, int n, const int* devs) { return a->commInitAll(comms, n, devs); }
static int xfer_nccl_unique_id(ncclApi* a, ncclUniqueId* id) { return a->getUniqueId(id); }
static int xfer_nccl_init_rank(ncclApi* a, ncclComm_t* c, int n, ncclUniqueId* id, int rank) { return a->commInitRank(c, n, *id, rank); }
static int xfer_nccl_destroy(ncclApi* a, ncclComm_t c) { return a->commDestroy(c); }
static int xfer_nccl_abort(ncclApi* a, ncclComm_t c) { return a->commAbort(c); }
static int xfer_nccl_async_error(ncclApi* a, ncclComm_t c, int* r) { return a->commGetAsyncError(c, r); }
static int xfer_nccl_group_start(ncclApi* a) { return a->groupStart(); }
static int xfer_nccl_group_end(ncclApi* a) { return a->groupEnd(); }
static int xfer_nccl_send(ncclApi* a, uintptr_t buf, size_t n, int peer, ncclComm_t c, uintptr_t s) { return a->send((void*)buf, n, 0, peer, c, (cudaStream_t)s); }
static int xfer_nccl_recv(ncclApi* a, uintptr_t buf, size_t n, int peer, ncclComm_t c, uintptr_t s) { return a->recv((void*)buf, n, 0, peer, c, (cudaStream_t)s); }
// Data type 0 is ncclInt8 (bytes); reduction op 0 is ncclSum.
static int xfer_nccl_all_reduce(ncclApi* a, uintptr_t sb, uintptr_t rb, size_t n, ncclComm_t c, uintptr_t s) { return a->allReduce((void*)sb, (void*)rb, n, 0, 0, c, (cudaStream_t)s); }
static int xfer_nccl_broadcast(ncclApi* a, uintptr_t sb, uintptr_t rb, size_t n, int root, ncclComm_t c, uintptr_t s) { return a->broadcast((void*)sb, (void*)rb, n, 0, root, c, (cudaStream_t)s); }
static int xfer_nccl_reduce_scatter(ncclApi* a, uintptr_t sb, uintptr_t rb, size_t n, ncclComm_t c, uintptr_t s) { return a->reduceScatter((void*)sb, (void*)rb, n, 0, 0, c, (cudaStream_t)s); }
static int xfer_nccl_all_gather(ncclApi* a, uintptr_t sb, uintptr_t rb, size_t n, ncclComm_t c, uintptr_t s) { return a->allGather((void*)sb, (void*)rb, n, 0, c, (cudaStream_t)s); }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"unsafe"
)

// DefaultNCCL is the library looked for (XFER_NCCL_LIB overrides it).
const DefaultNCCL = "libnccl.so.2"

// ErrNCCL is wrapped by every NCCL failure.
var ErrNCCL = errors.New("NCCL")

// NCCLError is a failed NCCL call: which call, and NCCL's code and message.
type NCCLError struct {
	Call string
	Code int
	Msg  string
}

func (e *NCCLError) Error() string {
	return fmt.Sprintf("NCCL %s: %s (code %d)", e.Call, e.Msg, e.Code)
}

// Unwrap returns ErrNCCL.
func (e *NCCLError) Unwrap() error { return ErrNCCL }

// NCCL is libnccl loaded at run time.
type NCCL struct {
	api     *C.ncclApi
	Path    string
	Version int
}

// LoadNCCL opens NCCL from path ("" for XFER_NCCL_LIB or libnccl.so.2).
func LoadNCCL(path string) (*NCCL, error) {
	if path == "" {
		path = os.Getenv("XFER_NCCL_LIB")
	}
	if path == "" {
		path = DefaultNCCL
	}
	api := (*C.ncclApi)(C.calloc(1, C.size_t(unsafe.Sizeof(C.ncclApi{}))))
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.xfer_nccl_open(cpath, api); msg != nil {
		C.free(unsafe.Pointer(api))
		return nil, fmt.Errorf("%w: could not load %s (set XFER_NCCL_LIB to NCCL's path): %s", ErrNCCL, path, C.GoString(msg))
	}
	n := &NCCL{api: api, Path: path}
	var v C.int
	if r := C.xfer_nccl_version(api, &v); r == 0 {
		n.Version = int(v)
	}
	return n, nil
}

func (n *NCCL) check(call string, r C.int) error {
	if r == 0 {
		return nil
	}
	return &NCCLError{Call: call, Code: int(r), Msg: C.GoString(C.xfer_nccl_error(n.api, r))}
}

// Comm is one rank's NCCL communicator.
type Comm struct{ c C.ncclComm_t }

// InitAll creates one communicator per device of devs (one process, several GPUs).
func (n *NCCL) InitAll(devs []int) ([]Comm, error) {
	if len(devs) == 0 {
		return nil, fmt.Errorf("%w: no devices", ErrNCCL)
	}
	comms := make([]C.ncclComm_t, len(devs))
	cdevs := make([]C.int, len(devs))
	for i, d := range devs {
		cdevs[i] = C.int(d)
	}
	if err := n.check("ncclCommInitAll", C.xfer_nccl_init_all(n.api, &comms[0], C.int(len(devs)), &cdevs[0])); err != nil {
		return nil, err
	}
	out := make([]Comm, len(comms))
	for i, c := range comms {
		out[i] = Comm{c}
	}
	return out, nil
}

// UniqueID is what the ranks of one communicator share to find each other (ncclUniqueId).
type UniqueID struct{ id C.ncclUniqueId }

// NewUniqueID returns a fresh id for a communicator (ncclGetUniqueId).
func (n *NCCL) NewUniqueID() (*UniqueID, error) {
	u := new(UniqueID)
	if err := n.check("ncclGetUniqueId", C.xfer_nccl_unique_id(n.api, &u.id)); err != nil {
		return nil, err
	}
	return u, nil
}

// InitRank joins rank of an nranks communicator on the calling thread's current CUDA device
// (ncclCommInitRank). It blocks until every rank has joined, unless called inside a group: then
// GroupEnd waits, which lets one thread create the ranks of several GPUs.
func (n *NCCL) InitRank(id *UniqueID, nranks, rank int) (Comm, error) {
	var c C.ncclComm_t
	if err := n.check("ncclCommInitRank", C.xfer_nccl_init_rank(n.api, &c, C.int(nranks), &id.id, C.int(rank))); err != nil {
		return Comm{}, err
	}
	return Comm{c}, nil
}

// Destroy frees a communicator.
func (n *NCCL) Destroy(c Comm) error {
	return n.check("ncclCommDestroy", C.xfer_nccl_destroy(n.api, c.c))
}

// Abort frees a communicator whose operations may be stuck.
func (n *NCCL) Abort(c Comm) error { return n.check("ncclCommAbort", C.xfer_nccl_abort(n.api, c.c)) }

// AsyncError reports an error NCCL found in a communicator's background work.
func (n *NCCL) AsyncError(c Comm) error {
	var r C.int
	if err := n.check("ncclCommGetAsyncError", C.xfer_nccl_async_error(n.api, c.c, &r)); err != nil {
		return err
	}
	if r != 0 && r != 7 { // 7: in progress
		return &NCCLError{Call: "async", Code: int(r), Msg: C.GoString(C.xfer_nccl_error(n.api, r))}
	}
	return nil
}

// GroupStart and GroupEnd bracket calls launched as one.
func (n *NCCL) GroupStart() error { return n.check("ncclGroupStart", C.xfer_nccl_group_start(n.api)) }

// GroupEnd ends a group.
func (n *NCCL) GroupEnd() error { return n.check("ncclGroupEnd", C.xfer_nccl_group_end(n.api)) }

// Send sends bytes from buf to rank peer of c on stream.
func (n *NCCL) Send(buf uintptr, bytes int64, peer int, c Comm, stream uintptr) error {
	return n.check("ncclSend", C.xfer_nccl_send(n.api, C.uintptr_t(buf), C.size_t(bytes), C.int(peer), c.c, C.uintptr_t(stream)))
}

// Recv receives bytes into buf from rank peer of c on stream.
func (n *NCCL) Recv(buf uintptr, bytes int64, peer int, c Comm, stream uintptr) error {
	return n.check("ncclRecv", C.xfer_nccl_recv(n.api, C.uintptr_t(buf), C.size_t(bytes), C.int(peer), c.c, C.uintptr_t(stream)))
}

// AllReduce sums bytes in place.
func (n *NCCL) AllReduce(buf uintptr, bytes int64, c Comm, stream uintptr) error {
	return n.check("ncclAllReduce", C.xfer_nccl_all_reduce(n.api, C.uintptr_t(buf), C.uintptr_t(buf), C.size_t(bytes), c.c, C.uintptr_t(stream)))
}

// Broadcast sends root's bytes to every rank, in place.
func (n *NCCL) Broadcast(buf uintptr, bytes int64, root int, c Comm, stream uintptr) error {
	return n.check("ncclBroadcast", C.xfer_nccl_broadcast(n.api, C.uintptr_t(buf), C.uintptr_t(buf), C.size_t(bytes), C.int(root), c.c, C.uintptr_t(stream)))
}

// ReduceScatter reduces send (ranks×recvBytes) into each rank's recvBytes.
func (n *NCCL) ReduceScatter(send, recv uintptr, recvBytes int64, c Comm, stream uintptr) error {
	return n.check("ncclReduceScatter", C.xfer_nccl_reduce_scatter(n.api, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(recvBytes), c.c, C.uintptr_t(stream)))
}

// AllGather gathers each rank's sendBytes into recv (ranks×sendBytes).
func (n *NCCL) AllGather(send, recv uintptr, sendBytes int64, c Comm, stream uintptr) error {
	return n.check("ncclAllGather", C.xfer_nccl_all_gather(n.api, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(sendBytes), c.c, C.uintptr_t(stream)))
}
