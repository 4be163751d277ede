/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/driver_calls.c: programs that reach the CUDA driver without libcudart.so, as the
 * static cudart, cuBLAS and NCCL do (docs/architecture.md F4), run on the CPU stand-in driver.
 *
 *   driver_calls linked     calls the driver through its link-time symbols (-lcuda)
 *   driver_calls procaddr   dlopen("libcuda.so.1"), dlsym "cuGetProcAddress_v2", then every
 *                           function through cuGetProcAddress (per-thread flag for the syncs),
 *                           and one straight dlsym of cuCtxSynchronize
 *   driver_calls direct N   links libcuda and calls cuGetProcAddress (_v2, as cuda.h names it)
 *                           and the 11.3 cuGetProcAddress itself, then the pointers: N stream
 *                           syncs, 2 per-thread ones, 3 context syncs; prints every return
 *                           code and lookup status, which the shim must leave as they are
 * Each makes a known set of calls; a kernel is a host function (tests/standin/README.md).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "copy_shapes.h"
#include "cu_check.h"

static void sleep_kernel(void *usec)
{
	usleep((useconds_t)(uintptr_t)usec);
}

/* The 11.0 ABI of cuGraphInstantiate, still exported as _v2 (cuda.h no longer declares it). */
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
			       char *logBuffer, size_t bufferSize);

/* What a static cudart reaches besides the copies above (driver_table.h): the unaligned 2D copy
 * (its cudaMemcpy2D), 3D and peer copies, batches, the 16-bit and 2D memsets, stream memory
 * operations and graphs; each once, on the legacy stream when it is synchronous and on s
 * otherwise, 4096 bytes where it copies or sets. */
static void more_copies(CUstream s, CUdeviceptr dev, char *host)
{
	CUdeviceptr dev2, flags;
	void *pinned;
	CUcontext ctx;
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuMemAlloc(&dev2, 4096));
	CHECK(cuMemAllocHost(&pinned, 4096));
	CHECK(cuMemAlloc(&flags, 64));
	CUDA_MEMCPY2D down = copy2d_down(dev, host);
	CHECK(cuMemcpy2DUnaligned(&down));
	/* 4 slices of 16 rows of 64 bytes: down to pageable memory, up from pinned memory */
	CUDA_MEMCPY3D down3 = copy3d_down(dev, host), up3 = copy3d_up(pinned, dev);
	CHECK(cuMemcpy3D(&down3));
	CHECK(cuMemcpy3DAsync(&up3, s));
	CHECK(cuMemcpyPeer(dev2, ctx, dev, ctx, 4096));
	CHECK(cuMemcpyPeerAsync(dev, ctx, dev2, ctx, 4096, s));
	CUDA_MEMCPY3D_PEER peer3 = copy3d_peer(dev, dev2, ctx);
	CHECK(cuMemcpy3DPeer(&peer3));
	CHECK(cuMemcpy3DPeerAsync(&peer3, s));
	/* CUDA arrays of 4096 bytes: to and from pageable memory, device memory, another array,
	 * pinned memory asynchronously */
	CUarray array, array2;
	CUDA_ARRAY_DESCRIPTOR one_d = {
	    .Width = 4096, .Height = 0, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
	CHECK(cuArrayCreate(&array, &one_d));
	CHECK(cuArrayCreate(&array2, &one_d));
	CHECK(cuMemcpyHtoA(array, 0, host, 4096));
	CHECK(cuMemcpyAtoH(host, array, 0, 4096));
	CHECK(cuMemcpyDtoA(array, 0, dev, 4096));
	CHECK(cuMemcpyAtoD(dev2, array, 0, 4096));
	CHECK(cuMemcpyAtoA(array2, 0, array, 0, 4096));
	CHECK(cuMemcpyHtoAAsync(array, 0, pinned, 4096, s));
	CHECK(cuMemcpyAtoHAsync(pinned, array2, 0, 4096, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuArrayDestroy(array));
	CHECK(cuArrayDestroy(array2));
	/* a batch of two halves from pinned memory; a 3D batch (its bytes are not recorded) */
	CUdeviceptr dsts[2] = {dev, dev + 2048};
	CUdeviceptr srcs[2] = {(CUdeviceptr)(uintptr_t)pinned,
			       (CUdeviceptr)(uintptr_t)pinned + 2048};
	size_t sizes[2] = {2048, 2048}, attr_index = 0;
	CUmemcpyAttributes attr = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
	CHECK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &attr_index, 1, s));
	CUDA_MEMCPY3D_BATCH_OP op = copy3d_batch_op(dev2, dev);
	CHECK(cuMemcpy3DBatchAsync(1, &op, 0, s));
	/* memsets: device memory, and pinned memory (an implicit sync when not async: S6) */
	CHECK(cuMemsetD16(dev, 7, 2048));
	CHECK(cuMemsetD16Async(dev, 7, 2048, s));
	CHECK(cuMemsetD2D8(dev, 64, 1, 64, 64));
	CHECK(cuMemsetD2D16(dev, 64, 1, 32, 64));
	CHECK(cuMemsetD2D32(dev, 64, 1, 16, 64));
	CHECK(cuMemsetD2D8Async(dev, 64, 1, 64, 64, s));
	CHECK(cuMemsetD2D16Async(dev, 64, 1, 32, 64, s));
	CHECK(cuMemsetD2D32Async(dev, 64, 1, 16, 64, s));
	CHECK(cuMemsetD2D32((CUdeviceptr)(uintptr_t)pinned, 64, 0, 16, 64));
	/* s writes a word and waits for it (32 and 64 bits), then a batch that writes and waits,
	 * and one that only writes */
	CHECK(cuStreamWriteValue32(s, flags, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
	CHECK(cuStreamWaitValue32(s, flags, 1, CU_STREAM_WAIT_VALUE_GEQ));
	CHECK(cuStreamWriteValue64(s, flags + 8, 5, CU_STREAM_WRITE_VALUE_DEFAULT));
	CHECK(cuStreamWaitValue64(s, flags + 8, 5, CU_STREAM_WAIT_VALUE_EQ));
	CUstreamBatchMemOpParams ops[2] = {
	    {.writeValue = {.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32,
			    .address = flags + 16,
			    .value = 3}},
	    {.waitValue = {.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32,
			   .address = flags + 16,
			   .value = 3,
			   .flags = CU_STREAM_WAIT_VALUE_EQ}}};
	CHECK(cuStreamBatchMemOp(s, 2, ops, 0));
	CHECK(cuStreamBatchMemOp(s, 1, ops, 0));
	CHECK(cuStreamSynchronize(s));
	/* a graph captured on s, instantiated three ways, launched, its executables destroyed */
	CUgraph graph;
	CUgraphExec exec[3];
	void *param = (void *)(uintptr_t)100;
	void *args[] = {&param};
	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuLaunchKernel((CUfunction)(void *)sleep_kernel, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
	CHECK(cuStreamEndCapture(s, &graph));
	CUDA_GRAPH_INSTANTIATE_PARAMS params = {.flags = 0};
	CHECK(cuGraphInstantiate(&exec[0], graph, 0));
	CHECK(cuGraphInstantiateWithParams(&exec[1], graph, &params));
	CHECK(cuGraphInstantiate_v2(&exec[2], graph, NULL, NULL, 0));
	CHECK(cuGraphLaunch(exec[0], s));
	CHECK(cuStreamSynchronize(s));
	for (int i = 0; i < 3; i++)
		CHECK(cuGraphExecDestroy(exec[i]));
	CHECK(cuGraphDestroy(graph));
	CHECK(cuMemFree(flags));
	CHECK(cuMemFreeHost(pinned));
	CHECK(cuMemFree(dev2));
}

static int linked(void)
{
	CUstream s;
	CUdeviceptr dev;
	char host[4096];
	memset(host, 5, sizeof(host));
	CHECK(cuInit(0));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&dev, sizeof(host)));
	CHECK(cuMemcpyHtoD(dev, host, sizeof(host)));
	void *param = (void *)(uintptr_t)20000;
	void *args[] = {&param};
	CHECK(cuLaunchKernel((CUfunction)(void *)sleep_kernel, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
	CHECK(cuStreamSynchronize(s));
	memset(host, 0, sizeof(host));
	CHECK(cuMemcpyDtoH(host, dev, sizeof(host)));
	/* the same 4096 bytes as 64 rows of 64: down blocking, up asynchronously (pageable: S5) */
	CUDA_MEMCPY2D down = copy2d_down(dev, host), up = copy2d_up(host, dev);
	CHECK(cuMemcpy2D(&down));
	CHECK(cuMemcpy2DAsync(&up, s));
	CHECK(cuStreamSynchronize(s));
	more_copies(s, dev, host);
	CHECK(cuMemFree(dev));
	CHECK(cuStreamDestroy(s));
	CHECK(cuCtxSynchronize());
	printf("linked %s\n", host[4095] == 5 ? "ok" : "BAD");
	return 0;
}

typedef CUresult (*get_proc_t)(const char *, void **, int, cuuint64_t,
			       CUdriverProcAddressQueryResult *);

static void *get(get_proc_t get_proc, const char *name, cuuint64_t flags)
{
	void *fn = NULL;
	CUdriverProcAddressQueryResult status;
	CHECK(get_proc(name, &fn, 13000, flags, &status));
	return fn;
}

static int procaddr(void)
{
	void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!libcuda)
		return 3;
	get_proc_t get_proc = (get_proc_t)dlsym(libcuda, "cuGetProcAddress_v2");
	CUresult (*init)(unsigned) = get(get_proc, "cuInit", 0);
	CUresult (*stream_create)(CUstream *, unsigned) = get(get_proc, "cuStreamCreate", 0);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			   unsigned, CUstream, void **, void **) =
	    get(get_proc, "cuLaunchKernel", 0);
	CUresult (*stream_sync_ptsz)(CUstream) =
	    get(get_proc, "cuStreamSynchronize", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
	CUresult (*launch_ptsz)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				unsigned, unsigned, CUstream, void **, void **) =
	    get(get_proc, "cuLaunchKernel", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
	CUresult (*stream_destroy)(CUstream) = get(get_proc, "cuStreamDestroy", 0);
	CUresult (*ctx_sync)(void) = (CUresult(*)(void))dlsym(libcuda, "cuCtxSynchronize");
	CUstream s;
	CHECK(init(0));
	CHECK(stream_create(&s, CU_STREAM_NON_BLOCKING));
	void *param = (void *)(uintptr_t)20000;
	void *args[] = {&param};
	CHECK(launch((CUfunction)(void *)sleep_kernel, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
	CHECK(launch_ptsz((CUfunction)(void *)sleep_kernel, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL));
	CHECK(stream_sync_ptsz(0));
	CHECK(stream_destroy(s));
	CHECK(ctx_sync());
	printf("procaddr ok\n");
	return 0;
}

/* The 11.3 entry point, which cuda.h hides behind the name of _v2: declared by its symbol. */
CUresult get_proc_address_v1(const char *symbol, void **pfn, int cudaVersion,
			     cuuint64_t flags) __asm__("cuGetProcAddress");

static int direct(int n)
{
	CUdriverProcAddressQueryResult status = -1;
	CUresult (*stream_sync)(CUstream) = NULL, (*stream_sync_ptsz)(CUstream) = NULL;
	CUresult (*ctx_sync)(void) = NULL;
	void *missing = &status, *too_old = &status;
	CUstream s;
	CHECK(cuInit(0));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUresult r =
	    cuGetProcAddress("cuStreamSynchronize", (void **)&stream_sync, 13000, 0, &status);
	printf("v2 sync: %d status %d\n", (int)r, (int)status);
	r = cuGetProcAddress_v2("cuStreamSynchronize", (void **)&stream_sync_ptsz, 13000,
				CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status);
	printf("v2 sync ptsz: %d status %d\n", (int)r, (int)status);
	r = get_proc_address_v1("cuCtxSynchronize", (void **)&ctx_sync, 13000, 0);
	printf("v1 ctx sync: %d\n", (int)r);
	r = cuGetProcAddress("cuNoSuchFunction", &missing, 13000, 0, &status);
	printf("v2 missing: %d status %d %s\n", (int)r, (int)status, missing ? "set" : "null");
	r = cuGetProcAddress("cuStreamDestroy", &too_old, 3000, 0, &status);
	printf("v2 too old: %d status %d %s\n", (int)r, (int)status, too_old ? "set" : "null");
	r = get_proc_address_v1("cuStreamQuery", NULL, 13000, 0);
	printf("v1 no pfn: %d\n", (int)r);
	if (!stream_sync || !stream_sync_ptsz || !ctx_sync)
		return 4;
	void *param = (void *)(uintptr_t)2000;
	void *args[] = {&param};
	for (int i = 0; i < n; i++) {
		CHECK(cuLaunchKernel((CUfunction)(void *)sleep_kernel, 1, 1, 1, 1, 1, 1, 0, s, args,
				     NULL));
		CHECK(stream_sync(s));
	}
	for (int i = 0; i < 2; i++)
		CHECK(stream_sync_ptsz(0));
	for (int i = 0; i < 3; i++)
		CHECK(ctx_sync());
	printf("bad stream: %d\n", (int)stream_sync((CUstream)(uintptr_t)0x10));
	CHECK(cuStreamDestroy(s));
	printf("direct ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "linked"))
		return linked();
	if (!strcmp(mode, "procaddr"))
		return procaddr();
	if (!strcmp(mode, "direct") && argc > 2)
		return direct(atoi(argv[2]));
	fprintf(stderr, "usage: driver_calls linked|procaddr|direct N\n");
	return 2;
}
