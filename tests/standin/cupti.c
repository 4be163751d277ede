/* SPDX-License-Identifier: MIT */
/*
 * cupti.c: a CPU stand-in for libcupti.so.13's activity API, as much of it as syncspy uses.
 *
 * It lets the shim's CUPTI module (cupti/cupti.c) run end to end in CI: records are made from
 * what the libcuda.so.1 stand-in reports through cupti_hooks.h (launches and the kernels they
 * ran, copies as they ran with STANDIN_CUPTI_COPIES=1, stream and context syncs), written into
 * buffers the client asked for, and handed back when full or flushed, on the calling thread (the
 * real CUPTI uses a thread of its own). Kinds are enabled and disabled as in CUPTI, API records
 * per callback id too, and a kernel or copy is recorded when CONCURRENT_KERNEL or MEMCPY was on
 * at its enqueue. Built into tests/standin/cupti/, apart
 * from the other stand-ins, so that only the tests that put that directory first in the
 * library path get it.
 *
 * The callback API as far as detaching needs it (CUPTI-8 in cupti/cupti.c): one subscriber at
 * a time (cuptiSubscribe, cuptiSubscribe_v2: else CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED),
 * cuptiEnableDomain for the driver and runtime domains and cuptiEnableCallback for one function
 * (CUPTI-11), called at the entry and exit of the driver calls libcuda reports (launches, stream
 * and context syncs: driver domain, a CUpti_CallbackData with callbackSite CUPTI_API_ENTER or
 * CUPTI_API_EXIT and the call's correlation id), cuptiUnsubscribe; and
 * cuptiFinalize, which drops all of CUPTI's state (kinds, per-function settings, the activity
 * and timestamp callbacks, the subscriber, records not yet flushed: counted as lost; correlation
 * ids start from 1 again) until a client registers and enables again. Any API call after it
 * attaches CUPTI again, as the real one's lazy initialization does (counted).
 *
 * STANDIN_CUPTI_REPORT=FILE: at exit, what it saw, a "name value" line each: launches, launches
 * made while instrumented (a kind enabled since the last cuptiFinalize), finalizes, attaches
 * after one, records lost, records handed over incomplete, finalizes made while another thread
 * was inside a reported driver call (finalize_races: where the real CUPTI crashed, CUPTI-10),
 * API records made (api_records) and callbacks made (correlation_callbacks).
 *
 * At exit it is torn down by an exit handler it registers (atexit) when a client first registers
 * its buffer callbacks; a call of any of its API functions after that aborts the process with a
 * message, as the real one crashed on the H100 (SIGSEGV in cuptiActivityDisable, called from an
 * exit handler of cuBLASLt after CUPTI's own: CUPTI-14 in cupti/cupti.c).
 *
 * A forced flush (cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)) hands over the records
 * of kernels traced and not finished with start and end 0, once, as the real CUPTI does with
 * unfinished work (its corpus traces held such rows: report/db.h, SS_GPU_TIMED).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "cupti_hooks.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* the buffer and the callbacks */
static CUpti_BuffersCallbackRequestFunc request_buffer;
static CUpti_BuffersCallbackCompleteFunc complete_buffer;
static _Atomic(CUpti_TimestampCallbackFunc) timestamp; /* read by the stream workers */
static _Atomic uint64_t enabled;		       /* bit per CUpti_ActivityKind */
static _Atomic uint8_t driver_api_off[CUPTI_DRIVER_TRACE_CBID_SIZE];
static _Atomic uint32_t next_correlation = 1;
static uint8_t *buffer;
static size_t buffer_size, buffer_used;
/* the callback API (mu): the one subscriber, its domains, the driver functions enabled one by
 * one (cuptiEnableCallback: CUPTI-11) */
static int subscribed, driver_domain, runtime_domain;
static uint8_t driver_callback_on[CUPTI_DRIVER_TRACE_CBID_SIZE];
static unsigned driver_callbacks_enabled;
static CUpti_CallbackFunc subscriber_callback;
static void *subscriber_userdata;
static char subscriber_name[64];
static char subscriber_token;	 /* its handle's address */
static _Atomic int callbacks_on; /* subscribed, a driver callback on: read first, without mu */
/* Instrumented: a kind was enabled since the last cuptiFinalize (STANDIN_CUPTI_LAUNCH_COST_US's
 * persistent mode); detached: finalized and not touched since. */
static _Atomic int instrumented, detached;
static _Atomic unsigned long launches, instrumented_launches, finalizes, attaches, lost_records;
/* API records made (DRIVER kind) and callbacks given a correlation id (the report's counts) */
static _Atomic unsigned long api_records, correlation_callbacks;

/* Torn down at exit (the handler registered at the first cuptiActivityRegisterCallbacks). */
static _Atomic int torn_down;

static void tear_down(void)
{
	atomic_store(&torn_down, 1);
}

/* Every API function: after cuptiFinalize, a call attaches CUPTI again (lazily, as the real
 * one's initialization); after the teardown at exit, a call is fatal. */
static void called(const char *function)
{
	if (!atomic_load(&torn_down))
		return;
	fprintf(stderr, "standin cupti: %s called after CUPTI was torn down at exit\n", function);
	abort();
}
#define touch() (called(__func__), attach_if_detached())

static void attach_if_detached(void)
{
	if (atomic_exchange(&detached, 0))
		atomic_fetch_add(&attaches, 1);
}

static int kind_on(CUpti_ActivityKind kind)
{
	return (atomic_load(&enabled) >> kind) & 1;
}

static uint64_t now(void)
{
	CUpti_TimestampCallbackFunc clock = atomic_load(&timestamp);
	if (clock)
		return clock();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t record_size(CUpti_ActivityKind kind)
{
	size_t size = kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? sizeof(CUpti_ActivityKernel10)
		      : kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION
			  ? sizeof(CUpti_ActivitySynchronization2)
		      : kind == CUPTI_ACTIVITY_KIND_MEMCPY ? sizeof(CUpti_ActivityMemcpy6)
							   : sizeof(CUpti_ActivityAPI);
	return (size + 7) & ~(size_t)7;
}

/* Hands the current buffer to the client; mu held. */
static void deliver_locked(void)
{
	if (buffer && complete_buffer)
		complete_buffer(NULL, 0, buffer, buffer_size, buffer_used);
	buffer = NULL;
	buffer_size = buffer_used = 0;
}

/* Copies RECORD (of its kind's size) into the client's buffer, asking for one as needed; mu
 * held. */
static void add_record_locked(const void *record, CUpti_ActivityKind kind)
{
	size_t size = record_size(kind);
	if (buffer && buffer_used + size > buffer_size)
		deliver_locked();
	if (!buffer && request_buffer) {
		size_t max_records = 0;
		request_buffer(&buffer, &buffer_size, &max_records);
		buffer_used = 0;
	}
	if (buffer && buffer_used + size <= buffer_size) {
		memset(buffer + buffer_used, 0, size);
		memcpy(buffer + buffer_used, record, size);
		buffer_used += size;
	}
}

static void add_record(const void *record, CUpti_ActivityKind kind)
{
	pthread_mutex_lock(&mu);
	add_record_locked(record, kind);
	pthread_mutex_unlock(&mu);
}

/* Kernels traced at their launch and not run yet (mu): a forced flush hands each over once,
 * with start and end 0, as the real CUPTI hands over the records of unfinished work
 * (incomplete_records), and its record at the end is then not made; a finalize drops them. */
enum { PENDING_MAX = 4096 };
static struct pending_kernel {
	uint32_t correlation, stream;
	int flushed;
} pending[PENDING_MAX];
static size_t npending;
static _Atomic unsigned long incomplete_records;

/* ------------------------------------------------------------------ what libcuda reports */

/* The names of the driver functions libcuda reports; every other id has none here. */
static const struct {
	uint32_t cbid;
	const char *name;
} callback_names[] = {
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel"},
    {CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize"},
    {CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize"},
    {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch"},
};

static uint32_t api_begin(void)
{
	return atomic_fetch_add(&next_correlation, 1);
}

/* STANDIN_CUPTI_LAUNCH_COST_US=N: each launch made while kernels are traced spins N us, as
 * the real CUPTI's work per traced launch slows a launch-bound loop (t221: CUPTI-6 measures
 * it). N,persistent: each launch made while instrumented spins, traced or not: once a kind
 * was enabled, the cost stays while the kinds are disabled, until cuptiFinalize (what the
 * H200 showed: tests/gpu/results/2026-12-04-h200-session8, run 4; t227). 0 or unset: free. */
static long cost_ns;
static int persistent;

static void read_launch_cost(void)
{
	const char *cost = getenv("STANDIN_CUPTI_LAUNCH_COST_US");
	persistent = cost && strstr(cost, ",persistent");
	cost_ns = cost ? atol(cost) * 1000 : 0;
}

static int kernels_traced(void)
{
	static pthread_once_t cost_once = PTHREAD_ONCE_INIT; /* launches come from any thread */
	pthread_once(&cost_once, read_launch_cost);
	int on = kind_on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	int costly = persistent ? atomic_load(&instrumented) : on;
	atomic_fetch_add(&launches, 1);
	if (atomic_load(&instrumented))
		atomic_fetch_add(&instrumented_launches, 1);
	if (costly && cost_ns > 0) {
		struct timespec start, t;
		clock_gettime(CLOCK_MONOTONIC, &start);
		do
			clock_gettime(CLOCK_MONOTONIC, &t);
		while ((t.tv_sec - start.tv_sec) * 1000000000L + (t.tv_nsec - start.tv_nsec) <
		       cost_ns);
	}
	return on;
}

static void api_end(uint32_t correlation, uint32_t cbid, uint64_t start, uint64_t end)
{
	if (!kind_on(CUPTI_ACTIVITY_KIND_DRIVER) || cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE ||
	    atomic_load(&driver_api_off[cbid]))
		return;
	CUpti_ActivityAPI api = {.kind = CUPTI_ACTIVITY_KIND_DRIVER,
				 .cbid = cbid,
				 .start = start,
				 .end = end,
				 .processId = (uint32_t)getpid(),
				 .threadId = (uint32_t)(uintptr_t)pthread_self(),
				 .correlationId = correlation};
	add_record(&api, CUPTI_ACTIVITY_KIND_DRIVER);
	atomic_fetch_add(&api_records, 1);
}

static void kernel_queued(uint32_t correlation, uint32_t stream)
{
	pthread_mutex_lock(&mu);
	if (npending < PENDING_MAX)
		pending[npending++] = (struct pending_kernel){correlation, stream, 0};
	pthread_mutex_unlock(&mu);
}

/* A kernel's record (a forced flush makes one of a kernel not run yet: START and END 0, no
 * name). */
static CUpti_ActivityKernel10 kernel_record(uint32_t correlation, uint32_t stream, uint64_t start,
					    uint64_t end, const char *name)
{
	return (CUpti_ActivityKernel10){.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
					.start = start,
					.end = end,
					.gridX = 1,
					.gridY = 1,
					.gridZ = 1,
					.blockX = 1,
					.blockY = 1,
					.blockZ = 1,
					.streamId = stream,
					.correlationId = correlation,
					.name = name};
}

static void kernel(uint32_t correlation, uint32_t stream, uint64_t start, uint64_t end,
		   const char *name)
{
	pthread_mutex_lock(&mu);
	int flushed = 0;
	for (size_t i = 0; i < npending; i++)
		if (pending[i].correlation == correlation && pending[i].stream == stream) {
			flushed = pending[i].flushed;
			pending[i] = pending[--npending];
			break;
		}
	if (!flushed) {
		CUpti_ActivityKernel10 k = kernel_record(correlation, stream, start, end, name);
		add_record_locked(&k, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	}
	pthread_mutex_unlock(&mu);
}

static void sync_record(uint32_t correlation, uint32_t stream, uint32_t type, uint64_t start,
			uint64_t end)
{
	if (!kind_on(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION))
		return;
	CUpti_ActivitySynchronization2 s = {.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
					    .type = (CUpti_ActivitySynchronizationType)type,
					    .start = start,
					    .end = end,
					    .correlationId = correlation,
					    .streamId = stream};
	add_record(&s, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
}

/* CUPTI-10's hazard: the reported driver calls in flight, all threads and this one. The real
 * CUPTI runs its own code again at the exit of a call that entered while it was attached; a
 * cuptiFinalize made meanwhile on another thread frees what that code reads (SIGSEGV on the
 * H100): counted here as finalize_races. */
static _Atomic long calls_inside;
static __thread long calls_inside_here;
static _Atomic unsigned long finalize_races;

static void call_left(void)
{
	atomic_fetch_sub(&calls_inside, 1);
	calls_inside_here--;
}

/* At the entry and exit of a driver call libcuda reports: the subscriber's callback, where the
 * driver domain or this function's callback is enabled, with the call's correlation id as the
 * real CUPTI gives it. Called without mu (the callback may call cuptiFinalize). */
static void api_site(uint32_t cbid, int exit, uint32_t correlation)
{
	if (!exit) {
		atomic_fetch_add(&calls_inside, 1);
		calls_inside_here++;
	}
	if (!atomic_load(&callbacks_on)) { /* no subscriber: as before the callback API */
		if (exit)
			call_left();
		return;
	}
	pthread_mutex_lock(&mu);
	int on = driver_domain || (cbid < CUPTI_DRIVER_TRACE_CBID_SIZE && driver_callback_on[cbid]);
	CUpti_CallbackFunc callback = subscribed && on ? subscriber_callback : NULL;
	void *userdata = subscriber_userdata;
	pthread_mutex_unlock(&mu);
	if (!callback) {
		if (exit)
			call_left();
		return;
	}
	atomic_fetch_add(&correlation_callbacks, 1);
	const char *name = NULL;
	for (size_t i = 0; i < sizeof(callback_names) / sizeof(callback_names[0]); i++)
		if (callback_names[i].cbid == cbid)
			name = callback_names[i].name;
	CUpti_CallbackData data = {.callbackSite = exit ? CUPTI_API_EXIT : CUPTI_API_ENTER,
				   .functionName = name,
				   .correlationId = correlation};
	callback(userdata, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
	if (exit)
		call_left(); /* after its exit's callback, which may have finalized */
}

/* Copies are recorded only with STANDIN_CUPTI_COPIES=1 (t253): the stand-in's copy entry points
 * make no API record nor callback, so a recording with `correlate` could not tie them as a GPU's
 * would (t242 holds the ties of the others to the callbacks'). */
static int copies_traced(void)
{
	static _Atomic int asked = -1;
	int on = atomic_load(&asked);

	if (on < 0) {
		const char *text = getenv("STANDIN_CUPTI_COPIES");
		on = text && strcmp(text, "1") == 0;
		atomic_store(&asked, on);
	}
	return on && kind_on(CUPTI_ACTIVITY_KIND_MEMCPY);
}

static void copy_record(uint32_t correlation, uint32_t stream, uint8_t copy_kind, int pageable,
			uint64_t bytes, uint64_t start, uint64_t end)
{
	uint8_t host =
	    pageable ? CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE : CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	CUpti_ActivityMemcpy6 m = {.kind = CUPTI_ACTIVITY_KIND_MEMCPY,
				   .copyKind = copy_kind,
				   .srcKind = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD
						  ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
					      : copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH
						  ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
						  : host,
				   .dstKind = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD
						  ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
					      : copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
						  ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
						  : host,
				   .bytes = bytes,
				   .start = start,
				   .end = end,
				   .streamId = stream,
				   .correlationId = correlation};
	add_record(&m, CUPTI_ACTIVITY_KIND_MEMCPY);
}

static const struct standin_cupti_hooks hooks = {
    now,	   api_begin,	kernels_traced, api_end,       kernel,
    kernel_queued, sync_record, api_site,	copies_traced, copy_record};

EXPORT const struct standin_cupti_hooks *standin_cupti_hooks(void)
{
	return &hooks;
}

/* Loaded after libcuda.so.1: hand it the hooks (else libcuda asks when it initializes). */
__attribute__((constructor)) static void connect_to_driver(void)
{
	void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	void (*set)(const struct standin_cupti_hooks *) =
	    driver ? (void (*)(const struct standin_cupti_hooks *))dlsym(driver,
									 "standin_cuda_set_cupti")
		   : NULL;
	if (set)
		set(&hooks);
}

/* ------------------------------------------------------------------ the activity API */

/* STANDIN_CUPTI_ATTACH_COST_US=N: registering the buffer callbacks (at CUPTI's start and at each
 * attach after a cuptiFinalize, CUPTI-8) spins N us, as the real CUPTI's attach takes 10-15 ms on
 * an H100 (tests/gpu/results/2026-12-06-h100-session25): the sampler's gaps pay for it
 * (CUPTI-5; t221). 0 or unset: free. */
static void attach_cost(void)
{
	const char *cost = getenv("STANDIN_CUPTI_ATTACH_COST_US");
	long ns = cost ? atol(cost) * 1000 : 0;
	struct timespec start, t;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - start.tv_sec) * 1000000000L + (t.tv_nsec - start.tv_nsec) < ns);
}

static void register_teardown(void)
{
	atexit(tear_down);
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
						  CUpti_BuffersCallbackCompleteFunc complete)
{
	touch();
	if (!request || !complete)
		return CUPTI_ERROR_INVALID_PARAMETER;
	attach_cost();
	static pthread_once_t teardown_once = PTHREAD_ONCE_INIT;
	pthread_once(&teardown_once, register_teardown);
	pthread_mutex_lock(&mu);
	request_buffer = request;
	complete_buffer = complete;
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc callback)
{
	touch();
	if (!callback)
		return CUPTI_ERROR_INVALID_PARAMETER;
	atomic_store(&timestamp, callback);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	touch();
	if ((unsigned)kind >= 64)
		return CUPTI_ERROR_INVALID_KIND;
	atomic_fetch_or(&enabled, (uint64_t)1 << kind);
	atomic_store(&instrumented, 1);
	if (kind == CUPTI_ACTIVITY_KIND_DRIVER) /* the kind overrides per-function settings */
		for (size_t i = 0; i < CUPTI_DRIVER_TRACE_CBID_SIZE; i++)
			atomic_store(&driver_api_off[i], 0);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	touch();
	if ((unsigned)kind >= 64)
		return CUPTI_ERROR_INVALID_KIND;
	atomic_fetch_and(&enabled, ~((uint64_t)1 << kind));
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
	touch();
	if (cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	atomic_store(&driver_api_off[cbid], !enable);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
	touch();
	(void)
	    cbid; /* the stand-in runtime reports no runtime records: its calls reach the driver */
	(void)enable;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnableCudaEventDeviceTimestamps(uint8_t enable)
{
	touch();
	(void)enable;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **record)
{
	uint8_t *next = *record ? (uint8_t *)*record + record_size((*record)->kind) : buf;
	if (next >= buf + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)next;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	touch();
	pthread_mutex_lock(&mu);
	for (size_t i = 0; (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && i < npending; i++)
		if (!pending[i].flushed) {
			CUpti_ActivityKernel10 k =
			    kernel_record(pending[i].correlation, pending[i].stream, 0, 0, NULL);
			add_record_locked(&k, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
			pending[i].flushed = 1;
			atomic_fetch_add(&incomplete_records, 1);
		}
	deliver_locked();
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	touch();
	*str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS"
	       : result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
		   ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
		   : "CUPTI stand-in error";
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
					const char **name)
{
	touch();
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
		for (size_t i = 0; i < sizeof(callback_names) / sizeof(callback_names[0]); i++)
			if (callback_names[i].cbid == cbid) {
				*name = callback_names[i].name;
				return CUPTI_SUCCESS;
			}
	return CUPTI_ERROR_INVALID_PARAMETER;
}

/* ------------------------------------------------------------------ the callback API */

static CUptiResult subscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
			     void *userdata, const char *name, char *old_name, size_t old_size)
{
	touch();
	if (!subscriber)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&mu);
	if (subscribed) {
		if (old_name && old_size)
			snprintf(old_name, old_size, "CUPTI for %s", subscriber_name);
		pthread_mutex_unlock(&mu);
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	}
	subscribed = 1;
	driver_domain = runtime_domain = 0;
	memset(driver_callback_on, 0, sizeof(driver_callback_on));
	driver_callbacks_enabled = 0;
	atomic_store(&callbacks_on, 0);
	subscriber_callback = callback;
	subscriber_userdata = userdata;
	snprintf(subscriber_name, sizeof(subscriber_name), "%s", name ? name : "an unnamed client");
	*subscriber = (CUpti_SubscriberHandle)(void *)&subscriber_token;
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
				  void *userdata)
{
	return subscribe(subscriber, callback, userdata, NULL, NULL, 0);
}

EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
				     CUpti_CallbackFunc callback, void *userdata,
				     CUpti_SubscriberParams *params)
{
	if (params && params->structSize == 0)
		return CUPTI_ERROR_INVALID_PARAMETER;
	return subscribe(subscriber, callback, userdata, params ? params->subscriberName : NULL,
			 params ? params->oldSubscriberName : NULL,
			 params ? params->oldSubscriberSize : 0);
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	touch();
	pthread_mutex_lock(&mu);
	int ok = subscribed && subscriber == (CUpti_SubscriberHandle)(void *)&subscriber_token;
	if (ok) {
		subscribed = 0;
		atomic_store(&callbacks_on, 0);
	}
	pthread_mutex_unlock(&mu);
	return ok ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
				     CUpti_CallbackDomain domain)
{
	touch();
	pthread_mutex_lock(&mu);
	int ok = subscribed && subscriber == (CUpti_SubscriberHandle)(void *)&subscriber_token;
	if (ok && domain == CUPTI_CB_DOMAIN_DRIVER_API)
		driver_domain = enable != 0;
	else if (ok && domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		runtime_domain = enable != 0; /* the stand-in runtime reports no calls of its own */
	atomic_store(&callbacks_on, subscribed && (driver_domain || driver_callbacks_enabled));
	pthread_mutex_unlock(&mu);
	return ok ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

/* One function's callbacks (CUPTI-11): the driver domain's as libcuda reports them; the
 * runtime domain's are accepted and never called (the stand-in runtime reports nothing). */
EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
				       CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	touch();
	pthread_mutex_lock(&mu);
	int ok = subscribed && subscriber == (CUpti_SubscriberHandle)(void *)&subscriber_token;
	if (ok && domain == CUPTI_CB_DOMAIN_DRIVER_API) {
		ok = cbid < CUPTI_DRIVER_TRACE_CBID_SIZE;
		if (ok && driver_callback_on[cbid] != (enable != 0)) {
			driver_callback_on[cbid] = enable != 0;
			driver_callbacks_enabled += enable ? 1 : -1;
		}
	} else if (ok) {
		ok = domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE;
	}
	atomic_store(&callbacks_on, subscribed && (driver_domain || driver_callbacks_enabled));
	pthread_mutex_unlock(&mu);
	return ok ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

/* Detaches: every setting, callback and subscriber dropped; the records not flushed are lost
 * (counted), their buffer freed. */
EXPORT CUptiResult cuptiFinalize(void)
{
	called(__func__);
	if (atomic_load(&calls_inside) > calls_inside_here)
		atomic_fetch_add(&finalize_races, 1);
	pthread_mutex_lock(&mu);
	if (buffer) {
		CUpti_Activity *record = NULL;
		while (cuptiActivityGetNextRecord(buffer, buffer_used, &record) == CUPTI_SUCCESS)
			atomic_fetch_add(&lost_records, 1);
		free(buffer);
	}
	buffer = NULL;
	buffer_size = buffer_used = 0;
	request_buffer = NULL;
	complete_buffer = NULL;
	atomic_store(&timestamp, NULL);
	atomic_store(&enabled, 0);
	for (size_t i = 0; i < CUPTI_DRIVER_TRACE_CBID_SIZE; i++)
		atomic_store(&driver_api_off[i], 0);
	subscribed = driver_domain = runtime_domain = 0;
	memset(driver_callback_on, 0, sizeof(driver_callback_on));
	driver_callbacks_enabled = 0;
	atomic_store(&callbacks_on, 0);
	subscriber_callback = NULL;
	atomic_store(&instrumented, 0);
	/* the real CUPTI numbers correlation ids from 1 again after a finalize (on the H200:
	 * tests/gpu/results/2026-12-04-h200-session11, run 2) */
	atomic_store(&next_correlation, 1);
	npending = 0; /* their records are lost with CUPTI's state */
	atomic_store(&detached, 1);
	atomic_fetch_add(&finalizes, 1);
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

__attribute__((destructor)) static void write_report(void)
{
	const char *path = getenv("STANDIN_CUPTI_REPORT");
	FILE *file = path && path[0] ? fopen(path, "w") : NULL;
	if (!file)
		return;
	fprintf(file,
		"launches %lu\ninstrumented_launches %lu\nfinalizes %lu\nattaches %lu\n"
		"lost_records %lu\nincomplete_records %lu\nfinalize_races %lu\napi_records %lu\n"
		"correlation_callbacks %lu\n",
		atomic_load(&launches), atomic_load(&instrumented_launches),
		atomic_load(&finalizes), atomic_load(&attaches), atomic_load(&lost_records),
		atomic_load(&incomplete_records), atomic_load(&finalize_races),
		atomic_load(&api_records), atomic_load(&correlation_callbacks));
	fclose(file);
}
