// Chaining: NCCL loads one profiler plugin (NVIDIA/nccl #1981), so XFERTOP_CHAIN_PLUGIN names a
// second one (NCCL Inspector, say) that this plugin loads and calls as NCCL's core would: every
// init, startEvent, stopEvent, recordEventState and finalize, with the chained plugin's own
// contexts and event handles, through the interface version nearest to the one NCCL took here
// (the same; else the newest older one; else the oldest newer one), converting descriptors as
// NCCL's own version shims do (src/plugin/profiler/profiler_v4.cc).
//
// Handles stay this plugin's event ids, so that a child naming a parent NCCL has already stopped
// never dangles. With a chain, each id also owns a slot of a preallocated table (the slot at
// id & mask; an id whose slot is busy is skipped for the next), holding the chained plugin's handle
// for it. A slot is freed at the event's stop but keeps the id and handle until it is reused, for
// the children NCCL starts after their parent's stop, as NCCL itself passes a stopped parent's
// handle. Nothing allocates and nothing waits: when no slot is free after a few tries, the event is
// not forwarded, and counted.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclprof.h"
#include "_cgo_export.h"

int xr_chain_on;

typedef struct {
  uint64_t id;   // the event whose slot this is (0: being taken)
  uint32_t busy; // between the event's start and its stop
  uint8_t ours;  // the event was queued for xfertop too
  void* h;       // the chained plugin's handle
} xr_chain_slot;

static xr_chain_slot* slots;
static uint64_t slot_mask;
static int chain_version;
static const void* chain_api; // xr_profiler_v4 or xr_profiler_v5 (v5 to v7 share the layout)
static char chain_name[256];
static uint64_t lost;       // events not forwarded: no free slot (atomic)
static int init_warned;     // a chained init failure was reported (atomic)

enum { CLAIM_TRIES = 8 };

uint64_t xr_chain_lost_count(void) { return __atomic_load_n(&lost, __ATOMIC_RELAXED); }

static void warn(xr_logger logfn, const char* fmt, const char* a, const char* b) {
  char msg[768];
  snprintf(msg, sizeof msg, fmt, a, b);
  // NCCL prints its plugins' warnings only with NCCL_DEBUG=WARN or more: say it on stderr too, and
  // to the console (an alert).
  fprintf(stderr, "xfertop profiler: %s\n", msg);
  if (logfn) logfn(2, 1, __FILE__, __LINE__, "xfertop profiler: %s", msg);
  xfertopChainWarn(msg);
}

// own is this library's interface of version v, to refuse chaining to itself.
extern const xr_profiler_v4 ncclProfiler_v4;
extern const xr_profiler_v5 ncclProfiler_v5, ncclProfiler_v6, ncclProfiler_v7;
static const void* own(int v) {
  switch (v) {
    case 4: return &ncclProfiler_v4;
    case 5: return &ncclProfiler_v5;
    case 6: return &ncclProfiler_v6;
    case 7: return &ncclProfiler_v7;
  }
  return NULL;
}

// xr_chain_load opens the chained plugin at the first init (version: the interface NCCL took
// here), with n slots (a power of two). On any failure it warns, and this plugin goes on alone.
void xr_chain_load(const char* path, int version, uint64_t n, xr_logger logfn) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib && !strchr(path, '/')) {
    // NCCL's own convention: NCCL_PROFILER_PLUGIN=inspector loads libnccl-profiler-inspector.so.
    char name[300];
    snprintf(name, sizeof name, "libnccl-profiler-%s.so", path);
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib) {
    warn(logfn, "XFERTOP_CHAIN_PLUGIN=%s: cannot load it (%s); xfertop goes on without it", path, dlerror());
    return;
  }
  int order[8], k = 0;
  for (int v = version; v >= 4; v--) order[k++] = v;
  for (int v = version + 1; v <= 7; v++) order[k++] = v;
  for (int i = 0; i < k && !chain_api; i++) {
    char sym[32];
    snprintf(sym, sizeof sym, "ncclProfiler_v%d", order[i]);
    const void* api = dlsym(lib, sym);
    if (api && api == own(order[i])) {
      warn(logfn, "XFERTOP_CHAIN_PLUGIN=%s is xfertop's own plugin%s; xfertop goes on without chaining", path, "");
      dlclose(lib);
      return;
    }
    if (api) chain_api = api, chain_version = order[i];
  }
  if (!chain_api) {
    warn(logfn, "XFERTOP_CHAIN_PLUGIN=%s: no NCCL profiler interface v4 to v7 in it%s; xfertop goes on without it", path, "");
    dlclose(lib);
    return;
  }
  slots = calloc(n, sizeof *slots);
  if (!slots) {
    warn(logfn, "XFERTOP_CHAIN_PLUGIN=%s: cannot allocate its handle table%s; xfertop goes on without it", path, "");
    chain_api = NULL;
    return;
  }
  slot_mask = n - 1;
  const char* name = ((const xr_profiler_v5*)chain_api)->name;
  snprintf(chain_name, sizeof chain_name, "%s", name ? name : "?");
  char msg[300];
  snprintf(msg, sizeof msg, "%s (interface v%d)", chain_name, chain_version);
  xfertopChainLoaded(msg);
  if (logfn) logfn(3, 1, __FILE__, __LINE__, "xfertop profiler: chained to %s from %s", msg, path);
  xr_chain_on = 1; // before NCCL is given a context: setup() publishes it with the ring
}

uint64_t xr_chain_init(xr_ctx* c, uint64_t hash, const char* name, int nNodes, int nranks, int rank, xr_logger logfn) {
  if (!xr_chain_on) return 0;
  int mask = 0, r;
  if (chain_version == 4) {
    r = ((const xr_profiler_v4*)chain_api)->init(&c->chain_ctx, &mask, name, hash, nNodes, nranks, rank, logfn);
  } else {
    r = ((const xr_profiler_v5*)chain_api)->init(&c->chain_ctx, hash, &mask, name, nNodes, nranks, rank, logfn);
  }
  if (r != XR_OK) {
    c->chain_ctx = NULL;
    if (!__atomic_exchange_n(&init_warned, 1, __ATOMIC_RELAXED)) {
      char code[16];
      snprintf(code, sizeof code, "%d", r);
      warn(logfn, "chained profiler %s: its init failed (result %s); xfertop goes on without it", chain_name, code);
    }
    return 0;
  }
  c->chain_mask = (uint64_t)(unsigned)mask;
  return c->chain_mask;
}

// knows reports whether interface version v has event type t.
static int knows(int v, uint64_t t) {
  if (t <= XR_NET_PLUGIN) return 1;
  if (t <= XR_KERNEL_LAUNCH) return v >= 5;
  if (t <= XR_CE_BATCH) return v >= 6;
  return t == XR_KERNEL_PHASE && v >= 7;
}

// state_known reports whether interface version v has event state s (NCCL's shims drop the others).
static int state_known(int v, int s) {
  if (s <= 22) return 1;
  if (s <= 24) return v >= 5;
  if (s <= 30) return v >= 6;
  return v >= 7;
}

// lookup returns the chained plugin's handle for event id (NULL: none, or its slot was reused).
static void* lookup(uint64_t id) {
  if (!id) return NULL;
  xr_chain_slot* s = &slots[id & slot_mask];
  if (__atomic_load_n(&s->id, __ATOMIC_ACQUIRE) != id) return NULL;
  void* h = __atomic_load_n(&s->h, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return __atomic_load_n(&s->id, __ATOMIC_RELAXED) == id ? h : NULL;
}

// claim takes a free slot for a new event, moving *id on when the slot of the id is busy.
static xr_chain_slot* claim(uint64_t* id) {
  for (int i = 0; i < CLAIM_TRIES; i++) {
    xr_chain_slot* s = &slots[*id & slot_mask];
    uint32_t free_ = 0;
    if (__atomic_compare_exchange_n(&s->busy, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      __atomic_store_n(&s->id, 0, __ATOMIC_RELEASE); // the old event's children find it gone
      return s;
    }
    *id = xr_next_id();
  }
  return NULL;
}

// forward starts the event in the chained plugin: its descriptor as version chain_version has it,
// with the parents' handles the chained plugin gave.
static void* forward(xr_ctx* c, uint64_t type, void* parentObj, int rank, const xr_descr_union* u, int version) {
  static const size_t unionSize[8] = {0, 0, 0, 0, XR_UNION_V4, XR_UNION_V5, XR_UNION_V6, XR_UNION_V7};
  void* h = NULL;
  xr_descr_v5 d; // v7's layout: every older one is a prefix of it
  memset(&d, 0, sizeof d);
  d.type = type;
  d.parentObj = lookup((uint64_t)(uintptr_t)parentObj);
  d.rank = rank;
  memcpy(&d.u, u, unionSize[version]);
  if (version >= 5 && type == XR_COLL) d.u.coll.parentGroup = lookup((uint64_t)(uintptr_t)u->coll.parentGroup);
  if (version >= 5 && type == XR_P2P) d.u.p2p.parentGroup = lookup((uint64_t)(uintptr_t)u->p2p.parentGroup);
  if (chain_version == 4) {
    xr_descr_v4 d4;
    memset(&d4, 0, sizeof d4);
    d4.type = (uint8_t)type;
    d4.parentObj = d.parentObj;
    d4.rank = rank;
    d4.u = d.u;
    // NCCL's v4 shim: a task's parent is its group.
    if (type == XR_COLL) d4.parentObj = d.u.coll.parentGroup, d4.u.coll.parentGroup = NULL;
    if (type == XR_P2P) d4.parentObj = d.u.p2p.parentGroup, d4.u.p2p.parentGroup = NULL;
    ((const xr_profiler_v4*)chain_api)->startEvent(c->chain_ctx, &h, &d4);
  } else {
    ((const xr_profiler_v5*)chain_api)->startEvent(c->chain_ctx, &h, &d);
  }
  return h;
}

xr_result xr_chain_start(xr_ctx* c, void** handle, uint64_t type, void* parentObj, int rank, const xr_descr_union* u, int version) {
  uint64_t id = xr_next_id();
  int fwd = c->chain_ctx && (type & c->chain_mask) && knows(chain_version, type);
  xr_chain_slot* s = fwd ? claim(&id) : NULL;
  if (fwd && !s) __atomic_fetch_add(&lost, 1, __ATOMIC_RELAXED);
  int ours = xr_record_start(c, id, type, parentObj, rank, u, version) != 0;
  void* h = s ? forward(c, type, parentObj, rank, u, version) : NULL;
  if (s) {
    if (!h && !ours) {
      __atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
      return XR_OK;
    }
    s->ours = (uint8_t)ours;
    __atomic_store_n(&s->h, h, __ATOMIC_RELAXED);
    __atomic_store_n(&s->id, id, __ATOMIC_RELEASE);
  } else if (!ours) {
    return XR_OK;
  }
  *handle = (void*)(uintptr_t)id;
  return XR_OK;
}

// slot_of returns event id's slot while the event is open, else NULL (an event only xfertop has).
static xr_chain_slot* slot_of(uint64_t id) {
  xr_chain_slot* s = &slots[id & slot_mask];
  if (__atomic_load_n(&s->id, __ATOMIC_ACQUIRE) != id || !__atomic_load_n(&s->busy, __ATOMIC_RELAXED)) return NULL;
  return s;
}

xr_result xr_chain_stop(void* handle) {
  uint64_t id = (uint64_t)(uintptr_t)handle;
  xr_chain_slot* s = slot_of(id);
  if (!s) {
    xr_record_stop(id);
    return XR_OK;
  }
  void* h = s->h;
  int ours = s->ours;
  __atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE); // the id and handle stay, for late children
  if (ours) xr_record_stop(id);
  if (h) ((const xr_profiler_v5*)chain_api)->stopEvent(h);
  return XR_OK;
}

xr_result xr_chain_state(void* handle, int state, xr_state_args* args) {
  uint64_t id = (uint64_t)(uintptr_t)handle;
  xr_chain_slot* s = slot_of(id);
  if (!s || s->ours) xr_record_state(id, state, args);
  if (s && s->h && state_known(chain_version, state)) {
    ((const xr_profiler_v5*)chain_api)->recordEventState(s->h, state, args);
  }
  return XR_OK;
}

void xr_chain_finalize(xr_ctx* c) {
  if (xr_chain_on && c->chain_ctx) ((const xr_profiler_v5*)chain_api)->finalize(c->chain_ctx);
}
