/*
 * interpose/native.c: the native call stack of a sync point (S1-S6), through libunwind.
 *
 * libunwind.so.8 exports _Unwind_* and backtrace: linked into the preload library it would take
 * over C++ exception unwinding for the whole process (DESIGN.md section 4). It is dlopen()ed
 * RTLD_LOCAL instead, by the first sync point, and only unw_backtrace is used. Without it
 * (meta.native_stacks says why) sync points simply carry no native stack.
 *
 * A stack travels to the writer as a record of its own (SS_REC_NATIVE_STACK) right behind the
 * call's record: aux its hash; obj a malloc'd copy of the return addresses the first time this
 * thread sees the hash (stream: how many), NULL when the thread sent it before (the writer
 * knows it by hash). The writer turns addresses into "symbol+0xoff (module)" lines.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ring.h"
#include "shim.h"

void *ss_dlsym(void *handle, const char *name); /* driver.c */

#define MAX_FRAMES   128
#define SEEN_PER_TLS 64 /* hashes a thread remembers having sent */

static int (*backtrace_fn)(void **, int);
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
const char *ss_native_stacks_status = "not tried";

/* The shim's own code, [own_lo, own_hi): the frames a stack starts with inside it (the
 * wrapper, the stack functions) are dropped, however the compiler inlined them. */
static uintptr_t own_lo, own_hi;

static int find_own_range(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (info->dlpi_addr != (uintptr_t)data)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X)) {
			uintptr_t lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
			uintptr_t hi = lo + info->dlpi_phdr[i].p_memsz;
			own_lo = own_lo && own_lo < lo ? own_lo : lo;
			own_hi = own_hi > hi ? own_hi : hi;
		}
	return 1;
}

static void load_unwinder(void)
{
	Dl_info self;
	if (dladdr((void *)load_unwinder, &self) && self.dli_fbase)
		dl_iterate_phdr(find_own_range, self.dli_fbase);
	void *library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (!library) {
		ss_native_stacks_status = "off: libunwind.so.8 not found";
		return;
	}
	backtrace_fn = (int (*)(void **, int))ss_dlsym(library, "unw_backtrace");
	ss_native_stacks_status =
	    backtrace_fn ? "libunwind" : "off: libunwind.so.8 has no unw_backtrace";
}

static __thread uint64_t seen[SEEN_PER_TLS] __attribute__((tls_model("initial-exec")));

/* The calling thread's native stack, pushed behind its sync point's record; the unwinder is
 * loaded and the depth and ring checked by the caller (ss_stacks_attach). Returns 1 when the
 * thread had sent this stack before (a sync point repeating itself). */
static int native_attach(struct ss_tls *tls)
{
	int depth = (int)ss_config.SYNCSPY_STACK_DEPTH;
	if (!backtrace_fn)
		return 0;
	void *frames[MAX_FRAMES];
	if (depth > MAX_FRAMES)
		depth = MAX_FRAMES;
	/* The first frames are the shim's own (the wrapper, the stack functions): up to 4,
	 * dropped below, so that DEPTH frames of the program's remain. */
	int n = backtrace_fn(frames, depth + 4 < MAX_FRAMES ? depth + 4 : MAX_FRAMES);
	int own = 0;
	while (own < n && (uintptr_t)frames[own] >= own_lo && (uintptr_t)frames[own] < own_hi)
		own++;
	if (own == 0 && n > 2) /* no range known: the two frames it has always been */
		own = 2;
	if (n - own > depth)
		n = own + depth;
	if (n <= own)
		return 0;
	void **user = frames + own;
	n -= own;
	uint64_t hash = ss_hash64(user, (size_t)n * sizeof(void *)) | 1;
	struct ss_rec rec = {.api = SS_REC_NATIVE_STACK, .aux = hash, .stream = (uint64_t)n};
	uint64_t *slot = &seen[hash % SEEN_PER_TLS];
	void *copy = NULL;
	if (*slot != hash) {
		copy = malloc((size_t)n * sizeof(void *));
		if (!copy)
			return 0;
		memcpy(copy, user, (size_t)n * sizeof(void *));
		rec.obj = (uintptr_t)copy;
	}
	if (ss_ring_push(tls->ring, &rec))
		*slot = hash;
	else
		free(copy); /* counted as dropped (SHIM-5) */
	return copy == NULL;
}

/* The stacks of a sync point, native then Python, with the time they took counted on the
 * thread's ring: meta.stack_cost_*_ns say what stacks cost the program (bench/stack_cost.sh
 * reads them beside its own A/B timing). Deferred Python frames add their time in python.c.
 * SHIM-2: loading the unwinder (dlopen searches paths) and the allocation may set errno. */
void ss_stacks_attach(struct ss_tls *tls)
{
	struct ss_ring *ring = tls->ring;
	if (ss_config.SYNCSPY_STACK_DEPTH <= 0 || !ring)
		return;
	int saved_errno = errno;
	pthread_once(&load_once, load_unwinder); /* once per process: not a sync point's cost */
	uint64_t start = ss_now();
	int repeated = native_attach(tls);
	uint64_t native_end = ss_now();
	errno = saved_errno;
	ss_python_attach(tls);
	uint64_t end = ss_now();
	atomic_fetch_add_explicit(&ring->stack_ticks[0], native_end - start, memory_order_relaxed);
	atomic_fetch_add_explicit(&ring->stack_ticks[1], end - native_end, memory_order_relaxed);
	atomic_fetch_add_explicit(&ring->stacks_taken, 1, memory_order_relaxed);
	if (repeated) { /* the steady state of a sync point in a loop */
		atomic_fetch_add_explicit(&ring->stack_ticks_repeated, end - start,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&ring->stacks_repeated, 1, memory_order_relaxed);
	}
}

void ss_native_fork_child(void)
{
	memset(seen, 0, sizeof(seen)); /* the child's writer knows none of them */
}
