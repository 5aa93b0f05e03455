// The profiler callbacks NCCL calls on its own threads (the application's, the proxy's). They never
// block, never allocate and never enter the Go runtime on the steady path: each one claims a slot in
// a preallocated ring (a compare-and-swap), copies what it needs, publishes it and returns success.
// When the ring is full the callback drops the event, counts it, and returns a NULL handle, so NCCL
// makes no further calls for it. Event handles are ids, not pointers: a child may name a parent that
// has long been stopped (NCCL starts proxy ops after the collective's stop) without dangling.
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "ncclprof.h"
#include "_cgo_export.h"

xr_slot* xr_ring;
uint64_t xr_ring_mask;

static uint64_t tail;              // next position to claim (atomic)
static uint64_t next_id = 1;       // event ids (atomic); 0 is no event
static uint64_t dropped;           // events dropped because the ring was full (atomic)
static uint64_t unknown_types;     // descriptors of types this plugin does not know (atomic)
static uint64_t flushed;           // ring position the sender has delivered up to (atomic)
static int contexts;               // live contexts (atomic)
static uint32_t next_ctx = 1;      // context indices (atomic)
static int enabled;                // set once the ring exists (read atomically)
static uint64_t activation_mask;
static int64_t flush_ms;
static pid_t self_pid;
static pthread_mutex_t setup_mu = PTHREAD_MUTEX_INITIALIZER;
static int setup_done;
static char setup_err[256];

int64_t xr_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// Records are stamped in ticks: the CPU's time-stamp counter where the kernel itself keeps time
// with it (set at setup), else CLOCK_MONOTONIC nanoseconds. A clock_gettime is about half of a
// callback's cost; rdtsc a few nanoseconds. The sender converts ticks to CLOCK_MONOTONIC
// nanoseconds with pairs read by xr_clock_pair (tickclock.go), so the events' times stay those of
// NCCL's and the host's clock.
static int use_tsc;

static inline uint64_t ticks(void) {
#if defined(__x86_64__)
  if (__builtin_expect(use_tsc, 1)) return __rdtsc();
#endif
  return (uint64_t)xr_now();
}

uint64_t xr_ticks(void) { return ticks(); }
int xr_tsc(void) { return use_tsc; }

void xr_set_tsc(int on) {
#if defined(__x86_64__)
  use_tsc = on != 0;
#else
  (void)on;
#endif
}

// xr_clock_pair reads ticks and CLOCK_MONOTONIC at one instant: the ticks are the middle of the
// tightest of three tick reads around a clock read.
void xr_clock_pair(uint64_t* tick, int64_t* ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 3; i++) {
    uint64_t t1 = ticks();
    int64_t n = xr_now();
    uint64_t t2 = ticks();
    if (t2 - t1 < best) {
      best = t2 - t1;
      *tick = t1 + (t2 - t1) / 2;
      *ns = n;
    }
  }
}

uint64_t xr_dropped_count(void) { return __atomic_load_n(&dropped, __ATOMIC_RELAXED); }
uint64_t xr_unknown_count(void) { return __atomic_load_n(&unknown_types, __ATOMIC_RELAXED); }
void xr_set_flushed(uint64_t pos) { __atomic_store_n(&flushed, pos, __ATOMIC_RELEASE); }

// claim reserves the next slot, or returns NULL (and counts a drop) when the sender is a whole ring
// behind. Lock-free: a producer only retries when another one took the slot first.
static xr_slot* claim(uint64_t* pos_out) {
  uint64_t pos = __atomic_load_n(&tail, __ATOMIC_RELAXED);
  for (;;) {
    xr_slot* s = &xr_ring[pos & xr_ring_mask];
    uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    int64_t dif = (int64_t)(seq - pos);
    if (dif == 0) {
      if (__atomic_compare_exchange_n(&tail, &pos, pos + 1, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        *pos_out = pos;
        return s;
      }
    } else if (dif < 0) {
      __atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
      return NULL;
    } else {
      pos = __atomic_load_n(&tail, __ATOMIC_RELAXED);
    }
  }
}

static inline void publish(xr_slot* s, uint64_t pos) { __atomic_store_n(&s->seq, pos + 1, __ATOMIC_RELEASE); }

// copy_str copies at most n-1 bytes of s (NULL is empty) and pads with NULs. n is a constant
// where it is inlined: the padding is a few wide stores, the copy one memcpy.
static inline void copy_str(char* dst, const char* s, size_t n) {
  memset(dst, 0, n);
  if (s) memcpy(dst, s, strnlen(s, n - 1));
}

static void logf_(xr_logger logfn, int level, const char* fmt, ...) {
  if (!logfn) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  logfn(level, 1 /* NCCL_INIT */, __FILE__, __LINE__, "%s", msg);
}

static void at_exit(void);

// setup runs once per process, at the first init: the Go side reads the environment, the ring is
// allocated, and the sender starts.
static int setup(xr_logger logfn, int version) {
  pthread_mutex_lock(&setup_mu);
  if (!setup_done) {
    setup_done = 1;
    xr_setup cfg;
    memset(&cfg, 0, sizeof cfg);
    xfertopSetup(&cfg);
    if (cfg.err[0]) {
      snprintf(setup_err, sizeof setup_err, "%s", cfg.err);
    } else {
      uint64_t n = cfg.ring;
      xr_slot* ring = calloc(n, sizeof(xr_slot));
      if (!ring) {
        snprintf(setup_err, sizeof setup_err, "cannot allocate a ring of %llu events", (unsigned long long)n);
      } else {
        for (uint64_t i = 0; i < n; i++) ring[i].seq = i;
        xr_ring = ring;
        xr_ring_mask = n - 1;
        activation_mask = cfg.mask;
        xr_set_tsc(cfg.tsc);
        flush_ms = cfg.flush_ms;
        self_pid = getpid();
        xfertopStart();
        if (cfg.chain[0]) xr_chain_load(cfg.chain, version, n, logfn);
        __atomic_store_n(&enabled, 1, __ATOMIC_RELEASE);
        atexit(at_exit);
      }
    }
  }
  pthread_mutex_unlock(&setup_mu);
  if (setup_err[0]) {
    logf_(logfn, 2, "xfertop profiler disabled: %s", setup_err);
    return -1;
  }
  return 0;
}

static xr_result init_common(void** context, uint64_t hash, int* mask, const char* name, int nNodes, int nranks, int rank,
                             xr_logger logfn, int version) {
  *context = NULL;
  if (setup(logfn, version) != 0) return XR_INVALID_USAGE;
  xr_ctx* c = calloc(1, sizeof *c);
  if (!c) return XR_INTERNAL_ERROR;
  c->index = __atomic_fetch_add(&next_ctx, 1, __ATOMIC_RELAXED);
  xfertopComm(c->index, hash, (char*)name, nNodes, nranks, rank, xr_now(), version);
  __atomic_fetch_add(&contexts, 1, __ATOMIC_RELAXED);
  uint64_t m = activation_mask | xr_chain_init(c, hash, name, nNodes, nranks, rank, logfn);
  // Kernel phases are v7's: an older NCCL is not asked for a bit it does not define.
  *mask = (int)(version >= 7 ? m : m & ~(uint64_t)XR_KERNEL_PHASE);
  *context = c;
  logf_(logfn, 3, "xfertop profiler: rank %d/%d, events 0x%llx, profiler interface v%d", rank, nranks,
        (unsigned long long)activation_mask, version);
  return XR_OK;
}

static xr_result init_v4(void** context, int* mask, const char* name, uint64_t hash, int nNodes, int nranks, int rank, xr_logger logfn) {
  return init_common(context, hash, mask, name, nNodes, nranks, rank, logfn, 4);
}

static xr_result init_v5(void** context, uint64_t hash, int* mask, const char* name, int nNodes, int nranks, int rank, xr_logger logfn) {
  return init_common(context, hash, mask, name, nNodes, nranks, rank, logfn, 5);
}

static xr_result init_v6(void** context, uint64_t hash, int* mask, const char* name, int nNodes, int nranks, int rank, xr_logger logfn) {
  return init_common(context, hash, mask, name, nNodes, nranks, rank, logfn, 6);
}

static xr_result init_v7(void** context, uint64_t hash, int* mask, const char* name, int nNodes, int nranks, int rank, xr_logger logfn) {
  return init_common(context, hash, mask, name, nNodes, nranks, rank, logfn, 7);
}

// recordable says whether this plugin records events of type (from NCCL of version), and counts
// the types it does not know.
static int recordable(uint64_t type, int version) {
  switch (type) {
    case XR_GROUP: case XR_COLL: case XR_P2P: case XR_PROXY_OP: case XR_PROXY_STEP: case XR_KERNEL_CH:
      return 1;
    case XR_GROUP_API: case XR_COLL_API: case XR_P2P_API: case XR_KERNEL_LAUNCH:
      if (version < 5) break;
      return 1;
    case XR_CE_COLL: case XR_CE_SYNC: case XR_CE_BATCH:
      if (version < 6) break;
      return 1;
    case XR_KERNEL_PHASE:
      if (version < 7) break;
      return 1;
    case XR_PROXY_CTRL: case XR_NET_PLUGIN:
      return 0; // never asked for (but by a chained plugin); nothing to keep
    default:
      break;
  }
  __atomic_fetch_add(&unknown_types, 1, __ATOMIC_RELAXED);
  return 0;
}

// record_start queues event id's start, stamped t, if its type is one this plugin records, and
// returns its id (0: not queued). An id of 0 asks for the record's ring position + 1 as the id:
// unique in the process, and no atomic counter of its own. version says which union members exist.
static uint64_t record_start(xr_ctx* c, uint64_t id, uint64_t t, uint64_t type, void* parentObj, int rank, const xr_descr_union* u, int version) {
  if (!recordable(type, version)) return 0;
  // A chained plugin may have asked NCCL for more than this plugin records.
  if (!(type & activation_mask)) return 0;
  uint64_t pos;
  xr_slot* s = claim(&pos);
  if (!s) return 0;
  if (!id) id = pos + 1;
  xr_rec* r = &s->r;
  r->op = 1;
  r->state = 0;
  r->ctx = c->index;
  r->type = type;
  r->id = id;
  r->parent = (uint64_t)(uintptr_t)parentObj;
  r->t = (int64_t)t;
  r->a = r->b = r->c = r->d = 0;
  r->rank = rank;
  r->peer = -1;
  r->fn[0] = r->dtype[0] = r->algo[0] = r->proto[0] = r->variant[0] = 0;
  r->flags = 0;
  r->tag = 0;
  switch (type) {
    case XR_GROUP_API:
      r->a = (uint64_t)u->groupApi.groupDepth;
      r->b = u->groupApi.graphCaptured;
      break;
    case XR_COLL_API:
      copy_str(r->fn, u->collApi.func, sizeof r->fn);
      copy_str(r->dtype, u->collApi.datatype, sizeof r->dtype);
      r->a = u->collApi.count;
      r->b = (uint64_t)(uintptr_t)u->collApi.stream;
      r->c = u->collApi.graphCaptured;
      r->peer = u->collApi.root;
      if (version >= 7) r->tag = u->collApi.userTag;
      break;
    case XR_P2P_API:
      copy_str(r->fn, u->p2pApi.func, sizeof r->fn);
      copy_str(r->dtype, u->p2pApi.datatype, sizeof r->dtype);
      r->a = u->p2pApi.count;
      r->b = (uint64_t)(uintptr_t)u->p2pApi.stream;
      r->c = u->p2pApi.graphCaptured;
      if (version >= 7) r->tag = u->p2pApi.userTag;
      break;
    case XR_KERNEL_LAUNCH:
      r->b = (uint64_t)(uintptr_t)u->kernelLaunch.stream;
      break;
    case XR_COLL:
      r->a = u->coll.seqNumber;
      copy_str(r->fn, u->coll.func, sizeof r->fn);
      copy_str(r->dtype, u->coll.datatype, sizeof r->dtype);
      copy_str(r->algo, u->coll.algo, sizeof r->algo);
      copy_str(r->proto, u->coll.proto, sizeof r->proto);
      r->b = u->coll.count;
      r->c = (uint64_t)u->coll.nChannels | (uint64_t)u->coll.nWarps << 8;
      r->d = version >= 5 ? (uint64_t)(uintptr_t)u->coll.parentGroup : 0;
      r->peer = u->coll.root;
      if (version >= 7) {
        r->tag = u->coll.userTag;
        r->flags = u->coll.isSymColl ? XR_REC_SYM : 0;
        copy_str(r->variant, u->coll.kernelVariant, sizeof r->variant);
      }
      break;
    case XR_P2P:
      copy_str(r->fn, u->p2p.func, sizeof r->fn);
      copy_str(r->dtype, u->p2p.datatype, sizeof r->dtype);
      r->b = u->p2p.count;
      r->c = u->p2p.nChannels;
      r->d = version >= 5 ? (uint64_t)(uintptr_t)u->p2p.parentGroup : 0;
      r->peer = u->p2p.peer;
      if (version >= 7) r->tag = u->p2p.userTag;
      break;
    case XR_PROXY_OP:
      // A proxy op from PXN may come from another process: its parent is not ours to name.
      if (u->proxyOp.pid != self_pid) r->parent = 0;
      r->a = (uint64_t)u->proxyOp.nSteps;
      r->b = (uint64_t)u->proxyOp.chunkSize;
      r->c = u->proxyOp.channelId;
      r->d = u->proxyOp.isSend != 0;
      r->peer = u->proxyOp.peer;
      break;
    case XR_PROXY_STEP:
      r->a = (uint64_t)u->proxyStep.step;
      break;
    case XR_KERNEL_CH:
      r->a = u->kernelCh.pTimer;
      r->c = u->kernelCh.channelId;
      break;
    case XR_CE_COLL:
      r->a = u->ceColl.seqNumber;
      copy_str(r->fn, u->ceColl.func, sizeof r->fn);
      copy_str(r->dtype, u->ceColl.datatype, sizeof r->dtype);
      copy_str(r->algo, u->ceColl.syncStrategy, sizeof r->algo);
      r->b = u->ceColl.count;
      r->c = u->ceColl.batchSize;
      r->d = (uint64_t)(uintptr_t)u->ceColl.stream;
      r->peer = u->ceColl.root;
      if (version >= 7) r->tag = u->ceColl.userTag;
      break;
    case XR_CE_SYNC:
      r->a = u->ceSync.isComplete;
      r->b = (uint64_t)u->ceSync.nRanks;
      break;
    case XR_CE_BATCH:
      r->a = (uint64_t)u->ceBatch.numOps;
      r->b = u->ceBatch.totalBytes;
      break;
    case XR_KERNEL_PHASE:
      r->a = u->kernelPhase.pTimer;
      r->c = u->kernelPhase.channelId | (uint64_t)u->kernelPhase.phaseId << 8;
      copy_str(r->fn, u->kernelPhase.phaseName, sizeof r->fn);
      break;
  }
  publish(s, pos);
  return id;
}

// The plugin's own cost: one callback in about COST_SAMPLE+1, chosen by a hash of its entry
// timestamp (so no kind of callback is favoured by the period of NCCL's sequence), is timed from
// its entry to its end. One more tick read and two atomic adds for one callback in 64 keep the
// measure off the others' path. The sum is in ticks; the sender converts it.
//
// The first COST_FIRST callbacks of each kind (start, stop, state) are timed as well, so that a
// job too short for the hash to pick any (one all-reduce is about 20 callbacks) still reports a
// cost. They run cold (caches, the ring's first pages), so a short job's cost reads high rather
// than not at all; in a long job they are a few among thousands. Once a kind has had its first,
// the check is one relaxed load.
enum { COST_SAMPLE = 63, COST_FIRST = 8 };
enum { CB_START, CB_STOP, CB_STATE, CB_KINDS };
static uint64_t cost_ticks, cost_samples; // atomic
static uint64_t cost_first[CB_KINDS];     // atomic: the first callbacks of each kind timed so far

uint64_t xr_cost_ticks(void) { return __atomic_load_n(&cost_ticks, __ATOMIC_RELAXED); }
uint64_t xr_cost_samples(void) { return __atomic_load_n(&cost_samples, __ATOMIC_RELAXED); }

static inline int sampled(uint64_t t0) { return ((t0 * 0x9E3779B97F4A7C15ULL) >> 58) == 0; }

// first reports whether this is one of the first COST_FIRST callbacks of its kind.
static inline int first(int kind) {
  if (__builtin_expect(__atomic_load_n(&cost_first[kind], __ATOMIC_RELAXED) >= COST_FIRST, 1)) return 0;
  return __atomic_fetch_add(&cost_first[kind], 1, __ATOMIC_RELAXED) < COST_FIRST;
}

static inline void cost_end(uint64_t t0, int kind) {
  if (__builtin_expect(!sampled(t0), 1) && !first(kind)) return;
  __atomic_fetch_add(&cost_ticks, ticks() - t0, __ATOMIC_RELAXED);
  __atomic_fetch_add(&cost_samples, 1, __ATOMIC_RELAXED);
}

// xr_record_start queues event id's start (id 0: the ring position's id), if its type is one this
// plugin records, and returns its id (0: not queued). version says which union members exist.
uint64_t xr_record_start(xr_ctx* c, uint64_t id, uint64_t type, void* parentObj, int rank, const xr_descr_union* u, int version) {
  uint64_t t0 = ticks();
  uint64_t queued = record_start(c, id, t0, type, parentObj, rank, u, version);
  cost_end(t0, CB_START);
  return queued;
}

uint64_t xr_next_id(void) { return __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED); }

// start queues an event's start and returns its id as its handle (NULL when not queued, so that
// NCCL makes no further calls for it); with a chained plugin, xr_chain_start does both plugins'.
static xr_result start(void* context, void** handle, uint64_t type, void* parentObj, int rank, const xr_descr_union* u, int version) {
  *handle = NULL;
  if (!context || !__atomic_load_n(&enabled, __ATOMIC_ACQUIRE)) return XR_OK;
  if (xr_chain_on) return xr_chain_start(context, handle, type, parentObj, rank, u, version);
  // Types this plugin did not ask for (NCCL starts the API events and the group as parents of
  // what it asked for) get a NULL handle at once, before any clock read, so NCCL makes no further
  // calls for them.
  if (__builtin_expect(!(type & activation_mask), 0)) {
    recordable(type, version); // counts a type it does not know
    return XR_OK;
  }
  *handle = (void*)(uintptr_t)xr_record_start(context, 0, type, parentObj, rank, u, version);
  return XR_OK;
}

static xr_result start_v4(void* context, void** handle, xr_descr_v4* d) {
  return start(context, handle, d->type, d->parentObj, d->rank, &d->u, 4);
}

static xr_result start_v5(void* context, void** handle, xr_descr_v5* d) {
  return start(context, handle, d->type, d->parentObj, d->rank, &d->u, 5);
}

static xr_result start_v6(void* context, void** handle, xr_descr_v6* d) {
  return start(context, handle, d->type, d->parentObj, d->rank, &d->u, 6);
}

static xr_result start_v7(void* context, void** handle, xr_descr_v7* d) {
  return start(context, handle, d->type, d->parentObj, d->rank, &d->u, 7);
}

// simple queues a record, stamped t, that carries only an id (stop) or an id and a state.
static void simple(uint8_t op, uint64_t id, uint16_t state, uint64_t a, uint64_t t) {
  uint64_t pos;
  xr_slot* s = claim(&pos);
  if (!s) return;
  xr_rec* r = &s->r;
  r->op = op;
  r->state = state;
  r->ctx = 0;
  r->type = 0;
  r->id = id;
  r->parent = 0;
  r->t = (int64_t)t;
  r->a = a;
  publish(s, pos);
}

void xr_record_stop(uint64_t id) {
  uint64_t t0 = ticks();
  simple(2, id, 0, 0, t0);
  cost_end(t0, CB_STOP);
}

static xr_result stop_event(void* handle) {
  if (!handle) return XR_OK;
  if (xr_chain_on) return xr_chain_stop(handle);
  xr_record_stop((uint64_t)(uintptr_t)handle);
  return XR_OK;
}

static xr_result record_state(void* handle, int state, xr_state_args* args) {
  if (!handle) return XR_OK;
  if (xr_chain_on) return xr_chain_state(handle, state, args);
  xr_record_state((uint64_t)(uintptr_t)handle, state, args);
  return XR_OK;
}

void xr_record_state(uint64_t id, int state, const xr_state_args* args) {
  uint64_t t0 = ticks();
  switch (state) {
    case XR_KERNEL_CH_STOP: case XR_KERNEL_PHASE_STOP:
      simple(3, id, (uint16_t)state, args ? args->kernelCh.pTimer : 0, t0);
      break;
    case XR_STEP_SEND_GPU_WAIT: case XR_STEP_SEND_WAIT: case XR_STEP_RECV_WAIT: case XR_STEP_RECV_FLUSH_WAIT:
    case XR_STEP_RECV_GPU_WAIT: case XR_STEP_SEND_PEER_WAIT:
      simple(3, id, (uint16_t)state, args ? args->proxyStep.transSize : 0, t0);
      break;
    default:
      break; // group API, proxy control and network plugin states: not used
  }
  cost_end(t0, CB_STATE);
}

// wait_flushed waits, at most flush_ms, for the sender to deliver everything queued before pos.
static void wait_flushed(uint64_t pos) {
  for (int64_t waited = 0; waited < flush_ms; waited++) {
    if (__atomic_load_n(&flushed, __ATOMIC_ACQUIRE) > pos) return;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

// finalize queues the context's end. The last one waits (bounded) for the sender, so a job that
// ends right after destroying its communicators loses none of its events.
static xr_result finalize(void* context) {
  if (!context) return XR_OK;
  uint32_t index = ((xr_ctx*)context)->index;
  xr_chain_finalize(context);
  free(context);
  uint64_t pos;
  xr_slot* s = claim(&pos);
  int left = __atomic_sub_fetch(&contexts, 1, __ATOMIC_RELAXED);
  if (s) {
    memset(&s->r, 0, sizeof s->r);
    s->r.op = 4;
    s->r.ctx = left == 0 ? UINT32_MAX : index;
    s->r.t = (int64_t)ticks();
    publish(s, pos);
    if (left == 0) wait_flushed(pos);
  }
  return XR_OK;
}

// at_exit flushes what a job that never destroyed its communicators left in the ring.
static void at_exit(void) {
  if (__atomic_load_n(&contexts, __ATOMIC_RELAXED) <= 0) return;
  uint64_t pos;
  xr_slot* s = claim(&pos);
  if (!s) return;
  memset(&s->r, 0, sizeof s->r);
  s->r.op = 4;
  s->r.ctx = UINT32_MAX;
  s->r.t = (int64_t)ticks();
  publish(s, pos);
  wait_flushed(pos);
}

// xr_bench_setup enables the callbacks over a ring of n records (a power of two) without the Go
// sender, for benchmarks that drain the ring themselves.
void xr_bench_setup(uint64_t n) {
  pthread_mutex_lock(&setup_mu);
  if (!xr_ring) {
    setup_done = 1;
    xr_ring = calloc(n, sizeof(xr_slot));
    for (uint64_t i = 0; i < n; i++) xr_ring[i].seq = i;
    xr_ring_mask = n - 1;
  }
  activation_mask = ~(uint64_t)0; // record whatever the benchmark issues
  __atomic_store_n(&enabled, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&setup_mu);
}

// xr_bench times n start/stop pairs of one kind (0 collective, 1 proxy step with a state) on this
// thread, with a ring that the caller keeps drained or lets fill; it returns the nanoseconds taken.
uint64_t xr_bench(uint64_t n, int kind) {
  xr_ctx c = {1, NULL, 0};
  xr_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = kind == 0 ? XR_COLL : XR_PROXY_STEP;
  d.u.coll.func = "AllReduce";
  d.u.coll.datatype = "ncclFloat32";
  d.u.coll.algo = "RING";
  d.u.coll.proto = "SIMPLE";
  d.u.coll.count = 1 << 20;
  d.u.coll.nChannels = 4;
  xr_state_args args;
  memset(&args, 0, sizeof args);
  int64_t t0 = xr_now();
  for (uint64_t i = 0; i < n; i++) {
    void* h;
    d.u.coll.seqNumber = i;
    start_v5(&c, &h, &d);
    if (kind == 1) record_state(h, XR_STEP_RECV_WAIT, &args);
    stop_event(h);
  }
  return (uint64_t)(xr_now() - t0);
}

const xr_profiler_v7 ncclProfiler_v7 = {"xfertop", init_v7, start_v7, stop_event, record_state, finalize};
const xr_profiler_v6 ncclProfiler_v6 = {"xfertop", init_v6, start_v6, stop_event, record_state, finalize};
const xr_profiler_v5 ncclProfiler_v5 = {"xfertop", init_v5, start_v5, stop_event, record_state, finalize};
const xr_profiler_v4 ncclProfiler_v4 = {"xfertop", init_v4, start_v4, stop_event, record_state, finalize};
