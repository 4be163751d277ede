/*
 * examples/corpus/c126_pnp_fiducial_pyramid_malloc_pitch.cu: corpus workload (CUDA C). The
 * board camera of an SMT pick-and-place machine: for every printed circuit board on the
 * conveyor the camera takes a 4096 x 3072 8-bit frame, and the vision stage finds the board's
 * eight fiducial marks (copper discs of 32 px radius in a dark solder-mask ring of 48 px) by
 * coarse-to-fine template matching on a Gaussian pyramid: a +-8 px search around the CAD
 * position at level 3, then +-2 px refinements at levels 2, 1 and 0 (masked sums of absolute
 * differences, one CUDA block a fiducial). The host renders the next frame into a pinned
 * staging double buffer (the frame grabber's copy and the illumination gain), a copy stream
 * uploads it into one of two device frames, the compute stream builds the pyramid and searches,
 * and the marks' positions come back into a pinned ring; the machine computes the board's
 * placement offset one board behind, while the next board is imaged.
 * The pyramid is the vision library's: pyramid_build() allocates levels 1-3 with cudaMallocPitch
 * and pyramid_release() frees them with cudaFree, every board, the way image objects that own
 * their memory go out of scope. The programming guide (stream ordered memory allocator):
 * "managing memory allocations using cudaMalloc and cudaFree causes the GPU to synchronize
 * across all executing CUDA streams", and cudaFree does not return before the board's upload,
 * pyramid and searches are done: the host renders the next frame only after the GPU has finished
 * this board, and the double buffers never overlap anything. Allocating the three levels once
 * (their size never changes) is the fix.
 * Planted: the cudaMallocPitch in pyramid_build() and the cudaFree in pyramid_release(), every
 * board (one problem, two lines).
 * Clean: the setup allocations (the two device frames, the templates, the CAD positions, the
 * results, the pinned staging and ring) and uploads, the setup sync, the per-board upload from
 * pinned staging on the copy stream, the staging double buffer's cudaEventSynchronize two boards
 * back, the result's download into the pinned ring and its cudaEventSynchronize one board
 * behind, the last board's wait, teardown.
 * Per board (estimates, H100): a 12.6 MB upload (about 0.5 ms on the copy engine), the pyramid
 * (16M pixels read) and the searches (about 2M masked template pixels), about 0.1 ms; the host
 * renders a frame in about 1.5-3 ms. The checks, every board: each mark is found exactly where
 * the board's offset put it, with the sum of absolute differences the illumination gain gives.
 */
#include "corpus.h"

enum { W0 = 4096, H0 = 3072, LEVELS = 4, FIDS = 8, BOARDS = 40, THREADS = 256, MARGIN = 64 };
enum { DISC = 32, RING = 48, COARSE = 8, FINE = 2, DISC_GREY = 230, RING_GREY = 25, DONT_CARE = 255 };
enum { BGW = W0 + 2 * MARGIN, BGH = H0 + 2 * MARGIN };

/* the marks' CAD positions in the frame of a board with no offset */
static const int CAD[FIDS][2] = {{300, 260},   {3800, 240},  {2050, 2820}, {3700, 2900},
				 {400, 2750},  {1200, 1500}, {2900, 1400}, {2048, 700}};

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* 2 x 2 box average: level l to level l + 1 */
__global__ void pyr_down(const unsigned char *src, size_t src_pitch, unsigned char *dst, size_t dst_pitch, int w, int h)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= w * h)
		return;
	int x = i % w, y = i / w;
	const unsigned char *r0 = src + (size_t)(2 * y) * src_pitch + 2 * x, *r1 = r0 + src_pitch;
	dst[(size_t)y * dst_pitch + x] = (unsigned char)((r0[0] + r0[1] + r1[0] + r1[1] + 2) >> 2);
}

struct fid_result {
	int pos[FIDS][2];
	unsigned int score[FIDS];
};

/* one block a fiducial, one warp a candidate position at a time: the masked SAD of the level's
 * template (side 2 rad + 1, DONT_CARE outside the ring) around scale * from[f] +- search; the
 * best (lowest SAD, then the first candidate) goes to out */
__global__ void fid_search(const unsigned char *img, size_t pitch, int w, int h, const unsigned char *tmpl, int rad,
			   int search, const int *from, int scale, struct fid_result *out)
{
	__shared__ unsigned long long best;
	int f = blockIdx.x, side = 2 * search + 1, tw = 2 * rad + 1;
	int cx = from[2 * f] * scale, cy = from[2 * f + 1] * scale;
	int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
	if (threadIdx.x == 0)
		best = ~0ull;
	__syncthreads();
	for (int c = warp; c < side * side; c += warps) {
		int px = cx + c % side - search, py = cy + c / side - search;
		unsigned int sad = 0;
		for (int t = lane; t < tw * tw; t += 32) {
			int m = tmpl[t];
			if (m == DONT_CARE)
				continue;
			int ix = min(max(px + t % tw - rad, 0), w - 1), iy = min(max(py + t / tw - rad, 0), h - 1);
			int d = img[(size_t)iy * pitch + ix] - m;
			sad += d < 0 ? -d : d;
		}
		sad = __reduce_add_sync(0xffffffffu, sad);
		if (lane == 0)
			atomicMin(&best, ((unsigned long long)sad << 16) | (unsigned)c);
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		int c = (int)(best & 0xffff);
		out->pos[f][0] = cx + c % side - search;
		out->pos[f][1] = cy + c / side - search;
		out->score[f] = (unsigned int)(best >> 16);
	}
}

/* --- the vision library's pyramid ---------------------------------------------------------- */

struct pyramid {
	unsigned char *level[LEVELS]; /* level 0 is the uploaded frame (not owned) */
	size_t pitch[LEVELS];
};

static void pyramid_build(struct pyramid *p, unsigned char *frame, size_t frame_pitch, cudaStream_t s)
{
	p->level[0] = frame;
	p->pitch[0] = frame_pitch;
	for (int l = 1; l < LEVELS; l++) {
		CHECK(cudaMallocPitch(&p->level[l], &p->pitch[l], W0 >> l, H0 >> l)); // SYNCSPY-PROBLEM: the pyramid's levels allocated for every board
		int w = W0 >> l, h = H0 >> l;
		pyr_down<<<(w * h + THREADS - 1) / THREADS, THREADS, 0, s>>>(p->level[l - 1], p->pitch[l - 1], p->level[l], p->pitch[l], w, h);
		CHECK_LAUNCH();
	}
}

static void pyramid_release(struct pyramid *p)
{
	for (int l = 1; l < LEVELS; l++)
		CHECK(cudaFree(p->level[l])); // SYNCSPY-PROBLEM: freed every board: waits for the board's upload, pyramid and searches
}

/* --- the machine --------------------------------------------------------------------------- */

/* the board texture with the marks, larger than the frame by MARGIN on every side */
static void make_board(unsigned char *bg)
{
	for (int y = 0; y < BGH; y++)
		for (int x = 0; x < BGW; x++) {
			int v = 40 + (int)(mix32((uint32_t)(y * BGW + x)) & 31);
			if (y % 96 < 6 || x % 160 < 4) /* traces */
				v = 150 + (int)(mix32((uint32_t)(x + 7 * y)) & 15);
			bg[(size_t)y * BGW + x] = (unsigned char)v;
		}
	for (int f = 0; f < FIDS; f++)
		for (int dy = -RING; dy <= RING; dy++)
			for (int dx = -RING; dx <= RING; dx++) {
				int r2 = dx * dx + dy * dy;
				if (r2 <= RING * RING)
					bg[(size_t)(CAD[f][1] + MARGIN + dy) * BGW + CAD[f][0] + MARGIN + dx] =
						(unsigned char)(r2 <= DISC * DISC ? DISC_GREY : RING_GREY);
			}
}

/* the template of level l: the disc and ring at the level's scale, DONT_CARE elsewhere */
static int make_template(int l, unsigned char *t)
{
	int rad = RING >> l, disc = DISC >> l, tw = 2 * rad + 1, used = 0;
	for (int y = 0; y < tw; y++)
		for (int x = 0; x < tw; x++) {
			int r2 = (x - rad) * (x - rad) + (y - rad) * (y - rad);
			t[y * tw + x] = (unsigned char)(r2 > rad * rad ? DONT_CARE : r2 <= disc * disc ? DISC_GREY : RING_GREY);
			used += r2 <= rad * rad;
		}
	return used;
}

static void board_offset(int b, int *ox, int *oy, int *gain)
{
	*ox = (int)(mix32((uint32_t)b * 2 + 1) % 81) - 40;
	*oy = (int)(mix32((uint32_t)b * 2 + 2) % 81) - 40;
	*gain = (int)(mix32((uint32_t)b * 7 + 3) % 7);
}

/* the frame grabber: board b's frame (the texture shifted by its offset, the lamp's gain) */
static void render_frame(const unsigned char *bg, int b, unsigned char *frame)
{
	int ox, oy, gain;
	board_offset(b, &ox, &oy, &gain);
	for (int y = 0; y < H0; y++) {
		const unsigned char *src = bg + (size_t)(y + MARGIN + oy) * BGW + MARGIN + ox;
		unsigned char *dst = frame + (size_t)y * W0;
		for (int x = 0; x < W0; x++)
			dst[x] = (unsigned char)(src[x] + gain);
	}
}

/* board b's marks where its offset put them, each with the gain's SAD over the template */
static unsigned long long check_board(int b, const struct fid_result *r, int used)
{
	int ox, oy, gain;
	board_offset(b, &ox, &oy, &gain);
	unsigned long long h = (unsigned long long)b;
	for (int f = 0; f < FIDS; f++) {
		corpus_expect("c126", "fiducial x", r->pos[f][0], CAD[f][0] - ox);
		corpus_expect("c126", "fiducial y", r->pos[f][1], CAD[f][1] - oy);
		corpus_expect("c126", "fiducial score", r->score[f], (long long)gain * used);
		h = h * 1000003u + (unsigned)(r->pos[f][0] * 4096 + r->pos[f][1]) + r->score[f];
	}
	return h;
}

int main(void)
{
	const char *name = "c126_pnp_fiducial_pyramid_malloc_pitch";
	unsigned char *bg = (unsigned char *)malloc((size_t)BGW * BGH);
	static unsigned char tmpl[LEVELS][(2 * RING + 1) * (2 * RING + 1)];
	int tmpl_off[LEVELS], used0 = 0, cad3[FIDS][2];
	make_board(bg);
	size_t tmpl_bytes = 0;
	for (int l = 0; l < LEVELS; l++) {
		int u = make_template(l, tmpl[l]);
		used0 = l == 0 ? u : used0;
		tmpl_off[l] = (int)tmpl_bytes;
		tmpl_bytes += (size_t)(2 * (RING >> l) + 1) * (2 * (RING >> l) + 1);
	}
	for (int f = 0; f < FIDS; f++)
		cad3[f][0] = CAD[f][0] >> 3, cad3[f][1] = CAD[f][1] >> 3;

	unsigned char *frame[2], *staging[2], *d_tmpl;
	size_t frame_pitch;
	int *d_cad3;
	struct fid_result *d_result, *ring[2];
	cudaStream_t copy, compute;
	cudaEvent_t uploaded[2], consumed[2], done[2];
	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMallocPitch(&frame[k], &frame_pitch, W0, H0)); // SYNCSPY-CLEAN: setup, the two device frames
		CHECK(cudaMallocHost(&staging[k], (size_t)W0 * H0)); // SYNCSPY-CLEAN: setup, pinned staging
		CHECK(cudaMallocHost(&ring[k], sizeof(struct fid_result))); // SYNCSPY-CLEAN: setup, the pinned result ring
		CHECK(cudaEventCreateWithFlags(&uploaded[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&consumed[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&done[k], cudaEventDisableTiming));
	}
	CHECK(cudaMalloc(&d_tmpl, tmpl_bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_cad3, sizeof cad3)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_result, sizeof(struct fid_result))); // SYNCSPY-CLEAN: setup allocation
	for (int l = 0; l < LEVELS; l++) {
		size_t bytes = (size_t)(2 * (RING >> l) + 1) * (2 * (RING >> l) + 1);
		CHECK(cudaMemcpy(d_tmpl + tmpl_off[l], tmpl[l], bytes, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the templates
	}
	CHECK(cudaMemcpy(d_cad3, cad3, sizeof cad3, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the CAD positions
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup done before the streams start

	unsigned long long checksum = 0;
	for (int b = 0; b < BOARDS; b++) {
		int k = b % 2;
		if (b >= 2)
			CHECK(cudaEventSynchronize(uploaded[k])); // SYNCSPY-CLEAN: the staging double buffer, two boards back
		render_frame(bg, b, staging[k]);
		if (b >= 2) /* board b-2 is done with this device frame */
			CHECK(cudaStreamWaitEvent(copy, consumed[k], 0));
		CHECK(cudaMemcpy2DAsync(frame[k], frame_pitch, staging[k], W0, W0, H0, cudaMemcpyHostToDevice, copy)); // SYNCSPY-CLEAN: from pinned staging, on the copy stream
		CHECK(cudaEventRecord(uploaded[k], copy));
		CHECK(cudaStreamWaitEvent(compute, uploaded[k], 0));

		struct pyramid pyr;
		pyramid_build(&pyr, frame[k], frame_pitch, compute);
		for (int l = LEVELS - 1; l >= 0; l--) {
			const int *from = l == LEVELS - 1 ? d_cad3 : &d_result->pos[0][0];
			fid_search<<<FIDS, THREADS, 0, compute>>>(pyr.level[l], pyr.pitch[l], W0 >> l, H0 >> l, d_tmpl + tmpl_off[l],
								  RING >> l, l == LEVELS - 1 ? COARSE : FINE, from,
								  l == LEVELS - 1 ? 1 : 2, d_result);
			CHECK_LAUNCH();
		}
		CHECK(cudaEventRecord(consumed[k], compute));
		CHECK(cudaMemcpyAsync(ring[k], d_result, sizeof(struct fid_result), cudaMemcpyDeviceToHost, compute)); // SYNCSPY-CLEAN: into the pinned result ring
		CHECK(cudaEventRecord(done[k], compute));
		pyramid_release(&pyr);

		if (b >= 1) { /* the placement offset of the previous board */
			CHECK(cudaEventSynchronize(done[k ^ 1])); // SYNCSPY-CLEAN: the result ring, one board behind
			checksum = checksum * 31u + check_board(b - 1, ring[k ^ 1], used0);
		}
	}
	int last = (BOARDS - 1) % 2;
	CHECK(cudaEventSynchronize(done[last])); // SYNCSPY-CLEAN: the last board
	checksum = checksum * 31u + check_board(BOARDS - 1, ring[last], used0);

	for (int k = 0; k < 2; k++) {
		CHECK(cudaFree(frame[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(staging[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(ring[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(uploaded[k]));
		CHECK(cudaEventDestroy(consumed[k]));
		CHECK(cudaEventDestroy(done[k]));
	}
	CHECK(cudaFree(d_tmpl)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_cad3)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_result)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(copy));
	CHECK(cudaStreamDestroy(compute));
	free(bg);
	printf("%s: boards=%d fiducials=%d checksum=%016llx result=OK\n", name, BOARDS, FIDS, checksum);
	return 0;
}
