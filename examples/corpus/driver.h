/*
 * examples/corpus/driver.h: what the driver-API workloads of the corpus (d*.c) share: checking
 * every CUresult, and loading the cubin built from driver_kernels.cu into the primary context.
 * It makes no call that syncs, allocates or copies: those stay in the workload's own source,
 * on marked lines (examples/corpus/README.md).
 */
#ifndef SYNCSPY_CORPUS_DRIVER_H
#define SYNCSPY_CORPUS_DRIVER_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define DCHECK(call)                                                                               \
	do {                                                                                       \
		CUresult dcheck_r_ = (call);                                                       \
		if (dcheck_r_ != CUDA_SUCCESS) {                                                   \
			const char *dcheck_s_ = NULL;                                              \
			cuGetErrorString(dcheck_r_, &dcheck_s_);                                   \
			fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,      \
				dcheck_s_ ? dcheck_s_ : "?");                                      \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* cuInit, the primary context of device 0 made current, and the corpus kernels' module. */
static CUmodule driver_setup(int argc, char **argv, CUcontext *ctx)
{
	CUdevice dev;
	CUmodule module;
	if (argc != 2) {
		fprintf(stderr, "usage: %s driver_kernels.cubin\n", argv[0]);
		exit(2);
	}
	DCHECK(cuInit(0));
	DCHECK(cuDeviceGet(&dev, 0));
	DCHECK(cuDevicePrimaryCtxRetain(ctx, dev));
	DCHECK(cuCtxSetCurrent(*ctx));
	DCHECK(cuModuleLoad(&module, argv[1]));
	return module;
}

static void driver_teardown(CUmodule module)
{
	CUdevice dev;
	DCHECK(cuModuleUnload(module));
	DCHECK(cuDeviceGet(&dev, 0));
	DCHECK(cuDevicePrimaryCtxRelease(dev));
}

#endif
