/*
 * interpose/describe.h: the runtime module's header (cudart.c). Turning a call's arguments into
 * record fields, shared by the runtime and driver (driver.c) modules: stream ids (SCHEMA-4),
 * copy direction and host memory kind (S4/S5), memset targets (S6); and the runtime wrappers
 * by API, which dlsym hands out (driver.c).
 */
#ifndef SYNCSPY_DESCRIBE_H
#define SYNCSPY_DESCRIBE_H

#include <stddef.h>
#include <stdint.h>

#include "shim.h"

/* SCHEMA-4: stream 0 is the legacy stream, or the per-thread one in _ptsz/_ptds entry points. */
uint64_t ss_stream_id(const void *stream, int per_thread_variant);
/* A copy; kind is a cudaMemcpyKind (cudaMemcpyDefault: inferred from the pointers); dst or src
 * NULL stands for a device-side object. Sets bytes, dir, host_mem and S5 for a pageable async. */
void ss_describe_copy(struct ss_rec *rec, const void *dst, const void *src, uint64_t bytes,
		      int kind, int async);
/* A batch of async copies (cudaMemcpyBatchAsync, cuMemcpyBatchAsync): every copy's bytes, and
 * the first copy's direction and host memory kind, DST0 and SRC0 its pointers: a batch is
 * usually of one kind, and the sum costs one add per copy. */
void ss_describe_batch(struct ss_rec *rec, const void *dst0, const void *src0, const size_t *sizes,
		       size_t count);
/* A memset: bytes, target memory kind, and S6 for a non-async one on pinned/managed memory. */
void ss_describe_memset(struct ss_rec *rec, const void *ptr, uint64_t bytes, int async);

/* The runtime table's wrappers by API, for dlsym to hand out (driver.c). */
struct ss_wrapper_ref {
	int api;
	void *wrapper;
};
extern const struct ss_wrapper_ref ss_cudart_wrappers[];
extern const size_t ss_cudart_wrapper_count;

#endif
