/*
 * examples/corpus/c24_clean_host_func_log.cu: corpus workload (CUDA C), CLEAN. A long-running
 * heat-exchanger simulation that logs one metric per step without ever waiting for the GPU:
 * the compute stream reduces the step's energy into the step's own device slot and records an
 * event; a separate log stream waits on it, copies the slot into a pinned log array with
 * cudaMemcpyAsync and enqueues a cudaLaunchHostFunc callback that folds the value into the
 * host's log (the callback runs on the driver's thread when the log stream reaches it, and only
 * the log stream waits for it). The main thread queues all steps and synchronizes once, at the
 * end; the compute stream never waits for the host.
 */
#include "corpus.h"

enum { STEPS = 80, N = 1 << 21, THREADS = 256, ROUNDS = 64 };

__global__ void exchange(const int *hot, int *cold, int n, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int h = hot[i], c = cold[i];
	for (int r = 0; r < ROUNDS; r++) {
		int q = (h - c) >> 3;
		h -= q;
		c += q + ((i + step + r) & 1);
	}
	cold[i] = c & 0xfffff;
}

__global__ void energy(const int *cold, int n, unsigned long long *slot)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		s += (unsigned)cold[i];
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(slot, t);
	}
}

struct log_state {
	const unsigned long long *values; /* pinned, one slot per step */
	unsigned long long digest;
	int entries;
};

struct log_entry {
	struct log_state *log;
	int step;
};

/* Runs on the driver's callback thread, in log-stream order; makes no CUDA call. */
static void CUDART_CB log_step(void *arg)
{
	struct log_entry *e = (struct log_entry *)arg;
	e->log->digest = e->log->digest * 1000003 + e->log->values[e->step];
	e->log->entries++;
}

int main(void)
{
	int *d_hot, *d_cold;
	unsigned long long *d_metric, *h_metric;
	int *init = (int *)malloc((size_t)N * sizeof(int));
	struct log_state log = {0, 0, 0};
	struct log_entry entries[STEPS];
	cudaStream_t compute, logger;
	cudaEvent_t measured;

	for (int i = 0; i < N; i++)
		init[i] = (int)(((unsigned)i * 7919u) % 100000u);
	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&logger, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&measured, cudaEventDisableTiming));
	CHECK(cudaMalloc(&d_hot, (size_t)N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_cold, (size_t)N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_metric, STEPS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_metric, STEPS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned log
	CHECK(cudaMemcpyAsync(d_hot, init, (size_t)N * sizeof(int), cudaMemcpyHostToDevice, compute)); // SYNCSPY-CLEAN: setup upload (pageable, once)
	CHECK(cudaMemsetAsync(d_cold, 0, (size_t)N * sizeof(int), compute));
	CHECK(cudaMemsetAsync(d_metric, 0, STEPS * sizeof(unsigned long long), compute));
	log.values = h_metric;

	for (int step = 0; step < STEPS; step++) {
		exchange<<<N / THREADS, THREADS, 0, compute>>>(d_hot, d_cold, N, step);
		energy<<<128, THREADS, 0, compute>>>(d_cold, N, d_metric + step);
		CHECK_LAUNCH();
		CHECK(cudaEventRecord(measured, compute));
		CHECK(cudaStreamWaitEvent(logger, measured, 0));
		CHECK(cudaMemcpyAsync(h_metric + step, d_metric + step, sizeof(unsigned long long), cudaMemcpyDeviceToHost, logger)); // SYNCSPY-CLEAN: async copy into pinned memory, on the log stream
		entries[step].log = &log;
		entries[step].step = step;
		CHECK(cudaLaunchHostFunc(logger, log_step, &entries[step])); // SYNCSPY-CLEAN: callback on the log stream; the compute stream never waits for it
	}

	CHECK(cudaStreamSynchronize(logger)); // SYNCSPY-CLEAN: once, after the loop (the last callback has run)
	corpus_expect("c24_clean_host_func_log", "log entries", log.entries, STEPS);
	CHECK(cudaFree(d_hot)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_cold)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_metric)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_metric)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaEventDestroy(measured));
	CHECK(cudaStreamDestroy(compute));
	CHECK(cudaStreamDestroy(logger));
	free(init);
	corpus_result("c24_clean_host_func_log", STEPS, log.digest);
	return 0;
}
