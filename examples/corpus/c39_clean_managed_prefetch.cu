/*
 * examples/corpus/c39_clean_managed_prefetch.cu: corpus workload (CUDA C, managed memory),
 * CLEAN. An agent-based epidemic model whose population lives in cudaMallocManaged memory (the
 * host initializes it and reads the final state without explicit copies). The program does what
 * the CUDA programming guide's unified-memory performance hints recommend: after the host has
 * written the initial state it advises the preferred location to be the GPU and prefetches
 * the arrays to the device with cudaMemPrefetchAsync on the compute stream, so the kernels
 * never page-fault; the step loop only queues kernels (the host never touches managed memory
 * while they run); after the loop it prefetches the arrays back to the host (cudaCpuDeviceId)
 * and synchronizes the stream once before reading them.
 */
#include "corpus.h"

enum { DAYS = 80, N = 1 << 22, THREADS = 256, CONTACTS = 8 };

/* state: 0 susceptible, 1..7 infected (days since infection), 8 recovered */
__global__ void spread(const uint8_t *cur, uint8_t *next, int n, int day)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint8_t st = cur[i];
	if (st == 0) {
		uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)day * 0x9e3779b9u;
		for (int c = 0; c < CONTACTS; c++) {
			h = (h ^ (h >> 15)) * 2246822519u + 374761393u;
			uint8_t o = cur[h % (uint32_t)n];
			if (o >= 1 && o <= 7 && (h >> 28) < 2) {
				st = 1;
				break;
			}
		}
		next[i] = st;
	} else {
		next[i] = st < 8 ? st + 1 : 8;
	}
}

static void prefetch(const void *p, size_t bytes, int device, cudaStream_t s)
{
#if CUDART_VERSION >= 13000
	struct cudaMemLocation loc;
	loc.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
	loc.id = device == cudaCpuDeviceId ? 0 : device;
	CHECK(cudaMemPrefetchAsync(p, bytes, loc, 0, s)); // SYNCSPY-CLEAN: migration queued on the stream, once each way
#else
	CHECK(cudaMemPrefetchAsync(p, bytes, device, s)); // SYNCSPY-CLEAN: migration queued on the stream, once each way
#endif
}

static void advise_gpu(const void *p, size_t bytes, int device)
{
#if CUDART_VERSION >= 13000
	struct cudaMemLocation loc;
	loc.type = cudaMemLocationTypeDevice;
	loc.id = device;
	CHECK(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, loc));
#else
	CHECK(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, device));
#endif
}

int main(void)
{
	uint8_t *pop[2];
	cudaStream_t s;
	int dev = 0, concurrent = 0;

	CHECK(cudaGetDevice(&dev));
	CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, dev));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (int k = 0; k < 2; k++)
		CHECK(cudaMallocManaged(&pop[k], N)); // SYNCSPY-CLEAN: setup allocation (managed)
	for (int i = 0; i < N; i++)
		pop[0][i] = (i % 4099 == 0) ? 1 : 0;
	if (concurrent) {
		for (int k = 0; k < 2; k++) {
			advise_gpu(pop[k], N, dev);
			prefetch(pop[k], N, dev, s);
		}
	}

	for (int day = 0; day < DAYS; day++) {
		spread<<<N / THREADS, THREADS, 0, s>>>(pop[day & 1], pop[(day + 1) & 1], N, day);
		CHECK_LAUNCH();
	}

	uint8_t *final_pop = pop[DAYS & 1];
	if (concurrent)
		prefetch(final_pop, N, cudaCpuDeviceId, s);
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read, once after the loop
	unsigned long long counts[9] = {0}, checksum = 0;
	for (int i = 0; i < N; i++)
		counts[final_pop[i]]++;
	for (int k = 0; k < 9; k++)
		checksum = checksum * 1000003u + counts[k];
	corpus_expect("c39_clean_managed_prefetch", "population", (long long)(counts[0] + counts[1] + counts[2] + counts[3] + counts[4] + counts[5] + counts[6] + counts[7] + counts[8]), N);
	for (int k = 0; k < 2; k++)
		CHECK(cudaFree(pop[k])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("c39_clean_managed_prefetch", DAYS, checksum);
	return 0;
}
