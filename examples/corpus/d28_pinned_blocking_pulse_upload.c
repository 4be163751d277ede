/*
 * examples/corpus/d28_pinned_blocking_pulse_upload.c: corpus workload (CUDA driver API). The
 * front end of a pulse-Doppler radar processor: every coherent processing interval the host
 * unpacks the receiver's samples into a page-locked staging buffer (cuMemAllocHost, allocated
 * once), uploads them, and a compute stream (created with CU_STREAM_DEFAULT) runs the pulse
 * compression stand-in and reduces the interval's energy into its slot. The author allocated
 * pinned memory "for fast transfers" but uploads with the synchronous cuMemcpyHtoD in
 * upload_interval(). The driver API's synchronization notes say a synchronous copy from pinned
 * host memory to device memory is synchronous with respect to the host; it is also a command
 * on the legacy NULL stream, which waits for the blocking compute stream's previous interval.
 * So every interval the host waits for the previous interval's processing and the copy before
 * it can unpack the next one, and copy and compute never overlap. cuMemcpyHtoDAsync from two
 * pinned staging buffers on a copy stream, ordered by events, is what the pinned memory was for.
 * Planted: the cuMemcpyHtoD from pinned staging in upload_interval(), every interval.
 * Clean: the setup allocations (the pinned staging included), the final read, teardown.
 *   d28_pinned_blocking_pulse_upload driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { CPIS = 60, N = 1 << 21, THREADS = 256, ROUNDS = 16, SUM_BLOCKS = 128 };

struct radar {
	CUfunction mix_rounds, sum_into;
	CUstream compute;
	uint32_t *h_stage;
	CUdeviceptr d_pulses, d_energy;
};

static uint32_t rx_sample(int cpi, int i)
{
	uint32_t h = (uint32_t)i * 0x85ebca6bu + (uint32_t)cpi * 0xc2b2ae35u;
	return h ^ (h >> 13);
}

static uint32_t compress_host(uint32_t x, int cpi)
{
	uint32_t v = x ^ ((uint32_t)cpi * 0x9e3779b9u);
	for (int r = 0; r < ROUNDS; r++)
		v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
	return v;
}

/* --- the front end ------------------------------------------------------------------------ */

static void upload_interval(struct radar *rd, int cpi)
{
	for (int i = 0; i < N; i++)
		rd->h_stage[i] = rx_sample(cpi, i);
	DCHECK(cuMemcpyHtoD(rd->d_pulses, rd->h_stage, (size_t)N * sizeof(uint32_t))); // SYNCSPY-PROBLEM: synchronous copy (pinned source or not), on the NULL stream behind the previous interval, every interval
}

static void process_interval(struct radar *rd, int cpi)
{
	int n = N, rounds = ROUNDS;
	CUdeviceptr slot = rd->d_energy + (size_t)cpi * sizeof(unsigned long long);
	void *mix_args[] = {&rd->d_pulses, &n, &cpi, &rounds};
	void *sum_args[] = {&rd->d_pulses, &n, &slot};
	DCHECK(cuLaunchKernel(rd->mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, rd->compute, mix_args, NULL));
	DCHECK(cuLaunchKernel(rd->sum_into, SUM_BLOCKS, 1, 1, THREADS, 1, 1, 0, rd->compute, sum_args, NULL));
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct radar rd;
	unsigned long long *h_energy;

	DCHECK(cuModuleGetFunction(&rd.mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&rd.sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&rd.compute, CU_STREAM_DEFAULT));
	DCHECK(cuMemAllocHost((void **)&rd.h_stage, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned staging
	DCHECK(cuMemAllocHost((void **)&h_energy, CPIS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	DCHECK(cuMemAlloc(&rd.d_pulses, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&rd.d_energy, CPIS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD32Async(rd.d_energy, 0u, 2 * CPIS, rd.compute));

	for (int cpi = 0; cpi < CPIS; cpi++) {
		upload_interval(&rd, cpi);
		process_interval(&rd, cpi);
	}

	DCHECK(cuMemcpyDtoHAsync(h_energy, rd.d_energy, CPIS * sizeof(unsigned long long), rd.compute)); // SYNCSPY-CLEAN: final read of the energies
	DCHECK(cuStreamSynchronize(rd.compute)); // SYNCSPY-CLEAN: the one wait for the results, after the loop

	unsigned long long checksum = 0;
	for (int cpi = 0; cpi < CPIS; cpi++) {
		if (cpi % 19 == 0) {
			unsigned long long want = 0;
			for (int i = 0; i < N; i++)
				want += compress_host(rx_sample(cpi, i), cpi) >> 8;
			if (h_energy[cpi] != want) {
				fprintf(stderr, "d28: interval %d energy = %llu, want %llu\n", cpi, h_energy[cpi], want);
				return 1;
			}
		}
		checksum = checksum * 1000003u + h_energy[cpi];
	}

	DCHECK(cuMemFree(rd.d_pulses)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(rd.d_energy)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(rd.h_stage)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_energy)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(rd.compute));
	driver_teardown(module);
	printf("d28_pinned_blocking_pulse_upload: steps=%d checksum=%llu result=OK\n", CPIS, checksum);
	return 0;
}
