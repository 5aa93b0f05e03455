// A stand-in for libcuda.so.1 that runs the part of the CUDA driver API xfertop's cuda backend uses
// on the host, so that the backend's own logic (streams, events, completion polling, GPU timestamps,
// barriers, copies, the compute kernel) runs in CI on machines without a GPU. It is built against the
// real cuda.h, so every function here has the driver's exact signature and exported symbol name.
//
// Model: a device is host memory; each stream is a host thread that runs its work in order; an event
// completes when its stream reaches it and is stamped with CLOCK_MONOTONIC; the compute kernel sleeps
// for the nanoseconds it is given. What is not modelled returns CUDA_ERROR_NOT_SUPPORTED.
//
// Stream capture (cuStreamBeginCapture … cuStreamEndCapture, cuGraphInstantiateWithFlags,
// cuGraphLaunch): a capturing stream's work goes into a graph instead of running; a stream that
// waits on an event recorded in the capture joins it; a synchronisation, a pageable copy or a wait
// on work outside the capture invalidates it with the driver's error. A launch replays the captured
// work on its streams, in capture order. The fake NCCL's work is captured as a node that takes its
// launch-time state (a collective's sequence number) at each launch, as NCCL's graph kernels do.
//
// Knobs (read when cuInit is called): XFER_FAKE_GPUS (devices, default 2). Read at each call:
// XFER_FAKE_ALLOC_NS, how long each allocation takes (cuMemAlloc, cuMemHostAlloc; default 0): on a
// GPU a 1 GiB pinned buffer takes hundreds of milliseconds.

#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DEVICES 16

struct CUctx_st {
	int dev;
};

typedef struct task {
	void (*run)(struct task *);
	struct task *next;
	// work
	void *dst;
	const void *src;
	size_t n;
	void *staging; // freed after the copy: pageable host memory copied at enqueue time
	uint64_t ns;   // kernel duration
	CUevent ev;
	uint64_t seq; // event record / wait sequence (0 in a graph: given at each launch)
	void (*fn)(void *);
	void *arg;
	int *done; // set under mu when a synchronous caller waits for this task
	struct node *node; // captured host work that is replayed (xferFakeEnqueueNode): the template
	int internal;      // a record captured by a plain cuEventRecord: it orders the graph, no more
} task;

// node is host work put on a capturing stream by xferFakeEnqueueNode: each launch of a graph holding
// it runs fn(replay(arg)); drop releases arg once no graph (captured or instantiated) holds it.
typedef struct node {
	void (*fn)(void *);
	void *arg;
	void *(*replay)(void *);
	void (*drop)(void *);
	int refs; // under mu
} node;

struct CUstream_st {
	int dev;
	int prio;
	pthread_t thread;
	task *head, *tail;
	int busy;
	uint64_t queued, finished; // tasks enqueued and completed
	struct CUstream_st *nextStream;
	pthread_cond_t work; // signalled when a task is queued: each worker sleeps on its own
	struct CUgraph_st *capturing; // the graph this stream's work goes into while it is captured
};

// A captured graph: its tasks in the order they were captured, each with its stream. A launch puts
// copies of them on those streams in that order, so stream order and the events recorded and
// waited on inside the graph hold as captured (the real driver runs nodes on streams of its own;
// the order of dependencies is what the fake keeps).
struct CUgraph_st {
	task **tasks;
	struct CUstream_st **on;
	int n, cap;
	CUresult invalid; // the first capture error: the capture is invalidated, EndCapture returns it
};

struct CUgraphExec_st {
	struct CUgraph_st g;
};

struct CUevent_st {
	struct CUgraph_st *capturedIn; // recorded last inside this capture: a wait on it joins it
	unsigned flags;
	uint64_t recorded; // records enqueued
	uint64_t reached;  // records their stream has reached
	int64_t stamp;     // CLOCK_MONOTONIC ns of the last reached record
	int internalOnly;  // last recorded by a graph's capture-internal record: not observable outside it
};

struct CUmod_st {
	char *ptx;
};

struct CUfunc_st {
	struct CUmod_st *mod;
};

typedef struct pinned {
	void *p;
	size_t n;
	struct pinned *next;
} pinned;

// One lock for everything, and one condition for whatever waits on progress (an event reached, a
// task done): the fake is for correctness, not speed. Workers wait for work on their own stream's
// condition, so that progress does not wake every idle stream of the process.
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t nullMu = PTHREAD_MUTEX_INITIALIZER;
static int initialised, ndevices;
static struct CUctx_st primary[MAX_DEVICES];
static struct CUstream_st *nullStream[MAX_DEVICES];
static pinned *pinnedList;
static struct CUstream_st *streams; // every stream, for cuCtxSynchronize
static __thread CUcontext current;
// The capture this thread began (thread-local capture mode): while it lasts, the thread may not
// make the driver's "potentially unsafe" calls (allocation, synchronisation), as on a GPU.
static __thread struct CUgraph_st *threadCapture;
static int refuseUnsafe(void);

// allocDelay sleeps for XFER_FAKE_ALLOC_NS, as a real allocation takes time.
static void allocDelay(void) {
	const char *v = getenv("XFER_FAKE_ALLOC_NS");
	long long ns = v ? atoll(v) : 0;
	if (ns <= 0) return;
	struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

static int64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *worker(void *arg) {
	struct CUstream_st *s = arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!s->head) pthread_cond_wait(&s->work, &mu);
		task *t = s->head;
		s->busy = 1;
		pthread_mutex_unlock(&mu);
		t->run(t);
		pthread_mutex_lock(&mu);
		s->head = t->next;
		if (!s->head) s->tail = NULL;
		s->busy = 0;
		s->finished++;
		if (t->done) *t->done = 1;
		else free(t);
		pthread_cond_broadcast(&cond);
	}
	return NULL;
}

static struct CUstream_st *newStream(int dev, int prio) {
	struct CUstream_st *s = calloc(1, sizeof *s);
	s->dev = dev;
	s->prio = prio;
	pthread_cond_init(&s->work, NULL);
	pthread_mutex_lock(&mu);
	s->nextStream = streams;
	streams = s;
	pthread_mutex_unlock(&mu);
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_create(&s->thread, &a, worker, s);
	pthread_attr_destroy(&a);
	return s;
}

// stream resolves the null stream to the current device's default stream.
static struct CUstream_st *stream(CUstream h) {
	if (h && h != CU_STREAM_LEGACY && h != CU_STREAM_PER_THREAD) return h;
	int dev = current ? current->dev : 0;
	pthread_mutex_lock(&nullMu); // not mu: newStream takes it
	if (!nullStream[dev]) nullStream[dev] = newStream(dev, 0);
	struct CUstream_st *s = nullStream[dev];
	pthread_mutex_unlock(&nullMu);
	return s;
}

static void capture(struct CUgraph_st *g, struct CUstream_st *s, task *t);
static CUresult refuseInCapture(struct CUstream_st *s, CUresult r);

static void enqueueLocked(struct CUstream_st *s, task *t) {
	if (s->capturing) {
		capture(s->capturing, s, t);
		return;
	}
	t->next = NULL;
	if (s->tail) s->tail->next = t;
	else s->head = t;
	s->tail = t;
	s->queued++;
	pthread_cond_signal(&s->work);
}

static void enqueue(struct CUstream_st *s, task *t) {
	pthread_mutex_lock(&mu);
	enqueueLocked(s, t);
	pthread_mutex_unlock(&mu);
}

// enqueueAndWait runs t on s and returns once it has run (synchronous copies to pageable memory).
static void enqueueAndWait(struct CUstream_st *s, task *t) {
	int done = 0;
	t->done = &done;
	pthread_mutex_lock(&mu);
	enqueueLocked(s, t);
	while (!done) pthread_cond_wait(&cond, &mu);
	pthread_mutex_unlock(&mu);
	free(t);
}

static int isPinned(const void *p) {
	int found = 0;
	pthread_mutex_lock(&mu);
	for (pinned *q = pinnedList; q; q = q->next)
		if ((const char *)p >= (const char *)q->p && (const char *)p < (const char *)q->p + q->n) found = 1;
	pthread_mutex_unlock(&mu);
	return found;
}

static void runCopy(task *t) {
	memcpy(t->dst, t->staging ? t->staging : t->src, t->n);
	free(t->staging);
}

static void runSleep(task *t) {
	struct timespec ts = {(time_t)(t->ns / 1000000000), (long)(t->ns % 1000000000)};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

static void runRecord(task *t) {
	int64_t stamp = now_ns();
	pthread_mutex_lock(&mu);
	if (t->seq > t->ev->reached) {
		t->ev->reached = t->seq;
		t->ev->stamp = stamp;
	}
	pthread_mutex_unlock(&mu);
}

static void runWait(task *t) {
	pthread_mutex_lock(&mu);
	while (t->ev->reached < t->seq) pthread_cond_wait(&cond, &mu);
	pthread_mutex_unlock(&mu);
}

static void runHostFn(task *t) { t->fn(t->arg); }

#define CHECK_INIT()                                                                               \
	do {                                                                                           \
		if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;                                       \
	} while (0)

CUresult CUDAAPI cuInit(unsigned int flags) {
	if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (!initialised) {
		const char *n = getenv("XFER_FAKE_GPUS");
		ndevices = n ? atoi(n) : 2;
		if (ndevices < 0) ndevices = 0;
		if (ndevices > MAX_DEVICES) ndevices = MAX_DEVICES;
		for (int i = 0; i < ndevices; i++) primary[i].dev = i;
		initialised = 1;
	}
	pthread_mutex_unlock(&mu);
	return ndevices ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult CUDAAPI cuDriverGetVersion(int *v) {
	*v = 12080;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *n) {
	CHECK_INIT();
	*n = ndevices;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *d, int ordinal) {
	CHECK_INIT();
	if (ordinal < 0 || ordinal >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
	*d = ordinal;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice d) {
	CHECK_INIT();
	if (d < 0 || d >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "xfertop fake GPU %d", d);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice d) {
	CHECK_INIT();
	if (d < 0 || d >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
	*bytes = (size_t)80 << 30;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
	CHECK_INIT();
	if (d < 0 || d >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
	default: *v = 0;
	}
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
	CHECK_INIT();
	if (d < 0 || d >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
	*c = &primary[d];
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice d) {
	CHECK_INIT();
	return d < 0 || d >= ndevices ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext c) {
	CHECK_INIT();
	current = c;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *c) {
	CHECK_INIT();
	*c = current;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *d) {
	CHECK_INIT();
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	*d = current->dev;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *least, int *greatest) {
	CHECK_INIT();
	if (least) *least = 0;
	if (greatest) *greatest = -5;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetInfo(size_t *freeBytes, size_t *total) {
	CHECK_INIT();
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	*freeBytes = *total = (size_t)80 << 30;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *m, const void *image) {
	CHECK_INIT();
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	const char *ptx = image;
	// The driver's JIT accepts PTX text; anything without an entry point is not a module.
	if (!ptx || !strstr(ptx, ".version") || !strstr(ptx, ".entry")) return CUDA_ERROR_INVALID_IMAGE;
	struct CUmod_st *mod = calloc(1, sizeof *mod);
	mod->ptx = strdup(ptx);
	*m = mod;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n, CUjit_option *o, void **v) {
	(void)n, (void)o, (void)v;
	return cuModuleLoadData(m, image);
}

CUresult CUDAAPI cuModuleUnload(CUmodule m) {
	if (!m) return CUDA_ERROR_INVALID_HANDLE;
	free(m->ptx);
	free(m);
	return CUDA_SUCCESS;
}

// Only the compute step's kernel is modelled: "spin", taking the nanoseconds to occupy the GPU.
CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
	CHECK_INIT();
	if (!m) return CUDA_ERROR_INVALID_HANDLE;
	char want[256];
	snprintf(want, sizeof want, ".entry %s(", name);
	if (strcmp(name, "spin") != 0 || !strstr(m->ptx, want)) return CUDA_ERROR_NOT_FOUND;
	struct CUfunc_st *fn = calloc(1, sizeof *fn);
	fn->mod = m;
	*f = fn;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                unsigned shmem, CUstream h, void **params, void **extra) {
	(void)shmem, (void)extra;
	CHECK_INIT();
	if (!f) return CUDA_ERROR_INVALID_HANDLE;
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	if (!gx || !gy || !gz || !bx || !by || !bz || (unsigned long)bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
	if (!params || !params[0]) return CUDA_ERROR_INVALID_VALUE;
	task *t = calloc(1, sizeof *t);
	t->run = runSleep;
	t->ns = *(uint64_t *)params[0];
	enqueue(stream(h), t);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *p, size_t n) {
	CHECK_INIT();
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	if (refuseUnsafe()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (n == 0) return CUDA_ERROR_INVALID_VALUE;
	allocDelay();
	void *m = NULL;
	if (posix_memalign(&m, 256, n) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (CUdeviceptr)(uintptr_t)m;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
	CHECK_INIT();
	if (refuseUnsafe()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	free((void *)(uintptr_t)p);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t n, unsigned int flags) {
	(void)flags;
	CHECK_INIT();
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	if (refuseUnsafe()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (n == 0) return CUDA_ERROR_INVALID_VALUE;
	allocDelay();
	void *m = NULL;
	if (posix_memalign(&m, 4096, n) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
	pinned *q = malloc(sizeof *q);
	q->p = m, q->n = n;
	pthread_mutex_lock(&mu);
	q->next = pinnedList;
	pinnedList = q;
	pthread_mutex_unlock(&mu);
	*pp = m;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAllocHost(void **pp, size_t n) { return cuMemHostAlloc(pp, n, 0); }

CUresult CUDAAPI cuMemFreeHost(void *p) {
	CHECK_INIT();
	if (refuseUnsafe()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	pthread_mutex_lock(&mu);
	for (pinned **q = &pinnedList; *q; q = &(*q)->next) {
		if ((*q)->p == p) {
			pinned *dead = *q;
			*q = dead->next;
			free(dead);
			pthread_mutex_unlock(&mu);
			free(p);
			return CUDA_SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult copyAsync(void *dst, const void *src, size_t n, CUstream h, int fromHost, int toHost) {
	CHECK_INIT();
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
	task *t = calloc(1, sizeof *t);
	t->run = runCopy;
	t->dst = dst, t->src = src, t->n = n;
	struct CUstream_st *s = stream(h);
	if (s->capturing && ((fromHost && !isPinned(src)) || (toHost && !isPinned(dst)))) {
		free(t); // a copy staged or completed by the call itself cannot be replayed
		return refuseInCapture(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	}
	// As the real driver does with pageable memory: a copy from it is staged before the call
	// returns; a copy to it completes before the call returns.
	if (fromHost && !isPinned(src)) {
		t->staging = malloc(n ? n : 1);
		memcpy(t->staging, src, n);
	}
	if (toHost && !isPinned(dst)) {
		enqueueAndWait(s, t);
		return CUDA_SUCCESS;
	}
	enqueue(s, t);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream h) {
	return copyAsync((void *)(uintptr_t)dst, src, n, h, 1, 0);
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream h) {
	return copyAsync(dst, (const void *)(uintptr_t)src, n, h, 0, 1);
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
	return copyAsync((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, h, 0, 0);
}

CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream h) {
	if (!dctx || !sctx) return CUDA_ERROR_INVALID_CONTEXT;
	return copyAsync((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, h, 0, 0);
}

CUresult CUDAAPI cuStreamCreate(CUstream *s, unsigned int flags) {
	(void)flags;
	CHECK_INIT();
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	*s = newStream(current->dev, 0);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *s, unsigned int flags, int prio) {
	(void)flags;
	CHECK_INIT();
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	// As the driver does, a priority outside the device's range is clamped to it.
	if (prio > 0) prio = 0;
	if (prio < -5) prio = -5;
	*s = newStream(current->dev, prio);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream h) {
	(void)h; // its thread keeps running: streams are few and live as long as the process
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream h) {
	CHECK_INIT();
	struct CUstream_st *s = stream(h);
	if (s->capturing) return refuseInCapture(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	if (refuseUnsafe()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; // another stream, on the capturing thread
	pthread_mutex_lock(&mu);
	uint64_t target = s->queued;
	while (s->finished < target) pthread_cond_wait(&cond, &mu);
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamQuery(CUstream h) {
	CHECK_INIT();
	struct CUstream_st *s = stream(h);
	if (s->capturing) return refuseInCapture(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	pthread_mutex_lock(&mu);
	int idle = s->finished == s->queued;
	pthread_mutex_unlock(&mu);
	return idle ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

// cuStreamWaitEvent makes h wait for ev's latest record. Under stream capture it follows CUDA's
// documented rules (CUDA Programming Guide, "Stream Capture": "Cross-stream Dependencies and Events"
// and "Prohibited and Unhandled Operations"; the CUDA Runtime API's error list):
//   - a stream not capturing that waits on an event recorded in a capture joins that capture
//     (the fork pattern: its later work is captured into the same graph);
//   - a capturing stream that waits on an event recorded outside any capture fails with
//     CUDA_ERROR_STREAM_CAPTURE_ISOLATION (cudaErrorStreamCaptureIsolation, 905: "A dependency
//     would have been created which crosses the capture sequence boundary. Only implicit in-stream
//     ordering dependencies are allowed to cross the boundary"), and the capture is invalidated;
//   - a capturing stream that waits on an event recorded in another capture fails with
//     CUDA_ERROR_STREAM_CAPTURE_MERGE (cudaErrorStreamCaptureMerge, 902: "The operation would have
//     resulted in a merge of two independent capture sequences"; the guide: "It is invalid to merge
//     two separate capture graphs by waiting on a captured event from a stream which is being
//     captured and is associated with a different capture graph than the event").
// CU_EVENT_WAIT_EXTERNAL (an event wait node instead) is not modelled: xfertop does not use it.
// engine/cuda's TestCaptureRefusals checks both refusals here and on a GPU (scripts/device).
CUresult CUDAAPI cuStreamWaitEvent(CUstream h, CUevent ev, unsigned int flags) {
	CHECK_INIT();
	if (!ev) return CUDA_ERROR_INVALID_HANDLE;
	if (flags != 0) return CUDA_ERROR_NOT_SUPPORTED;
	struct CUstream_st *s = stream(h);
	task *t = calloc(1, sizeof *t);
	t->run = runWait;
	t->ev = ev;
	pthread_mutex_lock(&mu);
	if (ev->capturedIn && !s->capturing) s->capturing = ev->capturedIn; // the stream joins the capture
	if (s->capturing && ev->capturedIn != s->capturing) {
		CUresult r = ev->capturedIn ? CUDA_ERROR_STREAM_CAPTURE_MERGE : CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
		pthread_mutex_unlock(&mu);
		free(t);
		return refuseInCapture(s, r);
	}
	// The record most recently enqueued, as CUDA does; none, or only a graph's internal one: no wait.
	t->seq = s->capturing || ev->internalOnly ? 0 : ev->recorded;
	enqueueLocked(s, t);
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent *e, unsigned int flags) {
	CHECK_INIT();
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	struct CUevent_st *ev = calloc(1, sizeof *ev);
	ev->flags = flags;
	*e = ev;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent e) {
	(void)e; // a stream may still hold it: kept, as the driver defers the release
	return CUDA_SUCCESS;
}

// record is cuEventRecord (external 0) and cuEventRecordWithFlags. Inside a capture, as the
// driver does (its documentation of CU_EVENT_RECORD_EXTERNAL, and an H200 run of engine/cuda's
// graph tests): a plain record only orders the captured work (a later wait in the capture on the
// event joins or depends on it); the event is not recorded when the graph runs, so its time cannot
// be read (cuEventElapsedTime: CUDA_ERROR_INVALID_VALUE) and a stream outside the graph waiting on
// it waits for nothing. CU_EVENT_RECORD_EXTERNAL makes an event record node instead, recorded at
// each launch; it is CUDA_ERROR_INVALID_VALUE outside a capture.
static CUresult record(CUevent e, CUstream h, int external) {
	CHECK_INIT();
	if (!e) return CUDA_ERROR_INVALID_HANDLE;
	struct CUstream_st *s = stream(h);
	task *t = calloc(1, sizeof *t);
	t->run = runRecord;
	t->ev = e;
	pthread_mutex_lock(&mu);
	if (external && !s->capturing) {
		pthread_mutex_unlock(&mu);
		free(t);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (s->capturing) { // recorded at each launch, not now
		t->internal = !external;
		if (!external) e->capturedIn = s->capturing;
	} else {
		t->seq = ++e->recorded, e->capturedIn = NULL, e->internalOnly = 0;
	}
	enqueueLocked(s, t);
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent e, CUstream h) { return record(e, h, 0); }

CUresult CUDAAPI cuEventRecordWithFlags(CUevent e, CUstream h, unsigned int flags) {
	if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL) return CUDA_ERROR_NOT_SUPPORTED;
	return record(e, h, (flags & CU_EVENT_RECORD_EXTERNAL) != 0);
}

CUresult CUDAAPI cuEventQuery(CUevent e) {
	CHECK_INIT();
	if (!e) return CUDA_ERROR_INVALID_HANDLE;
	if (e->capturedIn) return CUDA_ERROR_CAPTURED_EVENT;
	pthread_mutex_lock(&mu);
	int done = e->reached >= e->recorded;
	pthread_mutex_unlock(&mu);
	return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult CUDAAPI cuEventSynchronize(CUevent e) {
	CHECK_INIT();
	if (!e) return CUDA_ERROR_INVALID_HANDLE;
	if (e->capturedIn) return CUDA_ERROR_CAPTURED_EVENT;
	if (refuseUnsafe()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	pthread_mutex_lock(&mu);
	uint64_t target = e->recorded;
	while (e->reached < target) pthread_cond_wait(&cond, &mu);
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
	CHECK_INIT();
	if (!start || !end) return CUDA_ERROR_INVALID_HANDLE;
	if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&mu);
	CUresult r = CUDA_SUCCESS;
	if (start->internalOnly || end->internalOnly) r = CUDA_ERROR_INVALID_VALUE;
	else if (!start->recorded || !end->recorded) r = CUDA_ERROR_INVALID_HANDLE;
	else if (start->reached < start->recorded || end->reached < end->recorded) r = CUDA_ERROR_NOT_READY;
	else *ms = (float)((double)(end->stamp - start->stamp) / 1e6);
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult CUDAAPI cuCtxSynchronize(void) {
	CHECK_INIT();
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	if (refuseUnsafe()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	int dev = current->dev;
	pthread_mutex_lock(&mu);
	for (struct CUstream_st *s = streams; s; s = s->nextStream)
		if (s->dev == dev && s->capturing) {
			pthread_mutex_unlock(&mu);
			return refuseInCapture(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
		}
	for (;;) {
		int idle = 1;
		for (struct CUstream_st *s = streams; s; s = s->nextStream)
			if (s->dev == dev && s->finished < s->queued) idle = 0;
		if (idle) break;
		pthread_cond_wait(&cond, &mu);
	}
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

static const char *errName(CUresult r) {
	switch (r) {
	case CUDA_SUCCESS: return "CUDA_SUCCESS";
	case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
	case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
	case CUDA_ERROR_STREAM_CAPTURE_ISOLATION: return "CUDA_ERROR_STREAM_CAPTURE_ISOLATION";
	case CUDA_ERROR_STREAM_CAPTURE_MERGE: return "CUDA_ERROR_STREAM_CAPTURE_MERGE";
	case CUDA_ERROR_CAPTURED_EVENT: return "CUDA_ERROR_CAPTURED_EVENT";
	case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
	case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
	case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
	case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
	case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
	case CUDA_ERROR_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
	case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
	case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
	case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
	case CUDA_ERROR_NOT_READY: return "CUDA_ERROR_NOT_READY";
	case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
	default: return NULL;
	}
}

CUresult CUDAAPI cuGetErrorName(CUresult r, const char **s) {
	*s = errName(r);
	return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult r, const char **s) {
	*s = errName(r);
	return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// xferFakeEnqueueNode runs fn(arg) on a stream's thread in the stream's order: the fake NCCL puts
// its collectives and transfers on streams with it, as NCCL's kernels are. On a capturing stream
// it becomes a graph node, as an NCCL call issued on the capturing stream does (NCCL >= 2.9): arg
// is then a template, and each launch of the graph runs fn on replay(arg), made at the launch (in
// host order, under the driver's lock), so each launch is an operation of its own; drop frees the
// template once no graph holds it.
void xferFakeEnqueueNode(CUstream h, void (*fn)(void *), void *arg, void *(*replay)(void *), void (*drop)(void *)) {
	struct CUstream_st *s = stream(h);
	task *t = calloc(1, sizeof *t);
	t->run = runHostFn;
	pthread_mutex_lock(&mu);
	if (s->capturing) {
		t->node = malloc(sizeof *t->node);
		*t->node = (node){.fn = fn, .arg = arg, .replay = replay, .drop = drop, .refs = 1};
	} else {
		t->fn = fn;
		t->arg = arg;
	}
	enqueueLocked(s, t);
	pthread_mutex_unlock(&mu);
}

// xferFakeEnqueue runs fn(arg) on a stream's thread in the stream's order, for host work that cannot
// be replayed (arg lives for one run): a capture holding it is invalidated, and the work runs now,
// so that no peer waits for it forever. Replayable work uses xferFakeEnqueueNode.
void xferFakeEnqueue(CUstream h, void (*fn)(void *), void *arg) {
	if (stream(h)->capturing) {
		refuseInCapture(stream(h), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
		fn(arg);
		return;
	}
	task *t = calloc(1, sizeof *t);
	t->run = runHostFn;
	t->fn = fn;
	t->arg = arg;
	enqueue(stream(h), t);
}

// unref releases a graph's hold on t's node, if it has one (under mu).
static void unref(task *t) {
	if (t->node && --t->node->refs == 0) {
		t->node->drop(t->node->arg);
		free(t->node);
	}
}

// xferFakeCurrentDevice is the device of the calling thread's context, or -1 (NCCL uses the current
// device when a rank joins a communicator).
int xferFakeCurrentDevice(void) { return current ? current->dev : -1; }

// ---- stream capture and graphs ----

// capture appends t, meant for s, to g (under mu).
static void capture(struct CUgraph_st *g, struct CUstream_st *s, task *t) {
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 16;
		g->tasks = realloc(g->tasks, g->cap * sizeof *g->tasks);
		g->on = realloc(g->on, g->cap * sizeof *g->on);
	}
	g->tasks[g->n] = t;
	g->on[g->n] = s;
	g->n++;
}

// refuseInCapture invalidates the capture s takes part in, as the driver does for a call it
// cannot capture, and returns r.
static CUresult refuseInCapture(struct CUstream_st *s, CUresult r) {
	pthread_mutex_lock(&mu);
	if (s->capturing && !s->capturing->invalid) s->capturing->invalid = r;
	pthread_mutex_unlock(&mu);
	return r;
}

// refuseUnsafe refuses, and invalidates the capture, a "potentially unsafe" call (an allocation, a
// synchronisation) made on a thread that began a capture in global or thread-local mode, as the
// driver does (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: on an H200, cuMemAlloc and cuStreamSynchronize
// of a stream not being captured were refused so). Returns 1 when refused.
static int refuseUnsafe(void) {
	if (!threadCapture) return 0;
	pthread_mutex_lock(&mu);
	int live = 0;
	for (struct CUstream_st *o = streams; o; o = o->nextStream)
		if (o->capturing == threadCapture) live = 1;
	if (!live) threadCapture = NULL; // ended on another thread
	else if (!threadCapture->invalid) threadCapture->invalid = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	pthread_mutex_unlock(&mu);
	return live;
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream h, CUstreamCaptureMode mode) {
	CHECK_INIT();
	struct CUstream_st *s = stream(h);
	if (h == NULL || h == CU_STREAM_LEGACY) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; // the legacy stream is not capturable
	pthread_mutex_lock(&mu);
	CUresult r = CUDA_SUCCESS;
	if (s->capturing) r = CUDA_ERROR_ILLEGAL_STATE;
	else s->capturing = calloc(1, sizeof *s->capturing);
	if (r == CUDA_SUCCESS && mode != CU_STREAM_CAPTURE_MODE_RELAXED) threadCapture = s->capturing;
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *status) {
	CHECK_INIT();
	struct CUstream_st *s = stream(h);
	pthread_mutex_lock(&mu);
	*status = !s->capturing ? CU_STREAM_CAPTURE_STATUS_NONE
	          : s->capturing->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

// cuStreamEndCapture ends the capture begun on h; every stream that joined it leaves it. An
// invalidated capture returns no graph.
CUresult CUDAAPI cuStreamEndCapture(CUstream h, CUgraph *graph) {
	CHECK_INIT();
	struct CUstream_st *s = stream(h);
	pthread_mutex_lock(&mu);
	struct CUgraph_st *g = s->capturing;
	if (!g) {
		pthread_mutex_unlock(&mu);
		return CUDA_ERROR_ILLEGAL_STATE;
	}
	for (struct CUstream_st *o = streams; o; o = o->nextStream)
		if (o->capturing == g) o->capturing = NULL;
	if (threadCapture == g) threadCapture = NULL;
	pthread_mutex_unlock(&mu);
	*graph = NULL;
	if (g->invalid) {
		cuGraphDestroy(g);
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	}
	*graph = g;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph g) {
	if (!g) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < g->n; i++) unref(g->tasks[i]);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < g->n; i++) free(g->tasks[i]);
	free(g->tasks);
	free(g->on);
	free(g);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph g, unsigned long long flags) {
	(void)flags;
	CHECK_INIT();
	if (!exec || !g) return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphExec_st *x = calloc(1, sizeof *x);
	x->g.n = x->g.cap = g->n;
	x->g.tasks = calloc(g->n ? g->n : 1, sizeof *x->g.tasks);
	x->g.on = calloc(g->n ? g->n : 1, sizeof *x->g.on);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < g->n; i++) {
		x->g.tasks[i] = malloc(sizeof(task));
		*x->g.tasks[i] = *g->tasks[i];
		x->g.on[i] = g->on[i];
		if (g->tasks[i]->node) g->tasks[i]->node->refs++;
	}
	pthread_mutex_unlock(&mu);
	*exec = x;
	return CUDA_SUCCESS;
}

// cuGraphLaunch puts a copy of each of the graph's tasks on its stream, in capture order, after
// the work already queued there; records and waits take their sequence now, so each launch's
// waits wait for that launch's records.
CUresult CUDAAPI cuGraphLaunch(CUgraphExec x, CUstream h) {
	CHECK_INIT();
	if (!x) return CUDA_ERROR_INVALID_VALUE;
	struct CUstream_st *s = stream(h);
	pthread_mutex_lock(&mu);
	if (s->capturing) {
		pthread_mutex_unlock(&mu);
		return refuseInCapture(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); // no nested graphs here
	}
	for (int i = 0; i < x->g.n; i++) {
		task *t = malloc(sizeof *t);
		*t = *x->g.tasks[i];
		t->done = NULL;
		if (t->run == runRecord) t->seq = ++t->ev->recorded, t->ev->capturedIn = NULL, t->ev->internalOnly = t->internal;
		else if (t->run == runWait) t->seq = t->ev->recorded;
		if (t->node) t->fn = t->node->fn, t->arg = t->node->replay(t->node->arg), t->node = NULL;
		enqueueLocked(x->g.on[i], t);
	}
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec x) {
	if (!x) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < x->g.n; i++) unref(x->g.tasks[i]);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < x->g.n; i++) free(x->g.tasks[i]);
	free(x->g.tasks);
	free(x->g.on);
	free(x);
	return CUDA_SUCCESS;
}
