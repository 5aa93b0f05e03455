// harness drives an NCCL profiler plugin as NCCL's core does (2.27 through 2.32: profiler interfaces
// v4 to v7, by the interface it finds), without NCCL or a GPU: it loads
// the library and looks its interface up as NCCL's loader does (src/plugin/profiler.cc), then calls
// init, startEvent, stopEvent, recordEventState and finalize in the order and with the parent links
// that NCCL's enqueue (src/enqueue.cc: collTaskAppend, p2pTaskAppend, hostStreamPlanTask), group
// (src/group.cc: ncclGroupEnd), kernel launch and proxy (src/plugin/profiler.cc,
// src/transport/profiler.cc) code use, honouring the activation mask the plugin returned. The
// proxy thread's events (kernel channels, proxy ops and steps) come from a second thread, as in NCCL.
//
// One process is one rank. It prints what it issued, one line per op ("coll all_reduce seq 3
// bytes 4096", "send peer 1 bytes 256", …), for the test to compare with what the console received;
// "local all_to_all bytes N" is an ncclAlltoAll NCCL ran as a local copy (one rank), unseen by the plugin.
// Unlike NCCL, a one-rank all-reduce here still issues its events: the overhead and bench runs time
// the plugin on them (NCCL would run it as a local copy, as it does ncclAlltoAll).
//
// As the NCCL of the interface found: v4 passes no API or copy-engine events and no parentGroup
// (2.27); v5 adds the API events (2.28); v6 the copy-engine collectives (2.29, 2.30: scenario ce);
// v7 (2.31, 2.32) the per-call userTag (-tag), symmetric kernels (-sym: kernelVariant, isSymColl,
// algo the variant's suffix, proto "") and the kernel phases of each kernel channel.
//
//   harness -lib PATH -rank R -nranks N [-comm HASH] [-scenario allreduce|sendrecv|ring|alltoall|ce|unknown|hang|bench]
//           [-setenv NAME=VALUE] (set before the plugin is loaded, as a job's own code would)
//           [-iters K] [-lookup 7,6,5,4] [-pace-us U] [-count C] [-tag T] [-sym 1]
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../ncclprof.h"

// Offsets as NCCL's own headers lay them out (profiler_v4/5/6.h, compiled for x86-64).
_Static_assert(offsetof(xr_descr_v4, rank) == 16, "v4 rank");
_Static_assert(offsetof(xr_descr_v4, u.coll.proto) == 96, "v4 coll.proto");
_Static_assert(offsetof(xr_descr_v4, u.p2p.nChannels) == 60, "v4 p2p.nChannels");
_Static_assert(offsetof(xr_descr_v4, u.proxyOp.isSend) == 44, "v4 proxyOp.isSend");
_Static_assert(offsetof(xr_descr_v5, u.kernelCh.pTimer) == 32, "v5 kernelCh.pTimer");
_Static_assert(offsetof(xr_descr_v5, u.coll.parentGroup) == 104, "v5 coll.parentGroup");
_Static_assert(offsetof(xr_descr_v5, u.p2p.parentGroup) == 64, "v5 p2p.parentGroup");
_Static_assert(offsetof(xr_descr_v5, u.collApi.graphCaptured) == 64, "v5 collApi.graphCaptured");
_Static_assert(offsetof(xr_descr_v5, u.groupApi.groupDepth) == 28, "v5 groupApi.groupDepth");
_Static_assert(offsetof(xr_descr_v6, u.ceColl.stream) == 104, "v6 ceColl.stream");
_Static_assert(offsetof(xr_descr_v6, u.ceColl.batchSize) == 92, "v6 ceColl.batchSize");
_Static_assert(offsetof(xr_descr_v6, u.ceColl.stream) + 8 == 24 + XR_UNION_V6, "v6 union");
_Static_assert(offsetof(xr_descr_v7, u.collApi.userTag) == 72, "v7 collApi.userTag");
_Static_assert(offsetof(xr_descr_v7, u.p2pApi.userTag) == 64, "v7 p2pApi.userTag");
_Static_assert(offsetof(xr_descr_v7, u.coll.kernelVariant) == 112, "v7 coll.kernelVariant");
_Static_assert(offsetof(xr_descr_v7, u.coll.isSymColl) == 120, "v7 coll.isSymColl");
_Static_assert(offsetof(xr_descr_v7, u.coll.userTag) == 128, "v7 coll.userTag");
_Static_assert(offsetof(xr_descr_v7, u.p2p.userTag) == 72, "v7 p2p.userTag");
_Static_assert(offsetof(xr_descr_v7, u.ceColl.userTag) == 112, "v7 ceColl.userTag");
_Static_assert(offsetof(xr_descr_v7, u.kernelPhase.phaseName) == 32, "v7 kernelPhase.phaseName");
_Static_assert(offsetof(xr_descr_v7, u.kernelPhase.pTimer) == 40, "v7 kernelPhase.pTimer");
_Static_assert(sizeof(xr_descr_union) == XR_UNION_V7, "v7 union");
_Static_assert(offsetof(xr_profiler_v5, finalize) == 40, "v5 finalize");
_Static_assert(sizeof(xr_state_args) == 8, "state args");

static int version;
static void* plugin;
static void* ctx;
static int mask;
static int rank_, nranks;
static uint64_t comm_hash = 0x5eed0fc0ffee1234ULL;
static uint64_t seq[16];   // per NCCL function, as comm->seqNumber
static uint64_t ce_seq;    // comm->ceColl.ceSeqNum
static int pace_us;
static size_t count = 1024;
static uint64_t user_tag; // v7: every call's ncclCollConfig_t.userProfilerTag
static int sym;           // v7: all-reduces run as symmetric kernels

enum { F_ALLREDUCE = 1, F_SEND = 2, F_RECV = 3, F_CE_ALLGATHER = 4 };

// ---- the plugin as NCCL sees it, whatever version was found ----

// Calls made to the plugin (a chained plugin must get as many): starts, and stops and states of
// non-NULL handles.
// The main thread (where -scenario bench times the callbacks) counts without an atomic, so that
// counting adds no atomic of the harness's own to the timed callbacks (NCCL counts nothing); the
// proxy threads, one per launch, count atomically. Read once the threads are joined.
typedef struct { uint64_t start, stop, state; } call_row;
static call_row main_calls, other_calls;
static __thread int is_main;

#define COUNT_CALL(col) \
  do { \
    if (is_main) main_calls.col++; \
    else __atomic_fetch_add(&other_calls.col, 1, __ATOMIC_RELAXED); \
  } while (0)

// calls_total sums one column (0 start, 1 stop, 2 state) over the threads.
static uint64_t calls_total(int col) {
  return col == 0 ? main_calls.start + other_calls.start : col == 1 ? main_calls.stop + other_calls.stop : main_calls.state + other_calls.state;
}

// starts says whether NCCL's core starts an event of type given the plugin's activation mask
// (src/plugin/profiler.cc): an event is started when it, or an event below it, was asked for; the
// API events are parents of everything a call leads to.
static int starts(uint64_t type) {
  uint64_t m = (uint64_t)(unsigned)mask;
  const uint64_t below_task = XR_PROXY_OP | XR_PROXY_STEP | XR_KERNEL_CH | XR_NET_PLUGIN;
  const uint64_t ce = XR_CE_COLL | XR_CE_SYNC | XR_CE_BATCH;
  switch (type) {
    case XR_GROUP_API:
      return (m & (XR_GROUP_API | XR_P2P_API | XR_COLL_API | XR_KERNEL_LAUNCH | XR_GROUP | XR_COLL | XR_P2P | below_task | ce)) != 0;
    case XR_COLL_API:
      return (m & (XR_COLL_API | XR_COLL | below_task | ce)) != 0;
    case XR_P2P_API:
      return (m & (XR_P2P_API | XR_P2P | below_task)) != 0;
    case XR_GROUP:
      return (m & (XR_GROUP | XR_COLL | XR_P2P | below_task)) != 0;
    case XR_COLL:
      return (m & (XR_COLL | below_task)) != 0;
    case XR_P2P:
      return (m & (XR_P2P | below_task)) != 0;
    case XR_PROXY_OP:
      return (m & (XR_PROXY_OP | XR_PROXY_STEP | XR_NET_PLUGIN)) != 0;
    case XR_PROXY_STEP:
      return (m & (XR_PROXY_STEP | XR_NET_PLUGIN)) != 0;
    case XR_CE_COLL:
      return (m & ce) != 0;
    default:
      // A type past the harness's interfaces stands for a newer NCCL's event (-scenario
      // unknown): issued whatever the mask, to see the plugin refuse it.
      return type > XR_KERNEL_PHASE || (m & type) != 0;
  }
}

static void* start(uint64_t type, void* parent, int rank, xr_descr_union* u) {
  void* h = NULL;
  if (!starts(type)) return NULL;
  if (version == 4 && type > XR_NET_PLUGIN) return NULL;
  if ((type == XR_CE_COLL || type == XR_CE_SYNC || type == XR_CE_BATCH) && version < 6) return NULL;
  if (type == XR_KERNEL_PHASE && version < 7) return NULL;
  if (version == 4) {
    // NCCL's v4 shim: API and copy-engine events are not passed; a task's parent is its group.
    COUNT_CALL(start);
    xr_descr_v4 d;
    memset(&d, 0, sizeof d);
    d.type = (uint8_t)type;
    d.parentObj = parent;
    d.rank = rank;
    d.u = *u;
    if (type == XR_COLL) d.parentObj = u->coll.parentGroup;
    if (type == XR_P2P) d.parentObj = u->p2p.parentGroup;
    ((xr_profiler_v4*)plugin)->startEvent(ctx, &h, &d);
  } else {
    COUNT_CALL(start);
    xr_descr_v5 d;
    memset(&d, 0, sizeof d);
    d.type = type;
    d.parentObj = parent;
    d.rank = rank;
    d.u = *u;
    ((xr_profiler_v5*)plugin)->startEvent(ctx, &h, &d);
  }
  return h;
}

static void stop(void* h) {
  if (!h) return;
  COUNT_CALL(stop);
  ((xr_profiler_v5*)plugin)->stopEvent(h);
}

static void state(void* h, int s, xr_state_args* a) {
  if (!h) return;
  COUNT_CALL(state);
  ((xr_profiler_v5*)plugin)->recordEventState(h, s, a);
}

// ---- an NCCL task, as the planner holds it ----

typedef struct {
  int func;             // F_*
  const char* name;     // ncclFuncToString
  const char* api;      // the API call's function (AlltoAll for its sends and receives)
  int peer;
  size_t count;
  uint64_t seq;
  void* apiHandle;
  void* handle;
  int nChannels;
} task;

#define MAX_TASKS 256
static task tasks[MAX_TASKS];
static int ntasks;
static void* groupApi;
static int groupApiState; // 0 none, 1 started, 2 start stopped
static int groupDepth;    // ncclGroupDepth
static void* stream = (void*)0x7f0000001000;

static int on(int bits) { return (mask & bits) != 0; }

// The group API event: started by the first task appended at the outermost depth.
static void group_api_start(void) {
  if (groupApi || groupApiState) return;
  if (!on(XR_GROUP_API | XR_P2P_API | XR_COLL_API | XR_KERNEL_LAUNCH | XR_GROUP | XR_COLL | XR_P2P | XR_PROXY_OP | XR_PROXY_STEP | XR_KERNEL_CH)) return;
  xr_descr_union u;
  memset(&u, 0, sizeof u);
  u.groupApi.groupDepth = groupDepth;
  groupApi = start(XR_GROUP_API, NULL, 0, &u);
  groupApiState = 1;
  state(groupApi, 23 /* GroupStartApiStop */, NULL);
  groupApiState = 2;
}

// ncclGroupStart()
static void group_start(void) { groupDepth++; }

// collTaskAppend / p2pTaskAppend: the API event is started and stopped around the append.
// ncclEnqueueCheck wraps the append in its own group start and end: the depth the group API event
// records is 1 for a call outside any group (NCCL's implicit group), 2 inside ncclGroupStart.
static void append(int func, const char* name, const char* api, int peer, size_t n) {
  groupDepth++;
  group_api_start();
  task* t = &tasks[ntasks++];
  memset(t, 0, sizeof *t);
  t->func = func, t->name = name, t->api = api, t->peer = peer, t->count = n, t->nChannels = 2;
  xr_descr_union u;
  memset(&u, 0, sizeof u);
  if (func == F_ALLREDUCE || func == F_CE_ALLGATHER) {
    if (on(XR_COLL_API | XR_COLL | XR_PROXY_OP | XR_PROXY_STEP | XR_KERNEL_CH | XR_CE_COLL | XR_CE_SYNC | XR_CE_BATCH)) {
      u.collApi.func = api, u.collApi.count = n, u.collApi.datatype = "ncclFloat32", u.collApi.stream = stream;
      if (version >= 7) u.collApi.userTag = user_tag;
      t->apiHandle = start(XR_COLL_API, groupApi, 0, &u);
      stop(t->apiHandle);
    }
  } else if (on(XR_P2P_API | XR_P2P | XR_PROXY_OP | XR_PROXY_STEP | XR_KERNEL_CH)) {
    u.p2pApi.func = api, u.p2pApi.count = n, u.p2pApi.datatype = "ncclFloat32", u.p2pApi.stream = stream;
    if (version >= 7) u.p2pApi.userTag = user_tag;
    t->apiHandle = start(XR_P2P_API, groupApi, 0, &u);
    stop(t->apiHandle);
  }
  groupDepth--;
}

#define MAX_CHANNELS 4
static void* kch[MAX_TASKS][MAX_CHANNELS];
static uint64_t kstart[MAX_TASKS][MAX_CHANNELS];
static uint64_t kstop[MAX_TASKS][MAX_CHANNELS];
static uint64_t gpu_launches;

// The kernel phases of a channel (v7 profilerFireKernelPhaseEvents), fired by the proxy before the
// channel's own stop, children of its event: initial_sync for the first 10 µs of the channel,
// final_sync for its last 5 µs, compute between.
static const char* phase_names[] = {"initial_sync", "compute", "final_sync"};
static void kernel_phases(void* ch, int c, uint64_t t0, uint64_t t3) {
  uint64_t ts[4] = {t0, t0 + 10000, t3 - 5000, t3};
  for (int p = 0; p < 3; p++) {
    xr_descr_union u;
    memset(&u, 0, sizeof u);
    u.kernelPhase.channelId = (uint8_t)c, u.kernelPhase.phaseId = (uint8_t)p, u.kernelPhase.phaseName = phase_names[p];
    u.kernelPhase.pTimer = ts[p];
    void* h = start(XR_KERNEL_PHASE, ch, 0, &u);
    if (!h) continue;
    xr_state_args a;
    memset(&a, 0, sizeof a);
    a.kernelCh.pTimer = ts[p + 1];
    state(h, XR_KERNEL_PHASE_STOP, &a);
    stop(h);
  }
}

// A copy-engine all-gather (v6 and later, ncclProfilerStartCeCollEvent and its children): no
// kernel and no group; its sync, a batch of copies, its closing sync, on the caller's thread.
static void ce_collective(task* t) {
  if (!on(XR_CE_COLL | XR_CE_SYNC | XR_CE_BATCH)) return;
  xr_descr_union u;
  memset(&u, 0, sizeof u);
  u.ceColl.seqNumber = t->seq, u.ceColl.func = "AllGather", u.ceColl.count = t->count, u.ceColl.datatype = "ncclFloat32";
  u.ceColl.syncStrategy = "MC", u.ceColl.ceSeqNum = (uint32_t)t->seq, u.ceColl.stream = stream, u.ceColl.root = 0;
  if (version >= 7) u.ceColl.userTag = user_tag;
  void* cc = start(XR_CE_COLL, t->apiHandle, rank_, &u);
  if (!cc) return;
  for (int k = 0; k < 3; k++) {
    memset(&u, 0, sizeof u);
    uint64_t type = k == 1 ? XR_CE_BATCH : XR_CE_SYNC;
    if (k == 1) u.ceBatch.numOps = nranks, u.ceBatch.totalBytes = t->count * 4 * (size_t)nranks;
    else u.ceSync.isComplete = k == 2, u.ceSync.nRanks = nranks;
    void* h = on((int)type) ? start(type, cc, rank_, &u) : NULL;
    usleep(20);
    stop(h);
  }
  stop(cc);
}

// The proxy thread: kernel channels (profiler proxy progress) and network proxy ops with steps.
static void* proxy_thread(void* arg) {
  (void)arg;
  for (int i = 0; i < ntasks; i++) {
    task* t = &tasks[i];
    if (!t->handle) continue;
    for (int c = 0; c < t->nChannels; c++) {
      if (on(XR_PROXY_OP) && t->peer != rank_) {
        for (int dir = 0; dir < 2; dir++) {
          xr_descr_union u;
          memset(&u, 0, sizeof u);
          u.proxyOp.pid = getpid(), u.proxyOp.channelId = (uint8_t)c, u.proxyOp.peer = t->func == F_ALLREDUCE ? (rank_ + 1) % nranks : t->peer;
          u.proxyOp.nSteps = 2, u.proxyOp.chunkSize = 1 << 20, u.proxyOp.isSend = dir == 0;
          void* op = start(XR_PROXY_OP, t->handle, rank_, &u);
          for (int s = 0; s < 2; s++) {
            memset(&u, 0, sizeof u);
            u.proxyStep.step = s;
            void* st = on(XR_PROXY_STEP) ? start(XR_PROXY_STEP, op, rank_, &u) : NULL;
            xr_state_args a = {{(size_t)(t->count * 4 / 4)}};
            if (dir == 0) {
              state(st, XR_STEP_SEND_GPU_WAIT, &a);
              state(st, XR_STEP_SEND_PEER_WAIT, &a);
              usleep(50);
              state(st, XR_STEP_SEND_WAIT, &a);
            } else {
              state(st, XR_STEP_RECV_WAIT, &a);
              usleep(50);
              state(st, XR_STEP_RECV_FLUSH_WAIT, &a);
              state(st, XR_STEP_RECV_GPU_WAIT, &a);
            }
            stop(st);
          }
          stop(op);
        }
      }
      if (on(XR_KERNEL_CH)) {
        // The kernel's own timers (GPU globaltimer, ns): channel c runs from base + c µs to
        // base + 100 µs + 10 µs × c, so the collective's kernel takes exactly 100 + 10 × (channels − 1) µs.
        uint64_t base = 1700000000000000000ULL + (uint64_t)gpu_launches * 1000000000ULL;
        xr_descr_union u;
        memset(&u, 0, sizeof u);
        u.kernelCh.channelId = (uint8_t)c, u.kernelCh.pTimer = base + (uint64_t)c * 1000;
        kch[i][c] = start(XR_KERNEL_CH, t->handle, 0, &u);
        kstart[i][c] = u.kernelCh.pTimer;
        kstop[i][c] = base + 100000 + (uint64_t)c * 10000;
      }
    }
    gpu_launches++;
  }
  // The proxy sees the kernel finish after it has: its channels' stops come later on the host.
  usleep(150);
  for (int i = 0; i < ntasks; i++) {
    for (int c = 0; c < tasks[i].nChannels; c++) {
      if (!kch[i][c]) continue;
      xr_state_args a;
      memset(&a, 0, sizeof a);
      if (on(XR_KERNEL_PHASE)) kernel_phases(kch[i][c], c, kstart[i][c], kstop[i][c]);
      a.kernelCh.pTimer = kstop[i][c];
      state(kch[i][c], XR_KERNEL_CH_STOP, &a);
      stop(kch[i][c]);
      kch[i][c] = NULL;
    }
  }
  return NULL;
}

// The outermost group end (ncclGroupEnd, or the end of a call's implicit group): launch (kernel
// launch, then hostStreamPlanTask: group, tasks, proxy start, task stops, group stop), the proxy
// thread's work, and the group API event's stop.
static void launch(void) {
  state(groupApi, 24 /* GroupEndApiStart */, NULL);
  if (ntasks == 0) {
    stop(groupApi);
    groupApi = NULL, groupApiState = 0;
    return;
  }
  xr_descr_union u;
  memset(&u, 0, sizeof u);
  void* kl = NULL;
  if (on(XR_KERNEL_LAUNCH)) {
    u.kernelLaunch.stream = stream;
    kl = start(XR_KERNEL_LAUNCH, groupApi, 0, &u);
    stop(kl);
  }
  if (tasks[0].func == F_CE_ALLGATHER) {
    // NCCL launches a copy-engine collective alone, without a kernel plan.
    for (int i = 0; i < ntasks; i++) {
      tasks[i].seq = ce_seq++;
      ce_collective(&tasks[i]);
    }
    stop(groupApi);
    groupApi = NULL, groupApiState = 0;
    for (int i = 0; i < ntasks; i++) {
      printf("coll all_gather seq %llu bytes %zu\n", (unsigned long long)tasks[i].seq, tasks[i].count * 4 * (size_t)nranks);
    }
    ntasks = 0;
    return;
  }
  void* group = NULL;
  if (on(XR_GROUP | XR_COLL | XR_P2P | XR_PROXY_OP | XR_PROXY_STEP | XR_KERNEL_CH)) {
    memset(&u, 0, sizeof u);
    group = start(XR_GROUP, NULL, 0, &u);
  }
  for (int i = 0; i < ntasks; i++) {
    task* t = &tasks[i];
    memset(&u, 0, sizeof u);
    if (t->func == F_ALLREDUCE) {
      t->seq = seq[F_ALLREDUCE]++;
      if (!on(XR_COLL | XR_PROXY_OP | XR_PROXY_STEP | XR_KERNEL_CH)) continue;
      u.coll.seqNumber = t->seq, u.coll.func = t->name, u.coll.count = t->count, u.coll.datatype = "ncclFloat32";
      u.coll.nChannels = (uint8_t)t->nChannels, u.coll.nWarps = 16, u.coll.algo = "RING", u.coll.proto = "SIMPLE";
      u.coll.parentGroup = group;
      if (version >= 7) {
        u.coll.userTag = user_tag;
        if (sym) {
          u.coll.isSymColl = true, u.coll.kernelVariant = "AllReduce_AGxLLMC_R";
          u.coll.algo = "AGxLLMC_R", u.coll.proto = "";
        }
      }
      t->handle = start(XR_COLL, t->apiHandle, rank_, &u);
    } else {
      if (!on(XR_P2P | XR_PROXY_OP | XR_PROXY_STEP | XR_KERNEL_CH)) continue;
      u.p2p.func = t->name, u.p2p.count = t->count, u.p2p.datatype = "ncclFloat32", u.p2p.peer = t->peer;
      u.p2p.nChannels = (uint8_t)t->nChannels, u.p2p.parentGroup = group;
      if (version >= 7) u.p2p.userTag = user_tag;
      t->handle = start(XR_P2P, t->apiHandle, rank_, &u);
    }
  }
  for (int i = 0; i < ntasks; i++) stop(tasks[i].handle);
  stop(group);
  pthread_t th;
  pthread_create(&th, NULL, proxy_thread, NULL);
  // ncclGroupEnd returns (stopping the group API event) while the proxy thread still works.
  stop(groupApi);
  groupApi = NULL, groupApiState = 0;
  pthread_join(th, NULL);
  for (int i = 0; i < ntasks; i++) {
    task* t = &tasks[i];
    if (t->func == F_ALLREDUCE) {
      printf("coll all_reduce seq %llu bytes %zu\n", (unsigned long long)t->seq, t->count * 4);
    } else {
      printf("%s peer %d bytes %zu api %s", t->func == F_SEND ? "send" : "recv", t->peer, t->count * 4, t->api);
      if (version >= 7 && user_tag) printf(" tag %llu", (unsigned long long)user_tag);
      printf("\n");
    }
  }
  ntasks = 0;
}

// ncclGroupEnd()
static void group_end(void) {
  if (--groupDepth > 0) return;
  launch();
}

// Allocations made on a thread while it counts: the harness's own malloc, calloc and realloc
// interpose glibc's for the whole process, the plugin included.
extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
static __thread int counting;
static uint64_t mallocs;
void* malloc(size_t n) {
  if (counting) mallocs++;
  return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
  if (counting) mallocs++;
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  if (counting) mallocs++;
  return __libc_realloc(p, n);
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// cpu_ns is this thread's CPU time: on a loaded machine the wall time of a timed stretch includes
// other processes' turns, its CPU time does not.
static int64_t cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// bench issues n all-reduces' callbacks as NCCL 2.31's core does for one all-reduce in its own
// implicit group at the default (kernel) level, all on this thread (the proxy's kernel channels
// inline): the group API event and its states, the API call, the kernel launch, the group and the
// task, and two kernel channels with their stops. It times them in chunks the sender drains
// between (untimed), and prints the callbacks made, the nanoseconds they took and the
// allocations made on this thread meanwhile.
static void bench(int n) {
  const int chunk = 1000;
  uint64_t calls0 = calls_total(0) + calls_total(1) + calls_total(2);
  int64_t ns = 0, cpu = 0;
  xr_descr_union u;
  xr_state_args a;
  memset(&a, 0, sizeof a);
  for (int done = 0; done < n;) {
    int k = n - done < chunk ? n - done : chunk;
    counting = 1;
    int64_t t0 = now_ns(), c0 = cpu_ns();
    for (int i = 0; i < k; i++) {
      memset(&u, 0, sizeof u);
      u.groupApi.groupDepth = 1;
      void* g = start(XR_GROUP_API, NULL, 0, &u);
      state(g, 23, NULL);
      memset(&u, 0, sizeof u);
      u.collApi.func = "AllReduce", u.collApi.count = 262144, u.collApi.datatype = "ncclFloat32", u.collApi.stream = stream;
      void* api = start(XR_COLL_API, g, 0, &u);
      stop(api);
      state(g, 24, NULL);
      memset(&u, 0, sizeof u);
      u.kernelLaunch.stream = stream;
      void* kl = start(XR_KERNEL_LAUNCH, g, 0, &u);
      stop(kl);
      memset(&u, 0, sizeof u);
      void* grp = start(XR_GROUP, NULL, 0, &u);
      memset(&u, 0, sizeof u);
      u.coll.seqNumber = seq[F_ALLREDUCE]++, u.coll.func = "AllReduce", u.coll.count = 262144, u.coll.datatype = "ncclFloat32";
      u.coll.nChannels = 2, u.coll.nWarps = 16, u.coll.algo = "RING", u.coll.proto = "SIMPLE", u.coll.parentGroup = grp;
      void* task = start(XR_COLL, api, rank_, &u);
      stop(task);
      stop(grp);
      stop(g);
      for (int c = 0; c < 2; c++) {
        memset(&u, 0, sizeof u);
        u.kernelCh.channelId = (uint8_t)c, u.kernelCh.pTimer = 1000000ULL * (uint64_t)i;
        void* ch = start(XR_KERNEL_CH, task, 0, &u);
        a.kernelCh.pTimer = 1000000ULL * (uint64_t)i + 20000;
        state(ch, XR_KERNEL_CH_STOP, &a);
        stop(ch);
      }
    }
    ns += now_ns() - t0;
    cpu += cpu_ns() - c0;
    counting = 0;
    done += k;
    usleep(100000); // the sender drains the ring (a chunk is 18,000 records at most, the ring 65,536)
  }
  printf("bench calls %llu ns %lld mallocs %llu allreduces %d cpu_ns %lld\n", (unsigned long long)(calls_total(0) + calls_total(1) + calls_total(2) - calls0),
         (long long)ns, (unsigned long long)mallocs, n, (long long)cpu);
}

// The null plugin (-lib null -mask M): asks for mask M and does nothing but hand out handles, so
// that -scenario bench through it times the harness's own part of the sequence (building each
// descriptor, as NCCL's core does, and the calls), to be taken from a plugin's time.
static int null_mask;
static xr_result null_init(void** context, uint64_t commId, int* m, const char* name, int nNodes, int nranks, int rank, xr_logger logfn) {
  (void)commId, (void)name, (void)nNodes, (void)nranks, (void)rank, (void)logfn;
  *context = &null_mask;
  *m = null_mask;
  return XR_OK;
}
static xr_result null_start(void* context, void** handle, xr_descr_v5* d) {
  *handle = d->type & (uint64_t)(unsigned)null_mask ? context : NULL; // as a plugin does with what it did not ask for
  return XR_OK;
}
static xr_result null_stop(void* handle) { return handle ? XR_OK : XR_INVALID_USAGE; }
static xr_result null_state(void* handle, int s, xr_state_args* a) { return handle && s >= 0 && (a || !a) ? XR_OK : XR_INVALID_USAGE; }
static xr_result null_finalize(void* context) { return context ? XR_OK : XR_INVALID_USAGE; }
static xr_profiler_v5 null_plugin = {"null", null_init, null_start, null_stop, null_state, null_finalize};

static void pace(void) {
  if (pace_us > 0) usleep((useconds_t)pace_us);
}

int main(int argc, char** argv) {
  const char* lib = NULL;
  is_main = 1;
  const char* scenario = "allreduce";
  const char* lookup = "7,6,5,4";
  int iters = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-lib")) lib = argv[i + 1];
    else if (!strcmp(argv[i], "-rank")) rank_ = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-nranks")) nranks = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-comm")) comm_hash = strtoull(argv[i + 1], NULL, 0);
    else if (!strcmp(argv[i], "-scenario")) scenario = argv[i + 1];
    else if (!strcmp(argv[i], "-iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-lookup")) lookup = argv[i + 1];
    else if (!strcmp(argv[i], "-pace-us")) pace_us = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-count")) count = (size_t)atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "-tag")) user_tag = strtoull(argv[i + 1], NULL, 0);
    else if (!strcmp(argv[i], "-sym")) sym = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-mask")) null_mask = (int)strtol(argv[i + 1], NULL, 0);
    // As a PyTorch job sets os.environ["NCCL_..."] after its start and before NCCL loads the
    // plugin: the variable is in the process's environment, not in the one it started with.
    else if (!strcmp(argv[i], "-setenv")) putenv(argv[i + 1]);
  }
  if (!lib || nranks < 1) {
    fprintf(stderr, "usage: harness -lib PATH -rank R -nranks N [-scenario S] [-iters K] [-lookup 7,6,5,4]\n");
    return 2;
  }
  void* h = strcmp(lib, "null") ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!strcmp(lib, "null")) plugin = &null_plugin, version = 7;
  else if (!h) {
    fprintf(stderr, "harness: dlopen %s: %s\n", lib, dlerror());
    return 1;
  }
  // NCCL's loader: the newest interface it knows first.
  for (const char* p = lookup; h && *p && !plugin; p++) {
    if (*p < '1' || *p > '9') continue;
    char sym[32];
    snprintf(sym, sizeof sym, "ncclProfiler_v%c", *p);
    plugin = dlsym(h, sym);
    if (plugin) version = *p - '0';
  }
  if (!plugin || version < 4 || version > 7) {
    // An NCCL that finds no interface it supports runs without a profiler.
    printf("unsupported: no profiler interface among v%s\n", lookup);
    return 0;
  }
  xr_result r;
  if (version == 4) {
    r = ((xr_profiler_v4*)plugin)->init(&ctx, &mask, "harness", comm_hash, 1, nranks, rank_, NULL);
  } else {
    r = ((xr_profiler_v5*)plugin)->init(&ctx, comm_hash, &mask, "harness", 1, nranks, rank_, NULL);
  }
  printf("init v%d result %d mask 0x%x\n", version, r, mask);
  if (r != 0) return 0; // NCCL goes on without the profiler
  if (!strcmp(scenario, "bench")) bench(iters), iters = 0; // -iters all-reduces, timed
  for (int it = 0; it < iters; it++) {
    if (!strcmp(scenario, "allreduce") || !strcmp(scenario, "hang")) {
      if (!strcmp(scenario, "hang") && it == iters - 1 && rank_ == nranks - 1) break; // the last rank never posts it
      group_start();
      append(F_ALLREDUCE, "AllReduce", "AllReduce", 0, count);
      append(F_ALLREDUCE, "AllReduce", "AllReduce", 0, count * 2);
      group_end();
    } else if (!strcmp(scenario, "sendrecv")) {
      // rank 0 sends to 1 (ncclSend, an implicit group); rank 1 receives from 0.
      if (rank_ == 0) append(F_SEND, "Send", "Send", 1, count);
      if (rank_ == 1) append(F_RECV, "Recv", "Recv", 0, count);
      launch();
    } else if (!strcmp(scenario, "alltoall")) {
      if (nranks == 1) {
        // A one-rank communicator: ncclAlltoAll is a collective to taskAppend, which runs it as a
        // local copy (ncclLaunchOneRank) before any profiler call, API event included. Seen on an
        // H200 with NCCL 2.28.9 and torch 2.11: no send or receive for all_to_all_single on one
        // rank, one device-to-device memcpy in the Kineto trace.
        printf("local all_to_all bytes %zu\n", count * 4);
      } else {
        // ncclAlltoAll in 2.28: one send and one receive task per peer, self included.
        for (int p = 0; p < nranks; p++) {
          append(F_SEND, "Send", "AlltoAll", p, count);
          append(F_RECV, "Recv", "AlltoAll", p, count);
        }
        launch();
      }
    } else if (!strcmp(scenario, "ring")) {
      // torch's batch_isend_irecv: ncclSend to rank + 1 and ncclRecv from rank - 1 in one group.
      // On one rank both are to itself, and are tasks (p2p is not a collective to taskAppend).
      group_start();
      append(F_SEND, "Send", "Send", (rank_ + 1) % nranks, count);
      append(F_RECV, "Recv", "Recv", (rank_ + nranks - 1) % nranks, count);
      group_end();
    } else if (!strcmp(scenario, "ce")) {
      // ncclAllGather run by the copy engines (NCCL 2.29 and later), an implicit group each.
      append(F_CE_ALLGATHER, "AllGather", "AllGather", 0, count);
      launch();
      append(F_CE_ALLGATHER, "AllGather", "AllGather", 0, count * 2);
      launch();
    } else if (!strcmp(scenario, "unknown")) {
      xr_descr_union u;
      memset(&u, 0, sizeof u);
      void* x = start(1ULL << 20, NULL, rank_, &u); // a type this plugin was not written for
      printf("unknown handle %p\n", x);
      stop(x);
      group_start();
      append(F_ALLREDUCE, "AllReduce", "AllReduce", 0, count);
      group_end();
    }
    fflush(stdout);
    pace();
  }
  printf("calls start %llu stop %llu state %llu\n", (unsigned long long)calls_total(0), (unsigned long long)calls_total(1),
         (unsigned long long)calls_total(2));
  if (!getenv("HARNESS_NO_FINALIZE")) ((xr_profiler_v5*)plugin)->finalize(ctx);
  printf("done\n");
  return 0;
}
