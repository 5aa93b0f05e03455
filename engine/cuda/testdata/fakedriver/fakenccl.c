// A stand-in for libnccl.so.2, loaded by xfertop through XFER_NCCL_LIB, that runs NCCL's semantics on
// the fake driver's streams (fakecuda.c): communicators made with ncclCommInitAll or ncclGetUniqueId +
// ncclCommInitRank (in a group or from one thread per rank), groups, send/receive that block their
// stream until the peer's half arrives (so a missing peer hangs as it does on a GPU), the collectives
// on int8 sums, ncclCommGetAsyncError and ncclCommAbort. Buffers are host memory, as the fake
// driver's device memory is.
//
// CUDA graphs (NCCL >= 2.9, "Using NCCL with CUDA Graphs" in NCCL's user guide): a call issued on a
// stream being captured becomes a node of the graph instead of running, and each launch of the
// graph runs it again as an operation of its own. A collective takes its place in its
// communicator's sequence when the graph is launched, not when it was captured, so that every
// rank's k-th collective meets the others' k-th whether it was captured or not (NCCL requires the
// same sequence of captured and uncaptured operations on every rank).
//
// Knobs, read when a communicator is created:
//   XFER_FAKE_NCCL_FAULT=remote  its operations hang on their streams and ncclCommGetAsyncError
//                                reports ncclRemoteError, as when a peer process dies;
//   XFER_FAKE_NCCL_FAULT=init    creating it fails with ncclSystemError.
//   XFER_FAKE_NCCL_LOG=FILE      a line is appended for each init (with the NCCL_ALGO and NCCL_PROTO
//                                it sees), destroy and abort.

#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// From the fake driver.
void xferFakeEnqueueNode(CUstream h, void (*fn)(void *), void *arg, void *(*replay)(void *), void (*drop)(void *));
int xferFakeCurrentDevice(void);

typedef int ncclResult_t;
enum {
	ncclSuccess = 0,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7
};

typedef struct {
	char internal[128];
} ncclUniqueId;

#define MAX_RANKS 64
#define MAGIC "xfertop-fake-nccl"

typedef struct msg {
	void *data;
	size_t n;
	int taken;
	struct msg *next;
} msg;

typedef struct coll {
	uint64_t seq;
	int arrived, left;
	void *contrib[MAX_RANKS];
	struct coll *next;
} coll;

struct clique;

typedef struct ncclComm {
	struct clique *c;
	int rank, dev;
	int aborted, asyncErr;
	uint64_t collSeq; // collectives issued by this rank
	int graphRefs;    // operations on it held by graphs (captured or instantiated)
} ncclComm;
typedef ncclComm *ncclComm_t;

typedef struct clique {
	unsigned long long id;
	int n, joined;
	int fault;
	ncclComm *ranks[MAX_RANKS];
	msg *box[MAX_RANKS][MAX_RANKS]; // [from][to], oldest first
	coll *colls;
	struct clique *next;
} clique;

enum { FAULT_NONE, FAULT_REMOTE, FAULT_INIT };
enum { OP_SEND, OP_RECV, OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_BROADCAST };

typedef struct op {
	int kind;
	ncclComm *comm;
	const void *send;
	void *recv;
	size_t count;
	int peer; // peer, or root
	CUstream stream;
	msg *posted;
	uint64_t seq; // a collective's place in its communicator's sequence (captured: given at each launch)
	int held;     // a captured operation: counted in its communicator's graphRefs until dropped
	struct op *next;
} op;

typedef struct {
	op *ops;
} batch;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static clique *cliques;
static unsigned long long nextID = 1;

// A thread's open group: its depth, operations and communicators still joining.
static __thread int groupDepth;
static __thread op *groupOps;
static __thread ncclComm *groupInits[MAX_RANKS];
static __thread int groupNInits;
static __thread ncclResult_t groupErr;

static void note(const char *format, ...) {
	const char *path = getenv("XFER_FAKE_NCCL_LOG");
	if (!path) return;
	FILE *f = fopen(path, "a");
	if (!f) return;
	va_list ap;
	va_start(ap, format);
	vfprintf(f, format, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static int faultFromEnv(void) {
	const char *f = getenv("XFER_FAKE_NCCL_FAULT");
	if (!f) return FAULT_NONE;
	if (!strcmp(f, "remote")) return FAULT_REMOTE;
	if (!strcmp(f, "init")) return FAULT_INIT;
	return FAULT_NONE;
}

ncclResult_t ncclGetVersion(int *v) {
	*v = 22800; // 2.28.0
	return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
	switch (r) {
	case ncclSuccess: return "no error";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

// cliqueFor returns the clique named key, created for n ranks on first use; the caller holds mu.
static clique *cliqueFor(unsigned long long key, int n) {
	clique *c = cliques;
	while (c && c->id != key) c = c->next;
	if (c) return c;
	c = calloc(1, sizeof *c);
	c->id = key;
	c->n = n;
	c->fault = faultFromEnv();
	c->next = cliques;
	cliques = c;
	return c;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
	memset(id, 0, sizeof *id);
	pthread_mutex_lock(&mu);
	unsigned long long n = nextID++;
	pthread_mutex_unlock(&mu);
	snprintf(id->internal, sizeof id->internal, "%s %llu", MAGIC, n);
	return ncclSuccess;
}

// join adds the calling thread's current device as rank to the clique named by key (created on
// first use); the caller holds mu.
static ncclResult_t join(ncclComm **out, unsigned long long key, int n, int rank, int dev) {
	if (n < 1 || n > MAX_RANKS || rank < 0 || rank >= n) return ncclInvalidArgument;
	if (dev < 0) return ncclInvalidUsage; // no current device
	clique *c = cliqueFor(key, n);
	if (c->n != n || c->ranks[rank]) return ncclInvalidUsage;
	if (c->fault == FAULT_INIT) return ncclSystemError;
	for (int i = 0; i < n; i++)
		if (c->ranks[i] && c->ranks[i]->dev == dev) return ncclInvalidUsage; // "Duplicate GPU detected"
	ncclComm *m = calloc(1, sizeof *m);
	m->c = c, m->rank = rank, m->dev = dev;
	c->ranks[rank] = m;
	c->joined++;
	*out = m;
	// NCCL reads NCCL_ALGO and NCCL_PROTO when it creates a communicator: log what it would see.
	const char *algo = getenv("NCCL_ALGO"), *proto = getenv("NCCL_PROTO");
	note("init comm=%llu rank=%d/%d dev=%d NCCL_ALGO=%s NCCL_PROTO=%s", c->id, rank, n, dev, algo ? algo : "-", proto ? proto : "-");
	pthread_cond_broadcast(&cond);
	return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int n, ncclUniqueId id, int rank) {
	unsigned long long key;
	if (strncmp(id.internal, MAGIC " ", strlen(MAGIC) + 1) != 0 || sscanf(id.internal + strlen(MAGIC) + 1, "%llu", &key) != 1)
		return ncclInvalidArgument;
	int dev = xferFakeCurrentDevice();
	pthread_mutex_lock(&mu);
	ncclResult_t r = join(comm, key, n, rank, dev);
	if (r == ncclSuccess) {
		if (groupDepth > 0) {
			groupInits[groupNInits++] = *comm; // the group's end waits for the others
		} else {
			while ((*comm)->c->joined < n) pthread_cond_wait(&cond, &mu);
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int n, const int *devs) {
	if (n < 1 || n > MAX_RANKS) return ncclInvalidArgument;
	pthread_mutex_lock(&mu);
	unsigned long long key = nextID++;
	ncclResult_t r = ncclSuccess;
	for (int i = 0; i < n && r == ncclSuccess; i++) r = join(&comms[i], key, n, i, devs ? devs[i] : i);
	pthread_mutex_unlock(&mu);
	return r;
}

static void abortLocked(ncclComm *m) {
	m->aborted = 1;
	pthread_cond_broadcast(&cond);
}

ncclResult_t ncclCommAbort(ncclComm_t m) {
	if (!m) return ncclSuccess;
	pthread_mutex_lock(&mu);
	abortLocked(m);
	note("abort comm=%llu rank=%d", m->c->id, m->rank);
	pthread_mutex_unlock(&mu);
	return ncclSuccess;
}

// ncclCommDestroy frees a communicator. Since NCCL 2.26 it waits until every CUDA graph holding an
// operation on the communicator has been destroyed (src/init.cc polls comm->localPersistentRefs),
// so destroying one first hangs; the fake refuses instead, with ncclInvalidUsage, and logs it.
ncclResult_t ncclCommDestroy(ncclComm_t m) {
	if (!m) return ncclInvalidArgument;
	pthread_mutex_lock(&mu);
	if (m->graphRefs > 0) {
		note("destroy refused comm=%llu rank=%d: %d operation(s) held by CUDA graphs", m->c->id, m->rank, m->graphRefs);
		pthread_mutex_unlock(&mu);
		return ncclInvalidUsage;
	}
	note("destroy comm=%llu rank=%d", m->c->id, m->rank);
	abortLocked(m); // kept, not freed: a stream may still hold one of its operations
	pthread_mutex_unlock(&mu);
	return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t m, ncclResult_t *err) {
	if (!m) return ncclInvalidArgument;
	pthread_mutex_lock(&mu);
	*err = m->asyncErr;
	pthread_mutex_unlock(&mu);
	return ncclSuccess;
}

// dead reports whether an operation on m can make no more progress; the caller holds mu.
static int dead(ncclComm *m) { return m->aborted; }

// runBatch is a group's (or a lone call's) work on one stream: sends are posted first, then receives
// and collectives complete, then the sends wait until their receivers took them, so pairs issued in
// one group never deadlock and a send with no receiver blocks its stream as on a GPU.
static void runBatch(void *arg) {
	batch *b = arg;
	pthread_mutex_lock(&mu);
	for (op *o = b->ops; o; o = o->next) {
		if (o->comm->c->fault == FAULT_REMOTE && !dead(o->comm)) {
			o->comm->asyncErr = ncclRemoteError;
			while (!dead(o->comm)) pthread_cond_wait(&cond, &mu);
		}
	}
	for (op *o = b->ops; o; o = o->next) {
		if (o->kind != OP_SEND || dead(o->comm)) continue;
		msg *m = calloc(1, sizeof *m);
		m->n = o->count;
		m->data = malloc(o->count ? o->count : 1);
		memcpy(m->data, o->send, o->count);
		msg **tail = &o->comm->c->box[o->comm->rank][o->peer];
		while (*tail) tail = &(*tail)->next;
		*tail = m;
		o->posted = m;
		pthread_cond_broadcast(&cond);
	}
	for (op *o = b->ops; o; o = o->next) {
		ncclComm *m = o->comm;
		clique *c = m->c;
		if (o->kind == OP_RECV) {
			msg **box = &c->box[o->peer][m->rank];
			while (!*box && !dead(m)) pthread_cond_wait(&cond, &mu);
			if (dead(m)) continue;
			msg *in = *box;
			*box = in->next;
			if (in->n != o->count) m->asyncErr = ncclInvalidUsage; // as NCCL: sizes of a pair must match
			memcpy(o->recv, in->data, in->n < o->count ? in->n : o->count);
			free(in->data);
			in->taken = 1; // the sender frees it
			pthread_cond_broadcast(&cond);
			continue;
		}
		if (o->kind == OP_SEND) continue;
		// A collective: every rank's contribution is copied in; once all are, each rank computes
		// its own result; the last to finish frees the instance.
		coll *k = c->colls;
		while (k && k->seq != o->seq) k = k->next;
		if (!k) {
			k = calloc(1, sizeof *k);
			k->seq = o->seq;
			k->left = c->n;
			k->next = c->colls;
			c->colls = k;
		}
		size_t in = o->kind == OP_REDUCESCATTER ? o->count * (size_t)c->n : o->count;
		k->contrib[m->rank] = malloc(in ? in : 1);
		memcpy(k->contrib[m->rank], o->send, in);
		k->arrived++;
		pthread_cond_broadcast(&cond);
		while (k->arrived < c->n && !dead(m)) pthread_cond_wait(&cond, &mu);
		if (!dead(m)) {
			unsigned char *out = o->recv;
			switch (o->kind) {
			case OP_ALLREDUCE:
				for (size_t i = 0; i < o->count; i++) {
					unsigned char s = 0;
					for (int r = 0; r < c->n; r++) s += ((unsigned char *)k->contrib[r])[i];
					out[i] = s;
				}
				break;
			case OP_REDUCESCATTER:
				for (size_t i = 0; i < o->count; i++) {
					unsigned char s = 0;
					for (int r = 0; r < c->n; r++) s += ((unsigned char *)k->contrib[r])[(size_t)m->rank * o->count + i];
					out[i] = s;
				}
				break;
			case OP_ALLGATHER:
				for (int r = 0; r < c->n; r++) memcpy(out + (size_t)r * o->count, k->contrib[r], o->count);
				break;
			case OP_BROADCAST:
				memcpy(out, k->contrib[o->peer], o->count);
				break;
			}
		}
		if (--k->left == 0) {
			for (coll **p = &c->colls; *p; p = &(*p)->next)
				if (*p == k) {
					*p = k->next;
					break;
				}
			for (int r = 0; r < c->n; r++) free(k->contrib[r]);
			free(k);
		}
	}
	for (op *o = b->ops; o; o = o->next) {
		if (!o->posted) continue;
		while (!o->posted->taken && !dead(o->comm)) pthread_cond_wait(&cond, &mu);
		if (o->posted->taken) free(o->posted);
	}
	pthread_mutex_unlock(&mu);
	while (b->ops) {
		op *o = b->ops;
		b->ops = o->next;
		free(o);
	}
	free(b);
}

// replayBatch makes, from a captured batch, the batch one launch of its graph runs (called by the
// fake driver's cuGraphLaunch): its collectives take their places in their communicators' sequences
// now, in launch order.
static void *replayBatch(void *arg) {
	batch *tmpl = arg, *b = calloc(1, sizeof *b);
	op **tail = &b->ops;
	pthread_mutex_lock(&mu);
	for (op *o = tmpl->ops; o; o = o->next) {
		op *c = malloc(sizeof *c);
		*c = *o;
		c->posted = NULL, c->next = NULL, c->held = 0;
		if (c->kind != OP_SEND && c->kind != OP_RECV) c->seq = c->comm->collSeq++;
		*tail = c, tail = &c->next;
	}
	pthread_mutex_unlock(&mu);
	return b;
}

// dropBatch frees a captured batch once no graph holds it.
static void dropBatch(void *arg) {
	batch *b = arg;
	pthread_mutex_lock(&mu);
	for (op *o = b->ops; o; o = o->next)
		if (o->held) o->comm->graphRefs--;
	pthread_mutex_unlock(&mu);
	while (b->ops) {
		op *o = b->ops;
		b->ops = o->next;
		free(o);
	}
	free(b);
}

// launch enqueues ops (a list on one stream) as one unit of the stream's work, or, on a capturing
// stream, as one node of its graph.
static void launch(op *ops) {
	batch *b = calloc(1, sizeof *b);
	b->ops = ops;
	xferFakeEnqueueNode(ops->stream, runBatch, b, replayBatch, dropBatch);
}

// capturing reports whether s is being captured into a graph (NCCL asks the same of CUDA).
static int capturing(CUstream s) {
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	if (cuStreamIsCapturing(s, &st) != CUDA_SUCCESS) return 0;
	return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static ncclResult_t submit(int kind, ncclComm *m, const void *send, void *recv, size_t count, int peer, CUstream s) {
	if (!m) return ncclInvalidArgument;
	if ((kind == OP_SEND || kind == OP_RECV || kind == OP_BROADCAST) && (peer < 0 || peer >= m->c->n)) return ncclInvalidArgument;
	if (xferFakeCurrentDevice() != m->dev) return ncclInvalidUsage; // NCCL needs the comm's device current
	op *o = calloc(1, sizeof *o);
	o->kind = kind, o->comm = m, o->send = send, o->recv = recv, o->count = count, o->peer = peer, o->stream = s;
	int captured = capturing(s);
	pthread_mutex_lock(&mu);
	if (captured) o->held = 1, m->graphRefs++;
	else if (kind != OP_SEND && kind != OP_RECV) o->seq = m->collSeq++;
	pthread_mutex_unlock(&mu);
	if (groupDepth > 0) {
		op **tail = &groupOps;
		while (*tail) tail = &(*tail)->next;
		*tail = o;
		return ncclSuccess;
	}
	launch(o);
	return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) {
	if (groupDepth++ == 0) groupErr = ncclSuccess;
	return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
	if (groupDepth == 0) return ncclInvalidUsage;
	if (--groupDepth > 0) return ncclSuccess;
	// Communicators created in the group are complete once every rank has joined.
	pthread_mutex_lock(&mu);
	for (int i = 0; i < groupNInits; i++)
		while (groupInits[i]->c->joined < groupInits[i]->c->n) pthread_cond_wait(&cond, &mu);
	pthread_mutex_unlock(&mu);
	groupNInits = 0;
	// One unit per stream, in the order the calls were made.
	while (groupOps) {
		CUstream s = groupOps->stream;
		op *mine = NULL, **mt = &mine, *rest = NULL, **rt = &rest;
		for (op *o = groupOps, *next; o; o = next) {
			next = o->next;
			o->next = NULL;
			if (o->stream == s) *mt = o, mt = &o->next;
			else *rt = o, rt = &o->next;
		}
		launch(mine);
		groupOps = rest;
	}
	return groupErr;
}

#define DTYPE_INT8 0
#define OP_SUM 0

ncclResult_t ncclSend(const void *buf, size_t count, int dtype, int peer, ncclComm_t m, CUstream s) {
	if (dtype != DTYPE_INT8) return ncclInvalidArgument;
	return submit(OP_SEND, m, buf, NULL, count, peer, s);
}

ncclResult_t ncclRecv(void *buf, size_t count, int dtype, int peer, ncclComm_t m, CUstream s) {
	if (dtype != DTYPE_INT8) return ncclInvalidArgument;
	return submit(OP_RECV, m, NULL, buf, count, peer, s);
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int redop, ncclComm_t m, CUstream s) {
	if (dtype != DTYPE_INT8 || redop != OP_SUM) return ncclInvalidArgument;
	return submit(OP_ALLREDUCE, m, send, recv, count, 0, s);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvCount, int dtype, int redop, ncclComm_t m, CUstream s) {
	if (dtype != DTYPE_INT8 || redop != OP_SUM) return ncclInvalidArgument;
	return submit(OP_REDUCESCATTER, m, send, recv, recvCount, 0, s);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendCount, int dtype, ncclComm_t m, CUstream s) {
	if (dtype != DTYPE_INT8) return ncclInvalidArgument;
	return submit(OP_ALLGATHER, m, send, recv, sendCount, 0, s);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, int dtype, int root, ncclComm_t m, CUstream s) {
	if (dtype != DTYPE_INT8) return ncclInvalidArgument;
	return submit(OP_BROADCAST, m, send, recv, count, root, s);
}
