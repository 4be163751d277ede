/*
 * examples/corpus/d53_motion_search_graph_memory_stream_pool.c: corpus workload (CUDA driver API,
 * graphs with memory nodes). The motion-estimation stage of a video encoder, 1920 x 1088 luma
 * frames: every frame the host copies the decoded frame into one of two pinned slots and uploads
 * it. One executable graph then runs a full search of every 16 x 16 block over +-16 pixels
 * (me_block_sad, 1089 candidates a block, costs in a 35 MB scratch), picks each block's best
 * candidate (me_select) and copies the frame to the reference buffer for the next frame. The
 * vectors come back into a pinned ring that the host checks one frame behind. The graph was
 * captured once, with its scratch from cuMemAllocAsync and cuMemFreeAsync inside the capture:
 * graph memory nodes, whose physical memory the graph maps at launch.
 * The encoder takes a stream for every frame from the service's stream pool, round-robin over
 * three streams ("so that frames can overlap"; they cannot, since each frame's search needs the
 * previous frame as its reference and the pool orders it after the previous frame's event). So
 * every cuGraphLaunch puts the graph into a different stream than its last launch. The CUDA
 * programming guide (graph memory nodes, performance considerations) lists "changing the stream
 * into which a graph is launched" as a cause of remapping the graph's memory. "Remapping must
 * happen in execution order, but after any previous execution of that graph is complete", and
 * "mapping operations are OS calls", which "can be relatively expensive. Applications can avoid
 * this cost by launching graphs containing allocation memory nodes consistently into the same
 * stream." Every frame pays a remap of the 35 MB scratch behind the previous frame's search.
 * One stream for the encoder (the one the graph was uploaded to) would keep the mapping.
 * Planted: the cuGraphLaunch in encode_frame(), on the pool's next stream every frame (one line).
 * Clean: the graph's capture (its allocation, free and copy nodes made once), its instantiation
 * and upload once, the setup allocations and the first frame's upload, the per-frame async upload
 * from the pinned slot (reused after a cuEventSynchronize on its upload two frames back), the
 * vectors' async download into a pinned ring read one frame behind, the final wait, teardown.
 * The frames are windows of one random texture moved by a known offset per frame, so every
 * interior block's best vector is that offset at cost 0: the host checks all of them.
 *   d53_motion_search_graph_memory_stream_pool driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { FRAMES = 40, W = 1920, H = 1088, SEARCH = 16, SPAN = 2 * SEARCH + 1, CANDS = SPAN * SPAN };
enum { BW = W / 16, BH = H / 16, NBLOCKS = BW * BH, TW = 2560, TH = 1536, POOL_STREAMS = 3 };
enum { SLOTS = 2, THREADS = 256 };

#define FRAME_BYTES ((size_t)W * H)
#define COST_BYTES ((size_t)NBLOCKS * CANDS * sizeof(unsigned int))
#define MV_BYTES ((size_t)NBLOCKS * sizeof(unsigned long long))

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* --- the camera path: a window over a texture, moved up to 12 pixels a frame ------------------ */

static int ox[FRAMES + 1], oy[FRAMES + 1];

static void plan_path(void)
{
	int vx = 9, vy = -7;
	ox[0] = 320;
	oy[0] = 224;
	for (int f = 1; f <= FRAMES; f++) {
		vx = (int)(mix32((uint32_t)f * 2u) % 25u) - 12;
		vy = (int)(mix32((uint32_t)f * 2u + 1u) % 25u) - 12;
		if (ox[f - 1] + vx < 16 || ox[f - 1] + vx > TW - W - 16)
			vx = -vx;
		if (oy[f - 1] + vy < 16 || oy[f - 1] + vy > TH - H - 16)
			vy = -vy;
		ox[f] = ox[f - 1] + vx;
		oy[f] = oy[f - 1] + vy;
	}
}

static void decode_frame(int f, const unsigned char *texture, unsigned char *frame)
{
	for (int y = 0; y < H; y++)
		memcpy(frame + (size_t)y * W, texture + (size_t)(oy[f] + y) * TW + ox[f], W);
}

/* --- the encoder's motion stage ------------------------------------------------------------ */

struct encoder {
	CUfunction sad, select;
	CUstream pool[POOL_STREAMS], capture;
	CUdeviceptr d_cur, d_prev, d_best;
	CUgraph graph;
	CUgraphExec exec;
	CUevent done[SLOTS], uploaded[SLOTS], last;
	int next_stream;
};

/* the motion search of one frame, captured once: scratch, search, selection, reference update */
static void capture_graph(struct encoder *e)
{
	CUdeviceptr costs;
	int w = W, h = H, search = SEARCH, nblocks = NBLOCKS, cands = CANDS;
	long long threads = (long long)NBLOCKS * CANDS;
	DCHECK(cuStreamBeginCapture(e->capture, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	DCHECK(cuMemAllocAsync(&costs, COST_BYTES, e->capture)); // SYNCSPY-CLEAN: captured once
	void *sad_args[] = {&e->d_cur, &e->d_prev, &w, &h, &search, &costs};
	DCHECK(cuLaunchKernel(e->sad, (unsigned int)((threads + THREADS - 1) / THREADS), 1, 1,
			      THREADS, 1, 1, 0, e->capture, sad_args, NULL));
	void *sel_args[] = {&costs, &nblocks, &cands, &e->d_best};
	DCHECK(cuLaunchKernel(e->select, (NBLOCKS + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0,
			      e->capture, sel_args, NULL));
	DCHECK(cuMemFreeAsync(costs, e->capture)); // SYNCSPY-CLEAN: captured once, a free node
	CUdeviceptr prev = e->d_prev, cur = e->d_cur;
	DCHECK(cuMemcpyDtoDAsync(prev, cur, FRAME_BYTES, e->capture)); // SYNCSPY-CLEAN: captured
	DCHECK(cuStreamEndCapture(e->capture, &e->graph));
}

/* the pool's streams, least recently used first */
static CUstream pool_next(struct encoder *e)
{
	CUstream s = e->pool[e->next_stream];
	e->next_stream = (e->next_stream + 1) % POOL_STREAMS;
	return s;
}

static void encode_frame(struct encoder *e, int f, const unsigned char *frame,
			 unsigned long long *mv)
{
	int k = f % SLOTS;
	CUstream s = pool_next(e);
	DCHECK(cuStreamWaitEvent(s, e->last, 0)); /* after the previous frame, its reference */
	DCHECK(cuMemcpyHtoDAsync(e->d_cur, frame, FRAME_BYTES, s)); // SYNCSPY-CLEAN: pinned slot
	DCHECK(cuEventRecord(e->uploaded[k], s));
	DCHECK(cuGraphLaunch(e->exec, s)); // SYNCSPY-PROBLEM: another stream each frame: remaps
	DCHECK(cuMemcpyDtoHAsync(mv, e->d_best, MV_BYTES, s)); // SYNCSPY-CLEAN: pinned ring
	DCHECK(cuEventRecord(e->done[k], s));
	DCHECK(cuEventRecord(e->last, s));
}

/* frame f's vectors: every interior block moved by the path's offset, at cost 0 */
static unsigned long long check_frame(int f, const unsigned long long *mv)
{
	int dx = ox[f] - ox[f - 1], dy = oy[f] - oy[f - 1];
	unsigned long long want = (unsigned long long)((dy + SEARCH) * SPAN + dx + SEARCH), h = 0;
	for (int b = 0; b < NBLOCKS; b++) {
		int bx = b % BW, by = b / BW;
		int interior = bx >= 2 && bx < BW - 2 && by >= 2 && by < BH - 2;
		if (interior && mv[b] != want) {
			fprintf(stderr, "d53: frame %d block %d: %llx\n", f, b, mv[b]);
			exit(1);
		}
		h = h * 1000003u + mv[b];
	}
	return h;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUdevice dev;
	struct encoder enc, *e = &enc;
	unsigned char *frames[SLOTS];
	unsigned long long *ring[SLOTS];
	unsigned char *texture = (unsigned char *)malloc((size_t)TW * TH);
	uint32_t x = 0x9e3779b9u;
	for (size_t i = 0; i < (size_t)TW * TH; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		texture[i] = (unsigned char)(x >> 24);
	}
	plan_path();

	memset(e, 0, sizeof *e);
	DCHECK(cuCtxGetDevice(&dev));
	DCHECK(cuModuleGetFunction(&e->sad, module, "me_block_sad"));
	DCHECK(cuModuleGetFunction(&e->select, module, "me_select"));
	for (int i = 0; i < POOL_STREAMS; i++)
		DCHECK(cuStreamCreate(&e->pool[i], CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&e->capture, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&e->d_cur, FRAME_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&e->d_prev, FRAME_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&e->d_best, MV_BYTES)); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < SLOTS; k++) {
		void **fr = (void **)&frames[k];
		DCHECK(cuMemAllocHost(fr, FRAME_BYTES)); // SYNCSPY-CLEAN: setup, pinned
		DCHECK(cuMemAllocHost((void **)&ring[k], MV_BYTES)); // SYNCSPY-CLEAN: setup, pinned
		DCHECK(cuEventCreate(&e->done[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&e->uploaded[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuEventCreate(&e->last, CU_EVENT_DISABLE_TIMING));
	decode_frame(0, texture, frames[0]);
	DCHECK(cuMemcpyHtoD(e->d_prev, frames[0], FRAME_BYTES)); // SYNCSPY-CLEAN: setup, frame 0
	capture_graph(e);
	DCHECK(cuGraphInstantiate(&e->exec, e->graph, 0)); // SYNCSPY-CLEAN: setup, once
	DCHECK(cuGraphUpload(e->exec, e->pool[0])); // SYNCSPY-CLEAN: setup, its memory mapped once

	unsigned long long checksum = 0;
	for (int f = 1; f <= FRAMES; f++) {
		int k = f % SLOTS;
		if (f > SLOTS)
			DCHECK(cuEventSynchronize(e->uploaded[k])); // SYNCSPY-CLEAN: 2 frames back
		decode_frame(f, texture, frames[k]);
		encode_frame(e, f, frames[k], ring[k]);
		if (f > 1) {
			int m = (f - 1) % SLOTS;
			DCHECK(cuEventSynchronize(e->done[m])); // SYNCSPY-CLEAN: one frame behind
			checksum = checksum * 31u + check_frame(f - 1, ring[m]);
		}
	}
	DCHECK(cuEventSynchronize(e->done[FRAMES % SLOTS])); // SYNCSPY-CLEAN: the last frame
	checksum = checksum * 31u + check_frame(FRAMES, ring[FRAMES % SLOTS]);

	DCHECK(cuGraphExecDestroy(e->exec));
	DCHECK(cuGraphDestroy(e->graph));
	DCHECK(cuDeviceGraphMemTrim(dev)); // SYNCSPY-CLEAN: teardown, the graph's memory released
	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemFreeHost(frames[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(ring[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(e->done[k]));
		DCHECK(cuEventDestroy(e->uploaded[k]));
	}
	DCHECK(cuEventDestroy(e->last));
	DCHECK(cuMemFree(e->d_cur)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(e->d_prev)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(e->d_best)); // SYNCSPY-CLEAN: teardown
	for (int i = 0; i < POOL_STREAMS; i++)
		DCHECK(cuStreamDestroy(e->pool[i]));
	DCHECK(cuStreamDestroy(e->capture));
	free(texture);
	driver_teardown(module);
	printf("d53_motion_search_graph_memory_stream_pool: frames=%d checksum=%llu result=OK\n",
	       FRAMES, checksum);
	return 0;
}
