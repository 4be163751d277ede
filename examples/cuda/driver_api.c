/*
 * examples/cuda/driver_api.c: a program that talks to the CUDA driver API alone (no libcudart,
 * static or shared), as cuBLAS, Triton and NCCL do. syncspy must see it through the driver
 * layer (interpose/driver.c): every launch, copy, memset and sync below, which
 * tests/gpu/check_coverage.py cross-checks against CUPTI's records of the same run.
 *
 * Build (the kernel as a cubin loaded at run time, the host code without the runtime):
 *   nvcc -cubin -arch=sm_90 -o driver_api_kernel.cubin examples/cuda/driver_api_kernel.cu
 *   nvcc -cudart none -o driver_api examples/cuda/driver_api.c -lcuda
 *   ./driver_api driver_api_kernel.cubin
 *
 * What it does, ITERATIONS times: an async host-to-device copy from pinned memory, a kernel
 * (y += a * x), an event record and an event synchronize, a blocking device-to-host copy into
 * pageable memory. Then one async memset, one stream synchronize, one blocking copy back, one
 * context synchronize. Expected, and printed: ITERATIONS launches, 2 * ITERATIONS + 1 copies,
 * 1 memset, ITERATIONS event syncs, 1 stream sync, 1 context sync. Exit 0 with "result=OK" when
 * every value read back is right; 1 and the failing call otherwise.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#define ITERATIONS 20
#define ELEMENTS   (1 << 20)
#define SCALE	   0.5f

#define CHECK(call)                                                                                \
	do {                                                                                       \
		CUresult result_ = (call);                                                         \
		if (result_ != CUDA_SUCCESS) {                                                     \
			const char *text_ = NULL;                                                  \
			cuGetErrorString(result_, &text_);                                         \
			fprintf(stderr, "driver_api: %s: %s (%d)\n", #call, text_ ? text_ : "?",   \
				(int)result_);                                                     \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s KERNEL.cubin\n", argv[0]);
		return 2;
	}
	CUdevice device;
	CUcontext context;
	CUmodule module;
	CUfunction scale_add;
	CUstream stream;
	CUevent done;
	CUdeviceptr x, y;
	float *pinned, *pageable;
	size_t bytes = ELEMENTS * sizeof(float);

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&device, 0));
	CHECK(cuDevicePrimaryCtxRetain(&context, device));
	CHECK(cuCtxSetCurrent(context));
	CHECK(cuModuleLoad(&module, argv[1]));
	CHECK(cuModuleGetFunction(&scale_add, module, "scale_add"));
	CHECK(cuMemAlloc(&x, bytes));
	CHECK(cuMemAlloc(&y, bytes));
	CHECK(cuMemAllocHost((void **)&pinned, bytes));
	pageable = malloc(bytes);
	if (!pageable)
		return 1;
	CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&done, CU_EVENT_DEFAULT));
	CHECK(cuMemsetD32Async(y, 0, ELEMENTS, stream)); /* the one memset */

	int ok = 1;
	float scale = SCALE;
	int elements = ELEMENTS;
	void *args[] = {&x, &y, &scale, &elements};
	for (int i = 0; i < ITERATIONS; i++) {
		for (int e = 0; e < ELEMENTS; e++)
			pinned[e] = (float)(i + 1);
		CHECK(cuMemcpyHtoDAsync(x, pinned, bytes, stream));
		CHECK(cuLaunchKernel(scale_add, ELEMENTS / 256, 1, 1, 256, 1, 1, 0, stream, args,
				     NULL));
		CHECK(cuEventRecord(done, stream));
		CHECK(cuEventSynchronize(done));
		CHECK(cuMemcpyDtoH(pageable, y, bytes)); /* blocking, into pageable memory */
		/* y = SCALE * (1 + 2 + ... + (i + 1)) */
		float want = SCALE * (float)((i + 1) * (i + 2) / 2);
		ok &= pageable[0] == want && pageable[ELEMENTS - 1] == want;
	}
	CHECK(cuStreamSynchronize(stream));
	CHECK(cuMemcpyDtoH(pageable, x, bytes));
	ok &= pageable[ELEMENTS / 2] == (float)ITERATIONS;
	CHECK(cuCtxSynchronize());

	CHECK(cuEventDestroy(done));
	CHECK(cuStreamDestroy(stream));
	CHECK(cuMemFreeHost(pinned));
	CHECK(cuMemFree(x));
	CHECK(cuMemFree(y));
	CHECK(cuModuleUnload(module));
	CHECK(cuDevicePrimaryCtxRelease(device));
	free(pageable);
	printf("driver_api: launches=%d copies=%d memsets=1 event_syncs=%d stream_syncs=1 "
	       "ctx_syncs=1 result=%s\n",
	       ITERATIONS, 2 * ITERATIONS + 1, ITERATIONS, ok ? "OK" : "WRONG");
	return ok ? 0 : 1;
}
