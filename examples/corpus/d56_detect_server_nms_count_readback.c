/*
 * examples/corpus/d56_detect_server_nms_count_readback.c: corpus workload (CUDA driver API). The
 * GPU back end of an object-detection inference server: every request brings a 2048 x 4096
 * frame's feature map (32768 cells of 16 pixels, 4 anchor shapes a cell, 64 int8 features an
 * anchor, 8 MB), which the front end decodes into one of two pinned request slots. The back end
 * uploads it, runs the detector's head (det_head: 32 class scores and 4 box offsets an anchor;
 * anchors above the score threshold are appended to a candidate list through a device counter),
 * then Fast NMS (nms_iou_mask, the pairwise suppression bitmask of the candidates, and
 * nms_select, which keeps the candidates nothing above them suppresses) and downloads the reply
 * record (per-class counts, the top detection, a hash of the kept keys) into a pinned reply slot.
 * Replies are sent one request behind, while the next request runs, like d59.
 * What is wrong: the NMS stage is sized on the host. candidate_count() reads the candidate
 * counter with cuMemcpyDtoH into a stack variable, and nms_scratch_alloc() then takes an
 * exact-size bitmask from cuMemAlloc, freed with cuMemFree after the NMS launches.
 * cuMemcpyDtoH "exhibits synchronous behavior for most use cases" (driver API reference; the API
 * synchronization behavior: a copy from device to pageable or pinned host memory "returns only
 * once the copy has completed"), and the copy runs on the legacy NULL stream, behind the
 * request's upload and head on the blocking request stream: every request the host waits for
 * the upload and the head before it can queue the NMS, and the GPU idles while the host
 * allocates, queues the rest, sends the previous reply and decodes the next request.
 * cuMemFree ("Managing memory allocations using cudaMalloc and cudaFree causes the GPU to
 * synchronize across all executing CUDA streams", programming guide, stream-ordered allocator)
 * then waits for the NMS itself, and cuMemAlloc/cuMemFree are called every request for a buffer
 * whose largest size is known (max_cand candidates). The kernels read the count on the device
 * and return past it, so a grid and a bitmask sized for max_cand need no read (d59 is the fix).
 * Planted: the cuMemcpyDtoH in candidate_count(), and the cuMemAlloc in nms_scratch_alloc() with
 * its cuMemFree in nms_scratch_free(), every request (two problems, three lines).
 * Clean: the weights' upload and the setup sync, the pinned request slots' async upload and the
 * wait on a slot's upload two requests back, the reply's async download into pinned memory and
 * the reply sender's cuEventSynchronize one request behind, the final wait, teardown.
 * Everything is integer and the server checks every 16th request against the same head and NMS
 * on the host: the replies' hash is the same on every run (d59 prints the same).
 *   d56_detect_server_nms_count_readback driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { REQUESTS = 48, GRID_W = 256, GRID_H = 128, CELLS = GRID_W * GRID_H, ANCHORS = CELLS * 4, K = 64 };
enum { CLASSES = 32, POOL = 1 << 24 };
enum { MAX_CAND = 8192, THRESH = 150000, IOU_PCT = 45, OBJECTS = 24, SLOTS = 2, THREADS = 256 };
enum { R_TAG, R_CAND, R_KEPT, R_HASH, R_TOP, R_CLASS, RES_WORDS = R_CLASS + CLASSES };

#define FEAT_BYTES ((size_t)ANCHORS * K)
#define W_BYTES ((size_t)(CLASSES + 4) * K)
#define RES_BYTES (RES_WORDS * sizeof(unsigned long long))

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

static unsigned long long mix64(unsigned long long x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* the head's weights: (CLASSES + 4) rows of K int8 */
static void make_weights(signed char *w)
{
	for (size_t i = 0; i < W_BYTES; i++)
		w[i] = (signed char)(mix32((uint32_t)i * 2654435761u + 17u) & 0xff);
}

/* the front end's feature noise: a pool made once, each request a stretch of it */
static signed char *make_pool(void)
{
	signed char *pool = (signed char *)malloc(POOL);
	uint32_t x = 0x2545f491u;
	for (size_t i = 0; i < POOL; i += 4) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		memcpy(pool + i, &x, 4);
	}
	return pool;
}

/* the front end's decode of request r: a stretch of the noise pool, and OBJECTS objects whose
 * anchors' features follow their class's weight row (a cluster of overlapping boxes each) */
static void decode_request(int r, const signed char *w, const signed char *pool, signed char *feat)
{
	memcpy(feat, pool + (size_t)(mix32((uint32_t)r + 0x9e37u) % (POOL / K - ANCHORS)) * K, FEAT_BYTES);
	for (int o = 0; o < OBJECTS; o++) {
		uint32_t h = mix32((uint32_t)(r * OBJECTS + o) + 0x51edu);
		int cls = (int)(h % CLASSES), cx = (int)(h >> 8) % (GRID_W - 4), cy = (int)(h >> 20) % (GRID_H - 4);
		for (int dy = 0; dy < 3; dy++)
			for (int dx = 0; dx < 3; dx++)
				for (int s = 0; s < 4; s++) {
					size_t a = (size_t)(((cy + dy) * GRID_W + cx + dx) * 4 + s);
					for (int i = 0; i < K; i++)
						feat[a * K + i] = (signed char)(w[cls * K + i] / 2 +
										feat[a * K + i] / 4);
				}
	}
}

/* --- the host reference of the head and Fast NMS, for the sampled checks --------------------- */

static void reference_detect(const signed char *feat, const signed char *w, int tag,
			     int *boxes, unsigned long long *cand, unsigned long long *res)
{
	unsigned int n = 0;
	memset(res, 0, RES_BYTES);
	for (int a = 0; a < ANCHORS; a++) {
		int best = -0x7fffffff, cls = 0, r[4];
		for (int c = 0; c < CLASSES + 4; c++) {
			int s = 0;
			for (int i = 0; i < K; i++)
				s += (int)feat[(size_t)a * K + i] * (int)w[c * K + i];
			if (c < CLASSES && s > best) {
				best = s;
				cls = c;
			} else if (c >= CLASSES) {
				r[c - CLASSES] = s;
			}
		}
		int cell = a >> 2, base = 16 << (a & 3);
		int cx = (cell % GRID_W) * 16 + 8 + (r[0] >> 11), cy = (cell / GRID_W) * 16 + 8 + (r[1] >> 11);
		int bw = base + (abs(r[2]) >> 10), bh = base + (abs(r[3]) >> 10);
		int *b = boxes + 4 * a;
		b[0] = cx - bw / 2, b[1] = cy - bh / 2, b[2] = cx + bw / 2, b[3] = cy + bh / 2;
		if (best >= THRESH && n < MAX_CAND)
			cand[n++] = (unsigned long long)(best + (1 << 24)) << 32 |
				    (unsigned long long)cls << 24 | (unsigned int)a;
	}
	res[R_TAG] = (unsigned long long)tag;
	res[R_CAND] = n;
	for (unsigned int i = 0; i < n; i++) {
		const int *bi = boxes + 4 * (cand[i] & 0xffffff);
		long long ai = (long long)(bi[2] - bi[0]) * (bi[3] - bi[1]);
		int kept = 1;
		for (unsigned int j = 0; j < n && kept; j++) {
			if (cand[j] <= cand[i] || (cand[j] >> 24 & 255) != (cand[i] >> 24 & 255))
				continue;
			const int *bj = boxes + 4 * (cand[j] & 0xffffff);
			int iw = (bi[2] < bj[2] ? bi[2] : bj[2]) - (bi[0] > bj[0] ? bi[0] : bj[0]);
			int ih = (bi[3] < bj[3] ? bi[3] : bj[3]) - (bi[1] > bj[1] ? bi[1] : bj[1]);
			if (iw <= 0 || ih <= 0)
				continue;
			long long inter = (long long)iw * ih, aj = (long long)(bj[2] - bj[0]) * (bj[3] - bj[1]);
			kept = !(inter * 100 > (long long)IOU_PCT * (ai + aj - inter));
		}
		if (!kept)
			continue;
		res[R_KEPT]++;
		res[R_HASH] += mix64(cand[i]);
		res[R_TOP] = cand[i] > res[R_TOP] ? cand[i] : res[R_TOP];
		res[R_CLASS + (cand[i] >> 24 & 255)]++;
	}
}

/* --- the back end ---------------------------------------------------------------------------- */

struct backend {
	CUstream s;
	CUfunction head, mask, select;
	CUdeviceptr d_feat, d_w, d_boxes, d_count, d_cand, d_res;
	signed char *in[SLOTS];          /* pinned request slots */
	unsigned long long *reply[SLOTS]; /* pinned reply records */
	CUevent uploaded[SLOTS], replied[SLOTS];
};

static unsigned int candidate_count(struct backend *be)
{
	unsigned int n = 0;
	DCHECK(cuMemcpyDtoH(&n, be->d_count, sizeof n)); // SYNCSPY-PROBLEM: blocking read of the candidate count every request, only to size the NMS launches and scratch
	return n;
}

static CUdeviceptr nms_scratch_alloc(size_t bytes)
{
	CUdeviceptr p;
	DCHECK(cuMemAlloc(&p, bytes ? bytes : 8)); // SYNCSPY-PROBLEM: exact-size bitmask allocated every request
	return p;
}

static void nms_scratch_free(CUdeviceptr p)
{
	DCHECK(cuMemFree(p)); // SYNCSPY-PROBLEM: and freed every request (waits for the NMS)
}

/* request r in slot k: upload, head, NMS sized by the candidate count, the reply's download */
static void serve(struct backend *be, int r, int k)
{
	int anchors = ANCHORS, k_ = K, classes = CLASSES, grid_w = GRID_W, thresh = THRESH;
	int max_cand = MAX_CAND, iou = IOU_PCT;
	DCHECK(cuMemcpyHtoDAsync(be->d_feat, be->in[k], FEAT_BYTES, be->s)); // SYNCSPY-CLEAN: pinned request slot
	DCHECK(cuEventRecord(be->uploaded[k], be->s));
	DCHECK(cuMemsetD32Async(be->d_count, 0, 1, be->s));
	void *hargs[] = {&be->d_feat, &anchors, &k_, &be->d_w, &classes, &grid_w, &thresh,
			 &be->d_boxes, &be->d_count, &max_cand, &be->d_cand};
	DCHECK(cuLaunchKernel(be->head, ANCHORS / THREADS, 1, 1, THREADS, 1, 1, 0, be->s, hargs, NULL));

	unsigned int n = candidate_count(be);
	int cap = n < MAX_CAND ? (int)n : MAX_CAND, words = (cap + 63) / 64;
	CUdeviceptr d_mask = nms_scratch_alloc((size_t)cap * words * sizeof(unsigned long long));
	void *margs[] = {&be->d_cand, &be->d_count, &cap, &be->d_boxes, &iou, &d_mask};
	unsigned int mgrid = (unsigned int)(((long long)cap * words + THREADS - 1) / THREADS);
	if (mgrid)
		DCHECK(cuLaunchKernel(be->mask, mgrid, 1, 1, THREADS, 1, 1, 0, be->s, margs, NULL));
	DCHECK(cuMemsetD32Async(be->d_res, 0, RES_WORDS * 2, be->s));
	void *sargs[] = {&be->d_cand, &be->d_count, &cap, &d_mask, &r, &be->d_res};
	unsigned int sgrid = (unsigned int)(cap + THREADS - 1) / THREADS;
	DCHECK(cuLaunchKernel(be->select, sgrid ? sgrid : 1, 1, 1, THREADS, 1, 1, 0, be->s, sargs, NULL));
	DCHECK(cuMemcpyDtoHAsync(be->reply[k], be->d_res, RES_BYTES, be->s)); // SYNCSPY-CLEAN: pinned reply slot
	DCHECK(cuEventRecord(be->replied[k], be->s));
	nms_scratch_free(d_mask);
}

/* the reply line of request r (one behind), hashed into the server's log */
static int send_reply(struct backend *be, int r, const unsigned long long *expect,
		      unsigned long long *log_hash, unsigned long long *kept)
{
	int k = r % SLOTS;
	char line[512];
	DCHECK(cuEventSynchronize(be->replied[k])); // SYNCSPY-CLEAN: the reply one request behind
	const unsigned long long *res = be->reply[k];
	unsigned long long top = res[R_TOP];
	int len = snprintf(line, sizeof line, "req=%d cand=%llu kept=%llu top=cls%llu:%lld@%llu by_class=",
			   r, res[R_CAND], res[R_KEPT], top >> 24 & 255,
			   (long long)(top >> 32) - (1 << 24), top & 0xffffff);
	for (int c = 0; c < CLASSES && len < (int)sizeof line - 8; c++)
		len += snprintf(line + len, sizeof line - len, "%llu,", res[R_CLASS + c]);
	for (int i = 0; i < len; i++)
		*log_hash = (*log_hash ^ (unsigned char)line[i]) * 1099511628211ull;
	*kept += res[R_KEPT];
	return res[R_TAG] == (unsigned long long)r && (!expect || !memcmp(expect, res, RES_BYTES));
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct backend be;
	static signed char w[W_BYTES];
	int *ref_boxes = (int *)malloc((size_t)ANCHORS * 4 * sizeof(int));
	unsigned long long *ref_cand = (unsigned long long *)malloc(MAX_CAND * sizeof(unsigned long long));
	unsigned long long ref[RES_WORDS], log_hash = 14695981039346656037ull, kept = 0;
	int ok = 1, checked = 0, ref_req = -1;

	signed char *pool = make_pool();
	make_weights(w);
	DCHECK(cuModuleGetFunction(&be.head, module, "det_head"));
	DCHECK(cuModuleGetFunction(&be.mask, module, "nms_iou_mask"));
	DCHECK(cuModuleGetFunction(&be.select, module, "nms_select"));
	DCHECK(cuStreamCreate(&be.s, CU_STREAM_DEFAULT)); /* blocking: ordered with the NULL stream */
	DCHECK(cuMemAlloc(&be.d_feat, FEAT_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&be.d_w, W_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&be.d_boxes, (size_t)ANCHORS * 4 * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&be.d_count, sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&be.d_cand, MAX_CAND * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&be.d_res, RES_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemcpyHtoD(be.d_w, w, W_BYTES)); // SYNCSPY-CLEAN: the model's weights, once
	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemHostAlloc((void **)&be.in[k], FEAT_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned
		DCHECK(cuMemHostAlloc((void **)&be.reply[k], RES_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned
		DCHECK(cuEventCreate(&be.uploaded[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&be.replied[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup done before the server takes requests

	for (int r = 0; r < REQUESTS; r++) {
		int k = r % SLOTS;
		DCHECK(cuEventSynchronize(be.uploaded[k])); // SYNCSPY-CLEAN: the slot's upload two requests back
		decode_request(r, w, pool, be.in[k]);
		if (r % 16 == 5) { /* the server's self-test: this request on the host too */
			reference_detect(be.in[k], w, r, ref_boxes, ref_cand, ref);
			ref_req = r;
			checked++;
		}
		serve(&be, r, k);
		if (r >= 1)
			ok &= send_reply(&be, r - 1, ref_req == r - 1 ? ref : NULL, &log_hash, &kept);
	}
	ok &= send_reply(&be, REQUESTS - 1, ref_req == REQUESTS - 1 ? ref : NULL, &log_hash, &kept);
	DCHECK(cuStreamSynchronize(be.s)); // SYNCSPY-CLEAN: the final wait (all replied already)

	if (!ok || kept == 0 || checked == 0) {
		fprintf(stderr, "d56: a reply is stale or differs from the host's detection\n");
		return 1;
	}
	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemFreeHost(be.in[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(be.reply[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(be.uploaded[k]));
		DCHECK(cuEventDestroy(be.replied[k]));
	}
	DCHECK(cuMemFree(be.d_feat)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(be.d_w)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(be.d_boxes)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(be.d_count)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(be.d_cand)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(be.d_res)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(be.s));
	free(ref_boxes);
	free(ref_cand);
	free(pool);
	driver_teardown(module);
	printf("d56_detect_server_nms_count_readback: requests=%d kept=%llu replies=%016llx result=OK\n",
	       REQUESTS, kept, log_hash);
	return 0;
}
