/*
 * examples/corpus/d69_bearing_monitor_executor_tensor_alloc_sync_fetch.c: corpus workload (CUDA
 * driver API). A predictive-maintenance service for a plant's rotating machinery: every request
 * carries one vibration window (4096 accelerometer samples, int16) from each of 256 bearings, and
 * a small int8 1D CNN classifies each bearing as healthy or as an outer-race, inner-race or ball
 * fault (conv 9 taps / 32 channels, conv 32 x 32 x 9, both stride 2 with ReLU, a sum pool and a
 * 4-way head). The network runs through the service's minimal graph executor (the shape of an
 * inference runtime's session: a node list, tensors with consumer counts, session_run() with host
 * inputs and host outputs). The service raises an alarm when a bearing is classed faulty three
 * requests in a row, then decodes the next request into its pinned input buffer.
 * What is wrong, two things, both in the executor:
 * 1. tensor_alloc() takes every intermediate tensor (16 MB, 8 MB, 32 KB, 2 KB) from cuMemAlloc
 *    and tensor_release() gives it back with cuMemFree as soon as its last consumer is queued:
 *    "Managing memory allocations using cudaMalloc and cudaFree causes the GPU to synchronize
 *    across all executing CUDA streams" (programming guide, stream ordered memory allocator), so
 *    each release waits for the node just queued and the GPU idles between the nodes while the
 *    host allocates the next output, every request (one problem, two lines; tensors planned once
 *    and reused, or a stream-ordered pool, would do).
 * 2. session_run() returns its output in the caller's (pageable) array through cuMemcpyDtoH on
 *    the legacy NULL stream, behind the session's blocking stream: the copy waits for the whole
 *    network and "returns only once the copy has completed" (API synchronization behavior), so
 *    the service's alarm handling and the next request's decoding never overlap the GPU (one
 *    line; outputs bound to a pinned ring, read one request behind with an event, would do).
 * Planted: the cuMemAlloc in tensor_alloc() and the cuMemFree in tensor_release() (four of each a
 * request), and the cuMemcpyDtoH in session_run() (one a request).
 * Clean: the session's setup (weights uploaded once, the bound input buffer, the setup sync), the
 * pinned input buffer and its per-request async upload, teardown.
 * Per request (estimates, H100): a 2 MB upload (about 0.1 ms), about 2.5G int8 multiply-adds in
 * the two convolutions (0.4-0.7 ms) and four allocations and frees of up to 16 MB; the host's
 * decoding and alarms about 1 ms. The head is a nearest-centroid classifier calibrated at load
 * from two reference recordings of each class on the host. The checks: 16 sampled bearings
 * (request and bearing drawn by hash) run through the host's mirror of the network (every
 * intermediate in integers) give the same class and margin; the classes are not all one.
 *   d69_bearing_monitor_executor_tensor_alloc_sync_fetch driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { NB = 256, W = 4096, REQUESTS = 40, THREADS = 256, SHIFT1 = 10, SHIFT2 = 6, CHECKED = 8 };

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the model: weights fixed at load */
static signed char w1[32 * 9], w2[32 * 32 * 9];
static int b1[32], b2[32], wh[4 * 32], bh[4];
/* the bearings' signal model: a base waveform per fault type (shaft tone, impacts at the fault's
 * period ringing down), each bearing's phase and gain, sensor noise */
static short base_wave[4][W];

static void make_model(void)
{
	static const int period[4] = {0, 97, 71, 53};
	for (int k = 0; k < 32 * 9; k++)
		w1[k] = (signed char)((int)(mix32((uint32_t)k ^ 0x1234567u) % 41u) - 20);
	for (int k = 0; k < 32 * 32 * 9; k++)
		w2[k] = (signed char)((int)(mix32((uint32_t)k ^ 0x7654321u) % 17u) - 8);
	for (int k = 0; k < 32; k++) {
		b1[k] = (int)(mix32((uint32_t)k ^ 0xabcdefu) % 4001u) - 2000;
		b2[k] = (int)(mix32((uint32_t)k ^ 0xfedcbau) % 1001u) - 500;
	}
	for (int f = 0; f < 4; f++)
		for (int t = 0; t < W; t++) {
			int tone = (int)((t * 37) % 256) < 128 ? 600 : -600; /* the shaft's fundamental, square-ish */
			int ring = 0;
			if (period[f]) {
				int since = t % period[f];
				ring = since < 32 ? (2400 - 75 * since) * ((since & 1) ? -1 : 1) : 0;
			}
			base_wave[f][t] = (short)(tone + ring);
		}
}

/* bearing b's window in request r */
static void bearing_window(int r, int b, short *x)
{
	int ft = (int)(mix32((uint32_t)b * 2654435761u) % 4u), phase = (int)(mix32((uint32_t)(r * NB + b)) % W);
	int gain = 160 + (int)(mix32((uint32_t)b ^ 0x77u) % 96u) + r;
	uint32_t lcg = (uint32_t)(r * NB + b) * 747796405u + 1u;
	for (int t = 0; t < W; t++) {
		lcg = lcg * 1664525u + 1013904223u;
		x[t] = (short)(base_wave[ft][(t + phase) % W] * gain / 256 + (int)(lcg >> 23) - 256);
	}
}

/* the host's mirror of the network's convolutions and pool for one bearing */
static void features(const short *x, int *pooled)
{
	static signed char y1[32][W / 2], y2[32][W / 4];
	for (int c = 0; c < 32; c++)
		for (int t = 0; t < W / 2; t++) {
			int acc = b1[c];
			for (int k = 0; k < 9; k++) {
				int p = 2 * t + k - 4;
				if (p >= 0 && p < W)
					acc += w1[c * 9 + k] * x[p];
			}
			acc >>= SHIFT1;
			y1[c][t] = (signed char)(acc < 0 ? 0 : acc > 127 ? 127 : acc);
		}
	for (int co = 0; co < 32; co++) {
		pooled[co] = 0;
		for (int t = 0; t < W / 4; t++) {
			int acc = b2[co];
			for (int ci = 0; ci < 32; ci++)
				for (int k = 0; k < 9; k++) {
					int p = 2 * t + k - 4;
					if (p >= 0 && p < W / 2)
						acc += w2[(co * 32 + ci) * 9 + k] * y1[ci][p];
				}
			acc >>= SHIFT2;
			y2[co][t] = (signed char)(acc < 0 ? 0 : acc > 127 ? 127 : acc);
			pooled[co] += y2[co][t];
		}
	}
}

/* the host's mirror of the head: class and margin */
static void head(const int *pooled, int *cls, int *margin)
{
	long long best = 0, second = 0;
	*cls = 0;
	for (int o = 0; o < 4; o++) {
		long long l = bh[o];
		for (int c = 0; c < 32; c++)
			l += (long long)wh[o * 32 + c] * (pooled[c] >> 4);
		if (o == 0 || l > best) {
			second = o == 0 ? l : best;
			best = l;
			*cls = o;
		} else if (o == 1 || l > second) {
			second = l;
		}
	}
	*margin = (int)(best - second < 1000000000LL ? best - second : 1000000000LL);
}

/* the head, calibrated at load from two reference recordings of each class: a nearest-centroid
 * classifier on the pooled features (logit = centroid . q - |centroid|^2 / 2, in q / 4 units) */
static void calibrate_head(void)
{
	static short x[W];
	int pooled[32];
	for (int f = 0; f < 4; f++) {
		long long cen[32] = {0}, norm = 0;
		for (int b = 0, found = 0; found < 2; b++) {
			if ((int)(mix32((uint32_t)b * 2654435761u) % 4u) != f)
				continue;
			bearing_window(0, b, x);
			features(x, pooled);
			for (int c = 0; c < 32; c++)
				cen[c] += pooled[c] >> 4;
			found++;
		}
		for (int c = 0; c < 32; c++) {
			wh[f * 32 + c] = (int)(cen[c] / 2 / 4);
			norm += (long long)wh[f * 32 + c] * (cen[c] / 2);
		}
		bh[f] = (int)(-norm / 2);
	}
}

/* ---- the executor ---- */
struct tensor {
	CUdeviceptr ptr;
	int consumers;
};

enum { OP_CONV1, OP_CONV2, OP_POOL, OP_HEAD, NNODES };
struct node {
	const char *kernel;
	CUfunction fn;
	size_t out_bytes;
	int threads;
};

struct session {
	CUstream s;
	struct node nodes[NNODES];
	CUdeviceptr d_input, d_w1, d_b1, d_w2, d_b2, d_wh, d_bh;
};

static struct tensor *tensor_alloc(size_t bytes, int consumers)
{
	struct tensor *t = malloc(sizeof *t);
	t->consumers = consumers;
	DCHECK(cuMemAlloc(&t->ptr, bytes)); // SYNCSPY-PROBLEM: every intermediate tensor allocated per request
	return t;
}

static void tensor_release(struct tensor *t)
{
	if (--t->consumers > 0)
		return;
	DCHECK(cuMemFree(t->ptr)); // SYNCSPY-PROBLEM: freed when its last consumer is queued: waits for it, per node
	free(t);
}

static void session_create(struct session *se, CUmodule module)
{
	static const char *names[NNODES] = {"pm_conv1", "pm_conv2", "pm_pool", "pm_head"};
	static const size_t out_bytes[NNODES] = {(size_t)NB * 32 * (W / 2), (size_t)NB * 32 * (W / 4), NB * 32 * sizeof(int),
						 NB * 2 * sizeof(int)};
	static const int threads[NNODES] = {NB * 32 * (W / 2), NB * 32 * (W / 4), NB * 32, NB};
	for (int n = 0; n < NNODES; n++) {
		se->nodes[n].kernel = names[n];
		se->nodes[n].out_bytes = out_bytes[n];
		se->nodes[n].threads = threads[n];
		DCHECK(cuModuleGetFunction(&se->nodes[n].fn, module, names[n]));
	}
	DCHECK(cuStreamCreate(&se->s, CU_STREAM_DEFAULT));
	DCHECK(cuMemAlloc(&se->d_input, (size_t)NB * W * sizeof(short))); // SYNCSPY-CLEAN: setup, the bound input buffer
	DCHECK(cuMemAlloc(&se->d_w1, sizeof w1)); // SYNCSPY-CLEAN: setup, weights
	DCHECK(cuMemAlloc(&se->d_b1, sizeof b1)); // SYNCSPY-CLEAN: setup, weights
	DCHECK(cuMemAlloc(&se->d_w2, sizeof w2)); // SYNCSPY-CLEAN: setup, weights
	DCHECK(cuMemAlloc(&se->d_b2, sizeof b2)); // SYNCSPY-CLEAN: setup, weights
	DCHECK(cuMemAlloc(&se->d_wh, sizeof wh)); // SYNCSPY-CLEAN: setup, weights
	DCHECK(cuMemAlloc(&se->d_bh, sizeof bh)); // SYNCSPY-CLEAN: setup, weights
	DCHECK(cuMemcpyHtoD(se->d_w1, w1, sizeof w1)); // SYNCSPY-CLEAN: setup, the weights' one upload
	DCHECK(cuMemcpyHtoD(se->d_b1, b1, sizeof b1)); // SYNCSPY-CLEAN: setup, the weights' one upload
	DCHECK(cuMemcpyHtoD(se->d_w2, w2, sizeof w2)); // SYNCSPY-CLEAN: setup, the weights' one upload
	DCHECK(cuMemcpyHtoD(se->d_b2, b2, sizeof b2)); // SYNCSPY-CLEAN: setup, the weights' one upload
	DCHECK(cuMemcpyHtoD(se->d_wh, wh, sizeof wh)); // SYNCSPY-CLEAN: setup, the weights' one upload
	DCHECK(cuMemcpyHtoD(se->d_bh, bh, sizeof bh)); // SYNCSPY-CLEAN: setup, the weights' one upload
	DCHECK(cuStreamSynchronize(se->s)); // SYNCSPY-CLEAN: setup, the session is ready
}

/* runs the graph on input (pinned, NB x W int16) and returns the head's output in out (NB x 2) */
static void session_run(struct session *se, const short *input, int *out)
{
	int nb = NB, w = W, w2len = W / 2, w4 = W / 4, s1 = SHIFT1, s2 = SHIFT2;
	struct tensor *prev = NULL;
	DCHECK(cuMemcpyHtoDAsync(se->d_input, input, (size_t)NB * W * sizeof(short), se->s)); // SYNCSPY-CLEAN: from the pinned input buffer
	for (int n = 0; n < NNODES; n++) {
		struct node *nd = &se->nodes[n];
		struct tensor *y = tensor_alloc(nd->out_bytes, 1);
		CUdeviceptr in = prev ? prev->ptr : se->d_input;
		void *a1[] = {&in, &nb, &w, &se->d_w1, &se->d_b1, &s1, &y->ptr};
		void *a2[] = {&in, &nb, &w2len, &se->d_w2, &se->d_b2, &s2, &y->ptr};
		void *a3[] = {&in, &nb, &w4, &y->ptr};
		void *a4[] = {&in, &nb, &se->d_wh, &se->d_bh, &y->ptr};
		void **args = n == OP_CONV1 ? a1 : n == OP_CONV2 ? a2 : n == OP_POOL ? a3 : a4;
		DCHECK(cuLaunchKernel(nd->fn, (nd->threads + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, se->s, args, NULL));
		if (prev)
			tensor_release(prev);
		prev = y;
	}
	DCHECK(cuMemcpyDtoH(out, prev->ptr, NB * 2 * sizeof(int))); // SYNCSPY-PROBLEM: the output into the caller's array: waits for the whole network
	tensor_release(prev);
}

int main(int argc, char **argv)
{
	const char *name = "d69_bearing_monitor_executor_tensor_alloc_sync_fetch";
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct session se;
	static int out[NB * 2], history[REQUESTS][NB * 2], streak[NB];
	short *input;

	make_model();
	calibrate_head();
	session_create(&se, module);
	DCHECK(cuMemAllocHost((void **)&input, (size_t)NB * W * sizeof(short))); // SYNCSPY-CLEAN: setup, the pinned input buffer

	unsigned long long checksum = 14695981039346656037ull;
	int alarms = 0, classes[4] = {0, 0, 0, 0};
	for (int r = 0; r < REQUESTS; r++) {
		for (int b = 0; b < NB; b++) /* decode request r */
			bearing_window(r, b, input + (size_t)b * W);
		session_run(&se, input, out);
		for (int b = 0; b < NB; b++) { /* alarms */
			int cls = out[2 * b];
			if (cls < 0 || cls > 3) {
				fprintf(stderr, "%s: request %d bearing %d: class %d\n", name, r, b, cls);
				return 1;
			}
			classes[cls]++;
			streak[b] = cls ? streak[b] + 1 : 0;
			alarms += streak[b] == 3;
			checksum = (checksum ^ (uint32_t)cls ^ ((unsigned long long)(uint32_t)out[2 * b + 1] << 8)) * 1099511628211ull;
		}
		memcpy(history[r], out, sizeof out);
	}

	/* the check: sampled bearings through the host's mirror of the network */
	static short x[W];
	for (int k = 0; k < CHECKED * 2; k++) {
		int r = (int)(mix32((uint32_t)k ^ 0x2545f491u) % REQUESTS), b = (int)(mix32((uint32_t)k ^ 0x9e3779b9u) % NB);
		int cls, margin;
		int pooled[32];
		bearing_window(r, b, x);
		features(x, pooled);
		head(pooled, &cls, &margin);
		if (history[r][2 * b] != cls || history[r][2 * b + 1] != margin) {
			fprintf(stderr, "%s: request %d bearing %d: class %d margin %d, want %d %d\n", name, r, b, history[r][2 * b],
				history[r][2 * b + 1], cls, margin);
			return 1;
		}
	}
	if (classes[0] == NB * REQUESTS || classes[1] + classes[2] + classes[3] == 0 || classes[0] == 0) {
		fprintf(stderr, "%s: the classes are all one (%d/%d/%d/%d)\n", name, classes[0], classes[1], classes[2], classes[3]);
		return 1;
	}

	DCHECK(cuMemFreeHost(input)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(se.d_input)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(se.d_w1)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(se.d_b1)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(se.d_w2)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(se.d_b2)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(se.d_wh)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(se.d_bh)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(se.s));
	driver_teardown(module);
	printf("%s: requests=%d bearings=%d alarms=%d classes=%d/%d/%d/%d checksum=%016llx result=OK\n", name, REQUESTS, NB,
	       alarms, classes[0], classes[1], classes[2], classes[3], checksum);
	return 0;
}
