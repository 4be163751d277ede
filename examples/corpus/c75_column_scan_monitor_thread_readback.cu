/*
 * examples/corpus/c75_column_scan_monitor_thread_readback.cu: corpus workload (CUDA C, pthreads).
 * The scan engine of a GPU column store: a 32M-row fact table (price and quantity columns) lives
 * in device memory, split into two partitions, each scanned by its own lane on a stream created
 * with cudaStreamCreate (blocking streams, the default flag). Query batches arrive from the
 * network every 75 microseconds; each batch (four filter-aggregate queries) is uploaded from
 * pinned memory and scanned on the lanes in turn, and every scan block adds its row count to a
 * device counter. A monitor thread feeds the admin console's progress view: every 250
 * microseconds it reads the rows-scanned counter with cudaMemcpy into a local variable. That
 * cudaMemcpy is issued on the legacy default stream, which the CUDA programming guide (default
 * stream, implicit synchronization) says synchronizes with every blocking stream: each reading
 * waits for all scans queued on both lanes before it (and, a device-to-host copy into pageable
 * memory, returns only when done), and every scan queued after it on either lane waits for the
 * reading. Each sample drains both lanes and stalls the batches arriving meanwhile, from a
 * thread that does no GPU work of its own. A non-blocking stream for the monitor, or the counter
 * in mapped pinned memory read with a plain load, would leave the lanes alone.
 * Planted: the cudaMemcpy of the counter in monitor_main(), every sample (about every 0.25 ms
 * while the batches run).
 * Clean: the setup allocations and the table's generation, the per-batch query upload from
 * pinned memory on the lane's stream, the two lane synchronizations after the last batch, the
 * final read, teardown.
 */
#include "corpus.h"

#include <pthread.h>
#include <time.h>

enum { BATCHES = 64, LANES = 2, ROWS = 1 << 25, PART = ROWS / LANES, QPB = 4, THREADS = 256, SCAN_BLOCKS = 66 };

struct query {
	uint32_t price_lo, price_hi, qty_mod, qty_rem;
};

struct result {
	unsigned long long rows, qty;
};

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

__host__ __device__ static inline uint32_t price_of(uint32_t row) { return mix32(row * 2u + 1u) % 100000u; }
__host__ __device__ static inline uint32_t qty_of(uint32_t row) { return 1u + mix32(row * 2u + 2u) % 1000u; }

__host__ __device__ static inline int matches(const struct query *q, uint32_t price, uint32_t qty)
{
	return price >= q->price_lo && price < q->price_hi && qty % q->qty_mod == q->qty_rem;
}

static struct query make_query(int batch, int k)
{
	struct query q;
	uint32_t h = mix32((uint32_t)(batch * QPB + k) * 0x9e3779b9u);
	q.price_lo = h % 60000u;
	q.price_hi = q.price_lo + 5000u + (h >> 20) % 30000u;
	q.qty_mod = 2u + (h >> 8) % 7u;
	q.qty_rem = (h >> 4) % q.qty_mod;
	return q;
}

__global__ void generate_table(uint32_t *price, uint32_t *qty)
{
	uint32_t row = blockIdx.x * blockDim.x + threadIdx.x;
	if (row < ROWS) {
		price[row] = price_of(row);
		qty[row] = qty_of(row);
	}
}

/* one pass over a partition answers the batch's four queries */
__global__ void scan_partition(const uint32_t *price, const uint32_t *qty, uint32_t first, const struct query *qs, struct result *out, unsigned long long *rows_scanned)
{
	__shared__ struct query sq[QPB];
	__shared__ unsigned long long s_rows[QPB][THREADS], s_qty[QPB][THREADS], s_seen[THREADS];
	if (threadIdx.x < QPB)
		sq[threadIdx.x] = qs[threadIdx.x];
	__syncthreads();
	unsigned long long rows[QPB] = {0, 0, 0, 0}, sum[QPB] = {0, 0, 0, 0}, seen = 0;
	for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < PART; r += gridDim.x * blockDim.x) {
		uint32_t p = price[first + r], q = qty[first + r];
		for (int k = 0; k < QPB; k++)
			if (matches(&sq[k], p, q)) {
				rows[k]++;
				sum[k] += q;
			}
		seen++;
	}
	for (int k = 0; k < QPB; k++) {
		s_rows[k][threadIdx.x] = rows[k];
		s_qty[k][threadIdx.x] = sum[k];
	}
	s_seen[threadIdx.x] = seen;
	__syncthreads();
	if (threadIdx.x < QPB) {
		int k = threadIdx.x;
		unsigned long long a = 0, b = 0;
		for (int t = 0; t < THREADS; t++) {
			a += s_rows[k][t];
			b += s_qty[k][t];
		}
		atomicAdd(&out[k].rows, a);
		atomicAdd(&out[k].qty, b);
	}
	if (threadIdx.x == QPB) {
		unsigned long long n = 0;
		for (int t = 0; t < THREADS; t++)
			n += s_seen[t];
		atomicAdd(rows_scanned, n);
	}
}

/* --- the admin console's progress monitor ------------------------------------------------- */

struct monitor {
	const unsigned long long *d_rows_scanned;
	int stop;
	unsigned long long last;
	long samples;
};

static void sleep_us(long us)
{
	struct timespec ts = {0, us * 1000L};
	nanosleep(&ts, NULL);
}

static void *monitor_main(void *arg)
{
	struct monitor *m = (struct monitor *)arg;
	do {
		unsigned long long rows;
		CHECK(cudaMemcpy(&rows, m->d_rows_scanned, sizeof rows, cudaMemcpyDeviceToHost)); // SYNCSPY-PROBLEM: legacy default stream: drains both blocking lanes and stalls them, every sample
		m->last = rows;
		m->samples++;
		sleep_us(250);
	} while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE));
	return NULL;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(void)
{
	const char *name = "c75_column_scan_monitor_thread_readback";
	cudaStream_t lane[LANES];
	uint32_t *d_price, *d_qty;
	struct query *h_q, *d_q;
	struct result *d_res, h_res[BATCHES * QPB];
	unsigned long long *d_rows_scanned, rows_total;
	struct monitor mon = {NULL, 0, 0, 0};
	pthread_t th;

	for (int k = 0; k < LANES; k++)
		CHECK(cudaStreamCreate(&lane[k]));
	CHECK(cudaMalloc(&d_price, (size_t)ROWS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_qty, (size_t)ROWS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_q, BATCHES * QPB * sizeof(struct query))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_res, sizeof h_res)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_rows_scanned, sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_q, BATCHES * QPB * sizeof(struct query))); // SYNCSPY-CLEAN: setup pinned query buffer
	generate_table<<<ROWS / THREADS, THREADS, 0, lane[0]>>>(d_price, d_qty);
	CHECK_LAUNCH();
	CHECK(cudaMemsetAsync(d_res, 0, sizeof h_res, lane[0]));
	CHECK(cudaMemsetAsync(d_rows_scanned, 0, sizeof(unsigned long long), lane[0]));
	CHECK(cudaStreamSynchronize(lane[0])); // SYNCSPY-CLEAN: setup, once: the table is loaded before the server opens

	mon.d_rows_scanned = d_rows_scanned;
	if (pthread_create(&th, NULL, monitor_main, &mon) != 0) {
		fprintf(stderr, "%s: pthread_create failed\n", name);
		return 1;
	}
	double t0 = now_us();
	for (int b = 0; b < BATCHES; b++) {
		while (now_us() < t0 + 75.0 * b) /* the next batch arrives from the network */
			sleep_us(20);
		int k = b % LANES;
		for (int j = 0; j < QPB; j++)
			h_q[b * QPB + j] = make_query(b, j);
		CHECK(cudaMemcpyAsync(d_q + b * QPB, h_q + b * QPB, QPB * sizeof(struct query), cudaMemcpyHostToDevice, lane[k])); // SYNCSPY-CLEAN: the batch's queries, async from pinned memory on the lane
		scan_partition<<<SCAN_BLOCKS, THREADS, 0, lane[k]>>>(d_price, d_qty, (uint32_t)k * PART, d_q + b * QPB, d_res + b * QPB, d_rows_scanned);
		CHECK_LAUNCH();
	}
	for (int k = 0; k < LANES; k++)
		CHECK(cudaStreamSynchronize(lane[k])); // SYNCSPY-CLEAN: once per lane, after the last batch
	__atomic_store_n(&mon.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	CHECK(cudaMemcpy(h_res, d_res, sizeof h_res, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of the answers
	CHECK(cudaMemcpy(&rows_total, d_rows_scanned, sizeof rows_total, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of the counter

	corpus_expect(name, "monitor took samples", mon.samples > 0, 1);
	corpus_expect(name, "rows scanned", (long long)rows_total, (long long)BATCHES * PART);
	for (int b = 0; b < 2; b++) {
		struct query q0 = make_query(b, 0), q3 = make_query(b, 3);
		struct result w0 = {0, 0}, w3 = {0, 0};
		for (uint32_t r = 0; r < PART; r++) {
			uint32_t row = (uint32_t)(b % LANES) * PART + r, p = price_of(row), q = qty_of(row);
			if (matches(&q0, p, q)) {
				w0.rows++;
				w0.qty += q;
			}
			if (matches(&q3, p, q)) {
				w3.rows++;
				w3.qty += q;
			}
		}
		corpus_expect(name, "query rows", (long long)h_res[b * QPB].rows, (long long)w0.rows);
		corpus_expect(name, "query qty", (long long)h_res[b * QPB].qty, (long long)w0.qty);
		corpus_expect(name, "query rows", (long long)h_res[b * QPB + 3].rows, (long long)w3.rows);
		corpus_expect(name, "query qty", (long long)h_res[b * QPB + 3].qty, (long long)w3.qty);
	}
	unsigned long long checksum = 0;
	for (int j = 0; j < BATCHES * QPB; j++)
		checksum = checksum * 1000003u + h_res[j].rows * 31u + h_res[j].qty;

	for (int k = 0; k < LANES; k++)
		CHECK(cudaStreamDestroy(lane[k]));
	CHECK(cudaFree(d_price)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_qty)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_q)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_res)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_rows_scanned)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_q)); // SYNCSPY-CLEAN: teardown
	corpus_result(name, BATCHES, checksum);
	return 0;
}
