/* SPDX-License-Identifier: MIT */
/*
 * nccl.c: the libnccl.so.2 CPU stand-in: collectives and send/recv between ranks that are
 * separate processes, through one POSIX shared-memory segment per communicator.
 *
 * Ops are stream-ordered the way NCCL's are: each call (or each ncclGroupEnd) enqueues one
 * host function on the given stream through the driver stand-in, reached like NCCL reaches
 * the driver (dlopen("libcuda.so.1"), cuGetProcAddress_v2, cuLaunchHostFunc). The host
 * function then runs the exchange on the stream's worker thread, so a collective takes "device"
 * time, orders with kernels and copies, and a host sync waits for it.
 *
 * Invariants, cited in the code:
 *   N-ORDER  Every rank of a communicator issues its collectives in the same order (NCCL's own
 *            rule), so one shared barrier (sense-reversing: count + generation) is enough to
 *            step all ranks through each collective in lockstep.
 *   N-CHUNK  A collective moves data in chunks through one staging slot per rank: publish my
 *            chunk, barrier, read what I need from the others' slots, barrier (the slots may
 *            be reused). Any message size works with a fixed segment.
 *   N-MAIL   Send/recv go through a byte ring per (src, dst) pair, matched in order. A send
 *            that fits the ring completes without its receiver (symmetric send-then-recv on
 *            two ranks cannot deadlock); a group's sends and recvs progress together.
 *   N-FLUSH  Host-side collectives of the comm (split, destroy) first wait until the comm's
 *            enqueued work has run, so they never interleave with it on the shared barrier.
 *   N-WAIT   Every wait spins with sched_yield, then short sleeps, and gives up after
 *            STANDIN_NCCL_TIMEOUT_S (30 s) with ncclSystemError instead of hanging; an abort on
 *            any rank makes the others' waits fail with ncclRemoteError.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <nccl.h>

/* Export every function under its pnccl name too, as the real libnccl.so.2 does: syncspy
 * resolves the pnccl names (docs/architecture.md F5). */
#define PNCCL_ALIAS(name) extern __typeof__(name) p##name __attribute__((alias(#name)))

#define ID_MAGIC	      "SSNCCL01"
#define SEG_READY	      0x52454459u
#define HEADER_BYTES	      4096
#define RANK_AREA_BYTES	      64
#define MAILBOX_HDR_BYTES     128
#define DEFAULT_SLOT_BYTES    (4u << 20)
#define DEFAULT_MAILBOX_BYTES (1u << 20)
#define COMM_MAGIC	      0x4e43434cu

/* ================================================================== shared segment layout */

struct seg_header {
	_Atomic uint32_t ready; /* SEG_READY once the creator has filled the header */
	uint32_t nranks;
	uint64_t slot_bytes;	/* staging slot per rank (N-CHUNK) */
	uint64_t mailbox_bytes; /* ring per (src, dst) pair (N-MAIL) */
	_Atomic uint32_t detached;
	_Atomic uint32_t bar_count; /* N-ORDER barrier */
	_Atomic uint32_t bar_gen;
	_Atomic uint32_t aborted; /* N-WAIT */
};

struct rank_area {
	int32_t pid;
	int32_t split_color;
	int32_t split_key;
};

struct mailbox {
	_Atomic uint64_t head; /* bytes written by the sender, ever */
	char pad[56];
	_Atomic uint64_t tail; /* bytes consumed by the receiver, ever */
};

static size_t seg_size(uint32_t n, uint64_t slot, uint64_t mbox)
{
	return HEADER_BYTES + (size_t)n * RANK_AREA_BYTES + (size_t)n * slot +
	       (size_t)n * n * (MAILBOX_HDR_BYTES + mbox);
}

struct ncclComm {
	uint32_t magic;
	int rank, nranks;
	char shm_name[96];
	char *base; /* the mapped segment */
	size_t size;
	struct seg_header *hdr;
	uint64_t split_count;
	_Atomic int pending; /* enqueued works not yet run (N-FLUSH) */
	_Atomic int async_error;
	_Atomic bool aborted;
	int delay_us; /* STANDIN_NCCL_DELAY_US for this rank */
};

static struct rank_area *rank_area(struct ncclComm *c, int r)
{
	return (struct rank_area *)(c->base + HEADER_BYTES + (size_t)r * RANK_AREA_BYTES);
}

static char *slot(struct ncclComm *c, int r)
{
	return c->base + HEADER_BYTES + (size_t)c->nranks * RANK_AREA_BYTES +
	       (size_t)r * c->hdr->slot_bytes;
}

static struct mailbox *mailbox(struct ncclComm *c, int src, int dst)
{
	size_t n = (size_t)c->nranks;
	char *area = c->base + HEADER_BYTES + n * RANK_AREA_BYTES + n * c->hdr->slot_bytes;

	return (struct mailbox *)(area + ((size_t)src * n + (size_t)dst) * MAILBOX_HDR_BYTES);
}

static char *mailbox_data(struct ncclComm *c, int src, int dst)
{
	size_t n = (size_t)c->nranks;
	char *area = c->base + HEADER_BYTES + n * RANK_AREA_BYTES + n * c->hdr->slot_bytes +
		     n * n * MAILBOX_HDR_BYTES;

	return area + ((size_t)src * n + (size_t)dst) * c->hdr->mailbox_bytes;
}

/* ================================================================== errors and environment */

static __thread char tls_last_error[256];

static ncclResult_t fail(ncclResult_t r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tls_last_error, sizeof(tls_last_error), fmt, ap);
	va_end(ap);
	return r;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return def;
	unsigned long long x = strtoull(v, NULL, 0);
	return x ? x : def;
}

static uint64_t timeout_ns(void)
{
	return env_u64("STANDIN_NCCL_TIMEOUT_S", 30) * 1000000000ull;
}

/* STANDIN_NCCL_DELAY_US=<rank>:<us>[,<rank>:<us>...]: that rank sleeps before each collective
 * (a straggler). The rank is the rank in the communicator the collective runs on. */
static int delay_for_rank(int rank)
{
	const char *v = getenv("STANDIN_NCCL_DELAY_US");

	while (v && *v) {
		char *end;
		long r = strtol(v, &end, 10);
		if (*end != ':')
			break;
		long us = strtol(end + 1, &end, 10);
		if (r == rank && us > 0)
			return (int)us;
		v = *end == ',' ? end + 1 : NULL;
	}
	return 0;
}

/* N-WAIT backoff: yield for a while, then sleep 50 us per round. */
static void backoff(unsigned *round)
{
	if (++*round < 200) {
		sched_yield();
	} else {
		struct timespec ts = {0, 50000};
		nanosleep(&ts, NULL);
	}
}

static ncclResult_t check_wait(struct ncclComm *c, uint64_t deadline, const char *what)
{
	if (atomic_load(&c->aborted))
		return fail(ncclSystemError, "communicator aborted during %s", what);
	if (atomic_load(&c->hdr->aborted))
		return fail(ncclRemoteError, "a peer aborted the communicator during %s", what);
	if (now_ns() > deadline) {
		fprintf(stderr, "syncspy stand-in libnccl: rank %d/%d: timeout in %s\n", c->rank,
			c->nranks, what);
		return fail(ncclSystemError, "timeout in %s", what);
	}
	return ncclSuccess;
}

/* The N-ORDER barrier over all ranks of c. */
static ncclResult_t barrier(struct ncclComm *c, const char *what)
{
	struct seg_header *h = c->hdr;
	uint32_t gen = atomic_load(&h->bar_gen);

	if (atomic_fetch_add(&h->bar_count, 1) == (uint32_t)c->nranks - 1) {
		atomic_store(&h->bar_count, 0);
		atomic_fetch_add(&h->bar_gen, 1);
		return ncclSuccess;
	}
	uint64_t deadline = now_ns() + timeout_ns();
	unsigned round = 0;
	while (atomic_load(&h->bar_gen) == gen) {
		ncclResult_t r = check_wait(c, deadline, what);
		if (r != ncclSuccess)
			return r;
		backoff(&round);
	}
	return ncclSuccess;
}

/* ================================================================== the driver */

static __typeof__(&cuLaunchHostFunc) drv_launch_host_func;
static __typeof__(&cuStreamIsCapturing) drv_stream_is_capturing;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static void driver_load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h)
		return;
	__typeof__(&cuGetProcAddress_v2) gpa = (__typeof__(gpa))dlsym(h, "cuGetProcAddress_v2");
	if (!gpa)
		return;
	CUdriverProcAddressQueryResult st;
	if (gpa("cuStreamIsCapturing", (void **)&drv_stream_is_capturing, 12000,
		CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS)
		drv_stream_is_capturing = NULL;
	if (gpa("cuLaunchHostFunc", (void **)&drv_launch_host_func, 12000,
		CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS)
		drv_launch_host_func = NULL;
}

/* ================================================================== data types, reductions */

static size_t type_size(ncclDataType_t t)
{
	switch (t) {
	case ncclInt8:
	case ncclUint8:
	case ncclFloat8e4m3:
	case ncclFloat8e5m2:
		return 1;
	case ncclFloat16:
	case ncclBfloat16:
		return 2;
	case ncclInt32:
	case ncclUint32:
	case ncclFloat32:
		return 4;
	case ncclInt64:
	case ncclUint64:
	case ncclFloat64:
		return 8;
	default:
		return 0;
	}
}

static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
	uint32_t bits;

	if (exp == 0) {
		if (mant == 0) {
			bits = sign;
		} else { /* subnormal: normalise */
			exp = 127 - 15 + 1;
			while (!(mant & 0x400)) {
				mant <<= 1;
				exp--;
			}
			bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
		}
	} else if (exp == 31) {
		bits = sign | 0x7f800000 | (mant << 13);
	} else {
		bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
	}
	float f;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

static uint16_t float_to_half(float f)
{
	uint32_t bits;

	memcpy(&bits, &f, sizeof(bits));
	uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
	int32_t exp = (int32_t)((bits >> 23) & 0xff) - 127 + 15;
	uint32_t mant = bits & 0x7fffff;

	if (((bits >> 23) & 0xff) == 0xff) /* inf or nan */
		return sign | 0x7c00 | (mant ? 0x200 : 0);
	if (exp >= 31)
		return sign | 0x7c00;
	if (exp <= 0) {
		if (exp < -10)
			return sign;
		mant |= 0x800000;
		uint32_t shift = (uint32_t)(14 - exp);
		uint32_t half = mant >> shift;
		if ((mant >> (shift - 1)) & 1) /* round half up */
			half++;
		return sign | (uint16_t)half;
	}
	uint16_t h = sign | (uint16_t)(exp << 10) | (uint16_t)(mant >> 13);
	if (mant & 0x1000) /* round half up (may carry into the exponent, which is right) */
		h++;
	return h;
}

static float bf16_to_float(uint16_t b)
{
	uint32_t bits = (uint32_t)b << 16;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

static uint16_t float_to_bf16(float f)
{
	uint32_t bits;

	memcpy(&bits, &f, sizeof(bits));
	if ((bits & 0x7f800000) == 0x7f800000 && (bits & 0x7fffff))
		return (uint16_t)((bits >> 16) | 0x40); /* keep nan a nan */
	bits += 0x7fff + ((bits >> 16) & 1);		/* round to nearest even */
	return (uint16_t)(bits >> 16);
}

#define COMBINE(op, a, b)                                                                          \
	((op) == ncclProd  ? (a) * (b)                                                             \
	 : (op) == ncclMax ? ((a) > (b) ? (a) : (b))                                               \
	 : (op) == ncclMin ? ((a) < (b) ? (a) : (b))                                               \
			   : (a) + (b))

/* dst[i] = op over r of srcs[r][i], for a plain C type T. */
#define REDUCE_PLAIN(T)                                                                            \
	for (size_t i = 0; i < len; i++) {                                                         \
		T acc = ((const T *)srcs[0])[i];                                                   \
		for (int r = 1; r < n; r++)                                                        \
			acc = (T)COMBINE(op, acc, ((const T *)srcs[r])[i]);                        \
		if (op == ncclAvg)                                                                 \
			acc = (T)(acc / (T)n);                                                     \
		((T *)dst)[i] = acc;                                                               \
	}

/* Same for 16-bit floats stored as uint16_t, computed in float. */
#define REDUCE_16(TO_F, FROM_F)                                                                    \
	for (size_t i = 0; i < len; i++) {                                                         \
		float acc = TO_F(((const uint16_t *)srcs[0])[i]);                                  \
		for (int r = 1; r < n; r++)                                                        \
			acc = COMBINE(op, acc, TO_F(((const uint16_t *)srcs[r])[i]));              \
		if (op == ncclAvg)                                                                 \
			acc /= (float)n;                                                           \
		((uint16_t *)dst)[i] = FROM_F(acc);                                                \
	}

static void reduce(void *dst, char *const *srcs, int n, size_t len, ncclDataType_t t,
		   ncclRedOp_t op)
{
	switch (t) {
	case ncclInt8:
		REDUCE_PLAIN(int8_t);
		break;
	case ncclUint8:
		REDUCE_PLAIN(uint8_t);
		break;
	case ncclInt32:
		REDUCE_PLAIN(int32_t);
		break;
	case ncclUint32:
		REDUCE_PLAIN(uint32_t);
		break;
	case ncclInt64:
		REDUCE_PLAIN(int64_t);
		break;
	case ncclUint64:
		REDUCE_PLAIN(uint64_t);
		break;
	case ncclFloat32:
		REDUCE_PLAIN(float);
		break;
	case ncclFloat64:
		REDUCE_PLAIN(double);
		break;
	case ncclFloat16:
		REDUCE_16(half_to_float, float_to_half);
		break;
	case ncclBfloat16:
		REDUCE_16(bf16_to_float, float_to_bf16);
		break;
	default:
		break; /* rejected at enqueue */
	}
}

static bool reducible(ncclDataType_t t)
{
	return type_size(t) != 0 && t != ncclFloat8e4m3 && t != ncclFloat8e5m2;
}

/* ================================================================== collectives (N-CHUNK) */

enum task_kind {
	T_ALLREDUCE,
	T_REDUCE,
	T_BROADCAST,
	T_ALLGATHER,
	T_GATHER,
	T_REDUCESCATTER,
	T_ALLTOALL,
	T_SCATTER,
	T_SEND,
	T_RECV,
};

struct task {
	enum task_kind kind;
	const char *send;
	char *recv;
	size_t count; /* per the NCCL call: count, sendcount or recvcount */
	ncclDataType_t type;
	ncclRedOp_t op;
	int root; /* root, or peer for send/recv */
};

/* How many sections of a chunk each rank publishes per step: one, or one per peer. */
static int sections(const struct task *t, int n)
{
	switch (t->kind) {
	case T_REDUCESCATTER:
	case T_ALLTOALL:
	case T_SCATTER:
		return n;
	default:
		return 1;
	}
}

static ncclResult_t run_collective(struct ncclComm *c, const struct task *t)
{
	int n = c->nranks, me = c->rank;
	size_t es = type_size(t->type);
	size_t chunk = c->hdr->slot_bytes / ((size_t)sections(t, n) * es);
	char *mine = slot(c, me);
	char *srcs[n];

	if (c->delay_us) {
		struct timespec ts = {c->delay_us / 1000000, (long)(c->delay_us % 1000000) * 1000};
		nanosleep(&ts, NULL);
	}
	for (int r = 0; r < n; r++)
		srcs[r] = slot(c, r);

	for (size_t off = 0; off < t->count || off == 0; off += chunk) {
		size_t len = t->count - off < chunk ? t->count - off : chunk;
		size_t bytes = len * es;
		ncclResult_t res;

		/* publish */
		switch (t->kind) {
		case T_ALLREDUCE:
		case T_REDUCE:
		case T_ALLGATHER:
		case T_GATHER:
			memcpy(mine, t->send + off * es, bytes);
			break;
		case T_BROADCAST:
			if (me == t->root)
				memcpy(mine, t->send + off * es, bytes);
			break;
		case T_REDUCESCATTER:
		case T_ALLTOALL:
			for (int p = 0; p < n; p++)
				memcpy(mine + (size_t)p * bytes,
				       t->send + ((size_t)p * t->count + off) * es, bytes);
			break;
		case T_SCATTER:
			if (me == t->root)
				for (int p = 0; p < n; p++)
					memcpy(mine + (size_t)p * bytes,
					       t->send + ((size_t)p * t->count + off) * es, bytes);
			break;
		default:
			break;
		}
		if ((res = barrier(c, "a collective")) != ncclSuccess)
			return res;

		/* consume */
		switch (t->kind) {
		case T_ALLREDUCE:
			reduce(t->recv + off * es, srcs, n, len, t->type, t->op);
			break;
		case T_REDUCE:
			if (me == t->root)
				reduce(t->recv + off * es, srcs, n, len, t->type, t->op);
			break;
		case T_BROADCAST:
			memmove(t->recv + off * es, srcs[t->root], bytes);
			break;
		case T_ALLGATHER:
			for (int r = 0; r < n; r++)
				memmove(t->recv + ((size_t)r * t->count + off) * es, srcs[r],
					bytes);
			break;
		case T_GATHER:
			if (me == t->root)
				for (int r = 0; r < n; r++)
					memmove(t->recv + ((size_t)r * t->count + off) * es,
						srcs[r], bytes);
			break;
		case T_REDUCESCATTER: {
			char *parts[n];
			for (int r = 0; r < n; r++)
				parts[r] = srcs[r] + (size_t)me * bytes;
			reduce(t->recv + off * es, parts, n, len, t->type, t->op);
			break;
		}
		case T_ALLTOALL:
			for (int r = 0; r < n; r++)
				memmove(t->recv + ((size_t)r * t->count + off) * es,
					srcs[r] + (size_t)me * bytes, bytes);
			break;
		case T_SCATTER:
			memmove(t->recv + off * es, srcs[t->root] + (size_t)me * bytes, bytes);
			break;
		default:
			break;
		}
		if ((res = barrier(c, "a collective")) != ncclSuccess)
			return res;
		if (t->count == 0)
			break;
	}
	return ncclSuccess;
}

/* ================================================================== send / recv (N-MAIL) */

static ncclResult_t run_p2p(struct ncclComm *c, struct task *const *tasks, int ntasks)
{
	size_t done[ntasks > 0 ? ntasks : 1];
	uint64_t cap = c->hdr->mailbox_bytes;
	uint64_t deadline = now_ns() + timeout_ns();
	unsigned round = 0;

	memset(done, 0, sizeof(done));
	for (;;) {
		bool all_done = true, progress = false;

		for (int i = 0; i < ntasks; i++) {
			const struct task *t = tasks[i];
			size_t total = t->count * type_size(t->type);
			if (done[i] == total)
				continue;
			bool is_send = t->kind == T_SEND;
			int src = is_send ? c->rank : t->root, dst = is_send ? t->root : c->rank;
			struct mailbox *mb = mailbox(c, src, dst);
			char *ring = mailbox_data(c, src, dst);
			uint64_t head = atomic_load_explicit(&mb->head, memory_order_acquire);
			uint64_t tail = atomic_load_explicit(&mb->tail, memory_order_acquire);
			uint64_t avail = is_send ? cap - (head - tail) : head - tail;
			uint64_t k = total - done[i] < avail ? total - done[i] : avail;

			if (k > 0) {
				uint64_t pos = (is_send ? head : tail) % cap;
				uint64_t first = cap - pos < k ? cap - pos : k;
				if (is_send) {
					memcpy(ring + pos, t->send + done[i], first);
					memcpy(ring, t->send + done[i] + first, k - first);
					atomic_store_explicit(&mb->head, head + k,
							      memory_order_release);
				} else {
					memcpy(t->recv + done[i], ring + pos, first);
					memcpy(t->recv + done[i] + first, ring, k - first);
					atomic_store_explicit(&mb->tail, tail + k,
							      memory_order_release);
				}
				done[i] += k;
				progress = true;
			}
			if (done[i] != total)
				all_done = false;
		}
		if (all_done)
			return ncclSuccess;
		if (progress) {
			deadline = now_ns() + timeout_ns();
			round = 0;
			continue;
		}
		ncclResult_t r = check_wait(c, deadline, "send/recv");
		if (r != ncclSuccess)
			return r;
		backoff(&round);
	}
}

/* ================================================================== work: what one host
 * function runs */

struct work {
	struct ncclComm *comm;
	int ntasks, cap;
	struct task *tasks;
	bool persistent; /* captured into a graph: may run many times, never freed */
};

static void run_work(void *arg)
{
	struct work *w = arg;
	struct ncclComm *c = w->comm;
	struct task *p2p[w->ntasks > 0 ? w->ntasks : 1];
	int np2p = 0;
	ncclResult_t r = ncclSuccess;

	/* collectives in call order, then all sends and recvs of the group together */
	for (int i = 0; i < w->ntasks && r == ncclSuccess; i++) {
		if (w->tasks[i].kind == T_SEND || w->tasks[i].kind == T_RECV)
			p2p[np2p++] = &w->tasks[i];
		else
			r = run_collective(c, &w->tasks[i]);
	}
	if (r == ncclSuccess && np2p)
		r = run_p2p(c, p2p, np2p);
	if (r != ncclSuccess) {
		int expected = ncclSuccess;
		atomic_compare_exchange_strong(&c->async_error, &expected, (int)r);
	}
	if (!w->persistent) {
		atomic_fetch_sub(&c->pending, 1);
		free(w->tasks);
		free(w);
	}
}

static ncclResult_t work_add(struct work *w, const struct task *t)
{
	if (w->ntasks == w->cap) {
		int cap = w->cap ? w->cap * 2 : 4;
		struct task *n = realloc(w->tasks, (size_t)cap * sizeof(*n));
		if (!n)
			return fail(ncclSystemError, "out of memory");
		w->tasks = n;
		w->cap = cap;
	}
	w->tasks[w->ntasks++] = *t;
	return ncclSuccess;
}

static ncclResult_t work_enqueue(struct work *w, cudaStream_t stream)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

	pthread_once(&driver_once, driver_load);
	if (!drv_launch_host_func) {
		free(w->tasks);
		free(w);
		return fail(ncclUnhandledCudaError, "libcuda.so.1 or cuLaunchHostFunc not found");
	}
	if (drv_stream_is_capturing && drv_stream_is_capturing(stream, &st) == CUDA_SUCCESS &&
	    st == CU_STREAM_CAPTURE_STATUS_ACTIVE)
		w->persistent = true;
	if (!w->persistent)
		atomic_fetch_add(&w->comm->pending, 1);
	CUresult cr = drv_launch_host_func(stream, run_work, w);
	if (cr != CUDA_SUCCESS) {
		if (!w->persistent)
			atomic_fetch_sub(&w->comm->pending, 1);
		free(w->tasks);
		free(w);
		return fail(ncclUnhandledCudaError, "cuLaunchHostFunc failed: %d", (int)cr);
	}
	return ncclSuccess;
}

/* ================================================================== groups */

/* Ops between ncclGroupStart and ncclGroupEnd, per thread, in call order. */
struct group_entry {
	struct ncclComm *comm;
	cudaStream_t stream;
	struct task task;
};

static __thread int tls_group_depth;
static __thread struct group_entry *tls_group;
static __thread int tls_group_n, tls_group_cap;

ncclResult_t ncclGroupStart(void)
{
	tls_group_depth++;
	return ncclSuccess;
}
PNCCL_ALIAS(ncclGroupStart);

/* At the outermost ncclGroupEnd: one work per (comm, stream), in order of first appearance. */
ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t res = ncclSuccess;

	if (tls_group_depth == 0)
		return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
	if (--tls_group_depth > 0)
		return ncclSuccess;
	for (int i = 0; i < tls_group_n; i++) {
		struct group_entry *e = &tls_group[i];
		if (!e->comm)
			continue; /* already taken by an earlier work */
		struct work *w = calloc(1, sizeof(*w));
		if (!w)
			return fail(ncclSystemError, "out of memory");
		w->comm = e->comm;
		for (int j = i; j < tls_group_n; j++) {
			struct group_entry *f = &tls_group[j];
			if (f->comm == w->comm && f->stream == e->stream) {
				work_add(w, &f->task);
				if (j != i)
					f->comm = NULL;
			}
		}
		cudaStream_t stream = e->stream;
		e->comm = NULL;
		ncclResult_t r = work_enqueue(w, stream);
		if (r != ncclSuccess)
			res = r;
	}
	tls_group_n = 0;
	return res;
}
PNCCL_ALIAS(ncclGroupEnd);

ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
	if (simInfo)
		simInfo->estimatedTime = 0.0f;
	return ncclGroupEnd();
}
PNCCL_ALIAS(ncclGroupSimulateEnd);

static bool comm_valid(const struct ncclComm *c)
{
	return c && c->magic == COMM_MAGIC;
}

/* Validates and then enqueues (or, inside a group, defers) one op. */
static ncclResult_t submit(struct ncclComm *c, cudaStream_t stream, const struct task *t)
{
	if (!comm_valid(c))
		return fail(ncclInvalidArgument, "invalid communicator");
	if (type_size(t->type) == 0)
		return fail(ncclInvalidArgument, "invalid data type %d", (int)t->type);
	bool reduces = t->kind == T_ALLREDUCE || t->kind == T_REDUCE || t->kind == T_REDUCESCATTER;
	if (reduces && (!reducible(t->type) || (int)t->op < 0 || t->op >= ncclNumOps))
		return fail(ncclInvalidArgument, "unsupported reduction %d on type %d", (int)t->op,
			    (int)t->type);
	if (t->root < 0 || t->root >= c->nranks)
		return fail(ncclInvalidArgument, "invalid root or peer %d", t->root);
	bool sends = t->kind != T_RECV && !(t->kind == T_SCATTER && c->rank != t->root) &&
		     !(t->kind == T_BROADCAST && c->rank != t->root);
	bool recvs = t->kind != T_SEND && !(t->kind == T_REDUCE && c->rank != t->root) &&
		     !(t->kind == T_GATHER && c->rank != t->root);
	if (t->count && ((sends && !t->send) || (recvs && !t->recv)))
		return fail(ncclInvalidArgument, "NULL buffer");

	if (tls_group_depth > 0) {
		if (tls_group_n == tls_group_cap) {
			int cap = tls_group_cap ? tls_group_cap * 2 : 16;
			struct group_entry *g = realloc(tls_group, (size_t)cap * sizeof(*g));
			if (!g)
				return fail(ncclSystemError, "out of memory");
			tls_group = g;
			tls_group_cap = cap;
		}
		tls_group[tls_group_n++] = (struct group_entry){c, stream, *t};
		return ncclSuccess;
	}
	struct work *w = calloc(1, sizeof(*w));
	if (!w)
		return fail(ncclSystemError, "out of memory");
	w->comm = c;
	if (work_add(w, t) != ncclSuccess) {
		free(w);
		return ncclSystemError;
	}
	return work_enqueue(w, stream);
}

/* ================================================================== operations */

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			   cudaStream_t stream)
{
	struct task t = {T_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0};
	return submit(comm, stream, &t);
}
PNCCL_ALIAS(ncclAllReduce);

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
	struct task t = {T_REDUCE, sendbuff, recvbuff, count, datatype, op, root};
	return submit(comm, stream, &t);
}
PNCCL_ALIAS(ncclReduce);

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	struct task t = {T_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root};
	return submit(comm, stream, &t);
}
PNCCL_ALIAS(ncclBroadcast);

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
		       cudaStream_t stream)
{
	return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}
PNCCL_ALIAS(ncclBcast);

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	struct task t = {T_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0};
	return submit(comm, stream, &t);
}
PNCCL_ALIAS(ncclAllGather);

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
			       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			       cudaStream_t stream)
{
	struct task t = {T_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0};
	return submit(comm, stream, &t);
}
PNCCL_ALIAS(ncclReduceScatter);

ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
			  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	struct task t = {T_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum, 0};
	return submit(comm, stream, &t);
}
PNCCL_ALIAS(ncclAlltoAll);

ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			int root, ncclComm_t comm, cudaStream_t stream)
{
	struct task t = {T_GATHER, sendbuff, recvbuff, count, datatype, ncclSum, root};
	return submit(comm, stream, &t);
}
PNCCL_ALIAS(ncclGather);

ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
			 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	struct task t = {T_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum, root};
	return submit(comm, stream, &t);
}
PNCCL_ALIAS(ncclScatter);

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream)
{
	struct task t = {T_SEND, sendbuff, NULL, count, datatype, ncclSum, peer};
	return submit(comm, stream, &t);
}
PNCCL_ALIAS(ncclSend);

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream)
{
	struct task t = {T_RECV, NULL, recvbuff, count, datatype, ncclSum, peer};
	return submit(comm, stream, &t);
}
PNCCL_ALIAS(ncclRecv);

/* ================================================================== communicators */

ncclResult_t ncclGetVersion(int *version)
{
	if (!version)
		return fail(ncclInvalidArgument, "NULL version");
	*version = NCCL_VERSION_CODE;
	return ncclSuccess;
}
PNCCL_ALIAS(ncclGetVersion);

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	static _Atomic uint32_t counter;
	struct {
		uint64_t random;
		uint32_t pid;
		uint32_t count;
		uint64_t time;
	} tag;

	if (!uniqueId)
		return fail(ncclInvalidArgument, "NULL uniqueId");
	if (getrandom(&tag.random, sizeof(tag.random), 0) != sizeof(tag.random))
		tag.random = now_ns() * 0x9e3779b97f4a7c15ull;
	tag.pid = (uint32_t)getpid();
	tag.count = atomic_fetch_add(&counter, 1);
	tag.time = now_ns();
	memset(uniqueId, 0, sizeof(*uniqueId));
	memcpy(uniqueId->internal, ID_MAGIC, 8);
	memcpy(uniqueId->internal + 8, &tag, sizeof(tag));
	return ncclSuccess;
}
PNCCL_ALIAS(ncclGetUniqueId);

/* Waits until the comm's enqueued work has run (N-FLUSH). */
static ncclResult_t comm_flush(struct ncclComm *c)
{
	uint64_t deadline = now_ns() + timeout_ns();
	unsigned round = 0;

	while (atomic_load(&c->pending) > 0) {
		if (now_ns() > deadline)
			return fail(ncclSystemError, "timeout waiting for pending operations");
		backoff(&round);
	}
	return ncclSuccess;
}

/* Opens the segment called name (creating it if this rank comes first), checks it has nranks
 * ranks, and steps through the init barrier once all ranks have attached. */
static ncclResult_t comm_attach(ncclComm_t *out, int nranks, const char *name, int rank)
{
	uint64_t slot_bytes = env_u64("STANDIN_NCCL_SLOT_BYTES", DEFAULT_SLOT_BYTES);
	uint64_t mbox_bytes = env_u64("STANDIN_NCCL_MAILBOX_BYTES", DEFAULT_MAILBOX_BYTES);
	uint64_t deadline = now_ns() + timeout_ns();
	unsigned round = 0;
	bool creator = false;
	int fd;

	slot_bytes = (slot_bytes + 63) & ~(uint64_t)63;
	if (slot_bytes < (uint64_t)nranks * 64)
		slot_bytes = (uint64_t)nranks * 64; /* room for one 8-byte element per section */

	for (;;) {
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd >= 0) {
			creator = true;
			break;
		}
		if (errno != EEXIST)
			return fail(ncclSystemError, "shm_open %s: %s", name, strerror(errno));
		fd = shm_open(name, O_RDWR, 0600);
		if (fd >= 0)
			break;
		if (errno != ENOENT || now_ns() > deadline)
			return fail(ncclSystemError, "shm_open %s: %s", name, strerror(errno));
	}

	size_t size = seg_size((uint32_t)nranks, slot_bytes, mbox_bytes);
	if (creator) {
		if (ftruncate(fd, (off_t)size) != 0) {
			close(fd);
			shm_unlink(name);
			return fail(ncclSystemError, "ftruncate %s: %s", name, strerror(errno));
		}
	} else {
		/* the creator may not have sized it yet: wait, then take its geometry */
		struct stat st;
		while (fstat(fd, &st) == 0 && (size_t)st.st_size < HEADER_BYTES) {
			if (now_ns() > deadline) {
				close(fd);
				return fail(ncclSystemError, "timeout joining %s", name);
			}
			backoff(&round);
		}
		struct seg_header *h =
		    mmap(NULL, HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (h == MAP_FAILED) {
			close(fd);
			return fail(ncclSystemError, "mmap %s: %s", name, strerror(errno));
		}
		while (atomic_load(&h->ready) != SEG_READY) {
			if (now_ns() > deadline) {
				munmap(h, HEADER_BYTES);
				close(fd);
				return fail(ncclSystemError, "timeout joining %s", name);
			}
			backoff(&round);
		}
		uint32_t seg_n = h->nranks;
		slot_bytes = h->slot_bytes;
		mbox_bytes = h->mailbox_bytes;
		munmap(h, HEADER_BYTES);
		if (seg_n != (uint32_t)nranks) {
			close(fd);
			return fail(ncclInvalidUsage,
				    "rank %d says %d ranks, the communicator has %u", rank, nranks,
				    seg_n);
		}
		size = seg_size((uint32_t)nranks, slot_bytes, mbox_bytes);
	}

	char *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return fail(ncclSystemError, "mmap %s: %s", name, strerror(errno));

	struct ncclComm *c = calloc(1, sizeof(*c));
	if (!c) {
		munmap(base, size);
		return fail(ncclSystemError, "out of memory");
	}
	c->magic = COMM_MAGIC;
	c->rank = rank;
	c->nranks = nranks;
	snprintf(c->shm_name, sizeof(c->shm_name), "%s", name);
	c->base = base;
	c->size = size;
	c->hdr = (struct seg_header *)base;
	c->delay_us = delay_for_rank(rank);
	if (creator) {
		c->hdr->nranks = (uint32_t)nranks;
		c->hdr->slot_bytes = slot_bytes;
		c->hdr->mailbox_bytes = mbox_bytes;
		atomic_store(&c->hdr->ready, SEG_READY);
	}
	rank_area(c, rank)->pid = (int32_t)getpid();

	ncclResult_t r = barrier(c, "communicator init");
	if (r != ncclSuccess) {
		shm_unlink(name); /* the ranks never all met: leave nothing behind */
		munmap(base, size);
		free(c);
		return r;
	}
	*out = c;
	return ncclSuccess;
}

/* "/standin-nccl-<hex of the id's unique bytes>" */
static bool id_to_name(const ncclUniqueId *id, char *name, size_t len)
{
	if (memcmp(id->internal, ID_MAGIC, 8) != 0)
		return false;
	int n = snprintf(name, len, "/standin-nccl-");
	for (int i = 8; i < 32 && (size_t)n + 2 < len; i++)
		n += snprintf(name + n, len - (size_t)n, "%02x", (unsigned char)id->internal[i]);
	return true;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	char name[96];

	if (!comm)
		return fail(ncclInvalidArgument, "NULL comm");
	if (nranks < 1 || rank < 0 || rank >= nranks)
		return fail(ncclInvalidArgument, "invalid rank %d of %d", rank, nranks);
	if (!id_to_name(&commId, name, sizeof(name)))
		return fail(ncclInvalidArgument, "not a unique id from ncclGetUniqueId");
	return comm_attach(comm, nranks, name, rank);
}
PNCCL_ALIAS(ncclCommInitRank);

/* The config changes nothing here; non-blocking configs still initialise synchronously and
 * return ncclSuccess (which NCCL may do too). */
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				    ncclConfig_t *config)
{
	return ncclCommInitRank(comm, nranks, commId, rank);
}
PNCCL_ALIAS(ncclCommInitRankConfig);

ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
				      ncclUniqueId *commIds, ncclConfig_t *config)
{
	if (nId < 1 || !commIds)
		return fail(ncclInvalidArgument, "no unique id");
	return ncclCommInitRank(newcomm, nranks, commIds[0], myrank);
}
PNCCL_ALIAS(ncclCommInitRankScalable);

/* One process driving several devices would need one init per device inside a group; the
 * stand-in has one device, so only ndev == 1 is supported. */
ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	ncclUniqueId id;

	if (!comms)
		return fail(ncclInvalidArgument, "NULL comms");
	if (ndev != 1)
		return fail(ncclInvalidUsage,
			    "the stand-in supports ncclCommInitAll with ndev == 1");
	if (devlist && devlist[0] != 0)
		return fail(ncclInvalidArgument, "invalid device %d", devlist[0]);
	ncclGetUniqueId(&id);
	return ncclCommInitRank(&comms[0], 1, id, 0);
}
PNCCL_ALIAS(ncclCommInitAll);

struct split_member {
	int key, rank;
};

static int split_member_cmp(const void *a, const void *b)
{
	const struct split_member *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->rank - y->rank;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			   ncclConfig_t *config)
{
	struct ncclComm *c = comm;
	ncclResult_t r;

	if (!comm_valid(c) || !newcomm)
		return fail(ncclInvalidArgument, "invalid communicator or newcomm");
	if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
		return fail(ncclInvalidArgument, "invalid color %d", color);
	if ((r = comm_flush(c)) != ncclSuccess)
		return r;

	/* exchange (color, key) through the parent's rank areas */
	rank_area(c, c->rank)->split_color = color;
	rank_area(c, c->rank)->split_key = key;
	if ((r = barrier(c, "ncclCommSplit")) != ncclSuccess)
		return r;
	struct split_member members[c->nranks];
	int n = 0, new_rank = -1;
	for (int i = 0; i < c->nranks; i++) {
		if (color != NCCL_SPLIT_NOCOLOR && rank_area(c, i)->split_color == color)
			members[n++] = (struct split_member){rank_area(c, i)->split_key, i};
	}
	if ((r = barrier(c, "ncclCommSplit")) != ncclSuccess) /* areas may be reused now */
		return r;
	uint64_t seq = c->split_count++;

	if (color == NCCL_SPLIT_NOCOLOR) {
		*newcomm = NULL;
		return ncclSuccess;
	}
	qsort(members, (size_t)n, sizeof(members[0]), split_member_cmp);
	for (int i = 0; i < n; i++)
		if (members[i].rank == c->rank)
			new_rank = i;
	char name[96];
	snprintf(name, sizeof(name), "%.60s-s%llu-c%d", c->shm_name, (unsigned long long)seq,
		 color);
	return comm_attach(newcomm, n, name, new_rank);
}
PNCCL_ALIAS(ncclCommSplit);

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	if (!comm_valid(comm))
		return fail(ncclInvalidArgument, "invalid communicator");
	return comm_flush(comm);
}
PNCCL_ALIAS(ncclCommFinalize);

/* Unmaps the segment; the last rank to leave removes its name. */
static void comm_detach(struct ncclComm *c)
{
	if (atomic_fetch_add(&c->hdr->detached, 1) == (uint32_t)c->nranks - 1)
		shm_unlink(c->shm_name);
	munmap(c->base, c->size);
	c->magic = 0;
	free(c);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	if (!comm)
		return ncclSuccess;
	if (!comm_valid(comm))
		return fail(ncclInvalidArgument, "invalid communicator");
	ncclResult_t r = comm_flush(comm);
	if (r != ncclSuccess)
		return r;
	comm_detach(comm);
	return ncclSuccess;
}
PNCCL_ALIAS(ncclCommDestroy);

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	if (!comm)
		return ncclSuccess;
	if (!comm_valid(comm))
		return fail(ncclInvalidArgument, "invalid communicator");
	/* pending work bails out of its waits; peers see ncclRemoteError (N-WAIT) */
	atomic_store(&comm->aborted, true);
	atomic_store(&comm->hdr->aborted, 1);
	comm_flush(comm);
	comm_detach(comm);
	return ncclSuccess;
}
PNCCL_ALIAS(ncclCommAbort);

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	if (!comm_valid(comm) || !count)
		return fail(ncclInvalidArgument, "invalid argument");
	*count = comm->nranks;
	return ncclSuccess;
}
PNCCL_ALIAS(ncclCommCount);

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	if (!comm_valid(comm) || !rank)
		return fail(ncclInvalidArgument, "invalid argument");
	*rank = comm->rank;
	return ncclSuccess;
}
PNCCL_ALIAS(ncclCommUserRank);

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
	if (!comm_valid(comm) || !device)
		return fail(ncclInvalidArgument, "invalid argument");
	*device = 0;
	return ncclSuccess;
}
PNCCL_ALIAS(ncclCommCuDevice);

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
	if (!comm_valid(comm) || !asyncError)
		return fail(ncclInvalidArgument, "invalid argument");
	*asyncError = (ncclResult_t)atomic_load(&comm->async_error);
	return ncclSuccess;
}
PNCCL_ALIAS(ncclCommGetAsyncError);

const char *ncclGetErrorString(ncclResult_t result)
{
	switch (result) {
	case ncclSuccess:
		return "no error";
	case ncclUnhandledCudaError:
		return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError:
		return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError:
		return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument:
		return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage:
		return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError:
		return "remote process exited or there was a network error";
	case ncclInProgress:
		return "NCCL operation in progress";
	default:
		return "unknown result code";
	}
}
PNCCL_ALIAS(ncclGetErrorString);

const char *ncclGetLastError(ncclComm_t comm)
{
	return tls_last_error;
}
PNCCL_ALIAS(ncclGetLastError);
