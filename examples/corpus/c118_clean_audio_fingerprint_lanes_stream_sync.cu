/*
 * examples/corpus/c118_clean_audio_fingerprint_lanes_stream_sync.cu: corpus workload (CUDA C++,
 * std::thread). The ingestion stage of a music-recognition catalogue: four lane threads each take
 * 16 new tracks (30 s of 8 kHz mono audio, 240,000 int16 samples) and fingerprint them the way
 * landmark-hashing recognizers do. A lane synthesizes (here: decodes) its track into its pinned
 * slot and queues, on its own non-blocking stream, the upload, an integer spectrogram (1872 frames
 * of a 512-point Hann-windowed DFT, hop 128, 256 bins), the peak picking (up to 4 local maxima a
 * frame) and the landmark hashes (each peak paired with the next 3 peaks of the following 16
 * frames), then the peaks' and hashes' download into the lane's pinned slot. When they are on the
 * host, the lane adds the hashes to its shard of the catalogue's inverted index and checks two
 * frames against a host recomputation.
 * This is c117 with its lane wait fixed: wait_for_hashes() calls cudaStreamSynchronize on the
 * lane's own stream, which "blocks until stream has completed all operations" (runtime API
 * reference) of that stream only, instead of cudaDeviceSynchronize, which waits for all work on
 * the device, queued by any lane. A lane now waits for its own track alone: while it indexes, the
 * other lanes' requests run on the GPU, and a lane whose track is done does not sit behind the
 * spectrograms the other three have just queued. The wait itself is needed (the lane indexes the
 * hashes it downloaded), so it is clean, as c109's per-request wait on the lane's stream.
 * Clean: the per-track cudaStreamSynchronize of the lane's own stream in wait_for_hashes(), the
 * setup allocations, the DFT tables' upload and the one setup cudaDeviceSynchronize (before the
 * lanes start), each request's upload from the lane's pinned slot and the download into the
 * lane's pinned slot (both async, on the lane's stream), teardown.
 * Per track (estimates, H100): 245M integer multiply-adds in the spectrogram plus the peak and
 * hash passes, about 0.3-0.5 ms of GPU time; on the host about 1.5 ms to decode, about 1 ms to
 * index some 10,000-20,000 hashes and 1 ms to check two frames. Everything is integer: the
 * checksum is a sum over tracks, identical whatever order the lanes finish in.
 */
#include "corpus.h"

#include <math.h>
#include <thread>
#include <unordered_map>
#include <vector>

enum { LANES = 4, TRACKS = 16, RATE = 8000, CLIP = 30 * RATE, WIN = 512, HOP = 128 };
enum { FRAMES = (CLIP - WIN) / HOP + 1, BINS = 256, PEAKS = 4, ZONE = 16, FAN = 3 };
enum { HASHES = FRAMES * PEAKS * FAN, VOICES = 4, FLOOR = 4000, THREADS = 256, SPOT = 2 };

static const cudaMemcpyKind H2D = cudaMemcpyHostToDevice, D2H = cudaMemcpyDeviceToHost;
#define PCM_BYTES (CLIP * sizeof(short))
#define OUT_BYTES sizeof(struct fp_out)

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* Q14 cosine of 2 pi k / WIN and the Q14 Hann window */
struct dft_tables {
	int cosq[WIN];
	int win[WIN];
};

/* what a track's fingerprint downloads: the peaks and the landmark hashes */
struct fp_out {
	unsigned long long hash[HASHES];
	int peaks[FRAMES * PEAKS];
};

/* |X[k]| of the frame starting at x, as |re| + |im| (integer, exact) */
__host__ __device__ static inline int bin_magnitude(const short *x, const struct dft_tables *t,
						    int k)
{
	long long re = 0, im = 0;
	for (int n = 0; n < WIN; n++) {
		int v = (x[n] * t->win[n]) >> 14;
		re += (long long)v * t->cosq[(k * n) & (WIN - 1)];
		im += (long long)v * t->cosq[(k * n + 3 * WIN / 4) & (WIN - 1)];
	}
	return (int)(((re < 0 ? -re : re) + (im < 0 ? -im : im)) >> 14);
}

/* the frame's peaks: local maxima over +-2 bins and the neighbouring frames, strongest first */
__host__ __device__ static inline void frame_peaks(const int *mag, int t, int *peak)
{
	int best[PEAKS];
	for (int k = 0; k < PEAKS; k++)
		peak[k] = -1, best[k] = 0;
	const int *m = mag + t * BINS;
	for (int b = 2; b < BINS - 2; b++) {
		int v = m[b];
		if (v <= FLOOR || v <= m[b - 1] || v <= m[b + 1] || v <= m[b - 2] || v <= m[b + 2])
			continue;
		if ((t > 0 && v <= m[b - BINS]) || (t < FRAMES - 1 && v <= m[b + BINS]))
			continue;
		int k = PEAKS;
		while (k > 0 && v > best[k - 1])
			k--;
		if (k == PEAKS)
			continue;
		for (int j = PEAKS - 1; j > k; j--)
			peak[j] = peak[j - 1], best[j] = best[j - 1];
		peak[k] = b, best[k] = v;
	}
}

/* anchor (t, peak k) paired with the next FAN peaks of frames t+1 .. t+ZONE; 0 where none */
__host__ __device__ static inline void anchor_hashes(const int *peaks, int t, int k,
						     unsigned long long *out)
{
	int f1 = peaks[t * PEAKS + k], n = 0;
	for (int u = t + 1; f1 >= 0 && u <= t + ZONE && u < FRAMES && n < FAN; u++)
		for (int j = 0; j < PEAKS && n < FAN; j++) {
			int f2 = peaks[u * PEAKS + j];
			if (f2 < 0)
				continue;
			uint32_t h = (uint32_t)f1 << 12 | (uint32_t)f2 << 4 | (uint32_t)(u - t - 1);
			out[n++] = (unsigned long long)h << 32 | (uint32_t)t;
		}
	for (; n < FAN; n++)
		out[n] = 0;
}

__global__ void spectrogram(const short *pcm, const struct dft_tables *t, int *mag)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < FRAMES * BINS)
		mag[i] = bin_magnitude(pcm + (i / BINS) * HOP, t, i % BINS);
}

__global__ void pick_peaks(const int *mag, struct fp_out *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t < FRAMES)
		frame_peaks(mag, t, out->peaks + t * PEAKS);
}

__global__ void landmark_hashes(struct fp_out *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < FRAMES * PEAKS)
		anchor_hashes(out->peaks, i / PEAKS, i % PEAKS, out->hash + i * FAN);
}

/* --- the lanes ----------------------------------------------------------------------------- */

struct lane {
	cudaStream_t stream;
	short *slot, *d_pcm;	 /* pinned track slot, its device copy */
	int *d_mag;
	struct fp_out *d_out, *out; /* device fingerprint, pinned download slot */
	std::unordered_map<uint32_t, uint32_t> postings; /* the lane's shard of the index */
	unsigned long long digest;
};

static int sine[1024];
static struct dft_tables tables, *d_tables;

/* track id's 30 s: four voices changing note every half second, plus noise */
static void decode_track(int id, short *pcm)
{
	uint32_t phase[VOICES] = {0};
	for (int n = 0; n < CLIP; n++) {
		int note = n / (RATE / 2), acc = 0;
		for (int v = 0; v < VOICES; v++) {
			uint32_t h = mix32((uint32_t)(id * 977 + note * VOICES + v));
			phase[v] += 53687091u + h % 1825361100u; /* 100 Hz .. 3.5 kHz */
			acc += (sine[phase[v] >> 22] * (int)(1 + (h >> 28))) >> 5;
		}
		acc += (int)(mix32((uint32_t)id * 0x9e3779b9u + (uint32_t)n) & 1023) - 512;
		pcm[n] = (short)(acc > 32767 ? 32767 : acc < -32767 ? -32767 : acc);
	}
}

/* queues track's fingerprint on the lane's stream */
static void fingerprint(struct lane *l)
{
	CHECK(cudaMemcpyAsync(l->d_pcm, l->slot, PCM_BYTES, H2D, l->stream)); // SYNCSPY-CLEAN: pinned
	spectrogram<<<FRAMES * BINS / THREADS, THREADS, 0, l->stream>>>(l->d_pcm, d_tables, l->d_mag);
	CHECK_LAUNCH();
	pick_peaks<<<(FRAMES + 127) / 128, 128, 0, l->stream>>>(l->d_mag, l->d_out);
	CHECK_LAUNCH();
	landmark_hashes<<<(FRAMES * PEAKS + 127) / 128, 128, 0, l->stream>>>(l->d_out);
	CHECK_LAUNCH();
	CHECK(cudaMemcpyAsync(l->out, l->d_out, OUT_BYTES, D2H, l->stream)); // SYNCSPY-CLEAN: pinned
}

/* returns when the lane's hashes are on the host */
static void wait_for_hashes(struct lane *l)
{
	CHECK(cudaStreamSynchronize(l->stream)); // SYNCSPY-CLEAN: the lane's own track only
}

/* checks frame t of the track in the lane's slot: its peaks against a host spectrogram of frames
 * t-1 .. t+1, its hashes against the host's pairing of the downloaded peaks */
static void check_frame(const struct lane *l, int id, int t)
{
	static thread_local std::vector<int> mag((size_t)FRAMES * BINS);
	int peak[PEAKS];
	unsigned long long want[PEAKS * FAN];
	for (int u = t - 1; u <= t + 1; u++)
		for (int b = 0; b < BINS; b++)
			mag[(size_t)u * BINS + b] = bin_magnitude(l->slot + u * HOP, &tables, b);
	frame_peaks(mag.data(), t, peak);
	for (int k = 0; k < PEAKS; k++) {
		anchor_hashes(l->out->peaks, t, k, want + k * FAN);
		if (l->out->peaks[t * PEAKS + k] != peak[k]) {
			fprintf(stderr, "c118: track %d frame %d peak %d: bin %d, want %d\n", id, t, k,
				l->out->peaks[t * PEAKS + k], peak[k]);
			exit(1);
		}
	}
	for (int j = 0; j < PEAKS * FAN; j++)
		if (l->out->hash[t * PEAKS * FAN + j] != want[j]) {
			fprintf(stderr, "c118: track %d frame %d hash %d: %llx, want %llx\n", id, t, j,
				l->out->hash[t * PEAKS * FAN + j], want[j]);
			exit(1);
		}
}

/* adds the track's hashes to the lane's index and checks SPOT frames */
static void index_track(struct lane *l, int id)
{
	unsigned long long sum = 0, n = 0;
	for (int i = 0; i < HASHES; i++) {
		unsigned long long h = l->out->hash[i];
		if (h == 0)
			continue;
		l->postings[(uint32_t)(h >> 32)]++;
		sum += mix32((uint32_t)(h >> 32) ^ mix32((uint32_t)h + (uint32_t)id * 131u));
		n++;
	}
	for (int s = 0; s < SPOT; s++)
		check_frame(l, id, 1 + (int)(mix32((uint32_t)(id * SPOT + s) + 7u) % (FRAMES - 2)));
	if (n < (unsigned long long)FRAMES) {
		fprintf(stderr, "c118: track %d: only %llu hashes\n", id, n);
		exit(1);
	}
	l->digest += sum * 1000003u + n;
}

static void lane_main(struct lane *l, int lane_id)
{
	for (int r = 0; r < TRACKS; r++) {
		int id = lane_id * TRACKS + r;
		decode_track(id, l->slot);
		fingerprint(l);
		wait_for_hashes(l);
		index_track(l, id);
	}
}

int main(void)
{
	const char *name = "c118_clean_audio_fingerprint_lanes_stream_sync";
	for (int i = 0; i < 1024; i++)
		sine[i] = (int)lrint(16384.0 * sin(2.0 * M_PI * i / 1024.0));
	for (int n = 0; n < WIN; n++) {
		tables.cosq[n] = (int)lrint(16384.0 * cos(2.0 * M_PI * n / WIN));
		tables.win[n] = (int)lrint(8192.0 * (1.0 - cos(2.0 * M_PI * n / WIN)));
	}

	static struct lane lanes[LANES];
	CHECK(cudaMalloc(&d_tables, sizeof tables)); // SYNCSPY-CLEAN: setup allocation
	for (int l = 0; l < LANES; l++) {
		struct lane *p = &lanes[l];
		CHECK(cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking));
		CHECK(cudaMallocHost(&p->slot, PCM_BYTES)); // SYNCSPY-CLEAN: setup, pinned track slot
		CHECK(cudaMallocHost(&p->out, OUT_BYTES)); // SYNCSPY-CLEAN: setup, pinned download slot
		CHECK(cudaMalloc(&p->d_pcm, PCM_BYTES)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&p->d_mag, (size_t)FRAMES * BINS * sizeof(int))); // SYNCSPY-CLEAN: setup
		CHECK(cudaMalloc(&p->d_out, OUT_BYTES)); // SYNCSPY-CLEAN: setup allocation
		p->digest = 0;
	}
	CHECK(cudaMemcpy(d_tables, &tables, sizeof tables, H2D)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup, before the lanes start

	std::vector<std::thread> threads;
	for (int l = 0; l < LANES; l++)
		threads.emplace_back(lane_main, &lanes[l], l);
	for (auto &t : threads)
		t.join();

	unsigned long long checksum = 0;
	for (int l = 0; l < LANES; l++) {
		struct lane *p = &lanes[l];
		checksum += p->digest * 31u + p->postings.size();
		CHECK(cudaStreamDestroy(p->stream));
		CHECK(cudaFreeHost(p->slot)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(p->out)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(p->d_pcm)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(p->d_mag)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(p->d_out)); // SYNCSPY-CLEAN: teardown
	}
	CHECK(cudaFree(d_tables)); // SYNCSPY-CLEAN: teardown
	corpus_result(name, LANES * TRACKS, checksum);
	return 0;
}
