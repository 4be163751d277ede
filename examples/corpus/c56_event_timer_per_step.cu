/*
 * examples/corpus/c56_event_timer_per_step.cu: corpus workload (CUDA C). An integer power
 * iteration over a CSR matrix (the shape of PageRank-style ranking): every iteration a sparse
 * matrix-vector product, then a damping kernel. The SpMV is wrapped in a small phase timer:
 * timer_start() records a start event, timer_stop() records a stop event and then calls
 * cudaEventSynchronize on it so that cudaEventElapsedTime can be read and added to the phase's
 * total. cudaEventSynchronize waits until the event has completed (CUDA runtime API reference),
 * so every iteration the host waits for the product before it queues the damping kernel. The
 * totals are only printed after the loop: reading each pair of events then (or timing the loop
 * once) would need no wait inside it.
 * Planted: the cudaEventSynchronize in timer_stop(), every iteration.
 * Clean: the whole loop timed once (one cudaEventSynchronize after it), the setup allocations and
 * uploads, the final read, teardown.
 */
#include "corpus.h"

enum { ITERS = 60, N = 1 << 17, NNZ_ROW = 8, THREADS = 256 };

__global__ void spmv_csr(const int *row_ptr, const int *cols, const uint32_t *vals, const uint32_t *x, uint32_t *y, int n)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= n)
		return;
	uint32_t s = 0;
	for (int k = row_ptr[r]; k < row_ptr[r + 1]; k++)
		s += vals[k] * x[cols[k]];
	y[r] = s;
}

__host__ __device__ static inline uint32_t damp(uint32_t y, int i)
{
	return (y >> 3) + (uint32_t)(i & 1023);
}

__global__ void damp_vector(const uint32_t *y, uint32_t *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = damp(y[i], i);
}

/* --- the phase timer ------------------------------------------------------------------------ */

struct phase_timer {
	cudaEvent_t start, stop;
	float total_ms;
	int laps;
};

static void timer_init(struct phase_timer *t)
{
	CHECK(cudaEventCreate(&t->start));
	CHECK(cudaEventCreate(&t->stop));
	t->total_ms = 0.0f;
	t->laps = 0;
}

static void timer_start(struct phase_timer *t, cudaStream_t s)
{
	CHECK(cudaEventRecord(t->start, s));
}

static void timer_stop(struct phase_timer *t, cudaStream_t s)
{
	float ms = 0.0f;
	CHECK(cudaEventRecord(t->stop, s));
	CHECK(cudaEventSynchronize(t->stop)); // SYNCSPY-PROBLEM: waits for the product every iteration, only to add up its time
	CHECK(cudaEventElapsedTime(&ms, t->start, t->stop));
	t->total_ms += ms;
	t->laps++;
}

static void timer_destroy(struct phase_timer *t)
{
	CHECK(cudaEventDestroy(t->start));
	CHECK(cudaEventDestroy(t->stop));
}

int main(void)
{
	const char *name = "c56_event_timer_per_step";
	const int nnz = N * NNZ_ROW;
	int *h_row = (int *)malloc((N + 1) * sizeof(int)), *h_cols = (int *)malloc(nnz * sizeof(int));
	uint32_t *h_vals = (uint32_t *)malloc(nnz * sizeof(uint32_t));
	uint32_t *h_x = (uint32_t *)malloc(N * sizeof(uint32_t)), *h_y = (uint32_t *)malloc(N * sizeof(uint32_t));
	uint32_t *h_out = (uint32_t *)malloc(N * sizeof(uint32_t));
	int *d_row, *d_cols;
	uint32_t *d_vals, *d_x, *d_y;
	cudaStream_t s;
	cudaEvent_t run_start, run_stop;
	struct phase_timer spmv_timer;
	float run_ms = 0.0f;

	for (int r = 0; r <= N; r++)
		h_row[r] = r * NNZ_ROW;
	for (int k = 0; k < nnz; k++) {
		uint32_t h = (uint32_t)k * 2654435761u;
		h_cols[k] = (int)((h ^ (h >> 15)) % (uint32_t)N);
		h_vals[k] = 1u + (h >> 28);
	}
	for (int i = 0; i < N; i++)
		h_x[i] = (uint32_t)i;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaEventCreate(&run_start));
	CHECK(cudaEventCreate(&run_stop));
	timer_init(&spmv_timer);
	CHECK(cudaMalloc(&d_row, (N + 1) * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_cols, nnz * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_vals, nnz * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_x, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_y, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(d_row, h_row, (N + 1) * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemcpy(d_cols, h_cols, nnz * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemcpy(d_vals, h_vals, nnz * sizeof(uint32_t), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemcpy(d_x, h_x, N * sizeof(uint32_t), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload

	CHECK(cudaEventRecord(run_start, s));
	for (int it = 0; it < ITERS; it++) {
		timer_start(&spmv_timer, s);
		spmv_csr<<<N / THREADS, THREADS, 0, s>>>(d_row, d_cols, d_vals, d_x, d_y, N);
		CHECK_LAUNCH();
		timer_stop(&spmv_timer, s);
		damp_vector<<<N / THREADS, THREADS, 0, s>>>(d_y, d_x, N);
		CHECK_LAUNCH();
	}
	CHECK(cudaEventRecord(run_stop, s));
	CHECK(cudaEventSynchronize(run_stop)); // SYNCSPY-CLEAN: the whole loop timed once, after it
	CHECK(cudaEventElapsedTime(&run_ms, run_start, run_stop));
	/* the timings vary from run to run: only their sanity goes into the checked result */
	corpus_expect(name, "timed laps", spmv_timer.laps, ITERS);
	corpus_expect(name, "timings non-negative", spmv_timer.total_ms >= 0.0f && run_ms >= 0.0f, 1);

	CHECK(cudaMemcpy(h_out, d_x, N * sizeof(uint32_t), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read
	timer_destroy(&spmv_timer);
	CHECK(cudaEventDestroy(run_start));
	CHECK(cudaEventDestroy(run_stop));
	CHECK(cudaFree(d_row)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_cols)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_vals)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_y)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));

	for (int it = 0; it < ITERS; it++) {
		for (int r = 0; r < N; r++) {
			uint32_t acc = 0;
			for (int k = h_row[r]; k < h_row[r + 1]; k++)
				acc += h_vals[k] * h_x[h_cols[k]];
			h_y[r] = acc;
		}
		for (int i = 0; i < N; i++)
			h_x[i] = damp(h_y[i], i);
	}
	unsigned long long checksum = 0;
	for (int i = 0; i < N; i++) {
		if (h_out[i] != h_x[i])
			corpus_expect(name, "rank", h_out[i], h_x[i]);
		checksum = checksum * 1000003u + h_out[i];
	}
	free(h_row);
	free(h_cols);
	free(h_vals);
	free(h_x);
	free(h_y);
	free(h_out);
	corpus_result(name, ITERS, checksum);
	return 0;
}
