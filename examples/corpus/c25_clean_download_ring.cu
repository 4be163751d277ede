/*
 * examples/corpus/c25_clean_download_ring.cu: corpus workload (CUDA C), CLEAN. A renderer that
 * streams its frames to the host: the compute stream renders frame f into device slot f % 3, a
 * copy stream waits on the frame's event and downloads it with cudaMemcpyAsync into pinned slot
 * f % 3, and the compute stream waits on that download before it renders into the slot again.
 * The host encodes frames two behind the newest: before encoding frame f - 2 it waits on that
 * frame's download event, which in steady state is done or nearly so, with frames f - 1 and f
 * still queued behind it (the GPU never runs dry: the wait is the ring's flow control). After
 * the loop the last two frames are drained the same way.
 */
#include "corpus.h"

enum { FRAMES = 72, DEPTH = 3, STATE = 1 << 22, FRAME = 1 << 16, THREADS = 256, ROUNDS = 32 };

__global__ void animate(uint32_t *state, int n, int frame)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t v = state[i] + (uint32_t)frame;
	for (int r = 0; r < ROUNDS; r++)
		v = (v ^ (v >> 7)) * 747796405u + 2891336453u;
	state[i] = v;
}

/* one output pixel from 64 state cells */
__global__ void render(const uint32_t *state, uint32_t *pixels, int m)
{
	int p = blockIdx.x * blockDim.x + threadIdx.x;
	if (p >= m)
		return;
	uint32_t acc = 0;
	for (int k = 0; k < STATE / FRAME; k++)
		acc += state[(size_t)k * FRAME + p] >> 6;
	pixels[p] = acc;
}

static unsigned long long encode(const uint32_t *pixels, unsigned long long digest)
{
	for (int p = 0; p < FRAME; p++)
		digest = digest * 1099511628211ull + pixels[p];
	return digest;
}

int main(void)
{
	uint32_t *d_state, *d_frame[DEPTH], *h_frame[DEPTH];
	cudaStream_t compute, copy;
	cudaEvent_t rendered[DEPTH], downloaded[DEPTH];
	unsigned long long digest = 0;
	int encoded = 0;

	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_state, (size_t)STATE * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < DEPTH; k++) {
		CHECK(cudaMalloc(&d_frame[k], FRAME * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMallocHost(&h_frame[k], FRAME * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned ring
		CHECK(cudaEventCreateWithFlags(&rendered[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&downloaded[k], cudaEventDisableTiming));
	}
	CHECK(cudaMemsetAsync(d_state, 0, (size_t)STATE * sizeof(uint32_t), compute));

	for (int f = 0; f < FRAMES; f++) {
		int k = f % DEPTH;
		animate<<<STATE / THREADS, THREADS, 0, compute>>>(d_state, STATE, f);
		if (f >= DEPTH)
			CHECK(cudaStreamWaitEvent(compute, downloaded[k], 0));
		render<<<FRAME / THREADS, THREADS, 0, compute>>>(d_state, d_frame[k], FRAME);
		CHECK_LAUNCH();
		CHECK(cudaEventRecord(rendered[k], compute));
		CHECK(cudaStreamWaitEvent(copy, rendered[k], 0));
		CHECK(cudaMemcpyAsync(h_frame[k], d_frame[k], FRAME * sizeof(uint32_t), cudaMemcpyDeviceToHost, copy)); // SYNCSPY-CLEAN: async download into the pinned ring
		CHECK(cudaEventRecord(downloaded[k], copy));
		if (f >= DEPTH - 1) {
			int old = (f - (DEPTH - 1)) % DEPTH;
			CHECK(cudaEventSynchronize(downloaded[old])); // SYNCSPY-CLEAN: ring flow control, frame f-2 with two frames queued behind it
			digest = encode(h_frame[old], digest);
			encoded++;
		}
	}
	for (int f = FRAMES - (DEPTH - 1); f < FRAMES; f++) {
		CHECK(cudaEventSynchronize(downloaded[f % DEPTH])); // SYNCSPY-CLEAN: drain the last frames after the loop
		digest = encode(h_frame[f % DEPTH], digest);
		encoded++;
	}

	corpus_expect("c25_clean_download_ring", "frames encoded", encoded, FRAMES);
	CHECK(cudaFree(d_state)); // SYNCSPY-CLEAN: teardown
	for (int k = 0; k < DEPTH; k++) {
		CHECK(cudaFree(d_frame[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(h_frame[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(rendered[k]));
		CHECK(cudaEventDestroy(downloaded[k]));
	}
	CHECK(cudaStreamDestroy(compute));
	CHECK(cudaStreamDestroy(copy));
	corpus_result("c25_clean_download_ring", FRAMES, digest);
	return 0;
}
