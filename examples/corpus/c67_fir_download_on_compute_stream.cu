/*
 * examples/corpus/c67_fir_download_on_compute_stream.cu: corpus workload (CUDA C). A streaming
 * FIR filter for a software-defined radio receiver: blocks of 2^21 integer samples are written
 * by the host into one of two pinned input buffers, uploaded on an upload stream, filtered on a
 * compute stream (a 32-tap low-pass, taps in constant memory), and the filtered block copied
 * back into one of two pinned output buffers, which the host demodulates (here: the block's
 * energy) one block behind. The upload is done right, but the download of the filtered block,
 * in filter_block(), is queued on the compute stream right behind the filter: commands in one
 * stream run in order (CUDA programming guide, streams), so the next block's filter cannot
 * start until this block's download has finished, and the copy engine and the SMs take turns
 * instead of overlapping (the guide's overlap of data transfer and kernel execution needs the
 * copy and the kernel in different streams). A download stream waiting on the filter's event
 * would overlap the two.
 * Planted: the cudaMemcpyAsync of the filtered block on the compute stream in filter_block(),
 * every block.
 * Clean: the pinned uploads on the upload stream, the input double buffer's
 * cudaEventSynchronize on the upload two blocks back, the cudaEventSynchronize on the previous
 * block's download before the host demodulates it (the receiver's output is one block behind),
 * the setup allocations, the last block's wait, teardown.
 */
#include "corpus.h"

enum { NBLOCKS = 48, SAMPLES = 1 << 21, TAPS = 32, THREADS = 256 };

__constant__ int c_taps[TAPS];

static int tap(int t)
{
	int d = t - TAPS / 2;
	return 64 - d * d / 4; /* a symmetric, integer window */
}

static int sample(int blk, int i)
{
	uint32_t h = (uint32_t)(blk * SAMPLES + i) * 2654435761u;
	return (int)((h >> 20) & 2047u) - 1024 + (((blk * SAMPLES + i) / 64) % 2 ? 300 : -300);
}

__global__ void fir(const int *x, int *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= SAMPLES)
		return;
	int acc = 0;
	for (int t = 0; t < TAPS; t++)
		acc += c_taps[t] * x[i >= t ? i - t : 0];
	y[i] = acc >> 6;
}

struct receiver {
	cudaStream_t upload, compute;
	int *h_in[2], *h_out[2], *d_in[2], *d_out[2];
	cudaEvent_t uploaded[2], filtered[2], downloaded[2];
};

static long long demodulate(const int *y)
{
	long long e = 0;
	for (int i = 0; i < SAMPLES; i++)
		e += (long long)(y[i] < 0 ? -y[i] : y[i]);
	return e;
}

/* --- the pipeline ------------------------------------------------------------------------- */

static void upload_block(struct receiver *r, int blk)
{
	int b = blk % 2;
	if (blk >= 2)
		CHECK(cudaEventSynchronize(r->uploaded[b])); // SYNCSPY-CLEAN: the input double buffer's wait, on the upload two blocks back
	for (int i = 0; i < SAMPLES; i++)
		r->h_in[b][i] = sample(blk, i);
	CHECK(cudaStreamWaitEvent(r->upload, r->filtered[b], 0));
	CHECK(cudaMemcpyAsync(r->d_in[b], r->h_in[b], SAMPLES * sizeof(int), cudaMemcpyHostToDevice, r->upload)); // SYNCSPY-CLEAN: async upload from pinned memory on the upload stream
	CHECK(cudaEventRecord(r->uploaded[b], r->upload));
}

static void filter_block(struct receiver *r, int blk)
{
	int b = blk % 2;
	CHECK(cudaStreamWaitEvent(r->compute, r->uploaded[b], 0));
	fir<<<SAMPLES / THREADS, THREADS, 0, r->compute>>>(r->d_in[b], r->d_out[b]);
	CHECK_LAUNCH();
	CHECK(cudaEventRecord(r->filtered[b], r->compute));
	CHECK(cudaMemcpyAsync(r->h_out[b], r->d_out[b], SAMPLES * sizeof(int), cudaMemcpyDeviceToHost, r->compute)); // SYNCSPY-PROBLEM: the download queued on the compute stream: the next block's filter waits for it
	CHECK(cudaEventRecord(r->downloaded[b], r->compute));
}

int main(void)
{
	const char *name = "c67_fir_download_on_compute_stream";
	struct receiver r;
	int h_taps[TAPS];
	long long energy[NBLOCKS];

	for (int t = 0; t < TAPS; t++)
		h_taps[t] = tap(t);
	CHECK(cudaMemcpyToSymbol(c_taps, h_taps, sizeof h_taps)); // SYNCSPY-CLEAN: setup, the taps once
	CHECK(cudaStreamCreateWithFlags(&r.upload, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&r.compute, cudaStreamNonBlocking));
	for (int b = 0; b < 2; b++) {
		CHECK(cudaMallocHost(&r.h_in[b], SAMPLES * sizeof(int))); // SYNCSPY-CLEAN: setup pinned allocation
		CHECK(cudaMallocHost(&r.h_out[b], SAMPLES * sizeof(int))); // SYNCSPY-CLEAN: setup pinned allocation
		CHECK(cudaMalloc(&r.d_in[b], SAMPLES * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&r.d_out[b], SAMPLES * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaEventCreateWithFlags(&r.uploaded[b], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&r.filtered[b], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&r.downloaded[b], cudaEventDisableTiming));
	}

	for (int blk = 0; blk < NBLOCKS; blk++) {
		upload_block(&r, blk);
		filter_block(&r, blk);
		if (blk >= 1) {
			CHECK(cudaEventSynchronize(r.downloaded[(blk - 1) % 2])); // SYNCSPY-CLEAN: the receiver demodulates one block behind: the previous block's output
			energy[blk - 1] = demodulate(r.h_out[(blk - 1) % 2]);
		}
	}
	CHECK(cudaEventSynchronize(r.downloaded[(NBLOCKS - 1) % 2])); // SYNCSPY-CLEAN: the last block, after the loop
	energy[NBLOCKS - 1] = demodulate(r.h_out[(NBLOCKS - 1) % 2]);

	unsigned long long checksum = 0;
	int *x = (int *)malloc(SAMPLES * sizeof(int)), *y = (int *)malloc(SAMPLES * sizeof(int));
	for (int blk = 0; blk < NBLOCKS; blk++) {
		if (blk % 16 == 5) {
			for (int i = 0; i < SAMPLES; i++)
				x[i] = sample(blk, i);
			for (int i = 0; i < SAMPLES; i++) {
				int acc = 0;
				for (int t = 0; t < TAPS; t++)
					acc += h_taps[t] * x[i >= t ? i - t : 0];
				y[i] = acc >> 6;
			}
			corpus_expect(name, "block energy", energy[blk], demodulate(y));
		}
		checksum = checksum * 1000003u + (unsigned long long)energy[blk];
	}
	free(x);
	free(y);

	CHECK(cudaStreamSynchronize(r.upload)); // SYNCSPY-CLEAN: teardown, the upload stream drained
	for (int b = 0; b < 2; b++) {
		CHECK(cudaFreeHost(r.h_in[b])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(r.h_out[b])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(r.d_in[b])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(r.d_out[b])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(r.uploaded[b]));
		CHECK(cudaEventDestroy(r.filtered[b]));
		CHECK(cudaEventDestroy(r.downloaded[b]));
	}
	CHECK(cudaStreamDestroy(r.upload));
	CHECK(cudaStreamDestroy(r.compute));
	corpus_result(name, NBLOCKS, checksum);
	return 0;
}
