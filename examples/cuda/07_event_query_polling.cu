/*
 * examples/cuda/07_event_query_polling.cu: reference workload (7), waiting for the GPU by
 * polling cudaEventQuery (rule polling, class S7).
 *
 * Each step launches a kernel that runs a few hundred microseconds and waits for it. The number
 * of queries depends on timing, so the program never prints it (its output must not vary).
 *   bad   : while (cudaEventQuery(done) == cudaErrorNotReady) {}: a CPU core spins for the whole
 *           kernel and every query takes the driver's locks. syncspy records each uninterrupted
 *           loop as one row whose count is its queries; how many queries a loop makes depends
 *           on timing, so the expectation is a lower bound (at least one per step).
 *   --fixed: the event is created with cudaEventBlockingSync and the host waits in
 *           cudaEventSynchronize, sleeping until the GPU signals. That is still a host sync
 *           (rule host-sync, S3): the fix frees the CPU, it does not remove the wait.
 * Build: nvcc -O2 -arch=sm_90 -cudart shared 07_event_query_polling.cu
 */
#include "workload.h"

enum { ITERATIONS = 20, THREADS = 256, ROUNDS = 200000 };

/* A deterministic, deliberately long kernel: ROUNDS steps of an LCG per thread. */
__global__ void spin(uint32_t *out, int it)
{
	uint32_t x = threadIdx.x * 2654435761u + (uint32_t)it;
	for (int r = 0; r < ROUNDS; r++)
		x = x * LCG_A + LCG_C;
	out[threadIdx.x] = x;
}

static uint32_t host_spin(int t, int it, uint32_t mul, uint32_t add)
{
	return mul * ((uint32_t)t * 2654435761u + (uint32_t)it) + add;
}

int main(int argc, char **argv)
{
	int fixed = parse_variant("07_event_query_polling", argc, argv);
	uint32_t *out = NULL, *result = NULL;
	cudaStream_t stream;
	cudaEvent_t done;
	uint64_t checksum = 0;
	uint32_t mul, add;
	lcg_rounds(ROUNDS, &mul, &add);

	CHECK(cudaHostAlloc((void **)&result, THREADS * sizeof(uint32_t), cudaHostAllocDefault));
	CHECK(cudaMalloc((void **)&out, THREADS * sizeof(uint32_t)));
	CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming |
						  (fixed ? cudaEventBlockingSync : 0)));
	for (int it = 0; it < ITERATIONS; it++) {
		spin<<<1, THREADS, 0, stream>>>(out, it);
		CHECK_LAUNCH();
		CHECK(cudaMemcpyAsync(result, out, THREADS * sizeof(uint32_t), cudaMemcpyDeviceToHost,
				      stream));
		CHECK(cudaEventRecord(done, stream));
		if (!fixed) {
			cudaError_t q;
			while ((q = cudaEventQuery(done)) == cudaErrorNotReady) // @site poll
				; /* spin: the pattern this workload is about */
			CHECK(q);
		} else {
			CHECK(cudaEventSynchronize(done)); // @site event-sync
		}
		for (int t = 0; t < THREADS; t++) {
			expect_equal("out", (long long)it * THREADS + t, result[t], host_spin(t, it, mul, add));
			checksum += result[t] % 65521u;
		}
	}
	CHECK(cudaEventDestroy(done));
	CHECK(cudaStreamDestroy(stream));
	CHECK(cudaFree(out));
	CHECK(cudaFreeHost(result));
	print_result(fixed, "iterations=%lld checksum=%lld", ITERATIONS, (long long)checksum);
	return 0;
}
