/* SPDX-License-Identifier: MIT */
/*
 * engine.c: the machinery behind the libcuda.so.1 CPU stand-in: memory registry, handle set,
 * streams with worker threads, events, captured graphs, timed copies and memsets.
 *
 * See engine.h for the model and the invariants (E-MEM, E-SEQ, E-ORDER, E-LEGACY, E-KEEP)
 * cited below. Nothing here is exported: cuda.c wraps it in the driver API.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until_ns(uint64_t deadline)
{
	struct timespec ts = {
	    .tv_sec = (time_t)(deadline / 1000000000ull),
	    .tv_nsec = (long)(deadline % 1000000000ull),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "syncspy stand-in libcuda: out of memory\n");
		abort();
	}
	return p;
}

/* ================================================================== memory registry (E-MEM) */

/* Ranges sorted by base, searched by bisection. Registrations are rare, lookups frequent. */
static pthread_rwlock_t mem_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct mem_range *mem_ranges;
static size_t mem_count, mem_cap;

/* Index of the first range whose base is > p. */
static size_t mem_upper_bound(uintptr_t p)
{
	size_t lo = 0, hi = mem_count;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (mem_ranges[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool mem_lookup(const void *p, struct mem_range *out)
{
	uintptr_t addr = (uintptr_t)p;
	bool found = false;

	pthread_rwlock_rdlock(&mem_lock);
	size_t i = mem_upper_bound(addr);
	if (i > 0 && addr - mem_ranges[i - 1].base < mem_ranges[i - 1].size) {
		if (out)
			*out = mem_ranges[i - 1];
		found = true;
	}
	pthread_rwlock_unlock(&mem_lock);
	if (!found && out)
		*out = (struct mem_range){.kind = MEM_PAGEABLE};
	return found;
}

enum mem_kind mem_kind_of(const void *p)
{
	struct mem_range r;

	mem_lookup(p, &r);
	return r.kind;
}

bool mem_is_device_side(enum mem_kind kind)
{
	return kind == MEM_DEVICE || kind == MEM_MANAGED || kind == MEM_ASYNC;
}

bool mem_insert(void *base, size_t size, enum mem_kind kind, bool owned)
{
	uintptr_t b = (uintptr_t)base;
	bool ok = false;

	pthread_rwlock_wrlock(&mem_lock);
	size_t i = mem_upper_bound(b);
	/* overlap with the previous range or the next one? */
	if (i > 0 && b - mem_ranges[i - 1].base < mem_ranges[i - 1].size)
		goto out;
	if (i < mem_count && mem_ranges[i].base < b + size)
		goto out;
	if (mem_count == mem_cap) {
		size_t cap = mem_cap ? mem_cap * 2 : 64;
		struct mem_range *n = realloc(mem_ranges, cap * sizeof(*n));
		if (!n)
			goto out;
		mem_ranges = n;
		mem_cap = cap;
	}
	memmove(&mem_ranges[i + 1], &mem_ranges[i], (mem_count - i) * sizeof(*mem_ranges));
	mem_ranges[i] = (struct mem_range){.base = b, .size = size, .kind = kind, .owned = owned};
	mem_count++;
	ok = true;
out:
	pthread_rwlock_unlock(&mem_lock);
	return ok;
}

bool mem_remove(const void *base, struct mem_range *out)
{
	uintptr_t b = (uintptr_t)base;
	bool found = false;

	pthread_rwlock_wrlock(&mem_lock);
	size_t i = mem_upper_bound(b);
	if (i > 0 && mem_ranges[i - 1].base == b) {
		if (out)
			*out = mem_ranges[i - 1];
		memmove(&mem_ranges[i - 1], &mem_ranges[i], (mem_count - i) * sizeof(*mem_ranges));
		mem_count--;
		found = true;
	}
	pthread_rwlock_unlock(&mem_lock);
	return found;
}

void *mem_alloc(size_t size, enum mem_kind kind)
{
	/* 256-byte alignment like cudaMalloc; aligned_alloc wants a multiple of the alignment */
	size_t rounded = (size + 255) & ~(size_t)255;
	void *p = aligned_alloc(256, rounded);

	if (!p)
		return NULL;
	if (!mem_insert(p, size, kind, true)) {
		free(p);
		return NULL;
	}
	return p;
}

/* ================================================================== handle set */

/* Open addressing on pointer values; slot value 1 marks a deleted entry. */
#define HANDLE_TOMBSTONE ((uintptr_t)1)
static pthread_mutex_t handle_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t *handle_slots;
static size_t handle_cap, handle_used; /* used counts live entries and tombstones */

static size_t handle_hash(uintptr_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (size_t)h;
}

static void handle_insert_slot(uintptr_t *slots, size_t cap, uintptr_t h)
{
	size_t i = handle_hash(h) & (cap - 1);

	while (slots[i] != 0 && slots[i] != HANDLE_TOMBSTONE)
		i = (i + 1) & (cap - 1);
	slots[i] = h;
}

void handles_add(void *h)
{
	pthread_mutex_lock(&handle_lock);
	if ((handle_used + 1) * 2 > handle_cap) {
		size_t cap = handle_cap ? handle_cap * 2 : 256;
		uintptr_t *slots = xcalloc(cap, sizeof(*slots));
		size_t live = 0;

		for (size_t i = 0; i < handle_cap; i++) {
			if (handle_slots[i] != 0 && handle_slots[i] != HANDLE_TOMBSTONE) {
				handle_insert_slot(slots, cap, handle_slots[i]);
				live++;
			}
		}
		free(handle_slots);
		handle_slots = slots;
		handle_cap = cap;
		handle_used = live;
	}
	handle_insert_slot(handle_slots, handle_cap, (uintptr_t)h);
	handle_used++;
	pthread_mutex_unlock(&handle_lock);
}

/* Returns the slot index of h, or handle_cap if absent. Caller holds handle_lock. */
static size_t handle_find(uintptr_t h)
{
	if (!handle_cap || h == 0 || h == HANDLE_TOMBSTONE)
		return handle_cap;
	size_t i = handle_hash(h) & (handle_cap - 1);
	while (handle_slots[i] != 0) {
		if (handle_slots[i] == h)
			return i;
		i = (i + 1) & (handle_cap - 1);
	}
	return handle_cap;
}

void handles_remove(void *h)
{
	pthread_mutex_lock(&handle_lock);
	size_t i = handle_find((uintptr_t)h);
	if (i < handle_cap)
		handle_slots[i] = HANDLE_TOMBSTONE;
	pthread_mutex_unlock(&handle_lock);
}

bool handles_check(const void *h, uint32_t magic)
{
	pthread_mutex_lock(&handle_lock);
	bool live = handle_find((uintptr_t)h) < handle_cap;
	pthread_mutex_unlock(&handle_lock);
	return live && *(const uint32_t *)h == magic;
}

/* ================================================================== configuration */

/* Copy bandwidth for pinned and device memory in bytes per ns (= GB/s); pageable is 4x
 * slower. STANDIN_COPY_GBPS overrides the default of 2 GB/s. */
static double g_copy_bytes_per_ns = 2.0;
#define PAGEABLE_SLOWDOWN 4.0

/* ================================================================== streams (E-STREAM) */

static pthread_mutex_t g_order_lock = PTHREAD_MUTEX_INITIALIZER; /* E-ORDER */
static struct stream *g_streams; /* every stream whose worker still runs; under g_order_lock */
static struct stream *g_legacy;
static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_per_thread_key;
static __thread struct stream *tls_per_thread;

static void *stream_worker(void *arg);

static void per_thread_stream_exit(void *arg)
{
	/* the thread is gone: its default stream finishes its queue and its worker exits */
	stream_retire(arg);
}

const struct standin_cupti_hooks *_Atomic g_cupti;

static struct stream *stream_alloc(unsigned flags, int priority, bool is_legacy)
{
	static _Atomic uint32_t next_cupti_id = 1;
	struct stream *s = xcalloc(1, sizeof(*s));
	pthread_attr_t attr;
	pthread_t tid;

	s->magic = MAGIC_STREAM;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->work_cv, NULL);
	pthread_cond_init(&s->done_cv, NULL);
	s->flags = flags;
	s->priority = priority;
	s->is_legacy = is_legacy;
	s->cupti_id = atomic_fetch_add(&next_cupti_id, 1);

	pthread_mutex_lock(&g_order_lock);
	s->next_all = g_streams;
	g_streams = s;
	pthread_mutex_unlock(&g_order_lock);

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&tid, &attr, stream_worker, s) != 0) {
		fprintf(stderr, "syncspy stand-in libcuda: cannot start a stream worker\n");
		abort();
	}
	pthread_attr_destroy(&attr);
	return s;
}

static void engine_init_once(void)
{
	const char *gbps = getenv("STANDIN_COPY_GBPS");

	if (gbps && atof(gbps) > 0)
		g_copy_bytes_per_ns = atof(gbps);
	pthread_key_create(&g_per_thread_key, per_thread_stream_exit);
	g_legacy = stream_alloc(CU_STREAM_DEFAULT, 0, true);
}

void engine_init(void)
{
	pthread_once(&g_init_once, engine_init_once);
}

struct stream *stream_create(unsigned flags, int priority)
{
	engine_init();
	struct stream *s = stream_alloc(flags, priority, false);
	handles_add(s);
	return s;
}

void stream_retire(struct stream *s)
{
	handles_remove(s);
	pthread_mutex_lock(&s->mu);
	s->retiring = true;
	pthread_cond_signal(&s->work_cv);
	pthread_mutex_unlock(&s->mu);
}

static struct stream *per_thread_stream(void)
{
	if (!tls_per_thread) {
		engine_init();
		tls_per_thread = stream_alloc(CU_STREAM_DEFAULT, 0, false);
		pthread_setspecific(g_per_thread_key, tls_per_thread);
	}
	return tls_per_thread;
}

struct stream *stream_resolve(CUstream h, enum default_stream def)
{
	engine_init();
	if (h == NULL)
		return def == DEFAULT_PER_THREAD ? per_thread_stream() : g_legacy;
	if (h == CU_STREAM_LEGACY)
		return g_legacy;
	if (h == CU_STREAM_PER_THREAD)
		return per_thread_stream();
	if (!handles_check(h, MAGIC_STREAM))
		return NULL;
	return (struct stream *)h;
}

bool stream_reached(struct stream *s, uint64_t seq)
{
	return atomic_load(&s->done_seq) >= seq;
}

void stream_wait_reached(struct stream *s, uint64_t seq)
{
	if (stream_reached(s, seq))
		return;
	pthread_mutex_lock(&s->mu);
	while (atomic_load(&s->done_seq) < seq)
		pthread_cond_wait(&s->done_cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

static bool stream_blocks_legacy(const struct stream *s)
{
	return !s->is_legacy && !(s->flags & CU_STREAM_NON_BLOCKING);
}

/* Appends (t, tail of t) to deps if t has unfinished work. Caller holds g_order_lock. */
static void dep_add_tail(struct dep **deps, int *n, int *cap, struct stream *t)
{
	uint64_t tail = atomic_load(&t->enq_seq);

	if (atomic_load(&t->done_seq) >= tail)
		return;
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		*deps = realloc(*deps, (size_t)*cap * sizeof(**deps));
		if (!*deps)
			abort();
	}
	(*deps)[(*n)++] = (struct dep){.stream = t, .seq = tail};
}

/* Snapshot of the positions that "everything enqueued so far" means for a sync of s: for the
 * legacy stream its own tail and those of all blocking streams (E-LEGACY), for s == NULL all
 * streams (context sync), else just s. */
static int sync_targets(struct stream *s, struct dep **deps)
{
	int n = 0, cap = 0;

	*deps = NULL;
	pthread_mutex_lock(&g_order_lock);
	if (s && !s->is_legacy) {
		dep_add_tail(deps, &n, &cap, s);
	} else {
		for (struct stream *t = g_streams; t; t = t->next_all)
			if (!s || t == s || stream_blocks_legacy(t))
				dep_add_tail(deps, &n, &cap, t);
	}
	pthread_mutex_unlock(&g_order_lock);
	return n;
}

void stream_synchronize(struct stream *s)
{
	struct dep *deps;
	int n = sync_targets(s, &deps);

	for (int i = 0; i < n; i++)
		stream_wait_reached(deps[i].stream, deps[i].seq);
	free(deps);
}

bool stream_idle(struct stream *s)
{
	struct dep *deps;
	int n = sync_targets(s, &deps);
	bool idle = true;

	for (int i = 0; i < n && idle; i++)
		idle = stream_reached(deps[i].stream, deps[i].seq);
	free(deps);
	return idle;
}

void ctx_synchronize(void)
{
	engine_init();
	stream_synchronize(NULL);
}

struct op *op_new(enum op_kind kind)
{
	struct op *op = xcalloc(1, sizeof(*op));

	op->kind = kind;
	return op;
}

static void op_free(struct op *op)
{
	free(op->deps);
	free(op);
}

static struct op *op_clone(const struct op *tmpl)
{
	struct op *op = op_new(tmpl->kind);

	*op = *tmpl;
	op->next = NULL;
	op->deps = NULL;
	op->ndeps = 0;
	op->seq = 0;
	return op;
}

static void graph_append(struct graph *g, struct op *op)
{
	op->next = NULL;
	if (g->tail)
		g->tail->next = op;
	else
		g->head = op;
	g->tail = op;
}

void stream_submit(struct stream *s, struct op *op, uint64_t *seq_out)
{
	int cap = op->ndeps;

	pthread_mutex_lock(&g_order_lock);
	if (s->capture) {
		/* captured ops carry no dependencies: they are ordered by the graph's stream */
		free(op->deps);
		op->deps = NULL;
		op->ndeps = 0;
		graph_append(s->capture, op);
		pthread_mutex_unlock(&g_order_lock);
		if (seq_out)
			*seq_out = 0;
		return;
	}
	if (s->is_legacy) {
		for (struct stream *t = g_streams; t; t = t->next_all)
			if (stream_blocks_legacy(t))
				dep_add_tail(&op->deps, &op->ndeps, &cap, t);
	} else if (stream_blocks_legacy(s)) {
		dep_add_tail(&op->deps, &op->ndeps, &cap, g_legacy);
	}
	pthread_mutex_lock(&s->mu);
	/* read before the unlock: once queued, the stream's worker may run and free op (found
	 * by the sanitizer build, tests/sanitize.sh: a heap-use-after-free under cudaMemcpy) */
	uint64_t seq = atomic_load(&s->enq_seq) + 1;
	op->seq = seq;
	atomic_store(&s->enq_seq, seq);
	op->next = NULL;
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	pthread_cond_signal(&s->work_cv);
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_unlock(&g_order_lock);
	if (seq_out)
		*seq_out = seq;
}

bool stream_is_capturing(struct stream *s)
{
	pthread_mutex_lock(&g_order_lock);
	bool capturing = s->capture != NULL;
	pthread_mutex_unlock(&g_order_lock);
	return capturing;
}

bool stream_begin_capture(struct stream *s)
{
	bool ok = false;

	pthread_mutex_lock(&g_order_lock);
	if (!s->is_legacy && !s->capture) {
		s->capture = graph_new();
		ok = true;
	}
	pthread_mutex_unlock(&g_order_lock);
	return ok;
}

struct graph *stream_end_capture(struct stream *s)
{
	pthread_mutex_lock(&g_order_lock);
	struct graph *g = s->capture;
	s->capture = NULL;
	pthread_mutex_unlock(&g_order_lock);
	if (g)
		handles_add(g);
	return g;
}

/* ------------------------------------------------------------------ running ops */

static void run_copy(struct op *op, struct stream *s)
{
	uint64_t start = now_ns();
	size_t bytes = op->copy.width * op->copy.height;
	const struct standin_cupti_hooks *cupti =
	    op->cupti_correlation ? atomic_load(&g_cupti) : NULL;
	uint64_t traced_start = cupti ? cupti->now() : 0;

	for (size_t row = 0; row < op->copy.height; row++)
		memmove(op->copy.dst + row * op->copy.dpitch, op->copy.src + row * op->copy.spitch,
			op->copy.width);
	/* a copy takes bytes / bandwidth of real time, so tests can measure blocking */
	sleep_until_ns(start + (uint64_t)((double)bytes / op->copy.bytes_per_ns));
	if (cupti) /* a MEMCPY record as CUPTI's (cupti_hooks.h) */
		cupti->copy(op->cupti_correlation, s->cupti_id, op->copy.cupti_kind,
			    op->copy.pageable, bytes, traced_start, cupti->now());
}

static void run_memset(struct op *op)
{
	uint64_t start = now_ns();
	size_t bytes = op->memset.width_elems * op->memset.elem_size * op->memset.height;

	for (size_t row = 0; row < op->memset.height; row++) {
		char *p = op->memset.dst + row * op->memset.pitch;
		switch (op->memset.elem_size) {
		case 1:
			memset(p, (int)(op->memset.value & 0xff), op->memset.width_elems);
			break;
		case 2:
			for (size_t i = 0; i < op->memset.width_elems; i++)
				((uint16_t *)p)[i] = (uint16_t)op->memset.value;
			break;
		default:
			for (size_t i = 0; i < op->memset.width_elems; i++)
				((uint32_t *)p)[i] = op->memset.value;
			break;
		}
	}
	sleep_until_ns(start + (uint64_t)((double)bytes / op->memset.bytes_per_ns));
}

/* Whether the word a wait reads satisfies it (cuda.h, CUstreamWaitValue_flags): GEQ compares
 * cyclically, as the device does, so a counter that wraps still passes. */
static bool value_reached(const struct op *op)
{
	uint64_t have = op->value.is64
			    ? __atomic_load_n((uint64_t *)op->value.addr, __ATOMIC_ACQUIRE)
			    : __atomic_load_n((uint32_t *)op->value.addr, __ATOMIC_ACQUIRE);
	uint64_t want = op->value.value;
	switch (op->value.flags & 0x3) {
	case CU_STREAM_WAIT_VALUE_EQ:
		return have == want;
	case CU_STREAM_WAIT_VALUE_AND:
		return (have & want) != 0;
	case CU_STREAM_WAIT_VALUE_NOR:
		return op->value.is64 ? ~(have | want) != 0 : (uint32_t) ~(have | want) != 0;
	default: /* CU_STREAM_WAIT_VALUE_GEQ */
		return op->value.is64 ? (int64_t)(have - want) >= 0
				      : (int32_t)(uint32_t)(have - want) >= 0;
	}
}

/* The stream waits (its worker polls) until another stream, the host or a peer writes the word. */
static void run_wait_value(struct op *op)
{
	while (!value_reached(op))
		sleep_until_ns(now_ns() + 20000);
}

static void run_write_value(struct op *op)
{
	if (op->value.is64)
		__atomic_store_n((uint64_t *)op->value.addr, op->value.value, __ATOMIC_RELEASE);
	else
		__atomic_store_n((uint32_t *)op->value.addr, (uint32_t)op->value.value,
				 __ATOMIC_RELEASE);
}

static void run_event_record(struct op *op)
{
	struct event *ev = op->record.ev;

	pthread_mutex_lock(&ev->mu);
	if (ev->gen == op->record.gen) {
		ev->time_ns = now_ns();
		ev->stamped = true;
	}
	pthread_mutex_unlock(&ev->mu);
	event_put(ev);
}

/* A kernel as CUPTI sees it: when it ran, named by its host function (cupti_hooks.h). */
static void run_traced_kernel(struct op *op, struct stream *s)
{
	const struct standin_cupti_hooks *cupti = atomic_load(&g_cupti);
	uint64_t start = cupti->now();
	op->call.fn(op->call.arg);
	uint64_t end = cupti->now();
	Dl_info info;
	const char *name = dladdr((void *)op->call.fn, &info) && info.dli_sname ? info.dli_sname
										: "standin_kernel";
	cupti->kernel(op->cupti_correlation, s->cupti_id, start, end, name);
}

static void op_run(struct op *op, struct stream *s)
{
	switch (op->kind) {
	case OP_CALL:
		if (op->cupti_correlation && atomic_load(&g_cupti))
			run_traced_kernel(op, s);
		else
			op->call.fn(op->call.arg);
		break;
	case OP_CALLBACK:
		op->callback.fn(op->callback.handle, CUDA_SUCCESS, op->callback.user);
		break;
	case OP_COPY:
		run_copy(op, s);
		break;
	case OP_MEMSET:
		run_memset(op);
		break;
	case OP_EVENT_RECORD:
		run_event_record(op);
		break;
	case OP_BARRIER:
		break;
	case OP_FREE: {
		struct mem_range r;
		if (mem_remove(op->free.ptr, &r) && r.owned)
			free(op->free.ptr);
		break;
	}
	case OP_WAIT_VALUE:
		run_wait_value(op);
		break;
	case OP_WRITE_VALUE:
		run_write_value(op);
		break;
	}
}

static void *stream_worker(void *arg)
{
	struct stream *s = arg;

	for (;;) {
		pthread_mutex_lock(&s->mu);
		while (!s->head && !s->retiring)
			pthread_cond_wait(&s->work_cv, &s->mu);
		struct op *op = s->head;
		if (!op) {
			pthread_mutex_unlock(&s->mu);
			break;
		}
		s->head = op->next;
		if (!s->head)
			s->tail = NULL;
		pthread_mutex_unlock(&s->mu);

		for (int i = 0; i < op->ndeps; i++)
			stream_wait_reached(op->deps[i].stream, op->deps[i].seq);
		op_run(op, s);

		pthread_mutex_lock(&s->mu);
		atomic_store(&s->done_seq, op->seq);
		pthread_cond_broadcast(&s->done_cv);
		pthread_mutex_unlock(&s->mu);
		op_free(op);
	}

	/* retired and drained: leave the list of streams (the struct stays, E-KEEP) */
	pthread_mutex_lock(&g_order_lock);
	for (struct stream **pp = &g_streams; *pp; pp = &(*pp)->next_all) {
		if (*pp == s) {
			*pp = s->next_all;
			break;
		}
	}
	pthread_mutex_unlock(&g_order_lock);
	return NULL;
}

/* ================================================================== events */

struct event *event_create(unsigned flags)
{
	struct event *ev = xcalloc(1, sizeof(*ev));

	ev->magic = MAGIC_EVENT;
	pthread_mutex_init(&ev->mu, NULL);
	ev->flags = flags;
	atomic_init(&ev->refs, 1);
	handles_add(ev);
	return ev;
}

void event_put(struct event *ev)
{
	if (atomic_fetch_sub(&ev->refs, 1) == 1) {
		pthread_mutex_destroy(&ev->mu);
		ev->magic = 0;
		free(ev);
	}
}

/* ================================================================== graphs */

struct graph *graph_new(void)
{
	struct graph *g = xcalloc(1, sizeof(*g));

	g->magic = MAGIC_GRAPH;
	return g;
}

static void op_list_free(struct op *op)
{
	while (op) {
		struct op *next = op->next;
		op_free(op);
		op = next;
	}
}

void graph_free(struct graph *g)
{
	handles_remove(g);
	op_list_free(g->head);
	g->magic = 0;
	free(g);
}

struct graph_exec *graph_instantiate(const struct graph *g)
{
	struct graph_exec *x = xcalloc(1, sizeof(*x));
	struct op **tail = &x->head;

	x->magic = MAGIC_GRAPH_EXEC;
	pthread_mutex_init(&x->mu, NULL);
	for (const struct op *op = g->head; op; op = op->next) {
		*tail = op_clone(op);
		tail = &(*tail)->next;
	}
	handles_add(x);
	return x;
}

void graph_exec_free(struct graph_exec *x)
{
	handles_remove(x);
	op_list_free(x->head);
	pthread_mutex_destroy(&x->mu);
	x->magic = 0;
	free(x);
}

CUresult graph_launch(struct graph_exec *x, struct stream *s, uint32_t correlation)
{
	uint64_t seq = 0;

	pthread_mutex_lock(&x->mu);
	if (x->last.stream && x->last.stream != s && !stream_is_capturing(s)) {
		struct op *wait = op_new(OP_BARRIER); /* E-GRAPH */

		wait->deps = xcalloc(1, sizeof(*wait->deps));
		wait->deps[0] = x->last;
		wait->ndeps = 1;
		stream_submit(s, wait, NULL);
	}
	for (const struct op *op = x->head; op; op = op->next) {
		struct op *run = op_clone(op);

		if (run->cupti_correlation) /* a kernel traced at capture: this launch's now */
			run->cupti_correlation = correlation ? correlation : run->cupti_correlation;
		stream_submit(s, run, &seq);
	}
	if (seq)
		x->last = (struct dep){.stream = s, .seq = seq};
	pthread_mutex_unlock(&x->mu);
	return CUDA_SUCCESS;
}

/* ================================================================== copies and memsets */

CUresult engine_copy(struct stream *s, void *dst, size_t dpitch, const void *src, size_t spitch,
		     size_t width, size_t height, enum copy_dir dir, bool async)
{
	if (!dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	if (width == 0 || height == 0)
		return CUDA_SUCCESS;
	if (height > 1 && (dpitch < width || spitch < width))
		return CUDA_ERROR_INVALID_VALUE;

	enum mem_kind dkind = mem_kind_of(dst), skind = mem_kind_of(src);
	if (dir == DIR_INFER) {
		bool d_dev = mem_is_device_side(dkind), s_dev = mem_is_device_side(skind);
		dir = s_dev ? (d_dev ? DIR_DTOD : DIR_DTOH) : (d_dev ? DIR_HTOD : DIR_HTOH);
	}
	/* pageable host side: the real driver stages through a bounce buffer, slowly, and the
	 * host waits for it (S5 in docs/sync-model.md) */
	bool pageable = false;
	if (dir == DIR_HTOD)
		pageable = skind == MEM_PAGEABLE;
	else if (dir == DIR_DTOH)
		pageable = dkind == MEM_PAGEABLE;
	else if (dir == DIR_HTOH)
		pageable = skind == MEM_PAGEABLE || dkind == MEM_PAGEABLE;

	struct op *op = op_new(OP_COPY);
	op->copy.dst = dst;
	op->copy.src = src;
	op->copy.width = width;
	op->copy.height = height;
	op->copy.dpitch = height > 1 ? dpitch : width;
	op->copy.spitch = height > 1 ? spitch : width;
	op->copy.bytes_per_ns = g_copy_bytes_per_ns / (pageable ? PAGEABLE_SLOWDOWN : 1.0);
	op->copy.pageable = pageable;
	/* CUpti_ActivityMemcpyKind: HTOD 1, DTOH 2, DTOD 8, HTOH 10 */
	op->copy.cupti_kind = dir == DIR_HTOD ? 1 : dir == DIR_DTOH ? 2 : dir == DIR_DTOD ? 8 : 10;
	const struct standin_cupti_hooks *cupti = atomic_load(&g_cupti);
	if (cupti && cupti->copies_traced())
		op->cupti_correlation = cupti->api_begin();

	uint64_t seq;
	stream_submit(s, op, &seq);
	/* host to host: "fully synchronous with respect to the host", async or not (S4) */
	if (seq && (!async || pageable || dir == DIR_HTOH))
		stream_wait_reached(s, seq);
	return CUDA_SUCCESS;
}

CUresult engine_memset(struct stream *s, void *dst, size_t pitch, uint32_t value,
		       unsigned elem_size, size_t width_elems, size_t height, bool async)
{
	if (!dst)
		return CUDA_ERROR_INVALID_VALUE;
	if ((uintptr_t)dst % elem_size != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (width_elems == 0 || height == 0)
		return CUDA_SUCCESS;
	if (height > 1 && pitch < width_elems * elem_size)
		return CUDA_ERROR_INVALID_VALUE;

	enum mem_kind kind = mem_kind_of(dst);
	struct op *op = op_new(OP_MEMSET);
	op->memset.dst = dst;
	op->memset.value = value;
	op->memset.elem_size = elem_size;
	op->memset.width_elems = width_elems;
	op->memset.height = height;
	op->memset.pitch = height > 1 ? pitch : width_elems * elem_size;
	op->memset.bytes_per_ns = g_copy_bytes_per_ns;

	uint64_t seq;
	stream_submit(s, op, &seq);
	/* a synchronous memset of host-visible memory returns after completion (S6) */
	if (seq && !async && (kind == MEM_PINNED || kind == MEM_MANAGED))
		stream_wait_reached(s, seq);
	return CUDA_SUCCESS;
}

CUresult engine_value_op(struct stream *s, enum op_kind kind, CUdeviceptr addr, uint64_t value,
			 unsigned flags, bool is64)
{
	void *p = (void *)(uintptr_t)addr;
	size_t size = is64 ? 8 : 4;
	struct mem_range r;

	if (!p || (uintptr_t)p % size != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!mem_lookup(p, &r) || (uintptr_t)p + size > r.base + r.size)
		return CUDA_ERROR_INVALID_VALUE; /* not memory the device can reach */
	struct op *op = op_new(kind);
	op->value.addr = p;
	op->value.value = is64 ? value : (uint32_t)value;
	op->value.flags = flags;
	op->value.is64 = is64;
	stream_submit(s, op, NULL);
	return CUDA_SUCCESS;
}
