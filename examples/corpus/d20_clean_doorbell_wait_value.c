/*
 * examples/corpus/d20_clean_doorbell_wait_value.c: corpus workload (CUDA driver API), CLEAN.
 * A sensor-ingest loop where the GPU work of a batch is queued before the host has finished
 * decoding it. For every batch the host first queues, on one stream: a cuStreamWaitValue32 on
 * a doorbell word in mapped pinned memory (cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP, the
 * device address from cuMemHostGetDevicePointer), the upload of the batch from its pinned
 * staging buffer, the scoring kernels and the async download of the score into pinned memory;
 * then it decodes the batch into the staging buffer and rings the doorbell with a plain store.
 * The stream waits on the device for the doorbell (driver API docs, stream memory operations:
 * the wait is enqueued on the stream, the host does not block), so the GPU starts each batch
 * the moment its data is ready, and the host never waits for the GPU except for the staging
 * double buffer: before decoding into a staging buffer again it waits on the event recorded
 * after that buffer's upload two batches back. The doorbell of a batch is rung before any wait
 * that could depend on it, so the stream never waits on a value the host has not written or is
 * about to write. One synchronize at the end.
 *   d20_clean_doorbell_wait_value driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { BATCHES = 48, N = 1 << 18, THREADS = 256, ROUNDS = 8, SLOTS = 2 };

struct ingest {
	CUstream s;
	CUfunction mix_rounds, sum_into;
	volatile cuuint32_t *bell; /* mapped pinned: batches decoded so far */
	CUdeviceptr d_bell;
	uint32_t *h_staging[SLOTS]; /* pinned */
	CUevent copied[SLOTS];
	CUdeviceptr d_in, d_scores;
	unsigned long long *h_scores; /* pinned */
};

static uint32_t sensor_value(int batch, int i)
{
	uint32_t h = ((uint32_t)i * 0x27d4eb2du) ^ ((uint32_t)batch * 0x165667b1u);
	return h ^ (h >> 15);
}

static void decode_batch(uint32_t *dst, int batch)
{
	for (int i = 0; i < N; i++)
		dst[i] = sensor_value(batch, i);
}

static void ingest_init(struct ingest *in, CUmodule module)
{
	DCHECK(cuModuleGetFunction(&in->mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&in->sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&in->s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemHostAlloc((void **)&in->bell, sizeof(cuuint32_t), CU_MEMHOSTALLOC_DEVICEMAP)); // SYNCSPY-CLEAN: setup, the mapped doorbell word
	DCHECK(cuMemHostGetDevicePointer(&in->d_bell, (void *)in->bell, 0));
	*in->bell = 0;
	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemAllocHost((void **)&in->h_staging[k], N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned staging
		DCHECK(cuEventCreate(&in->copied[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuMemAlloc(&in->d_in, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&in->d_scores, BATCHES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&in->h_scores, BATCHES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	DCHECK(cuMemsetD32Async(in->d_scores, 0, BATCHES * 2, in->s));
}

/* queue batch `batch`'s GPU work, gated on the doorbell reaching batch + 1 */
static void ingest_enqueue(struct ingest *in, int batch)
{
	int slot = batch % SLOTS, n = N, rounds = ROUNDS;
	CUdeviceptr score = in->d_scores + (size_t)batch * sizeof(unsigned long long);
	void *mix_args[] = {&in->d_in, &n, &batch, &rounds};
	void *sum_args[] = {&in->d_in, &n, &score};
	DCHECK(cuStreamWaitValue32(in->s, in->d_bell, (cuuint32_t)(batch + 1), CU_STREAM_WAIT_VALUE_GEQ)); // SYNCSPY-CLEAN: the stream waits for the doorbell on the device; the host does not block
	DCHECK(cuMemcpyHtoDAsync(in->d_in, in->h_staging[slot], N * sizeof(uint32_t), in->s)); // SYNCSPY-CLEAN: async upload from pinned staging
	DCHECK(cuEventRecord(in->copied[slot], in->s));
	DCHECK(cuLaunchKernel(in->mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, in->s, mix_args, NULL));
	DCHECK(cuLaunchKernel(in->sum_into, 128, 1, 1, THREADS, 1, 1, 0, in->s, sum_args, NULL));
	DCHECK(cuMemcpyDtoHAsync(&in->h_scores[batch], score, sizeof(unsigned long long), in->s)); // SYNCSPY-CLEAN: async download into pinned memory
}

/* the batch is in its staging buffer: let the stream go */
static void ingest_ring(struct ingest *in, int batch)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	*in->bell = (cuuint32_t)(batch + 1);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void ingest_teardown(struct ingest *in)
{
	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemFreeHost(in->h_staging[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(in->copied[k]));
	}
	DCHECK(cuMemFreeHost((void *)in->bell)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(in->d_in)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(in->d_scores)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(in->h_scores)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(in->s));
}

static unsigned long long reference_score(int batch)
{
	unsigned long long sum = 0;
	for (int i = 0; i < N; i++) {
		uint32_t v = sensor_value(batch, i) ^ ((uint32_t)batch * 0x9e3779b9u);
		for (int r = 0; r < ROUNDS; r++)
			v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
		sum += v >> 8;
	}
	return sum;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct ingest in;

	ingest_init(&in, module);
	for (int batch = 0; batch < BATCHES; batch++) {
		int slot = batch % SLOTS;
		if (batch >= SLOTS)
			DCHECK(cuEventSynchronize(in.copied[slot])); // SYNCSPY-CLEAN: double buffer: this staging buffer's upload two batches back is done
		ingest_enqueue(&in, batch);
		decode_batch(in.h_staging[slot], batch);
		ingest_ring(&in, batch);
	}
	DCHECK(cuStreamSynchronize(in.s)); // SYNCSPY-CLEAN: final read, the one wait for the GPU

	unsigned long long checksum = 0;
	for (int batch = 0; batch < BATCHES; batch++) {
		unsigned long long want = reference_score(batch);
		if (in.h_scores[batch] != want) {
			fprintf(stderr, "d20: batch %d score = %llu, want %llu\n", batch, in.h_scores[batch], want);
			return 1;
		}
		checksum = checksum * 1000003u + in.h_scores[batch];
	}
	ingest_teardown(&in);
	driver_teardown(module);
	printf("d20_clean_doorbell_wait_value: steps=%d checksum=%llu result=OK\n", BATCHES, checksum);
	return 0;
}
