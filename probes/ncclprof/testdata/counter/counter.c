// counter is a small NCCL profiler plugin for the chaining tests: it counts every call it gets,
// checks that every handle and parent it is given is one it gave out (or NULL), and at its last
// finalize writes its counts to $COUNTER_OUT.<pid>. It exports the v5 and v7 interfaces (so a
// chain from v6 takes v5, the nearest older one); with COUNTER_FAIL_INIT=1 its init fails.
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../ncclprof.h"

#define MAX_EVENTS (1 << 20)
static char events[MAX_EVENTS]; // a handle is &events[i]
static uint64_t next;
static uint64_t inits, starts, stops, states, finalizes, foreign, phases;
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

static xr_result start(void* context, void** handle, xr_descr_v5* d) {
  if (context != &ctx_tag) __atomic_fetch_add(&foreign, 1, __ATOMIC_RELAXED);
  if (d->parentObj && !own(d->parentObj)) __atomic_fetch_add(&foreign, 1, __ATOMIC_RELAXED);
  if (d->type == XR_COLL && d->u.coll.parentGroup && !own(d->u.coll.parentGroup)) __atomic_fetch_add(&foreign, 1, __ATOMIC_RELAXED);
  if (d->type == XR_P2P && d->u.p2p.parentGroup && !own(d->u.p2p.parentGroup)) __atomic_fetch_add(&foreign, 1, __ATOMIC_RELAXED);
  if (d->type == XR_KERNEL_PHASE) __atomic_fetch_add(&phases, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&starts, 1, __ATOMIC_RELAXED);
  *handle = &events[__atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % MAX_EVENTS];
  return XR_OK;
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
  fprintf(f, "version %d init %llu start %llu stop %llu state %llu finalize %llu foreign %llu phases %llu\n", version,
          (unsigned long long)inits, (unsigned long long)starts, (unsigned long long)stops, (unsigned long long)states,
          (unsigned long long)finalizes, (unsigned long long)foreign, (unsigned long long)phases);
  fclose(f);
  return XR_OK;
}

static xr_result start_v5(void* c, void** h, xr_descr_v5* d) { version = 5; return start(c, h, d); }
static xr_result start_v7(void* c, void** h, xr_descr_v7* d) { version = 7; return start(c, h, d); }

const xr_profiler_v5 ncclProfiler_v5 = {"counter", init, start_v5, stop, state, finalize};
const xr_profiler_v7 ncclProfiler_v7 = {"counter", init, start_v7, stop, state, finalize};
