/*
 * examples/corpus/c48_legacy_stream_default_arg.cu: corpus workload (CUDA C; the upload helper has
 * a C++ default argument). A multi-camera feature extractor: three cameras, each with its own
 * stream (cudaStreamCreate: blocking streams) and its own device frame buffer; every frame each
 * camera's frame is uploaded from pinned memory, a feature kernel reduces it on the camera's
 * stream and the feature is downloaded into a pinned table on the same stream. The frame grabber's
 * upload helper takes the stream as a defaulted last parameter, `cudaStream_t stream = 0`, and the
 * grab loop calls it without one: every upload goes to the legacy default stream, which waits for
 * all work already queued in every blocking stream and makes all later work in them wait for it
 * (CUDA programming guide, "Default Stream" / "Implicit Synchronization"), so each upload joins
 * the three camera pipelines and no camera's compute overlaps another camera's transfer. Passing
 * the camera's stream (or creating the streams with cudaStreamNonBlocking and ordering with
 * events) is the fix.
 * Planted: the cudaMemcpyAsync in upload_frame(), on the legacy default stream, for every camera
 * every frame.
 * Clean: the per-frame feature download into pinned memory on the camera's stream, the setup
 * allocations, the one cudaDeviceSynchronize after the last frame, teardown.
 */
#include "corpus.h"

enum { FRAMES = 40, CAMS = 3, SOURCES = 8, PIX = 1 << 17, THREADS = 256, ROUNDS = 32 };

__host__ __device__ static inline uint32_t pixel_feature(uint32_t px, int cam)
{
	uint32_t h = px ^ ((uint32_t)cam << 28);
	for (int r = 0; r < ROUNDS; r++)
		h = (h ^ (h >> 16)) * 0x45d9f3bu + (uint32_t)r;
	return h >> 12;
}

__global__ void extract_features(const uint32_t *frame, int n, int cam, unsigned long long *feature)
{
	__shared__ unsigned long long sh[THREADS];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	sh[threadIdx.x] = i < n ? pixel_feature(frame[i], cam) : 0;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(feature, t);
	}
}

/* --- the frame grabber ------------------------------------------------------------------- */

struct camera {
	int id;
	cudaStream_t stream;
	uint32_t *h_frames;              /* pinned: SOURCES frames the sensor cycles through */
	uint32_t *d_frame;
	unsigned long long *d_features;  /* one slot per frame */
	unsigned long long *h_features;  /* pinned */
};

static void upload_frame(uint32_t *dst, const uint32_t *src, size_t bytes, cudaStream_t stream = 0)
{
	CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream)); // SYNCSPY-PROBLEM: called without a stream: the legacy default stream joins every camera stream
}

static void camera_open(struct camera *cam, int id)
{
	cam->id = id;
	CHECK(cudaStreamCreate(&cam->stream));
	CHECK(cudaMallocHost(&cam->h_frames, (size_t)SOURCES * PIX * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMallocHost(&cam->h_features, FRAMES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMalloc(&cam->d_frame, PIX * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&cam->d_features, FRAMES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(cam->d_features, 0, FRAMES * sizeof(unsigned long long), cam->stream));
	for (size_t i = 0; i < (size_t)SOURCES * PIX; i++)
		cam->h_frames[i] = (uint32_t)(i * 2246822519u) ^ ((uint32_t)id * 0x27d4eb2du);
}

static void camera_process(struct camera *cam, int frame)
{
	upload_frame(cam->d_frame, cam->h_frames + (size_t)(frame % SOURCES) * PIX, PIX * sizeof(uint32_t));
	extract_features<<<PIX / THREADS, THREADS, 0, cam->stream>>>(cam->d_frame, PIX, cam->id, cam->d_features + frame);
	CHECK_LAUNCH();
	CHECK(cudaMemcpyAsync(&cam->h_features[frame], cam->d_features + frame, sizeof(unsigned long long), cudaMemcpyDeviceToHost, cam->stream)); // SYNCSPY-CLEAN: async download into pinned memory on the camera's stream
}

static void camera_close(struct camera *cam)
{
	CHECK(cudaFreeHost(cam->h_frames)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(cam->h_features)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(cam->d_frame)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(cam->d_features)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(cam->stream));
}

int main(void)
{
	const char *name = "c48_legacy_stream_default_arg";
	struct camera cams[CAMS];

	for (int c = 0; c < CAMS; c++)
		camera_open(&cams[c], c);
	for (int frame = 0; frame < FRAMES; frame++)
		for (int c = 0; c < CAMS; c++)
			camera_process(&cams[c], frame);
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: once, after the last frame

	unsigned long long checksum = 0;
	for (int c = 0; c < CAMS; c++) {
		unsigned long long want[SOURCES];
		for (int k = 0; k < SOURCES; k++) {
			want[k] = 0;
			for (int i = 0; i < PIX; i++)
				want[k] += pixel_feature(cams[c].h_frames[(size_t)k * PIX + i], c);
		}
		for (int frame = 0; frame < FRAMES; frame++) {
			corpus_expect(name, "feature", (long long)cams[c].h_features[frame], (long long)want[frame % SOURCES]);
			checksum = checksum * 1000003u + cams[c].h_features[frame];
		}
		camera_close(&cams[c]);
	}
	corpus_result(name, FRAMES, checksum);
	return 0;
}
