// counter is a small NCCL profiler plugin for the chaining tests: it counts every call it gets,
// checks that every handle and parent it is given is one it gave out (or NULL), that each parent
// is of a type NCCL gives that event as parent, and at its last finalize writes its counts to
// $COUNTER_OUT.<pid>. It exports the v5 and v7 interfaces (so a chain from v6 takes v5, the
// nearest older one), or, built with -DCOUNTER_V4, v4 alone; with COUNTER_FAIL_INIT=1 its init
// fails.
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../ncclprof.h"

#define MAX_EVENTS (1 << 20)
static uint8_t events[MAX_EVENTS]; // a handle is &events[i], holding its type's bit number
static uint64_t next;
static uint64_t inits, starts, stops, states, finalizes, foreign, phases, badparents;
static int contexts;
static int ctx_tag;
static int version;

static int own(void* h) { return h >= (void*)events && h < (void*)(events + MAX_EVENTS); }

static xr_result init(void** context, uint64_t hash, int* mask, const char* name, int nNodes, int nranks, int rank, xr_logger logfn) {
  (void)hash, (void)name, (void)nNodes, (void)nranks, (void)rank, (void)logfn;
  const char* fail = getenv("COUNTER_FAIL_INIT");
  if (fail && !strcmp(fail, "1")) return XR_INTERNAL_ERROR;
  __atomic_fetch_add(&inits, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&contexts, 1, __ATOMIC_RELAXED);
  // Every event type but proxy control and the network plugin's: more than xfertop asks for.
  *mask = XR_GROUP | XR_COLL | XR_P2P | XR_PROXY_OP | XR_PROXY_STEP | XR_KERNEL_CH | XR_GROUP_API | XR_COLL_API |
          XR_P2P_API | XR_KERNEL_LAUNCH | XR_CE_COLL | XR_CE_SYNC | XR_CE_BATCH | XR_KERNEL_PHASE;
  *context = &ctx_tag;
  return XR_OK;
}

static int bit(uint64_t type) { return __builtin_ctzll(type); }

// parent_ok: an event's parent is NULL or of a type NCCL makes its parent (a task's is its API
// call, or its group in v4, where it is never NULL when groups are on; a proxy op's and a kernel
// channel's their task; …).
static int parent_ok(uint64_t type, void* p, int v) {
  if (!p) return !(v == 4 && (type == XR_COLL || type == XR_P2P)); // v4 names a task's group

  if (!own(p)) return 0;
  int pt = 1 << *(uint8_t*)p;
  switch (type) {
    case XR_COLL: return v == 4 ? pt == XR_GROUP : pt == XR_COLL_API || pt == XR_GROUP;
    case XR_P2P: return v == 4 ? pt == XR_GROUP : pt == XR_P2P_API || pt == XR_GROUP;
    case XR_PROXY_OP: case XR_KERNEL_CH: return pt == XR_COLL || pt == XR_P2P;
    case XR_PROXY_STEP: return pt == XR_PROXY_OP;
    case XR_KERNEL_PHASE: return pt == XR_KERNEL_CH;
    case XR_CE_SYNC: case XR_CE_BATCH: return pt == XR_CE_COLL;
    case XR_CE_COLL: return pt == XR_COLL_API;
    case XR_COLL_API: case XR_P2P_API: case XR_KERNEL_LAUNCH: return pt == XR_GROUP_API;
  }
  return 0;
}

static void* start(void* context, uint64_t type, void* parent, const xr_descr_union* u, int v) {
  if (context != &ctx_tag) __atomic_fetch_add(&foreign, 1, __ATOMIC_RELAXED);
  if (parent && !own(parent)) __atomic_fetch_add(&foreign, 1, __ATOMIC_RELAXED);
  if (!parent_ok(type, parent, v)) __atomic_fetch_add(&badparents, 1, __ATOMIC_RELAXED);
  void* g = v >= 5 && type == XR_COLL ? u->coll.parentGroup : v >= 5 && type == XR_P2P ? u->p2p.parentGroup : NULL;
  if (g && (!own(g) || *(uint8_t*)g != bit(XR_GROUP))) __atomic_fetch_add(&badparents, 1, __ATOMIC_RELAXED);
  if (type == XR_KERNEL_PHASE) __atomic_fetch_add(&phases, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&starts, 1, __ATOMIC_RELAXED);
  uint8_t* h = &events[__atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % MAX_EVENTS];
  *h = (uint8_t)bit(type);
  return h;
}

static xr_result stop(void* handle) {
  if (!own(handle)) __atomic_fetch_add(&foreign, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&stops, 1, __ATOMIC_RELAXED);
  return XR_OK;
}

static xr_result state(void* handle, int s, xr_state_args* a) {
  (void)s, (void)a;
  if (!own(handle)) __atomic_fetch_add(&foreign, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&states, 1, __ATOMIC_RELAXED);
  return XR_OK;
}

static xr_result finalize(void* context) {
  if (context != &ctx_tag) __atomic_fetch_add(&foreign, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&finalizes, 1, __ATOMIC_RELAXED);
  if (__atomic_sub_fetch(&contexts, 1, __ATOMIC_RELAXED) > 0) return XR_OK;
  const char* out = getenv("COUNTER_OUT");
  if (!out) return XR_OK;
  char path[512];
  snprintf(path, sizeof path, "%s.%d", out, (int)getpid());
  FILE* f = fopen(path, "w");
  if (!f) return XR_OK;
  fprintf(f, "version %d init %llu start %llu stop %llu state %llu finalize %llu foreign %llu phases %llu badparents %llu\n", version,
          (unsigned long long)inits, (unsigned long long)starts, (unsigned long long)stops, (unsigned long long)states,
          (unsigned long long)finalizes, (unsigned long long)foreign, (unsigned long long)phases, (unsigned long long)badparents);
  fclose(f);
  return XR_OK;
}

#ifdef COUNTER_V4
static xr_result init_v4(void** context, int* mask, const char* name, uint64_t hash, int nNodes, int nranks, int rank, xr_logger logfn) {
  return init(context, hash, mask, name, nNodes, nranks, rank, logfn);
}
static xr_result start_v4(void* c, void** h, xr_descr_v4* d) {
  version = 4;
  if (d->type > XR_NET_PLUGIN) __atomic_fetch_add(&badparents, 1, __ATOMIC_RELAXED); // not a v4 type
  *h = start(c, d->type, d->parentObj, &d->u, 4);
  return XR_OK;
}
const xr_profiler_v4 ncclProfiler_v4 = {"counter", init_v4, start_v4, stop, state, finalize};
#else
static xr_result start_v5(void* c, void** h, xr_descr_v5* d) {
  version = 5;
  *h = start(c, d->type, d->parentObj, &d->u, 5);
  return XR_OK;
}
static xr_result start_v7(void* c, void** h, xr_descr_v7* d) {
  version = 7;
  *h = start(c, d->type, d->parentObj, &d->u, 7);
  return XR_OK;
}
const xr_profiler_v5 ncclProfiler_v5 = {"counter", init, start_v5, stop, state, finalize};
const xr_profiler_v7 ncclProfiler_v7 = {"counter", init, start_v7, stop, state, finalize};
#endif
