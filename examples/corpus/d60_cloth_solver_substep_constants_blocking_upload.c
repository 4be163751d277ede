/*
 * examples/corpus/d60_cloth_solver_substep_constants_blocking_upload.c: corpus workload (CUDA
 * driver API). The GPU cloth solver of a game engine: eight capes and curtains of 256 x 256
 * particles (position-based dynamics in Q10 fixed point, 8 MB of int4 particles) hang from their
 * poles while a character walks through them. Every frame the game thread animates the
 * character (24 bones) and skins its 64K-vertex render mesh on the CPU (about 1 ms), then steps
 * the cloth in 8 substeps (the "small steps" scheme: a Verlet prediction with gravity and gusting
 * wind, 4 Jacobi passes over the structural and shear constraints, the character's four collider
 * spheres and the floor), and the renderer reads each cloth's bounds and contact count one frame
 * behind, from a pinned double buffer. The substep's parameters (frame, substep, gravity, wind,
 * damping, stiffness, the colliders interpolated between the last two poses) live in a
 * __constant__ struct that the engine found once with cuModuleGetGlobal("cloth_params").
 * What is wrong: set_substep_params() writes the struct with cuMemcpyHtoD from the caller's stack
 * before every substep (eight times a frame). The API synchronization behavior of the driver API:
 * "For transfers from pageable host memory to device memory, a stream sync is performed before
 * the copy is initiated"; the synchronous copies use the legacy NULL stream, which waits for all
 * preceding work of the blocking solver stream (created with CU_STREAM_DEFAULT so that the write
 * lands after the previous substep's kernels have read the struct). So each write waits for the
 * previous substep's three launches to finish: the game thread is held in the solver's
 * submission for the whole GPU frame, and the next frame's animation and skinning start only when
 * the GPU has (nearly) finished; host and GPU take turns, about 1 ms + 1 ms a frame where either
 * alone would do. Writing the eight structs into a pinned ring and queueing cuMemcpyHtoDAsync on
 * the solver stream keeps the stream order without a host wait (d63 is the fix).
 * Planted: the cuMemcpyHtoD in set_substep_params(), every substep (one line, eight calls a
 * frame).
 * Clean: the setup allocations and the particles' upload, the setup sync, the stats' async
 * download into the pinned double buffer and the renderer's cuEventSynchronize one frame behind,
 * the final read of the particles into pinned memory, teardown.
 * Sizes (estimates, H100): 4M particles' updates a substep in the Jacobi passes (8 neighbours, a
 * 64-bit division each), about 0.1 ms a substep, 0.8-1 ms a frame; the host's animation and
 * skinning about 1 ms a frame; 60 frames.
 * Everything is integer (the square roots are of exact integers, correctly rounded): the stats'
 * hash and the final particles' hash are the same on every run (d63 prints the same values).
 *   d60_cloth_solver_substep_constants_blocking_upload driver_kernels.cubin
 */
#include "driver.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

enum { CLOTHS = 8, W = 256, NP = CLOTHS * W * W, FRAMES = 60, SUBSTEPS = 8, ITERS = 4 };
enum { THREADS = 256, STAT_WORDS = 8, SLOTS = 2, REST = 1024, GAP = 16 };
enum { BONES = 24, VERTS = 65536, SINTAB = 1024 };

#define PART_BYTES ((size_t)NP * 4 * sizeof(int))
#define STATS_BYTES ((size_t)CLOTHS * STAT_WORDS * sizeof(unsigned long long))

/* the kernels' __constant__ cloth_params (driver_kernels.cu), word for word */
struct cloth_params {
	int frame, substep;
	int gravity;
	int wind[3];
	int damping_q8;
	int stiffness_q8;
	int rest;
	int floor_y;
	int spheres;
	int sphere[4][4];
};

static const int POLE_Y = 300 * REST, FLOOR_Y = POLE_Y - 300 * REST;

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* --- the game thread: the character's animation and CPU skinning ----------------------------- */

struct character {
	int sintab[SINTAB];         /* Q12 */
	int bind[VERTS][3];         /* the render mesh in the bind pose */
	unsigned char bone[VERTS][4];
	unsigned char weight[VERTS][4]; /* sum 256 */
	int mat[BONES][12];         /* the pose: 3 x 4, Q12 rotation, translation in units */
	int sphere[4][4];           /* the colliders of this pose and of the previous one */
	int prev_sphere[4][4];
	unsigned long long mesh_hash;
};

static int isin(const struct character *ch, int a) { return ch->sintab[a & (SINTAB - 1)]; }
static int icos(const struct character *ch, int a) { return ch->sintab[(a + SINTAB / 4) & (SINTAB - 1)]; }

static void character_init(struct character *ch)
{
	for (int i = 0; i < SINTAB; i++)
		ch->sintab[i] = (int)lround(4096.0 * sin(2.0 * M_PI * i / SINTAB));
	for (int v = 0; v < VERTS; v++) {
		uint32_t h = mix32((uint32_t)v + 77u);
		ch->bind[v][0] = (int)(h & 0xffff) - 32768;
		ch->bind[v][1] = (int)(h >> 16) * 2;
		ch->bind[v][2] = (int)(mix32(h) & 0x3fff) - 8192;
		int b0 = (int)(h % BONES), w0 = 128 + (int)(h >> 25);
		for (int k = 0; k < 4; k++)
			ch->bone[v][k] = (unsigned char)((b0 + k) % BONES);
		ch->weight[v][0] = (unsigned char)w0;
		ch->weight[v][1] = (unsigned char)((256 - w0) / 2);
		ch->weight[v][2] = (unsigned char)((256 - w0) / 4);
		ch->weight[v][3] = (unsigned char)(256 - w0 - (256 - w0) / 2 - (256 - w0) / 4);
	}
	ch->mesh_hash = 14695981039346656037ull;
}

/* frame f's pose: a walk cycle (each bone a rotation about z), the root walking along x through
 * the row of cloths; the colliders are the torso, the head and the two arms */
static void character_animate(struct character *ch, int f)
{
	int root_x = -(CLOTHS / 2) * (W + GAP) * REST + f * (CLOTHS * (W + GAP) * REST / FRAMES);
	int root_y = POLE_Y - 200 * REST;
	for (int b = 0; b < BONES; b++) {
		int a = f * 17 + b * 41, c = icos(ch, a), s = isin(ch, a) / 4;
		int *m = ch->mat[b];
		m[0] = c, m[1] = -s, m[2] = 0, m[3] = root_x + (b - BONES / 2) * 512;
		m[4] = s, m[5] = c, m[6] = 0, m[7] = root_y + b * 2048;
		m[8] = 0, m[9] = 0, m[10] = 4096, m[11] = isin(ch, f * 9 + b) * 4;
	}
	memcpy(ch->prev_sphere, ch->sphere, sizeof ch->sphere);
	int sway = isin(ch, f * 23) * 8;
	int spots[4][4] = {{0, 0, 0, 40}, {0, 60, 0, 18}, {-40, 10, 30, 16}, {40, 10, -30, 16}};
	for (int k = 0; k < 4; k++) {
		ch->sphere[k][0] = root_x + spots[k][0] * REST;
		ch->sphere[k][1] = root_y + spots[k][1] * REST;
		ch->sphere[k][2] = spots[k][2] * REST + sway;
		ch->sphere[k][3] = spots[k][3] * REST;
	}
	if (f == 0)
		memcpy(ch->prev_sphere, ch->sphere, sizeof ch->sphere);
}

/* linear blend skinning of the render mesh (the renderer uploads it elsewhere); its hash logged */
static void character_skin(struct character *ch)
{
	unsigned long long h = ch->mesh_hash;
	for (int v = 0; v < VERTS; v++) {
		long long out[3] = {0, 0, 0};
		const int *p = ch->bind[v];
		for (int k = 0; k < 4; k++) {
			const int *m = ch->mat[ch->bone[v][k]];
			int w = ch->weight[v][k];
			for (int r = 0; r < 3; r++)
				out[r] += w * (((long long)m[4 * r] * p[0] + (long long)m[4 * r + 1] * p[1] +
						(long long)m[4 * r + 2] * p[2]) / 4096 + m[4 * r + 3]);
		}
		h = (h ^ (unsigned long long)(out[0] >> 8) ^ (unsigned long long)(out[1] >> 8) << 21 ^
		     (unsigned long long)(out[2] >> 8) << 42) * 1099511628211ull;
	}
	ch->mesh_hash = h;
}

/* substep s of frame f: the colliders interpolated between the last two poses */
static void make_params(const struct character *ch, int f, int s, struct cloth_params *p)
{
	memset(p, 0, sizeof *p);
	p->frame = f;
	p->substep = s;
	p->gravity = -3;
	p->wind[0] = 2;
	p->wind[1] = 1;
	p->wind[2] = 6 + isin(ch, f * 5) / 1024;
	p->damping_q8 = 250;
	p->stiffness_q8 = 256;
	p->rest = REST;
	p->floor_y = FLOOR_Y;
	p->spheres = 4;
	for (int k = 0; k < 4; k++)
		for (int c = 0; c < 4; c++)
			p->sphere[k][c] = ch->prev_sphere[k][c] +
					  (int)((long long)(ch->sphere[k][c] - ch->prev_sphere[k][c]) * (s + 1) / SUBSTEPS);
}

/* --- the cloth solver ------------------------------------------------------------------------ */

struct solver {
	CUstream s;
	CUfunction integrate, relax, collide;
	CUdeviceptr d_params; /* the kernels' __constant__ cloth_params */
	CUdeviceptr d_pos, d_prev, d_pred, d_tmp, d_stats;
	unsigned long long *stats[SLOTS]; /* pinned, the renderer's double buffer */
	CUevent done[SLOTS];
};

static void set_substep_params(struct solver *sv, const struct cloth_params *p)
{
	DCHECK(cuMemcpyHtoD(sv->d_params, p, sizeof *p)); // SYNCSPY-PROBLEM: blocking write of the substep's constants from the stack, waits for the previous substep
}

static void launch(struct solver *sv, CUfunction fn, void **args)
{
	DCHECK(cuLaunchKernel(fn, NP / THREADS, 1, 1, THREADS, 1, 1, 0, sv->s, args, NULL));
}

/* frame f on the solver stream: the substeps, the stats' download into slot f % SLOTS */
static void step_frame(struct solver *sv, const struct character *ch, int f)
{
	int n = NP, w = W;
	DCHECK(cuMemsetD32Async(sv->d_stats, 0, CLOTHS * STAT_WORDS * 2, sv->s));
	for (int s = 0; s < SUBSTEPS; s++) {
		struct cloth_params p;
		make_params(ch, f, s, &p);
		set_substep_params(sv, &p);
		void *iargs[] = {&sv->d_pos, &sv->d_prev, &sv->d_pred, &n, &w};
		launch(sv, sv->integrate, iargs);
		for (int it = 0; it < ITERS; it++) {
			CUdeviceptr *in = it % 2 ? &sv->d_tmp : &sv->d_pred, *out = it % 2 ? &sv->d_pred : &sv->d_tmp;
			void *rargs[] = {in, out, &n, &w};
			launch(sv, sv->relax, rargs);
		}
		int want = s == SUBSTEPS - 1;
		void *cargs[] = {&sv->d_pred, &sv->d_pos, &n, &w, &want, &sv->d_stats};
		launch(sv, sv->collide, cargs);
	}
	DCHECK(cuMemcpyDtoHAsync(sv->stats[f % SLOTS], sv->d_stats, STATS_BYTES, sv->s)); // SYNCSPY-CLEAN: pinned double buffer
	DCHECK(cuEventRecord(sv->done[f % SLOTS], sv->s));
}

/* the renderer, one frame behind: bounds for culling, contacts for the footstep sounds */
static int render_consume(struct solver *sv, int f, unsigned long long *log_hash, unsigned long long *contacts)
{
	int ok = 1;
	DCHECK(cuEventSynchronize(sv->done[f % SLOTS])); // SYNCSPY-CLEAN: the frame one behind (double buffer)
	const unsigned long long *st = sv->stats[f % SLOTS];
	for (int c = 0; c < CLOTHS; c++) {
		const unsigned long long *q = st + c * STAT_WORDS;
		long long top = (long long)q[3] - (1 << 30), bottom = (1 << 30) - (long long)q[4];
		ok &= q[0] == (unsigned long long)(f << 8 | (SUBSTEPS - 1));
		ok &= top >= POLE_Y && bottom >= FLOOR_Y && bottom < top;
		*contacts += q[1];
		for (int k = 0; k < 6; k++)
			*log_hash = (*log_hash ^ q[k]) * 1099511628211ull;
	}
	return ok;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct solver sv;
	struct character *ch = (struct character *)calloc(1, sizeof *ch);
	int *parts = NULL;
	size_t const_bytes = 0;
	unsigned long long log_hash = 14695981039346656037ull, contacts = 0, final_hash = 0;
	int ok = 1;

	character_init(ch);
	DCHECK(cuModuleGetFunction(&sv.integrate, module, "cloth_integrate"));
	DCHECK(cuModuleGetFunction(&sv.relax, module, "cloth_relax"));
	DCHECK(cuModuleGetFunction(&sv.collide, module, "cloth_collide"));
	DCHECK(cuModuleGetGlobal(&sv.d_params, &const_bytes, module, "cloth_params"));
	if (const_bytes != sizeof(struct cloth_params)) {
		fprintf(stderr, "d60: cloth_params is %zu bytes, expected %zu\n", const_bytes, sizeof(struct cloth_params));
		return 1;
	}
	DCHECK(cuStreamCreate(&sv.s, CU_STREAM_DEFAULT)); /* blocking: ordered with the NULL stream */
	DCHECK(cuMemAlloc(&sv.d_pos, PART_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&sv.d_prev, PART_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&sv.d_pred, PART_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&sv.d_tmp, PART_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&sv.d_stats, STATS_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemHostAlloc((void **)&parts, PART_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned
	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemHostAlloc((void **)&sv.stats[k], STATS_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned
		DCHECK(cuEventCreate(&sv.done[k], CU_EVENT_DISABLE_TIMING));
	}
	/* the cloths at rest: hanging from their poles in the x-y plane, side by side */
	for (int i = 0; i < NP; i++) {
		int c = i / (W * W), x = i % W, y = i / W % W;
		parts[4 * i] = (c - CLOTHS / 2) * (W + GAP) * REST + x * REST;
		parts[4 * i + 1] = POLE_Y - y * REST;
		parts[4 * i + 2] = 0;
		parts[4 * i + 3] = 0;
	}
	DCHECK(cuMemcpyHtoD(sv.d_pos, parts, PART_BYTES)); // SYNCSPY-CLEAN: setup upload
	DCHECK(cuMemcpyHtoD(sv.d_prev, parts, PART_BYTES)); // SYNCSPY-CLEAN: setup upload
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup done before the first frame

	for (int f = 0; f < FRAMES; f++) {
		character_animate(ch, f);
		character_skin(ch);
		step_frame(&sv, ch, f);
		if (f >= 1)
			ok &= render_consume(&sv, f - 1, &log_hash, &contacts);
	}
	ok &= render_consume(&sv, FRAMES - 1, &log_hash, &contacts);
	DCHECK(cuMemcpyDtoH(parts, sv.d_pos, PART_BYTES)); // SYNCSPY-CLEAN: the final read, pinned

	/* the poles held, nothing under the floor */
	for (int i = 0; i < NP; i++) {
		int c = i / (W * W), x = i % W, y = i / W % W;
		if (y == 0)
			ok &= parts[4 * i] == (c - CLOTHS / 2) * (W + GAP) * REST + x * REST && parts[4 * i + 1] == POLE_Y;
		ok &= parts[4 * i + 1] >= FLOOR_Y;
		final_hash += mix32((uint32_t)parts[4 * i] ^ mix32((uint32_t)parts[4 * i + 1] ^
								   mix32((uint32_t)parts[4 * i + 2] ^ (uint32_t)i)));
	}
	if (!ok || contacts == 0) {
		fprintf(stderr, "d60: stale stats or a broken cloth (contacts=%llu)\n", contacts);
		return 1;
	}
	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemFreeHost(sv.stats[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(sv.done[k]));
	}
	DCHECK(cuMemFreeHost(parts)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(sv.d_pos)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(sv.d_prev)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(sv.d_pred)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(sv.d_tmp)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(sv.d_stats)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(sv.s));
	printf("d60_cloth_solver_substep_constants_blocking_upload: frames=%d contacts=%llu stats=%016llx cloth=%016llx "
	       "mesh=%016llx result=OK\n",
	       FRAMES, contacts, log_hash, final_hash, ch->mesh_hash);
	free(ch);
	driver_teardown(module);
	return 0;
}
