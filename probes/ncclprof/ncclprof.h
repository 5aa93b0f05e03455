// The NCCL profiler plugin interface as NCCL's core calls it (versions 4 to 7), declared from
// NCCL's headers src/include/plugin/nccl_profiler.h and src/include/plugin/profiler/profiler_v*.h
// (v7: NCCL 2.31 and later): the types, field order and function signatures are NCCL's ABI and
// must not change. Names are this plugin's own. Also the ring of records the callbacks fill and
// the Go sender drains.
//
// The declarations of NCCL's interface are derived from NCCL's headers, which carry this notice:
//
//   SPDX-FileCopyrightText: Copyright (c) 2024-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
//   SPDX-License-Identifier: Apache-2.0
//   See LICENSE.txt (in NVIDIA/nccl) for more license information
#ifndef XFERTOP_NCCLPROF_H
#define XFERTOP_NCCLPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

// ncclResult_t: 0 is ncclSuccess; init may return ncclInternalError (3) to disable the plugin.
typedef int xr_result;
#define XR_OK 0
#define XR_INTERNAL_ERROR 3
#define XR_INVALID_USAGE 5

// ncclDebugLogger_t: level (2 warn, 3 info), subsystem flags (1 init), file, line, format.
typedef void (*xr_logger)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// Event type bits (the descriptor's type and the activation mask).
enum {
  XR_GROUP = 1 << 0, XR_COLL = 1 << 1, XR_P2P = 1 << 2, XR_PROXY_OP = 1 << 3, XR_PROXY_STEP = 1 << 4,
  XR_PROXY_CTRL = 1 << 5, XR_KERNEL_CH = 1 << 6, XR_NET_PLUGIN = 1 << 7, XR_GROUP_API = 1 << 8,
  XR_COLL_API = 1 << 9, XR_P2P_API = 1 << 10, XR_KERNEL_LAUNCH = 1 << 11, XR_CE_COLL = 1 << 12,
  XR_CE_SYNC = 1 << 13, XR_CE_BATCH = 1 << 14, XR_KERNEL_PHASE = 1 << 15 /* v7 */,
};

// Event states (ncclProfilerEventState_t) this plugin reads.
enum {
  XR_STEP_SEND_GPU_WAIT = 8, XR_STEP_SEND_WAIT = 9, XR_STEP_RECV_WAIT = 10, XR_STEP_RECV_FLUSH_WAIT = 11,
  XR_STEP_RECV_GPU_WAIT = 12, XR_STEP_SEND_PEER_WAIT = 20, XR_KERNEL_CH_STOP = 22,
  XR_KERNEL_PHASE_STOP = 31, // v7: its stop timer is in the state args' kernelCh.pTimer
};

// The descriptor union's members, in NCCL's layout. v4 has only coll (without parentGroup), p2p
// (likewise), proxyOp, proxyStep, kernelCh and netPlugin; v5 adds the API events and parentGroup;
// v6 adds the copy-engine events; v7 appends userTag (and coll's kernelVariant and isSymColl) to
// its members and adds kernelPhase. Each version only appends, so an older descriptor is a prefix
// of this one: a field of a later version must not be read from an earlier version's descriptor
// (it lies past its end). XR_UNION_V4..V7 are the union's sizes in each version.
typedef union {
  struct { bool graphCaptured; int groupDepth; } groupApi;
  struct {
    const char* func; size_t count; const char* datatype; int root; void* stream; bool graphCaptured;
    uint64_t userTag; // v7: the call's ncclCollConfig_t.userProfilerTag (0: none)
  } collApi;
  struct {
    const char* func; size_t count; const char* datatype; void* stream; bool graphCaptured;
    uint64_t userTag; // v7
  } p2pApi;
  struct { void* stream; } kernelLaunch;
  struct {
    uint64_t seqNumber; const char* func; const void* sendBuff; void* recvBuff; size_t count; int root;
    const char* datatype; uint8_t nChannels; uint8_t nWarps; const char* algo; const char* proto;
    void* parentGroup; // v5 and later
    const char* kernelVariant; // v7: the symmetric kernel's name (NULL for the others)
    bool isSymColl;            // v7: a symmetric-memory kernel (algo is the variant's suffix, proto "")
    uint64_t userTag;          // v7
  } coll;
  struct {
    const char* func; void* buff; const char* datatype; size_t count; int peer; uint8_t nChannels;
    void* parentGroup; // v5 and later
    uint64_t userTag;  // v7
  } p2p;
  struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
  struct { int step; } proxyStep;
  struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
  struct { int64_t id; void* data; } netPlugin;
  struct {
    uint64_t seqNumber; const char* func; const void* sendBuff; void* recvBuff; size_t count; int root;
    const char* datatype; const char* syncStrategy; bool intraBatchSync; uint32_t batchSize;
    uint32_t numBatches; uint32_t ceSeqNum; void* stream;
    uint64_t userTag; // v7
  } ceColl;
  struct { bool isComplete; int nRanks; } ceSync;
  struct { int numOps; size_t totalBytes; bool useIntraSync; } ceBatch;
  // v7: one phase of a kernel channel (0 initial_sync, 1 compute, 2 final_sync); its parent is the
  // channel's event, pTimer its GPU start.
  struct { uint8_t channelId; uint8_t phaseId; const char* phaseName; uint64_t pTimer; } kernelPhase;
} xr_descr_union;

enum { XR_UNION_V4 = 80, XR_UNION_V5 = 88, XR_UNION_V6 = 88, XR_UNION_V7 = 112 };

// ncclProfilerEventDescr_v4_t: the type is one byte in v4.
typedef struct { uint8_t type; void* parentObj; int rank; xr_descr_union u; } xr_descr_v4;
// ncclProfilerEventDescr_v5_t, _v6_t and _v7_t (each its version's prefix of this layout).
typedef struct { uint64_t type; void* parentObj; int rank; xr_descr_union u; } xr_descr_v5;
typedef xr_descr_v5 xr_descr_v6;
typedef xr_descr_v5 xr_descr_v7;

// ncclProfilerEventStateArgs_v4/5/6/7_t (v7's kernel phase stop uses kernelCh.pTimer).
typedef union {
  struct { size_t transSize; } proxyStep;
  struct { int appendedProxyOps; } proxyCtrl;
  struct { void* data; } netPlugin;
  struct { uint64_t pTimer; } kernelCh;
} xr_state_args;

// ncclProfiler_v4_t: init takes the mask before the name, and the hash after it.
typedef struct {
  const char* name;
  xr_result (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes, int nranks, int rank, xr_logger logfn);
  xr_result (*startEvent)(void* context, void** eHandle, xr_descr_v4* eDescr);
  xr_result (*stopEvent)(void* eHandle);
  xr_result (*recordEventState)(void* eHandle, int eState, xr_state_args* eStateArgs);
  xr_result (*finalize)(void* context);
} xr_profiler_v4;

// ncclProfiler_v5_t, _v6_t and _v7_t: init takes the communicator id first.
typedef struct {
  const char* name;
  xr_result (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes, int nranks, int rank, xr_logger logfn);
  xr_result (*startEvent)(void* context, void** eHandle, xr_descr_v5* eDescr);
  xr_result (*stopEvent)(void* eHandle);
  xr_result (*recordEventState)(void* eHandle, int eState, xr_state_args* eStateArgs);
  xr_result (*finalize)(void* context);
} xr_profiler_v5;
typedef xr_profiler_v5 xr_profiler_v6;
typedef xr_profiler_v5 xr_profiler_v7;

// One callback as queued for the sender (fold.Record in Go).
typedef struct {
  uint8_t op;      // 1 start, 2 stop, 3 state, 4 finalize
  uint8_t flags;   // XR_REC_SYM: a symmetric-memory collective (v7 isSymColl)
  uint16_t state;
  uint32_t ctx;
  uint64_t type, id, parent;
  int64_t t;       // ticks (xr_ticks: the TSC, or CLOCK_MONOTONIC ns); the sender converts them
  uint64_t a, b, c, d;
  int32_t rank, peer;
  char fn[16], dtype[16], algo[16], proto[8];
  uint64_t tag;     // v7 userTag (0: none)
  char variant[24]; // v7 kernelVariant
} xr_rec;

enum { XR_REC_SYM = 1 };

// A ring slot: seq publishes the record (Vyukov's bounded queue).
typedef struct {
  uint64_t seq;
  xr_rec r;
} xr_slot;

// What the Go side decides at the first init (from the environment).
typedef struct {
  uint64_t mask;    // the activation mask to give NCCL
  uint64_t ring;    // records in the ring (a power of two)
  int64_t flush_ms; // how long the last finalize (or exit) waits for the sender
  int tsc;          // stamp records with the TSC (else CLOCK_MONOTONIC)
  char err[256];    // non-empty: the plugin is disabled, and why
  char chain[1024]; // non-empty: the profiler plugin to chain (XFERTOP_CHAIN_PLUGIN)
} xr_setup;

// A profiler context: one communicator of this process.
typedef struct {
  uint32_t index;    // this plugin's context number
  void* chain_ctx;   // the chained plugin's context (NULL: none, or its init failed)
  uint64_t chain_mask; // the events the chained plugin asked for
} xr_ctx;

// plugin.c's recording, for chain.c.
uint64_t xr_next_id(void);
uint64_t xr_record_start(xr_ctx* c, uint64_t id, uint64_t type, void* parentObj, int rank, const xr_descr_union* u, int version);
void xr_record_stop(uint64_t id);
void xr_record_state(uint64_t id, int state, const xr_state_args* args);

// chain.c: a second profiler plugin that receives every call too (XFERTOP_CHAIN_PLUGIN).
extern int xr_chain_on;
void xr_chain_load(const char* path, int version, uint64_t slots, xr_logger logfn);
uint64_t xr_chain_init(xr_ctx* c, uint64_t hash, const char* name, int nNodes, int nranks, int rank, xr_logger logfn);
xr_result xr_chain_start(xr_ctx* c, void** handle, uint64_t type, void* parentObj, int rank, const xr_descr_union* u, int version);
xr_result xr_chain_stop(void* handle);
xr_result xr_chain_state(void* handle, int state, xr_state_args* args);
void xr_chain_finalize(xr_ctx* c);
uint64_t xr_chain_lost_count(void);

// Shared between C and Go.
extern xr_slot* xr_ring;
extern uint64_t xr_ring_mask;
uint64_t xr_dropped_count(void);
uint64_t xr_unknown_count(void);
void xr_set_flushed(uint64_t pos);
int64_t xr_now(void);     // CLOCK_MONOTONIC ns
uint64_t xr_ticks(void);  // the records' timestamps: TSC ticks, or CLOCK_MONOTONIC ns (xr_tsc 0)
int xr_tsc(void);
void xr_set_tsc(int on);
void xr_clock_pair(uint64_t* tick, int64_t* ns); // ticks and CLOCK_MONOTONIC at one instant
uint64_t xr_bench(uint64_t n, int kind);
uint64_t xr_cost_ticks(void);   // time (ticks) of the callbacks sampled to measure the plugin's cost
uint64_t xr_cost_samples(void); // callbacks sampled
void xr_bench_setup(uint64_t n);

#endif
