/*
 * examples/corpus/d31_clean_own_pool_assembly.c: corpus workload (CUDA driver API), CLEAN. The
 * assembly phase of an adaptive finite-element solver in a driver-API backend: the mesh is
 * refined and coarsened between steps, so every step's element workspace has a different size.
 * The backend takes it from the stream-ordered allocator, from its own memory pool
 * (cuMemPoolCreate) whose release threshold is raised to the maximum so that memory freed with
 * cuMemFreeAsync stays reserved across synchronizations (driver API reference, memory pools:
 * CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), warmed at setup with one allocation of the largest size.
 * Every step cuMemAllocFromPoolAsync and cuMemFreeAsync are ordered on the stream and reuse that
 * reserve without a synchronization. After each of four epochs (20 steps, outside the step loop)
 * the assembled norms so far are copied into pinned memory and the host waits to log them.
 * Clean: the pool's allocation and free every step, the setup allocations and warm-up sync, the
 * per-epoch checkpoint copy and wait (the last is the final read), teardown.
 *   d31_clean_own_pool_assembly driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { EPOCHS = 4, STEPS = 20, MAX_ELEMS = 1 << 21, THREADS = 256, ROUNDS = 10, SUM_BLOCKS = 128 };

struct assembler {
	CUfunction fill_hash, mix_rounds, sum_into;
	CUstream s;
	CUmemoryPool pool;
	CUdeviceptr d_norms;
};

static int mesh_elements(int step)
{
	return MAX_ELEMS / 4 + (int)(((uint32_t)step * 2654435761u >> 12) % (3u * MAX_ELEMS / 4 / THREADS)) * THREADS;
}

static uint32_t element_host(int step, int i)
{
	uint32_t v = ((uint32_t)i * 2654435761u) ^ ((uint32_t)step * 40503u);
	v ^= (uint32_t)step * 0x9e3779b9u;
	for (int r = 0; r < ROUNDS; r++)
		v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
	return v;
}

/* --- one assembly step -------------------------------------------------------------------- */

static void assemble(struct assembler *a, int step)
{
	int n = mesh_elements(step), rounds = ROUNDS;
	CUdeviceptr work, slot = a->d_norms + (size_t)step * sizeof(unsigned long long);
	DCHECK(cuMemAllocFromPoolAsync(&work, (size_t)n * sizeof(uint32_t), a->pool, a->s)); // SYNCSPY-CLEAN: stream-ordered, from the pool's kept reserve
	void *fill_args[] = {&work, &n, &step};
	void *mix_args[] = {&work, &n, &step, &rounds};
	void *sum_args[] = {&work, &n, &slot};
	DCHECK(cuLaunchKernel(a->fill_hash, n / THREADS, 1, 1, THREADS, 1, 1, 0, a->s, fill_args, NULL));
	DCHECK(cuLaunchKernel(a->mix_rounds, n / THREADS, 1, 1, THREADS, 1, 1, 0, a->s, mix_args, NULL));
	DCHECK(cuLaunchKernel(a->sum_into, SUM_BLOCKS, 1, 1, THREADS, 1, 1, 0, a->s, sum_args, NULL));
	DCHECK(cuMemFreeAsync(work, a->s)); // SYNCSPY-CLEAN: stream-ordered free back to the pool, no sync
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	const int total = EPOCHS * STEPS;
	struct assembler a;
	CUmemPoolProps props = {0};
	cuuint64_t keep = ~(cuuint64_t)0;
	CUdeviceptr warm;
	unsigned long long *h_ckpt, epoch_total[EPOCHS];

	DCHECK(cuModuleGetFunction(&a.fill_hash, module, "fill_hash"));
	DCHECK(cuModuleGetFunction(&a.mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&a.sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&a.s, CU_STREAM_NON_BLOCKING));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	DCHECK(cuMemPoolCreate(&a.pool, &props));
	DCHECK(cuMemPoolSetAttribute(a.pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
	DCHECK(cuMemAlloc(&a.d_norms, total * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&h_ckpt, total * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned checkpoint buffer
	DCHECK(cuMemsetD32Async(a.d_norms, 0u, 2 * total, a.s));
	DCHECK(cuMemAllocFromPoolAsync(&warm, (size_t)MAX_ELEMS * sizeof(uint32_t), a.pool, a.s)); // SYNCSPY-CLEAN: setup, reserves the pool's memory once
	DCHECK(cuMemFreeAsync(warm, a.s)); // SYNCSPY-CLEAN: setup, back to the pool (kept: the threshold is raised)
	DCHECK(cuStreamSynchronize(a.s)); // SYNCSPY-CLEAN: setup, once

	for (int epoch = 0; epoch < EPOCHS; epoch++) {
		for (int k = 0; k < STEPS; k++)
			assemble(&a, epoch * STEPS + k);
		/* the epoch's checkpoint, outside the step loop */
		DCHECK(cuMemcpyDtoHAsync(h_ckpt, a.d_norms, total * sizeof(unsigned long long), a.s)); // SYNCSPY-CLEAN: once per epoch, into pinned memory
		DCHECK(cuStreamSynchronize(a.s)); // SYNCSPY-CLEAN: once per epoch, the log is written from it
		epoch_total[epoch] = 0;
		for (int k = 0; k < STEPS; k++)
			epoch_total[epoch] += h_ckpt[epoch * STEPS + k];
	}

	unsigned long long checksum = 0;
	for (int step = 0; step < total; step++) {
		if (step % 27 == 4) {
			unsigned long long want = 0;
			for (int i = 0; i < mesh_elements(step); i++)
				want += element_host(step, i) >> 8;
			if (h_ckpt[step] != want) {
				fprintf(stderr, "d31: step %d norm = %llu, want %llu\n", step, h_ckpt[step], want);
				return 1;
			}
		}
		checksum = checksum * 1000003u + h_ckpt[step];
	}
	for (int epoch = 0; epoch < EPOCHS; epoch++)
		checksum = checksum * 31u + epoch_total[epoch];

	DCHECK(cuMemFree(a.d_norms)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_ckpt)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemPoolDestroy(a.pool)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(a.s));
	driver_teardown(module);
	printf("d31_clean_own_pool_assembly: steps=%d checksum=%llu result=OK\n", total, checksum);
	return 0;
}
