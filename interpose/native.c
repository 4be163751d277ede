/*
 * interpose/native.c: the native call stack of a sync point (S1-S6), through libunwind.
 *
 * libunwind.so.8 exports _Unwind_* and backtrace: linked into the preload library it would take
 * over C++ exception unwinding for the whole process (docs/architecture.md F7). It is dlopen()ed
 * RTLD_LOCAL instead, by the first sync point, and only unw_backtrace is used. Without it
 * (meta.native_stacks says why) sync points simply carry no native stack.
 *
 * A stack travels to the writer as a record of its own (SS_REC_NATIVE_STACK) right behind the
 * call's record: aux its hash; obj a malloc'd copy of the return addresses the first time this
 * thread sees the hash (stream: how many), NULL when the thread sent it before (the writer
 * knows it by hash). The writer turns addresses into "symbol+0xoff (module)" lines.
 *
 * Two unwinders, chosen per call site: unw_backtrace walks a stack of ordinary frames from
 * its per-thread cache at some 20 ns a frame, but one frame it cannot classify (a CFA given by
 * a DWARF expression, as realigned frames in torch's libraries have) sends the whole stack
 * through unw_step, which validates memory with a system call or two per frame: 2.7 us a frame
 * on the development machine (tests/progs/cfa_expression.c).
 * libgcc's _Unwind_Backtrace (libgcc_s.so.1, glibc's backtrace) takes some 100-200 ns a frame
 * whatever the frames. So the first stacks a thread takes at a call site, along one path to it,
 * are taken with both, timed, and the site keeps the faster for that path
 * (meta.native_stacks_libgcc_sites counts the choices of libgcc's).
 *
 * Also here: the site of a driver enqueue made through a static runtime or an nvcc stub, whose
 * path to the user's frame is walked once and read from the stack afterwards (below).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#include "clock.h"
#include "driver.h"
#include "elfsyms.h"
#include "env.h"
#include "dynsyms.h"
#include "native.h"
#include "python.h"
#include "resolve.h"
#include "ring.h"
#include "shim.h"
#include "sites.h"

#define MAX_FRAMES   128
#define SEEN_PER_TLS 64 /* hashes a thread remembers having sent */

static int (*backtrace_fn)(void **, int); /* libunwind's unw_backtrace */
/* libgcc's unwinder, when libgcc_s.so.1 is there (every C++ program has it loaded) */
static _Unwind_Reason_Code (*gcc_backtrace)(_Unwind_Trace_Fn, void *);
static _Unwind_Ptr (*gcc_get_ip)(struct _Unwind_Context *);
static _Unwind_Word (*gcc_get_cfa)(struct _Unwind_Context *);
_Atomic unsigned ss_native_libgcc_sites;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
/* Set once by load_unwinder, on whichever thread walks first; read by the writer thread. */
const char *_Atomic ss_native_stacks_status = "not tried";

/* The shim's own code, [own_lo, own_hi): the frames a stack starts with inside it (the
 * wrapper, the stack functions) are dropped, however the compiler inlined them. */
static uintptr_t own_lo, own_hi;

_Atomic uint64_t ss_enqueue_path_walks, ss_enqueue_path_ticks, ss_enqueue_path_lookups;

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
	void *libgcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (!libgcc)
		libgcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
	if (libgcc) {
		*(void **)&gcc_backtrace = ss_dlsym(libgcc, "_Unwind_Backtrace");
		*(void **)&gcc_get_ip = ss_dlsym(libgcc, "_Unwind_GetIP");
		*(void **)&gcc_get_cfa = ss_dlsym(libgcc, "_Unwind_GetCFA");
		if (!gcc_get_ip)
			gcc_backtrace = NULL;
	}
	ss_native_stacks_status =
	    backtrace_fn ? "libunwind" : "off: libunwind.so.8 has no unw_backtrace";
}

static __thread uint64_t seen[SEEN_PER_TLS] __attribute__((tls_model("initial-exec")));

struct gcc_walk {
	void **frames;
	int n, max;
};

static _Unwind_Reason_Code gcc_frame(struct _Unwind_Context *context, void *arg)
{
	struct gcc_walk *walk = arg;
	_Unwind_Ptr ip = gcc_get_ip(context);
	if (walk->n >= walk->max || ip == 0) /* 0: past the outermost frame (_start's caller) */
		return _URC_END_OF_STACK;
	walk->frames[walk->n++] = (void *)ip;
	return _URC_NO_REASON;
}

static int gcc_unwind(void **frames, int max)
{
	struct gcc_walk walk = {frames, 0, max};
	gcc_backtrace(gcc_frame, &walk);
	return walk.n;
}

/* Which unwinder a call site (and path to it) uses, per thread: learnt from its first stacks
 * (see the top). */
#define SITES_PER_TLS 32 /* small: initial-exec TLS is taken from every thread's static block */
#define TRIALS	      4	 /* stacks timed with each unwinder, after one to warm it */
enum { UNWINDER_TRIAL, UNWINDER_LIBUNWIND, UNWINDER_LIBGCC };
static __thread struct site_unwinder {
	uint64_t caller;
	uint32_t ticks[2]; /* libunwind's, libgcc's fastest trial (0: none yet) */
	uint8_t unwinder, trials;
} site_unwinders[SITES_PER_TLS] __attribute__((tls_model("initial-exec")));

/* Up to MAX return addresses of the calling thread, innermost first, with the unwinder that
 * CALLER (the call site) is known to walk faster. Its first stacks are the trials: one to warm
 * libunwind's caches for those frames, TRIALS timed, then the same with libgcc's (whose first
 * call also binds its functions); then the faster one only. One unwinder at a time: run back
 * to back, each evicts the other's cache lines and both look slow. */
static int unwind(void **frames, int max, uint64_t caller)
{
	if (!gcc_backtrace)
		return backtrace_fn(frames, max);
	/* A call site reached along several paths (a framework's sync helper) gets a choice per
	 * path: the stack pointer tells the paths apart, and is the same each time along one. */
	caller ^= (uint64_t)(uintptr_t)__builtin_frame_address(0) * 0x9e3779b97f4a7c15ull;
	struct site_unwinder *site = &site_unwinders[(caller >> 7) % SITES_PER_TLS];
	if (site->caller != caller)
		*site = (struct site_unwinder){.caller = caller, .unwinder = UNWINDER_TRIAL};
	if (site->unwinder == UNWINDER_LIBUNWIND)
		return backtrace_fn(frames, max);
	if (site->unwinder == UNWINDER_LIBGCC)
		return gcc_unwind(frames, max);
	int trial = site->trials++, libgcc = trial > TRIALS; /* 0..TRIALS: libunwind's */
	uint64_t start = ss_now();
	int n = libgcc ? gcc_unwind(frames, max) : backtrace_fn(frames, max);
	uint64_t took = ss_now() - start;
	if (took >= UINT32_MAX)
		took = UINT32_MAX - 1;
	if (trial % (TRIALS + 1) != 0 && (!site->ticks[libgcc] || took < site->ticks[libgcc]))
		site->ticks[libgcc] = (uint32_t)took; /* the fastest: one preempted counts not */
	if (trial == 2 * TRIALS + 1) {
		site->unwinder =
		    site->ticks[1] < site->ticks[0] ? UNWINDER_LIBGCC : UNWINDER_LIBUNWIND;
		if (site->unwinder == UNWINDER_LIBGCC)
			atomic_fetch_add_explicit(&ss_native_libgcc_sites, 1, memory_order_relaxed);
	}
	return n;
}

/* The calling thread's native stack, pushed behind its sync point's record; the unwinder is
 * loaded and the depth and ring checked by the caller (ss_stacks_attach). Returns 1 when the
 * thread had sent this stack before (a sync point repeating itself). */
static int native_attach(struct ss_tls *tls, uint64_t caller)
{
	int depth = (int)ss_config.SYNCSPY_STACK_DEPTH;
	if (!backtrace_fn)
		return 0;
	void *frames[MAX_FRAMES];
	if (depth > MAX_FRAMES)
		depth = MAX_FRAMES;
	/* The first frames are the shim's own (the wrapper, the stack functions): up to 4,
	 * dropped below, so that DEPTH frames of the program's remain. */
	int n = unwind(frames, depth + 4 < MAX_FRAMES ? depth + 4 : MAX_FRAMES, caller);
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
void ss_stacks_attach(struct ss_tls *tls, uint64_t caller)
{
	struct ss_ring *ring = tls->ring;
	if (ss_config.SYNCSPY_STACK_DEPTH <= 0 || !ring)
		return;
	int saved_errno = errno;
	pthread_once(&load_once, load_unwinder); /* once per process: not a sync point's cost */
	uint64_t start = ss_now();
	int repeated = native_attach(tls, caller);
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

/* ------------------------------------------------------------------ the site of an enqueue */

/* An enqueue's site is the return address its wrapper was called with, unless that lies in a
 * CUDA runtime linked into the program (nvcc's default) or in an nvcc kernel stub: then the
 * user's line is a few frames further out. Unwinding there at every launch would cost some
 * 100 ns a frame; instead the path is learnt once: the first time a thread's driver wrapper is
 * called from CALLER with its return address at SLOT (one depth of stack), libgcc's unwinder
 * walks out to the first frame of user code, and the path keeps where that frame's return
 * address lies (as a distance from SLOT) and the return addresses of the frames between, which
 * fix the frames' sizes. Each later call with that CALLER and SLOT compares those few stack
 * words and reads the user's return address where it lies: a handful of loads. Another path
 * to the same depth (another kernel's stub, another runtime function) fails a comparison and
 * is learnt in its turn. x86-64's frames (the return address at CFA - 8) only; elsewhere the
 * site stays CALLER. */
#define PATH_FRAMES 12 /* runtime and stub frames walked past, at most */
/* NATIVE-1: a thread's paths are looked up among all it learnt, not in a slot chosen by a hash.
 * With 8 slots indexed by a hash of (CALLER, SLOT), two of a loop's paths that shared a slot
 * (a matter of where the stack was placed: one process in two on the H200) evicted each other
 * at every call, and each walked again: a torch step's cuBLAS launches came through cuBLAS's
 * static runtime from 3 or 4 paths per thread, and the step took ten times as long (session
 * 7's bench, tests/gpu/results/2026-12-04-h200-session7). Now any PATHS_PER_TLS paths stay
 * learnt, whatever their addresses; the lookup starts after the last path found, since a loop
 * comes back along its paths in the order they were learnt (t223). */
#define PATHS_PER_TLS 32
static __thread struct enqueue_path {
	uint64_t caller;
	const uint64_t *slot;
	uint64_t check_value[PATH_FRAMES];
	int16_t check_at[PATH_FRAMES]; /* in words from slot */
	int16_t user;		       /* in words from slot; 0: the site is CALLER */
	uint8_t checks;
} enqueue_paths[PATHS_PER_TLS] __attribute__((tls_model("initial-exec")));
/* the paths learnt (up to PATHS_PER_TLS), the one found last, the next to go once all are */
static __thread unsigned paths_used, path_last,
    path_victim __attribute__((tls_model("initial-exec")));

/* NATIVE-2: whether a return address is in the user's code is decided once per address, for
 * the process, from its module (module_of: the loader's lookup, not dladdr, which also scans
 * the module's whole dynamic symbol table for the nearest symbol: libtorch's hold hundreds of
 * thousands, and the frames a cuBLAS launch walks past cost hundreds of microseconds each).
 * The verdicts are forgotten when a module was unloaded (the loader's count of unloads, read
 * at each walk), since another may take its addresses. Open addressing, lock-free: IP << 2 |
 * verdict in a cell, 0 for an empty one. */
#define VERDICTS       4096 /* a power of two: 32 KiB */
#define VERDICT_PROBES 8
static _Atomic uint64_t verdicts[VERDICTS];
static _Atomic unsigned long long verdicts_unloads;

static int count_unloads(struct dl_phdr_info *info, size_t size, void *data)
{
	*(unsigned long long *)data =
	    size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)
		? info->dlpi_subs
		: 0;
	return 1; /* the first module says it for all */
}

unsigned long long ss_module_unloads(void)
{
	unsigned long long unloads = 0;
	dl_iterate_phdr(count_unloads, &unloads);
	return unloads;
}

#if defined(__x86_64__)
/* Is IP (a return address) in the user's code: not the shim, not a module of CUDA or a
 * framework, not a function of a static runtime, not an nvcc stub? */
/* A frame's verdict: USER_CODE, NOT_USER, or LIBRARY_CODE (Thrust or CUB compiled into the
 * user's module, ELFSYMS-1: the site when no frame of the user's own is near). */
enum { NOT_USER = 0, USER_CODE = 1, LIBRARY_CODE = 2 };

/* glibc 2.35's lookup of the module holding an address: a binary search over the loaded
 * modules, lock-free, no symbol scanned (weak: an older glibc has none, and dladdr does) */
extern int _dl_find_object(void *address, struct dl_find_object *result) __attribute__((weak));

/* NATIVE-2: the file and load address of the module holding LOOKUP, as dladdr gives them
 * (dli_fname, dli_fbase), without dladdr's nearest-symbol scan: on the H200 the first walks of
 * a PyTorch program's launch paths took 250-410 ms of its threads' time, 0.6 ms a frame looked
 * up (meta.enqueue_path_walk_ns and _lookups of the corpus traces), the symbol scan the likely
 * cause (not profiled: the next device session measures the walks again). The main program's
 * link map has no name: dladdr names it by argv[0], as here. */
static int module_of(uintptr_t lookup, const char **path, uintptr_t *base)
{
	struct dl_find_object found;
	if (_dl_find_object && _dl_find_object((void *)lookup, &found) == 0 &&
	    found.dlfo_link_map) {
		const char *name = found.dlfo_link_map->l_name;
		*path = name && *name ? name : program_invocation_name;
		*base = (uintptr_t)found.dlfo_map_start;
		return *path != NULL;
	}
	Dl_info info;
	if (!dladdr((void *)lookup, &info) || !info.dli_fname)
		return 0;
	*path = info.dli_fname;
	*base = (uintptr_t)info.dli_fbase;
	return 1;
}

static int module_user_code(uintptr_t lookup)
{
	const char *path;
	uintptr_t base;
	atomic_fetch_add_explicit(&ss_enqueue_path_lookups, 1, memory_order_relaxed);
	if (!module_of(lookup, &path, &base))
		return USER_CODE; /* code of no module (generated): the program's own */
	if (ss_framework_module(path))
		return NOT_USER;
	switch (ss_static_runtime_frame(path, base, lookup)) {
	case 0:
		return USER_CODE;
	case SS_FRAME_LIBRARY:
		return LIBRARY_CODE;
	default:
		return NOT_USER;
	}
}

static int user_code(uintptr_t ip)
{
	uintptr_t lookup = ip - 1; /* inside the call */
	if (lookup >= own_lo && lookup < own_hi)
		return NOT_USER;
	size_t home = (size_t)(((uint64_t)ip * 0x9e3779b97f4a7c15ull) >> 52); /* 12 bits */
	for (size_t i = 0; i < VERDICT_PROBES; i++) {
		uint64_t cell =
		    atomic_load_explicit(&verdicts[(home + i) % VERDICTS], memory_order_relaxed);
		if (cell == 0)
			break;
		if (cell >> 2 == ip)
			return (int)(cell & 3);
	}
	int user = module_user_code(lookup);
	uint64_t want = (uint64_t)ip << 2 | (uint64_t)user;
	for (size_t i = 0; i < VERDICT_PROBES; i++) { /* full: asked again next time */
		uint64_t expected = 0;
		if (atomic_compare_exchange_strong_explicit(&verdicts[(home + i) % VERDICTS],
							    &expected, want, memory_order_relaxed,
							    memory_order_relaxed) ||
		    expected == want)
			break;
	}
	return user;
}

/* NATIVE-2's verdicts hold while no module was unloaded since they were made. */
static void verdicts_check_unloads(void)
{
	unsigned long long unloads = ss_module_unloads();
	if (unloads != atomic_load_explicit(&verdicts_unloads, memory_order_relaxed)) {
		for (size_t i = 0; i < VERDICTS; i++)
			atomic_store_explicit(&verdicts[i], 0, memory_order_relaxed);
		atomic_store_explicit(&verdicts_unloads, unloads, memory_order_relaxed);
	}
}

struct path_walk {
	struct enqueue_path *path;
	int found, done, skipped;
	int16_t library; /* the first LIBRARY_CODE frame, in words from slot; 0: none */
};

/* libgcc calls this for each frame, innermost first, before it steps past the frame: the CFA
 * it answers then is the CFA of the frame called from this one, where the return address into
 * this one lies just below (x86-64). That is checked, not assumed. */
static _Unwind_Reason_Code path_frame(struct _Unwind_Context *context, void *arg)
{
	struct path_walk *walk = arg;
	struct enqueue_path *path = walk->path;
	uint64_t ip = (uint64_t)gcc_get_ip(context);
	const uint64_t *ip_slot = (const uint64_t *)(uintptr_t)(gcc_get_cfa(context) - 8);
	if (ip == 0)
		return _URC_END_OF_STACK;
	if (!walk->found) { /* the shim's own frames, up to the caller of the wrapper */
		if (ip_slot != path->slot)
			return ++walk->skipped > 16 ? _URC_END_OF_STACK : _URC_NO_REASON;
		walk->found = 1;
	}
	if (*ip_slot != ip) /* frames not laid out as assumed: keep CALLER */
		return _URC_END_OF_STACK;
	int verdict = user_code(ip);
	if (verdict == USER_CODE) {
		path->user = (int16_t)(ip_slot - path->slot);
		walk->done = 1;
		return _URC_END_OF_STACK;
	}
	if (verdict == LIBRARY_CODE && !walk->library && ip_slot != path->slot &&
	    ip_slot - path->slot <= INT16_MAX)
		walk->library = (int16_t)(ip_slot - path->slot);
	if (ip_slot != path->slot) {
		if (path->checks == PATH_FRAMES || ip_slot - path->slot > INT16_MAX)
			return _URC_END_OF_STACK;
		path->check_at[path->checks] = (int16_t)(ip_slot - path->slot);
		path->check_value[path->checks++] = ip;
	}
	return _URC_NO_REASON;
}

/* The first call along a path: walk it (errno kept: dladdr, the symbol tables' first read). */
__attribute__((noinline, cold)) static uint64_t learn_path(struct enqueue_path *path,
							   uint64_t caller, const uint64_t *slot)
{
	int saved_errno = errno;
	uint64_t start = ss_now();
	pthread_once(&load_once, load_unwinder);
	*path = (struct enqueue_path){.caller = caller, .slot = slot};
	if (gcc_backtrace && gcc_get_cfa) {
		verdicts_check_unloads();
		struct path_walk walk = {.path = path};
		gcc_backtrace(path_frame, &walk);
		if (!walk.done && walk.library) /* ELFSYMS-1: Thrust's or CUB's frame, checked */
			path->user = walk.library;
		else if (!walk.done) /* no user frame near: the site stays CALLER, costs no walk */
			path->user = 0, path->checks = 0;
	}
	atomic_fetch_add_explicit(&ss_enqueue_path_walks, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&ss_enqueue_path_ticks, ss_now() - start, memory_order_relaxed);
	errno = saved_errno;
	return path->user ? slot[path->user] : caller;
}
#endif

uint64_t ss_enqueue_site(uint64_t caller, const uint64_t *slot)
{
#if defined(__x86_64__)
	if (ss_unlikely(*slot != caller)) /* not the frame layout assumed */
		return caller;
	/* NATIVE-1: from the path after the last one found, among those learnt */
	unsigned used = paths_used, at = used ? (path_last + 1) % used : 0;
	for (unsigned n = 0; n < used; n++, at = (at + 1) % used) {
		const struct enqueue_path *path = &enqueue_paths[at];
		if (path->caller != caller || path->slot != slot)
			continue;
		int i = 0;
		while (i < path->checks && slot[path->check_at[i]] == path->check_value[i])
			i++;
		if (ss_likely(i == path->checks)) {
			path_last = at;
			return path->user ? slot[path->user] : caller;
		}
	}
	if (used < PATHS_PER_TLS) {
		at = paths_used++;
	} else { /* all taken: the one learnt longest ago goes */
		at = path_victim;
		path_victim = (at + 1) % PATHS_PER_TLS;
	}
	path_last = at;
	return learn_path(&enqueue_paths[at], caller, slot);
#else
	(void)slot;
	return caller;
#endif
}

void ss_native_fork_child(void)
{
	memset(seen, 0, sizeof(seen)); /* the child's writer knows none of them */
	ss_elfsyms_fork_child();
	atomic_store(&ss_native_libgcc_sites, 0);
}
