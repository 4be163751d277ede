/*
 * examples/corpus/c111_wavefront_pathtracer_ray_count_readback.cu: corpus workload (CUDA C). The
 * preview renderer of a product configurator: a turntable of 48 frames, 1024 x 768 pixels, one
 * path per pixel, traced as a wavefront. A camera kernel writes one ray per pixel into a queue;
 * each bounce kernel takes the live rays of one queue, intersects them with the scene's 128
 * spheres (the product, the floor, four lamps), adds what they hit to their pixel and writes the
 * surviving rays (diffuse bounce, Russian roulette) into the other queue with an atomic counter.
 * A tone-map kernel makes the frame's 8-bit preview, which a copy stream downloads into a pinned
 * double buffer; the host builds the previous frame's histogram and digest meanwhile.
 * trace_frame() sizes each bounce's grid from the number of rays that survived the bounce before:
 * it reads the 4-byte counter with cudaMemcpy after every bounce. A device-to-host cudaMemcpy to
 * pageable memory "will return only once the copy has completed" (runtime API reference, API
 * synchronization behavior), and on the legacy default stream it is also queued behind all the
 * work of the blocking render stream. So the host waits for every bounce, six times a frame,
 * before it can even queue the next one: the GPU idles between bounces for the round trip, and
 * the previous frame's histogram, which could run while the GPU traces, runs while it idles.
 * The count is only needed by the GPU: a fixed grid that reads the count on the device
 * (c112 is the fix) queues the whole frame at once.
 * Planted: the cudaMemcpy of the bounce's ray count in trace_frame(), every bounce of every
 * frame (one line).
 * Clean: the setup allocations, the scene's upload and the count table's reset, the one setup
 * cudaDeviceSynchronize, the preview's async download into pinned memory on the copy stream, the
 * host's cudaEventSynchronize on the previous frame's download (the double buffer's wait), the
 * final wait and the final read of the last radiance buffer, teardown.
 * The host checks 256 sample pixels of three frames by tracing their paths itself (the same
 * float code; an ulp of difference may flip a rare grazing hit, so a few misses are allowed) and
 * the last frame's radiance against its preview. The checksum hashes every preview and the ray
 * counts, which do not depend on the order rays take in the queues (c112 prints the same one).
 */
#include "corpus.h"

#include <math.h>

enum { FRAMES = 48, W = 1024, H = 768, PIXELS = W * H, SPHERES = 128, BOUNCES = 6 };
enum { THREADS = 256, SAMPLES = 256, SLOTS = 2 };

static const cudaMemcpyKind H2D = cudaMemcpyHostToDevice, D2H = cudaMemcpyDeviceToHost;

struct sphere {
	float cx, cy, cz, r, emit, albedo;
};
struct ray {
	float ox, oy, oz, dx, dy, dz, weight;
	int pixel;
};
struct camera {
	float ox, oy, oz, fx, fy, fz, rx, ry, rz, ux, uy, uz;
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

__host__ __device__ static inline float unit(uint32_t h)
{
	return (float)(h >> 8) * (1.0f / 16777216.0f);
}

__host__ __device__ static inline struct ray primary_ray(struct camera c, int pixel)
{
	float sx = ((float)(pixel % W) + 0.5f - 0.5f * W) / (0.5f * H);
	float sy = (0.5f * H - (float)(pixel / W) - 0.5f) / (0.5f * H);
	float dx = c.fx + sx * c.rx + sy * c.ux, dy = c.fy + sx * c.ry + sy * c.uy;
	float dz = c.fz + sx * c.rz + sy * c.uz;
	float inv = 1.0f / sqrtf(dx * dx + dy * dy + dz * dz);
	struct ray r = {c.ox, c.oy, c.oz, dx * inv, dy * inv, dz * inv, 1.0f, pixel};
	return r;
}

/* one bounce of one ray: adds what it hits to *radiance; returns 1 and the next ray if it lives */
__host__ __device__ static inline int bounce_ray(struct ray *r, const struct sphere *s,
						 float *radiance, int frame, int bounce)
{
	float best = 1e30f;
	int hit = -1;
	for (int k = 0; k < SPHERES; k++) {
		float ox = r->ox - s[k].cx, oy = r->oy - s[k].cy, oz = r->oz - s[k].cz;
		float b = ox * r->dx + oy * r->dy + oz * r->dz;
		float c = ox * ox + oy * oy + oz * oz - s[k].r * s[k].r;
		float disc = b * b - c;
		if (disc <= 0.0f)
			continue;
		float q = sqrtf(disc), t = -b - q;
		if (t < 1e-3f)
			t = -b + q;
		if (t > 1e-3f && t < best) {
			best = t;
			hit = k;
		}
	}
	if (hit < 0) {
		float sky = 0.25f + 0.75f * (r->dy > 0.0f ? r->dy : 0.0f);
		*radiance += r->weight * sky;
		return 0;
	}
	*radiance += r->weight * s[hit].emit;
	if (bounce == BOUNCES - 1 || s[hit].albedo == 0.0f)
		return 0;
	float px = r->ox + best * r->dx, py = r->oy + best * r->dy, pz = r->oz + best * r->dz;
	float inv_r = 1.0f / s[hit].r;
	float nx = (px - s[hit].cx) * inv_r, ny = (py - s[hit].cy) * inv_r;
	float nz = (pz - s[hit].cz) * inv_r;
	uint32_t h = mix32((uint32_t)r->pixel * 9781u + (uint32_t)frame * 6271u + (uint32_t)bounce);
	float vx = 0.0f, vy = 0.0f, vz = 0.0f;
	for (int tries = 0; tries < 8; tries++) {
		float ax = 2.0f * unit(h = mix32(h + 1u)) - 1.0f;
		float ay = 2.0f * unit(h = mix32(h + 2u)) - 1.0f;
		float az = 2.0f * unit(h = mix32(h + 3u)) - 1.0f, l2 = ax * ax + ay * ay + az * az;
		if (l2 > 1e-4f && l2 <= 1.0f) {
			float inv = 1.0f / sqrtf(l2);
			vx = ax * inv, vy = ay * inv, vz = az * inv;
			break;
		}
	}
	float dx = nx + vx, dy = ny + vy, dz = nz + vz, l2 = dx * dx + dy * dy + dz * dz;
	if (l2 < 1e-6f)
		dx = nx, dy = ny, dz = nz, l2 = 1.0f;
	float inv = 1.0f / sqrtf(l2);
	float weight = r->weight * s[hit].albedo;
	if (weight < 0.1f) {
		if (unit(mix32(h + 4u)) < 0.5f)
			return 0;
		weight *= 2.0f;
	}
	struct ray next = {px, py, pz, dx * inv, dy * inv, dz * inv, weight, r->pixel};
	*r = next;
	return 1;
}

__host__ __device__ static inline unsigned char tone_map(float v)
{
	float m = v / (1.0f + v);
	return (unsigned char)(m * 255.0f + 0.5f);
}

__global__ void camera_rays(struct camera cam, struct ray *queue, float *radiance)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < PIXELS) {
		queue[i] = primary_ray(cam, i);
		radiance[i] = 0.0f;
	}
}

__global__ void trace_bounce(const struct ray *in, int n, struct ray *out, int *out_count,
			     const struct sphere *scene, float *radiance, int frame, int bounce)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	struct ray r = in[i];
	if (bounce_ray(&r, scene, &radiance[r.pixel], frame, bounce))
		out[atomicAdd(out_count, 1)] = r;
}

__global__ void tone_map_preview(const float *radiance, unsigned char *ldr)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < PIXELS)
		ldr[i] = tone_map(radiance[i]);
}

/* --- the host ------------------------------------------------------------------------------ */

static void build_scene(struct sphere *s)
{
	struct sphere floor_ = {0.0f, -1000.0f, 0.0f, 1000.0f, 0.0f, 0.6f};
	s[0] = floor_;
	for (int k = 1; k < 5; k++) {
		struct sphere lamp = {k < 3 ? -6.0f : 6.0f, 7.0f, k % 2 ? -6.0f : 6.0f, 1.5f, 6.0f, 0.0f};
		s[k] = lamp;
	}
	for (int k = 5; k < SPHERES; k++) {
		uint32_t h = mix32((uint32_t)k * 77u);
		float a = 6.2831853f * unit(h), rr = 0.3f + 2.2f * unit(mix32(h + 1u));
		float r = 0.12f + 0.4f * unit(mix32(h + 2u)), y = r + 1.6f * unit(mix32(h + 3u));
		struct sphere p = {rr * cosf(a), y, rr * sinf(a), r, 0.0f,
				   0.3f + 0.6f * unit(mix32(h + 4u))};
		s[k] = p;
	}
}

static struct camera turntable(int f)
{
	double a = 6.283185307179586 * f / FRAMES, ox = 7.0 * sin(a), oz = 7.0 * cos(a), oy = 2.5;
	double fx = -ox, fy = 0.9 - oy, fz = -oz, fl = sqrt(fx * fx + fy * fy + fz * fz);
	fx /= fl, fy /= fl, fz /= fl;
	double rl = sqrt(fx * fx + fz * fz), rx = -fz / rl, rz = fx / rl; /* right = f x up */
	double ux = -rz * fy, uy = rz * fx - rx * fz, uz = rx * fy; /* up = right x f */
	const double half = 0.6; /* tan of half the vertical field of view */
	struct camera c = {(float)ox, (float)oy, (float)oz, (float)fx, (float)fy, (float)fz,
			   (float)(half * rx), 0.0f, (float)(half * rz), (float)(half * ux),
			   (float)(half * uy), (float)(half * uz)};
	return c;
}

/* a sample pixel's radiance, traced on the host */
static float host_pixel(const struct sphere *scene, int frame, int pixel)
{
	struct ray r = primary_ray(turntable(frame), pixel);
	float radiance = 0.0f;
	for (int b = 0; b < BOUNCES; b++)
		if (!bounce_ray(&r, scene, &radiance, frame, b))
			break;
	return radiance;
}

/* the previous frame's preview: histogram and digest; checked frames against the host */
static unsigned long long consume_preview(int f, const unsigned char *ldr,
					  const struct sphere *scene)
{
	unsigned int hist[256] = {0};
	unsigned long long digest = 1469598103934665603ull;
	for (int i = 0; i < PIXELS; i++) {
		hist[ldr[i]]++;
		digest = (digest ^ ldr[i]) * 1099511628211ull;
	}
	if (hist[0] == PIXELS) {
		fprintf(stderr, "c111: frame %d is black\n", f);
		exit(1);
	}
	if (f == 0 || f == FRAMES / 3 || f == FRAMES - 1) {
		int bad = 0;
		for (int k = 0; k < SAMPLES; k++) {
			int p = (int)(mix32((uint32_t)(f * SAMPLES + k)) % PIXELS);
			int want = tone_map(host_pixel(scene, f, p));
			bad += abs((int)ldr[p] - want) > 1;
		}
		if (bad > SAMPLES / 64) {
			fprintf(stderr, "c111: frame %d: %d of %d samples differ\n", f, bad, SAMPLES);
			exit(1);
		}
	}
	return digest;
}

static int blocks_for(int n)
{
	return (n + THREADS - 1) / THREADS;
}

/* queues frame f's wavefront; returns the rays traced */
static long long trace_frame(cudaStream_t render, int f, struct ray *queue[2],
			     const struct sphere *d_scene, float *d_radiance, int *d_counts)
{
	camera_rays<<<blocks_for(PIXELS), THREADS, 0, render>>>(turntable(f), queue[0], d_radiance);
	CHECK_LAUNCH();
	long long traced = 0;
	int n = PIXELS;
	for (int b = 0; b < BOUNCES && n > 0; b++) {
		int *count = d_counts + f * BOUNCES + b;
		trace_bounce<<<blocks_for(n), THREADS, 0, render>>>(queue[b & 1], n, queue[(b + 1) & 1],
								   count, d_scene, d_radiance, f, b);
		CHECK_LAUNCH();
		traced += n;
		CHECK(cudaMemcpy(&n, count, sizeof n, D2H)); // SYNCSPY-PROBLEM: sizes the next launch
	}
	return traced;
}

int main(void)
{
	const char *name = "c111_wavefront_pathtracer_ray_count_readback";
	static struct sphere scene[SPHERES];
	build_scene(scene);

	struct sphere *d_scene;
	struct ray *queue[2];
	float *d_radiance;
	int *d_counts;
	unsigned char *d_ldr[SLOTS], *h_ldr[SLOTS];
	CHECK(cudaMalloc(&d_scene, sizeof scene)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&queue[0], PIXELS * sizeof(struct ray))); // SYNCSPY-CLEAN: setup
	CHECK(cudaMalloc(&queue[1], PIXELS * sizeof(struct ray))); // SYNCSPY-CLEAN: setup
	CHECK(cudaMalloc(&d_radiance, PIXELS * sizeof(float))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_counts, FRAMES * BOUNCES * sizeof(int))); // SYNCSPY-CLEAN: setup
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaMalloc(&d_ldr[s], PIXELS)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMallocHost(&h_ldr[s], PIXELS)); // SYNCSPY-CLEAN: setup, pinned previews
	}
	CHECK(cudaMemcpy(d_scene, scene, sizeof scene, H2D)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemset(d_counts, 0, FRAMES * BOUNCES * sizeof(int))); // SYNCSPY-CLEAN: setup
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup, the scene is in place

	cudaStream_t render, copy;
	CHECK(cudaStreamCreate(&render));
	CHECK(cudaStreamCreate(&copy));
	cudaEvent_t mapped[SLOTS], downloaded[SLOTS];
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaEventCreateWithFlags(&mapped[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&downloaded[s], cudaEventDisableTiming));
	}

	long long traced = 0;
	unsigned long long checksum = 0;
	for (int f = 0; f < FRAMES; f++) {
		int s = f % SLOTS;
		traced += trace_frame(render, f, queue, d_scene, d_radiance, d_counts);
		/* d_ldr[s] was last read by frame f - 2's download */
		CHECK(cudaStreamWaitEvent(render, downloaded[s], 0));
		tone_map_preview<<<blocks_for(PIXELS), THREADS, 0, render>>>(d_radiance, d_ldr[s]);
		CHECK_LAUNCH();
		CHECK(cudaEventRecord(mapped[s], render));
		CHECK(cudaStreamWaitEvent(copy, mapped[s], 0));
		CHECK(cudaMemcpyAsync(h_ldr[s], d_ldr[s], PIXELS, D2H, copy)); // SYNCSPY-CLEAN: pinned
		CHECK(cudaEventRecord(downloaded[s], copy));
		if (f > 0) {
			int p = (f - 1) % SLOTS;
			CHECK(cudaEventSynchronize(downloaded[p])); // SYNCSPY-CLEAN: one frame behind
			checksum = checksum * 31u + consume_preview(f - 1, h_ldr[p], scene);
		}
	}
	int last = (FRAMES - 1) % SLOTS;
	CHECK(cudaEventSynchronize(downloaded[last])); // SYNCSPY-CLEAN: the final wait
	checksum = checksum * 31u + consume_preview(FRAMES - 1, h_ldr[last], scene);

	/* the last frame's radiance agrees with its preview */
	float *radiance = (float *)malloc(PIXELS * sizeof(float));
	CHECK(cudaMemcpy(radiance, d_radiance, PIXELS * sizeof(float), D2H)); // SYNCSPY-CLEAN: final
	int off = 0;
	for (int i = 0; i < PIXELS; i++)
		off += abs((int)tone_map(radiance[i]) - (int)h_ldr[last][i]) > 1;
	corpus_expect(name, "preview pixels off their radiance", off, 0);
	corpus_expect(name, "rays traced beyond the primaries", traced > (long long)FRAMES * PIXELS, 1);
	checksum = checksum * 31u + (unsigned long long)traced;

	free(radiance);
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaEventDestroy(mapped[s]));
		CHECK(cudaEventDestroy(downloaded[s]));
		CHECK(cudaFree(d_ldr[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(h_ldr[s])); // SYNCSPY-CLEAN: teardown
	}
	CHECK(cudaStreamDestroy(render));
	CHECK(cudaStreamDestroy(copy));
	CHECK(cudaFree(d_scene)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(queue[0])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(queue[1])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_radiance)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_counts)); // SYNCSPY-CLEAN: teardown
	corpus_result(name, FRAMES, checksum);
	return 0;
}
