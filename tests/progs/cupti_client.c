/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/cupti_client.c: a program with a CUPTI client of its own, like torch.profiler's
 * Kineto: it loads libcupti.so.13 into the global scope and registers activity buffer
 * callbacks through the dynamic linker (the shim exports the function: CUPTI-1), then makes a
 * few CUDA calls (the stand-in runtime). Prints what the registration returned, so a test can
 * compare it with and without the shim.
 *
 *   cupti_client CUPTI_LIBRARY [register|none]
 *   cupti_client CUPTI_LIBRARY subscribe STEPS
 *   cupti_client CUPTI_LIBRARY register-detached STEPS
 *   cupti_client CUPTI_LIBRARY register-live STEPS
 *
 * subscribe: a callback subscriber first (cuptiSubscribe, as a tool or torch.profiler makes),
 * then STEPS steps of a kernel and a stream sync (CUPTI-8 then cannot detach: t228).
 * register-detached: STEPS steps, the GPU timeline turned off and on again with nothing between
 * at the start (syncspy_gpu_trace, when the shim is there), and off after half of them, followed
 * by one more step (where SYNCSPY_CUPTI_PAUSE=detach detaches CUPTI at its first API exit);
 * there it registers its own activity callbacks, enables kernel records, turns the timeline on
 * again (which must not take CUPTI back: CUPTI-2, CUPTI-8), runs the other half and prints how
 * many kernel records its own buffers received, and how many of kinds it did not enable.
 * register-live: the same with the timeline left on (no syncspy_gpu_trace): the client registers
 * while syncspy traces (CUPTI-2), and must get only the kernel records it enabled.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cupti.h>

#include "progs.h"

static CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
static unsigned long kernel_records, other_records;

static void request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = aligned_alloc(8, 1 << 16);
	*size = *buffer ? 1 << 16 : 0;
	*max_records = 0;
}

static void complete(void *context, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	CUpti_Activity *record = NULL;
	while (next_record && valid && next_record(buffer, valid, &record) == CUPTI_SUCCESS)
		if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			kernel_records++;
		else
			other_records++;
	free(buffer);
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				 const void *data)
{
}

static void step(cudaStream_t stream)
{
	const dim3 one = {1, 1, 1};
	void *param = (void *)(uintptr_t)100, *args[] = {&param};
	CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
	CHECK(cudaStreamSynchronize(stream));
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	const char *mode = argv[2];
	int steps = argc > 3 ? atoi(argv[3]) : 0;
	int live = strcmp(mode, "register-live") == 0;
	if (strcmp(mode, "register") == 0 || strcmp(mode, "subscribe") == 0 ||
	    strcmp(mode, "register-detached") == 0 || live) {
		if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
			fprintf(stderr, "cupti_client: %s\n", dlerror());
			return 1;
		}
	}
	int (*register_callbacks)(void *, void *) =
	    (int (*)(void *, void *))dlsym(RTLD_DEFAULT, "cuptiActivityRegisterCallbacks");
	if (strcmp(mode, "register") == 0) {
		if (!register_callbacks)
			return 1;
		printf("cuptiActivityRegisterCallbacks: %d\n",
		       register_callbacks((void *)request, (void *)complete));
	}
	if (strcmp(mode, "subscribe") == 0 || strcmp(mode, "register-detached") == 0 || live) {
		int (*gpu_trace)(int) =
		    live ? NULL : (int (*)(int))dlsym(RTLD_DEFAULT, "syncspy_gpu_trace");
		cudaStream_t stream;
		CHECK(cudaStreamCreate(&stream));
		if (strcmp(mode, "subscribe") == 0) {
			CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc,
						 void *) =
			    (CUptiResult(*)(CUpti_SubscriberHandle *, CUpti_CallbackFunc,
					    void *))dlsym(RTLD_DEFAULT, "cuptiSubscribe");
			CUpti_SubscriberHandle subscriber;
			if (!subscribe)
				return 1;
			printf("cuptiSubscribe: %d\n",
			       (int)subscribe(&subscriber, on_callback, NULL));
			for (int i = 0; i < steps; i++)
				step(stream);
			printf("done %d steps\n", steps);
			return 0;
		}
		CUptiResult (*enable)(CUpti_ActivityKind) =
		    (CUptiResult(*)(CUpti_ActivityKind))dlsym(RTLD_DEFAULT, "cuptiActivityEnable");
		CUptiResult (*flush_all)(uint32_t) =
		    (CUptiResult(*)(uint32_t))dlsym(RTLD_DEFAULT, "cuptiActivityFlushAll");
		next_record = (CUptiResult(*)(uint8_t *, size_t, CUpti_Activity **))dlsym(
		    RTLD_DEFAULT, "cuptiActivityGetNextRecord");
		if (!register_callbacks || !enable || !flush_all || !next_record)
			return 1;
		if (gpu_trace) { /* off and on with no call between: nothing to detach */
			gpu_trace(0);
			gpu_trace(1);
		}
		for (int i = 0; i < steps / 2; i++)
			step(stream);
		if (gpu_trace)
			gpu_trace(0);
		step(stream); /* its API exits: where a detach happens */
		printf("cuptiActivityRegisterCallbacks: %d\n",
		       register_callbacks((void *)request, (void *)complete));
		printf("cuptiActivityEnable: %d\n",
		       (int)enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
		if (gpu_trace)
			gpu_trace(1);
		for (int i = steps / 2; i < steps; i++)
			step(stream);
		flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		printf("kernel records received: %lu\n", kernel_records);
		printf("records of other kinds received: %lu\n", other_records);
		return 0;
	}
	void *device = NULL;
	printf("cudaMalloc: %d\n", (int)cudaMalloc(&device, 1024));
	printf("cudaFree: %d\n", (int)cudaFree(device));
	return 0;
}
