package fold

import "strings"

// NCCL profiler event types: the bits of an event descriptor's type and of the activation mask
// (nccl_profiler.h in NVIDIA/nccl; the numbers are NCCL's ABI).
const (
	TypeGroup        uint64 = 1 << 0  // a group launch (one kernel plan)
	TypeColl         uint64 = 1 << 1  // a collective task
	TypeP2p          uint64 = 1 << 2  // a point-to-point task
	TypeProxyOp      uint64 = 1 << 3  // the proxy thread's work on one channel for one task
	TypeProxyStep    uint64 = 1 << 4  // one network transfer of a proxy op
	TypeProxyCtrl    uint64 = 1 << 5  // the proxy thread between ops
	TypeKernelCh     uint64 = 1 << 6  // one channel of an NCCL kernel, with GPU timers
	TypeNetPlugin    uint64 = 1 << 7  // network-plugin-defined events
	TypeGroupAPI     uint64 = 1 << 8  // ncclGroupStart … ncclGroupEnd
	TypeCollAPI      uint64 = 1 << 9  // a collective API call (ncclAllReduce …)
	TypeP2pAPI       uint64 = 1 << 10 // a point-to-point API call (ncclSend, ncclRecv)
	TypeKernelLaunch uint64 = 1 << 11 // the kernel launch of a plan
	TypeCeColl       uint64 = 1 << 12 // a copy-engine collective (profiler v6)
	TypeCeSync       uint64 = 1 << 13 // its synchronisation (v6)
	TypeCeBatch      uint64 = 1 << 14 // one batch of its copies (v6)
	TypeKernelPhase  uint64 = 1 << 15 // one phase of a kernel channel: initial sync, compute, final sync (v7)
)

// NCCL event states passed to recordEventState (the numbers are NCCL's ABI).
const (
	StateProxyOpInProgress = 19
	StateSendGPUWait       = 8
	StateSendPeerWait      = 20
	StateSendWait          = 9
	StateRecvWait          = 10
	StateRecvFlushWait     = 11
	StateRecvGPUWait       = 12
	StateKernelChStop      = 22
	StateKernelPhaseStop   = 31 // v7: A is the phase's GPU stop timer
	StateGroupStartAPIStop = 23
	StateGroupEndAPIStart  = 24
)

// Activation masks for the detail levels users choose (XFERTOP_NCCL_EVENTS). MaskColl, the
// default, is what the console's views are made of: collectives, sends and receives, timed on
// the GPU by their kernel channels, as NCCL Inspector asks for (Coll and KernelCh). NCCL still
// starts the API events above them (their start callback only: the plugin returns no handle, so
// NCCL makes no further calls), not the group, kernel-launch or proxy events. The other levels
// add the API calls, groups and kernel launches (api), kernel phases (kernel) and proxy ops and
// steps (proxy).
const (
	MaskColl   = TypeColl | TypeP2p | TypeKernelCh | TypeCeColl | TypeCeSync | TypeCeBatch
	MaskAPI    = TypeGroup | TypeColl | TypeP2p | TypeGroupAPI | TypeCollAPI | TypeP2pAPI | TypeKernelLaunch | TypeCeColl | TypeCeSync | TypeCeBatch
	MaskProxy  = MaskAPI | TypeProxyOp | TypeProxyStep
	MaskKernel = MaskAPI | TypeKernelCh | TypeKernelPhase
	MaskAll    = MaskProxy | TypeKernelCh | TypeKernelPhase
)

// RecSym is Record.Flags' bit for a symmetric-memory collective (v7 isSymColl).
const RecSym = 1

// ParseLevel reads a detail level: coll, api, proxy, kernel, all, a comma-separated mix of them,
// or an NCCL activation mask as a number. The empty string is the default, coll.
func ParseLevel(s string) (uint64, bool) {
	if s == "" {
		return MaskColl, true
	}
	var mask uint64
	for part := range strings.SplitSeq(s, ",") {
		switch strings.TrimSpace(strings.ToLower(part)) {
		case "coll":
			mask |= MaskColl
		case "api":
			mask |= MaskAPI
		case "proxy":
			mask |= MaskProxy
		case "kernel":
			mask |= MaskKernel
		case "all":
			mask |= MaskAll
		default:
			var n uint64
			p := strings.TrimSpace(part)
			if p == "" {
				return 0, false
			}
			for _, c := range p {
				if c < '0' || c > '9' || n > 1<<20 {
					return 0, false
				}
				n = n*10 + uint64(c-'0')
			}
			mask |= n
		}
	}
	return mask, true
}

// RecOp says what a Record reports.
type RecOp uint8

// Record operations.
const (
	RecStart    RecOp = 1 // startEvent
	RecStop     RecOp = 2 // stopEvent
	RecState    RecOp = 3 // recordEventState
	RecFinalize RecOp = 4 // finalize of a context
)

// Record is one profiler callback as the plugin's C side captured it, in the order it was queued.
// The numbers A–D hold the descriptor's fields by type (see the plugin's ncclprof.h):
//
//	GroupAPI: A depth, B graph captured      CollAPI/P2pAPI: A count, B stream, C graph captured, Peer root
//	Coll: A seq, B count, C channels|warps<<8, D parent group, Peer root
//	P2p: B count, C channels, D parent group, Peer peer      KernelLaunch: B stream
//	ProxyOp: A steps, B chunk size, C channel, D is send, Peer peer     ProxyStep: A step
//	KernelCh: A GPU start timer, C channel       CeColl: A seq, B count, C batch size, D stream, Peer root
//	KernelPhase: A GPU start timer, C channel | phase<<8, Func the phase's name
//	state records: A transfer size (proxy step) or GPU stop timer (kernel channel, kernel phase)
//
// Tag is v7's per-call userTag (API calls, tasks, copy-engine collectives), Variant a symmetric
// kernel's name (v7 kernelVariant), Flags RecSym for a symmetric-memory collective.
type Record struct {
	Op    RecOp
	Flags uint8
	State uint16
	Ctx   uint32
	Type  uint64
	ID    uint64
	// Parent is the parent event's id; 0 when none, or when NCCL's proxy in another process sent it.
	Parent     uint64
	T          int64 // host time, ns (CLOCK_MONOTONIC)
	A, B, C, D uint64
	Rank, Peer int32
	Func       [16]byte // NUL-padded
	Dtype      [16]byte
	Algo       [16]byte
	Proto      [8]byte
	Tag        uint64
	Variant    [24]byte
}

// cstr returns b up to its first NUL.
func cstr(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// typeSize is the size of an NCCL datatype named as ncclDatatypeToString names it; 0 if unknown.
func typeSize(dt []byte) int64 {
	switch string(dt) {
	case "ncclInt8", "ncclUint8", "ncclFloat8e4m3", "ncclFloat8e5m2":
		return 1
	case "ncclFloat16", "ncclBfloat16":
		return 2
	case "ncclInt32", "ncclUint32", "ncclFloat32":
		return 4
	case "ncclInt64", "ncclUint64", "ncclFloat64":
		return 8
	}
	return 0
}
