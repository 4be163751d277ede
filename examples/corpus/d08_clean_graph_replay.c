/*
 * examples/corpus/d08_clean_graph_replay.c: corpus workload (CUDA driver API), CLEAN. A
 * fixed-shape step (a device-side step counter, four mixing passes, a reduction) captured once
 * from a stream into a CUDA graph with cuStreamBeginCapture/cuStreamEndCapture, instantiated
 * once and replayed with cuGraphLaunch every step; the step number lives on the device so the
 * replayed kernels keep fixed arguments. Setup allocates and uploads, the loop only launches
 * the graph, and the result is read once at the end into pinned memory.
 *   d08_clean_graph_replay driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 90, N = 1 << 21, PASSES = 4, THREADS = 256 };

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction tick, mix_dev_step, sum_into;
	CUstream s;
	CUgraph graph;
	CUgraphExec exec;
	CUdeviceptr d_x, d_step, d_acc;
	uint32_t *h_init;
	unsigned long long *h_acc;
	int n = N;

	DCHECK(cuModuleGetFunction(&tick, module, "tick"));
	DCHECK(cuModuleGetFunction(&mix_dev_step, module, "mix_dev_step"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&d_x, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_step, sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_acc, sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&h_init, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
	DCHECK(cuMemAllocHost((void **)&h_acc, sizeof *h_acc)); // SYNCSPY-CLEAN: setup pinned allocation
	for (int i = 0; i < N; i++)
		h_init[i] = (uint32_t)i * 2246822519u;
	DCHECK(cuMemcpyHtoDAsync(d_x, h_init, (size_t)N * sizeof(uint32_t), s)); // SYNCSPY-CLEAN: setup upload
	DCHECK(cuMemsetD8Async(d_step, 0, sizeof(int), s));
	DCHECK(cuMemsetD8Async(d_acc, 0, sizeof(unsigned long long), s));

	/* capture one step: the stream's earlier work (the upload) is not part of the graph */
	DCHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	void *tick_args[] = {&d_step};
	DCHECK(cuLaunchKernel(tick, 1, 1, 1, 32, 1, 1, 0, s, tick_args, NULL));
	void *mix_args[] = {&d_x, &n, &d_step};
	for (int p = 0; p < PASSES; p++)
		DCHECK(cuLaunchKernel(mix_dev_step, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, mix_args, NULL));
	void *sum_args[] = {&d_x, &n, &d_acc};
	DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, s, sum_args, NULL));
	DCHECK(cuStreamEndCapture(s, &graph));
	DCHECK(cuGraphInstantiate(&exec, graph, 0));
	DCHECK(cuGraphUpload(exec, s));

	for (int step = 0; step < STEPS; step++)
		DCHECK(cuGraphLaunch(exec, s));

	DCHECK(cuMemcpyDtoHAsync(h_acc, d_acc, sizeof *h_acc, s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = *h_acc;
	DCHECK(cuGraphExecDestroy(exec));
	DCHECK(cuGraphDestroy(graph));
	DCHECK(cuMemFree(d_x)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_step)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_init)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	printf("d08_clean_graph_replay: steps=%d checksum=%llu result=OK\n", STEPS, checksum);
	return 0;
}
