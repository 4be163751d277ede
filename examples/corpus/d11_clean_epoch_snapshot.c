/*
 * examples/corpus/d11_clean_epoch_snapshot.c: corpus workload (CUDA driver API), CLEAN. A
 * diffusion model trained in epochs of 20 steps, with a snapshot of the whole field (8 MB)
 * written out after each epoch. The steps run on a stream created with CU_STREAM_DEFAULT (a
 * blocking stream), so the snapshot can be a plain cuMemcpyDtoH on the legacy stream into
 * pinned memory: it waits for the epoch's queued steps, once per epoch, outside the step loop,
 * and the host digests the snapshot (the checkpoint writer) before it queues the next epoch.
 * Inside the step loop nothing waits, allocates or copies.
 * Clean: setup allocations and upload, the once-per-epoch snapshot, the final read, teardown.
 *   d11_clean_epoch_snapshot driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { EPOCHS = 4, STEPS_PER_EPOCH = 20, N = 1 << 21, THREADS = 256, ROUNDS = 192 };

/* The checkpoint writer's digest of a snapshot (FNV-1a over the words). */
static unsigned long long digest(const uint32_t *x, int n)
{
	unsigned long long h = 1469598103934665603ull;
	for (int i = 0; i < n; i++) {
		h ^= x[i];
		h *= 1099511628211ull;
	}
	return h;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction diffuse_ring, sum_into;
	CUstream s;
	CUdeviceptr d_u[2], d_acc;
	uint32_t *h_snap, *host = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	unsigned long long acc = 0, checksum = 0;
	int n = N, rounds = ROUNDS, step = 0;

	DCHECK(cuModuleGetFunction(&diffuse_ring, module, "diffuse_ring"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
	for (int i = 0; i < N; i++)
		host[i] = ((uint32_t)i * 2654435761u) >> 8;
	DCHECK(cuMemAlloc(&d_u[0], (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_u[1], (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_acc, sizeof acc)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&h_snap, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup, the pinned snapshot buffer
	DCHECK(cuMemcpyHtoD(d_u[0], host, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup upload (once)
	DCHECK(cuMemsetD8Async(d_acc, 0, sizeof acc, s));

	for (int epoch = 0; epoch < EPOCHS; epoch++) {
		for (int k = 0; k < STEPS_PER_EPOCH; k++, step++) {
			CUdeviceptr cur = d_u[step & 1], next = d_u[(step & 1) ^ 1];
			void *diffuse_args[] = {&next, &cur, &n, &step, &rounds};
			DCHECK(cuLaunchKernel(diffuse_ring, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, diffuse_args, NULL));
			void *sum_args[] = {&next, &n, &d_acc};
			DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, s, sum_args, NULL));
		}
		/* the newest field is in d_u[step & 1] (the last step's `next`) */
		DCHECK(cuMemcpyDtoH(h_snap, d_u[step & 1], (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: the snapshot, once per epoch, outside the step loop
		checksum = checksum * 1000003 + digest(h_snap, N);
	}

	DCHECK(cuMemcpyDtoHAsync(&acc, d_acc, sizeof acc, s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	checksum = checksum * 1000003 + acc;
	DCHECK(cuMemFree(d_u[0])); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_u[1])); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_snap)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	free(host);
	printf("d11_clean_epoch_snapshot: steps=%d checksum=%llu result=OK\n", EPOCHS * STEPS_PER_EPOCH, checksum);
	return 0;
}
