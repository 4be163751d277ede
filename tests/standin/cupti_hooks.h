/* SPDX-License-Identifier: MIT */
/*
 * cupti_hooks.h: how the libcuda.so.1 stand-in reports to the libcupti.so.13 stand-in
 * (cupti.c) what a GPU's driver reports to the real CUPTI: API calls with their correlation
 * ids and their entry and exit, kernels as they ran, and synchronizations as they waited.
 *
 * The two find each other whichever is loaded first: libcupti's constructor hands its hooks to
 * libcuda when libcuda is there (standin_cuda_set_cupti), and libcuda asks for them
 * (standin_cupti_hooks) when it initializes. Copies are reported too (MEMCPY records), with
 * correlation ids of their own: the stand-in's copies make no API record. The real libcupti.so.13
 * has neither name, so with it libcuda reports nothing.
 */
#ifndef SYNCSPY_STANDIN_CUPTI_HOOKS_H
#define SYNCSPY_STANDIN_CUPTI_HOOKS_H

#include <stdint.h>

struct standin_cupti_hooks {
	uint64_t (*now)(void);	     /* CUPTI's clock: the registered timestamp callback */
	uint32_t (*api_begin)(void); /* a new correlation id */
	int (*kernels_traced)(void); /* CONCURRENT_KERNEL enabled now (checked at launch) */
	/* a driver API record, when the DRIVER kind is on and CBID not disabled */
	void (*api_end)(uint32_t correlation, uint32_t cbid, uint64_t start, uint64_t end);
	void (*kernel)(uint32_t correlation, uint32_t stream, uint64_t start, uint64_t end,
		       const char *name);
	/* a kernel traced at its launch, queued and not run yet (before it is queued: kernel may
	 * follow at once): a forced flush hands it over incomplete */
	void (*kernel_queued)(uint32_t correlation, uint32_t stream);
	/* a SYNCHRONIZATION record (type 3 stream, 4 context), when that kind is on */
	void (*sync)(uint32_t correlation, uint32_t stream, uint32_t type, uint64_t start,
		     uint64_t end);
	/* the entry (exit 0) and the exit (exit 1) of a reported driver call, whose API record and
	 * GPU rows carry CORRELATION: the callback API's subscriber is called there (CUPTI-8
	 * detaches at an exit; CUPTI-11 reads the correlation id) */
	void (*api_site)(uint32_t cbid, int exit, uint32_t correlation);
	/* a MEMCPY record of a copy as it ran (COPY_KIND: CUpti_ActivityMemcpyKind; its host side
	 * pinned or PAGEABLE), when that kind is on (checked at the copy's enqueue: copies_traced)
	 */
	int (*copies_traced)(void);
	void (*copy)(uint32_t correlation, uint32_t stream, uint8_t copy_kind, int pageable,
		     uint64_t bytes, uint64_t start, uint64_t end);
};

const struct standin_cupti_hooks *standin_cupti_hooks(void);	      /* libcupti.so.13 */
void standin_cuda_set_cupti(const struct standin_cupti_hooks *hooks); /* libcuda.so.1 */

#endif
