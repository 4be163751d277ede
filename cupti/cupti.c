/*
 * cupti/cupti.c: GPU-side activity through CUPTI's activity API.
 *
 * - CUPTI is dlopen()ed RTLD_LOCAL (libcupti.so.13, already loaded by torch if it is there);
 *   none of its symbols enter the program's scope.
 * - Timestamps: a timestamp callback returning CLOCK_MONOTONIC ns is registered before any
 *   activity is enabled, so GPU and host rows share one time axis (SCHEMA-3).
 * - Buffers complete on CUPTI's own thread; their records are converted and queued under a
 *   mutex (not the calls' hot path), and the writer stores them with the host calls.
 * - CUPTI allows one subscriber: if another tool holds it (torch.profiler, Nsight) or anything
 *   fails, recording goes on with host data only and ss_cupti_status says why (DESIGN.md
 *   section 4).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#include "cupti/cupti.h"

void *ss_dlsym(void *handle, const char *name); /* interpose/driver.c: the real dlsym */

const char *volatile ss_cupti_status = "off (SYNCSPY_CUPTI=0)";

#define BUFFER_BYTES (8u << 20)

static struct {
	CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
					  CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
	CUptiResult (*enable)(CUpti_ActivityKind);
	CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*flush_all)(uint32_t);
	CUptiResult (*result_string)(CUptiResult, const char **);
	CUptiResult (*callback_name)(CUpti_CallbackDomain, uint32_t, const char **);
	CUptiResult (*event_device_timestamps)(uint8_t); /* optional (CUPTI 12.8 and later) */
} api;

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ss_gpu_rec *queue;
static size_t queued, queue_capacity;
static int started;
static char status_text[256];

static uint64_t CUPTIAPI now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void set_status(const char *what, CUptiResult result)
{
	const char *text = NULL;
	if (api.result_string)
		api.result_string(result, &text);
	snprintf(status_text, sizeof(status_text), "off: %s: %s (%d); host data only", what,
		 text ? text : "?", (int)result);
	ss_cupti_status = status_text;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = aligned_alloc(8, BUFFER_BYTES);
	*size = *buffer ? BUFFER_BYTES : 0;
	*max_records = 0;
}

static void enqueue(const struct ss_gpu_rec *rec)
{
	pthread_mutex_lock(&queue_lock);
	if (queued == queue_capacity) {
		size_t capacity = queue_capacity ? queue_capacity * 2 : 4096;
		struct ss_gpu_rec *grown = realloc(queue, capacity * sizeof(*grown));
		if (!grown) {
			pthread_mutex_unlock(&queue_lock);
			free(rec->name);
			return;
		}
		queue = grown;
		queue_capacity = capacity;
	}
	queue[queued++] = *rec;
	pthread_mutex_unlock(&queue_lock);
}

static void convert(const CUpti_Activity *record)
{
	struct ss_gpu_rec rec = {0};
	switch (record->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)record;
		rec = (struct ss_gpu_rec){.kind = SS_GPU_KERNEL,
					  .device = k->deviceId,
					  .stream = k->streamId,
					  .correlation = k->correlationId,
					  .start_ns = k->start,
					  .end_ns = k->end,
					  .grid = {k->gridX, k->gridY, k->gridZ},
					  .block = {k->blockX, k->blockY, k->blockZ},
					  .name = k->name ? strdup(k->name) : NULL};
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)record;
		rec = (struct ss_gpu_rec){.kind = SS_GPU_MEMCPY,
					  .copy_kind = m->copyKind,
					  .src_kind = m->srcKind,
					  .dst_kind = m->dstKind,
					  .device = m->deviceId,
					  .stream = m->streamId,
					  .correlation = m->correlationId,
					  .start_ns = m->start,
					  .end_ns = m->end,
					  .bytes = m->bytes};
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)record;
		rec = (struct ss_gpu_rec){.kind = SS_GPU_MEMSET,
					  .device = m->deviceId,
					  .stream = m->streamId,
					  .correlation = m->correlationId,
					  .detail = m->memoryKind,
					  .start_ns = m->start,
					  .end_ns = m->end,
					  .bytes = m->bytes};
		break;
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		const CUpti_ActivitySynchronization2 *s =
		    (const CUpti_ActivitySynchronization2 *)record;
		rec = (struct ss_gpu_rec){.kind = SS_GPU_SYNC,
					  .stream = s->streamId,
					  .correlation = s->correlationId,
					  .detail = s->type,
					  .start_ns = s->start,
					  .end_ns = s->end};
		break;
	}
	case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {
		/* deviceTimestamp: when the GPU reached the event (0 when CUPTI does not collect it) */
		const CUpti_ActivityCudaEvent2 *e = (const CUpti_ActivityCudaEvent2 *)record;
		rec = (struct ss_gpu_rec){.kind = SS_GPU_EVENT,
					  .device = e->deviceId,
					  .stream = e->streamId,
					  .correlation = e->correlationId,
					  .detail = e->eventId,
					  .start_ns = e->deviceTimestamp,
					  .end_ns = e->deviceTimestamp};
		break;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)record;
		int runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
		const char *name = NULL; /* CUPTI's own string, valid for the process's life */
		if (api.callback_name)
			api.callback_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API
						  : CUPTI_CB_DOMAIN_DRIVER_API,
					  a->cbid, &name);
		rec = (struct ss_gpu_rec){.kind = runtime ? SS_GPU_RUNTIME_API : SS_GPU_DRIVER_API,
					  .correlation = a->correlationId,
					  .detail = a->cbid,
					  .thread = a->threadId,
					  .start_ns = a->start,
					  .end_ns = a->end,
					  .api_name = name};
		break;
	}
	default:
		return;
	}
	enqueue(&rec);
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer,
				      size_t size, size_t valid)
{
	CUpti_Activity *record = NULL;
	while (valid && api.next_record(buffer, valid, &record) == CUPTI_SUCCESS)
		convert(record);
	free(buffer);
}

static void start_once(void)
{
	void *library = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (!library)
		library = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
	if (!library) {
		snprintf(status_text, sizeof(status_text),
			 "off: libcupti.so.13 not found (%s); host data only", dlerror());
		ss_cupti_status = status_text;
		return;
	}
#define FIND(field, name) *(void **)&api.field = ss_dlsym(library, name)
	FIND(register_callbacks, "cuptiActivityRegisterCallbacks");
	FIND(register_timestamp, "cuptiActivityRegisterTimestampCallback");
	FIND(enable, "cuptiActivityEnable");
	FIND(next_record, "cuptiActivityGetNextRecord");
	FIND(flush_all, "cuptiActivityFlushAll");
	FIND(result_string, "cuptiGetResultString");
	FIND(callback_name, "cuptiGetCallbackName");
	FIND(event_device_timestamps, "cuptiActivityEnableCudaEventDeviceTimestamps");
#undef FIND
	if (!api.register_callbacks || !api.register_timestamp || !api.enable || !api.next_record ||
	    !api.flush_all) {
		ss_cupti_status = "off: libcupti.so.13 lacks the activity API; host data only";
		return;
	}
	CUptiResult result = api.register_timestamp(now_ns); /* before any activity */
	if (result != CUPTI_SUCCESS) {
		set_status("cuptiActivityRegisterTimestampCallback", result);
		return;
	}
	result = api.register_callbacks(buffer_requested, buffer_completed);
	if (result != CUPTI_SUCCESS) {
		set_status("cuptiActivityRegisterCallbacks", result);
		return;
	}
	static const struct {
		CUpti_ActivityKind kind;
		const char *name;
	} kinds[] = {
	    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
	    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
	    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
	    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION"},
	    {CUPTI_ACTIVITY_KIND_CUDA_EVENT, "CUDA_EVENT"},
	    {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME"},
	    {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER"},
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		result = api.enable(kinds[i].kind);
		if (result != CUPTI_SUCCESS) {
			char what[64];
			snprintf(what, sizeof(what), "cuptiActivityEnable(%s)", kinds[i].name);
			set_status(what, result);
			return;
		}
	}
	/* When the GPU reached each recorded event; without it CUDA_EVENT rows carry no time. */
	if (api.event_device_timestamps)
		api.event_device_timestamps(1);
	started = 1;
	ss_cupti_status = "on";
}

void ss_cupti_start(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, start_once);
}

void ss_cupti_flush(void)
{
	if (started)
		api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

size_t ss_cupti_take(struct ss_gpu_rec **records)
{
	pthread_mutex_lock(&queue_lock);
	*records = queue;
	size_t n = queued;
	queue = NULL;
	queued = queue_capacity = 0;
	pthread_mutex_unlock(&queue_lock);
	return n;
}
