/*
 * examples/corpus/c35_memcpy2d_roi_per_frame.cu: corpus workload (CUDA C). A render loop of
 * an inspection viewer: every frame a 2048x2048 8-bit image is rendered into a pitched device
 * buffer (cudaMallocPitch), an overlay tile is uploaded from pinned memory with
 * cudaMemcpy2DAsync and blended in, and the viewer copies its 256x256 region of interest back
 * with cudaMemcpy2D to compute a brightness histogram on the host. cudaMemcpy2D is a blocking
 * copy (CUDA runtime API, "API synchronization behavior": for transfers from device memory to
 * host memory the copy returns only once it is complete), so the host waits for the frame's
 * render and blend every frame and never queues the next frame ahead. The fix: a
 * cudaMemcpy2DAsync into pinned memory on a copy stream with an event, read one frame later
 * (or compute the histogram on the GPU).
 * Planted: the per-frame blocking cudaMemcpy2D of the region of interest.
 * Clean: cudaMallocPitch and the pinned allocations in setup, the per-frame overlay upload
 * (cudaMemcpy2DAsync from pinned memory), teardown.
 */
#include "corpus.h"

enum { FRAMES = 60, W = 2048, H = 2048, ROI = 256, OVL = 128, THREADS = 16, ROUNDS = 48 };

__global__ void render(uint8_t *img, size_t pitch, int frame)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= W || y >= H)
		return;
	uint32_t h = (uint32_t)x * 73856093u ^ (uint32_t)y * 19349663u ^ (uint32_t)frame * 83492791u;
	for (int r = 0; r < ROUNDS; r++)
		h = (h ^ (h >> 15)) * 2246822519u + (uint32_t)r;
	img[(size_t)y * pitch + x] = (uint8_t)(h >> 24);
}

__global__ void blend(uint8_t *img, size_t pitch, const uint8_t *ovl, size_t opitch, int ox, int oy)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= OVL || y >= OVL)
		return;
	uint8_t *p = &img[(size_t)(oy + y) * pitch + ox + x];
	*p = (uint8_t)((*p + ovl[(size_t)y * opitch + x]) >> 1);
}

int main(void)
{
	uint8_t *d_img, *d_ovl, *h_ovl, *h_roi;
	size_t pitch, opitch;
	cudaStream_t s;
	unsigned long long hist[8] = {0}, digest = 0;
	dim3 block(THREADS, THREADS), grid(W / THREADS, H / THREADS), ogrid(OVL / THREADS, OVL / THREADS);

	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMallocPitch((void **)&d_img, &pitch, W, H)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocPitch((void **)&d_ovl, &opitch, OVL, OVL)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost((void **)&h_ovl, OVL * OVL)); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMallocHost((void **)&h_roi, ROI * ROI)); // SYNCSPY-CLEAN: setup pinned allocation

	for (int frame = 0; frame < FRAMES; frame++) {
		int ox = 64 + (frame * 13) % 64, oy = 64 + (frame * 29) % 64;
		render<<<grid, block, 0, s>>>(d_img, pitch, frame);
		CHECK_LAUNCH();
		for (int i = 0; i < OVL * OVL; i++)
			h_ovl[i] = (uint8_t)((i + frame * 7) & 0xff);
		CHECK(cudaMemcpy2DAsync(d_ovl, opitch, h_ovl, OVL, OVL, OVL, cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: overlay upload from pinned memory, async
		blend<<<ogrid, block, 0, s>>>(d_img, pitch, d_ovl, opitch, ox, oy);
		CHECK_LAUNCH();
		CHECK(cudaMemcpy2D(h_roi, ROI, d_img + 64 * pitch + 64, pitch, ROI, ROI, cudaMemcpyDeviceToHost)); // SYNCSPY-PROBLEM: blocking 2D read of the region of interest every frame
		for (int i = 0; i < ROI * ROI; i++)
			hist[h_roi[i] >> 5]++;
		digest = digest * 1000003u + h_roi[(frame * 4099) % (ROI * ROI)];
	}

	for (int b = 0; b < 8; b++)
		digest = digest * 31u + hist[b];
	unsigned long long total = 0;
	for (int b = 0; b < 8; b++)
		total += hist[b];
	corpus_expect("c35_memcpy2d_roi_per_frame", "histogram total", (long long)total, (long long)FRAMES * ROI * ROI);
	CHECK(cudaFree(d_img)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_ovl)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_ovl)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_roi)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("c35_memcpy2d_roi_per_frame", FRAMES, digest);
	return 0;
}
