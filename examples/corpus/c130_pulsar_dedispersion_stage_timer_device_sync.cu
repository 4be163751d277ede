/*
 * examples/corpus/c130_pulsar_dedispersion_stage_timer_device_sync.cu: corpus workload (CUDA C). A
 * radio telescope's single-pulse search (fast radio bursts, pulsars): 8-bit filterbank data,
 * 512 channels from 1500 down to 1200 MHz, in chunks of 8192 samples (plus 1024 samples of
 * overlap for the dispersion sweep), 40 chunks. Each chunk is dedispersed by brute force over
 * 256 trial dispersion measures (an integer delay table, uploaded once), then searched with
 * boxcars of 1-16 samples against a local baseline, and the best candidate of the chunk is
 * downloaded into a pinned ring and sifted by the host one chunk behind. The feed stream uploads
 * chunk c+1 from a pinned staging double buffer while chunk c is searched (events both ways).
 * The pipeline's stage timer (timer_start()/timer_stop(), around the dedispersion and around the
 * search) records CUDA events on the search stream, and timer_stop() calls cudaDeviceSynchronize
 * before cudaEventElapsedTime "so that the stop event has been reached" (as many forum answers
 * put it). cudaDeviceSynchronize "blocks until the device has completed all preceding requested
 * tasks": twice a chunk the host waits for everything queued, the next chunk's 4.7 MB upload on
 * the feed stream included, and only then assembles the chunk after that; the GPU idles while it
 * does, and the double buffer overlaps nothing. Reading the elapsed times one chunk behind, after
 * the ring's wait (cudaEventElapsedTime needs only the two events complete), would do.
 * Planted: the cudaDeviceSynchronize in timer_stop(), twice a chunk (one line).
 * Clean: the setup allocations and the delay table's upload, the setup sync, the first chunk's
 * upload, the staging slot's cudaEventSynchronize two chunks back, the cudaMemcpyAsync uploads
 * from pinned staging on the feed stream, the candidate's download into the pinned ring, the
 * sifter's cudaEventSynchronize one chunk behind, the final wait and the final read of one
 * dedispersed series, teardown.
 * Per chunk (estimates, H100): 1.07G byte loads of dedispersion (about 1-1.5 ms), the boxcar
 * search over 256 x 8192 series (about 0.1 ms), the 4.7 MB upload (about 0.2 ms from pinned
 * memory) beside the host's 0.5-1 ms assembling the next chunk. The checks: every chunk's best
 * candidate is the burst injected into it (the trial DM within 3, the time within 16 samples),
 * and 64 samples of the last chunk's series at the injected DM, recomputed on the host from the
 * staging buffer, match exactly. The timing report goes to stderr, the result line to stdout.
 */
#include "corpus.h"

#include <math.h>
#include <string.h>

enum { NCHAN = 512, NSAMP = 8192, MAXD = 1024, STRIDE = NSAMP + MAXD, NDM = 256, CHUNKS = 40 };
enum { WIDTHS = 5, SEG = 256, SEGS = NSAMP / SEG, AMP = 6, PULSE_W = 4, NOISE = 65536, CHECKS = 64 };

struct candidate {
	long long score;
	int dm, width, t, pad;
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

/* the burst injected into chunk c: its trial DM and its arrival time in the top channel */
static int burst_dm(int c) { return NDM / 8 + (c * 37) % (NDM * 3 / 4); }
static int burst_t(int c) { return NSAMP / 7 + (c * 1543) % (NSAMP * 5 / 7); }

/* series[d][t] = sum over channels of data[ch][t + delay[d][ch]] */
__global__ void dedisperse(const unsigned char *data, const int *delay, int *series)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x, d = blockIdx.y;
	if (t >= NSAMP)
		return;
	const int *dl = delay + d * NCHAN;
	int sum = 0;
	for (int ch = 0; ch < NCHAN; ch++)
		sum += data[(size_t)ch * STRIDE + t + dl[ch]];
	series[(size_t)d * NSAMP + t] = sum;
}

/* one thread a (DM, width, segment): the best boxcar start in the segment against its mean */
__global__ void boxcar(const int *series, struct candidate *best)
{
	const long long sq[WIDTHS] = {1000, 1414, 2000, 2828, 4000};
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= NDM * WIDTHS * SEGS)
		return;
	int seg = i % SEGS, w = i / SEGS % WIDTHS, d = i / (SEGS * WIDTHS), width = 1 << w;
	const int *s = series + (size_t)d * NSAMP;
	long long segsum = 0, win = 0;
	for (int t = seg * SEG; t < seg * SEG + SEG; t++)
		segsum += s[t];
	int t0 = seg * SEG, t1 = min(t0 + SEG, NSAMP - width + 1);
	for (int t = t0; t < t0 + width; t++)
		win += s[t];
	struct candidate b = {-(1ll << 62), d, w, t0, 0};
	for (int t = t0; t < t1; t++) {
		long long score = (win * SEG - width * segsum) / sq[w];
		if (score > b.score)
			b.score = score, b.t = t;
		if (t + width < NSAMP)
			win += s[t + width] - s[t];
	}
	best[i] = b;
}

/* the chunk's best candidate, in a fixed order */
__global__ void pick(const struct candidate *best, struct candidate *out)
{
	if (blockIdx.x * blockDim.x + threadIdx.x != 0)
		return;
	struct candidate b = best[0];
	for (int i = 1; i < NDM * WIDTHS * SEGS; i++)
		if (best[i].score > b.score)
			b = best[i];
	*out = b;
}

/* --- the host side ------------------------------------------------------------------------ */

struct stage_timer {
	cudaEvent_t start, stop;
	double total_ms;
	int count;
};

static void timer_start(struct stage_timer *t, cudaStream_t stream)
{
	CHECK(cudaEventRecord(t->start, stream));
}

static void timer_stop(struct stage_timer *t, cudaStream_t stream)
{
	float ms;
	CHECK(cudaEventRecord(t->stop, stream));
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-PROBLEM: waits for the whole device (the next chunk's upload too), twice a chunk, only to read the elapsed time
	CHECK(cudaEventElapsedTime(&ms, t->start, t->stop));
	t->total_ms += ms;
	t->count++;
}

/* the receiver's samples for chunk c (noise from the capture ring) and the chunk's burst */
static void assemble_chunk(int c, const unsigned char *noise, const int *delay, unsigned char *out)
{
	for (int ch = 0; ch < NCHAN; ch++) {
		unsigned char *row = out + (size_t)ch * STRIDE;
		int off = (int)(((unsigned)c * NSAMP + (unsigned)ch * 7919u) % NOISE), first = NOISE - off < STRIDE ? NOISE - off : STRIDE;
		memcpy(row, noise + off, first);
		memcpy(row + first, noise, STRIDE - first);
		int at = burst_t(c) + delay[burst_dm(c) * NCHAN + ch];
		for (int w = 0; w < PULSE_W; w++)
			row[at + w] += AMP;
	}
}

static void fail(const char *name, const char *what, long long got, long long want)
{
	printf("%s: %s = %lld, want %lld result=FAIL\n", name, what, got, want);
	exit(1);
}

int main(void)
{
	const char *name = "c130_pulsar_dedispersion_stage_timer_device_sync";
	const size_t chunk_bytes = (size_t)NCHAN * STRIDE;
	int *delay = (int *)malloc(NDM * NCHAN * sizeof(int));
	unsigned char *noise = (unsigned char *)malloc(NOISE);
	for (int i = 0; i < NOISE; i++)
		noise[i] = (unsigned char)(48 + mix32((uint32_t)i + 0x5eedu) % 32u);
	const double fhi = 1500.0, flo = 1200.0;
	for (int ch = 0; ch < NCHAN; ch++) {
		double f = fhi - (ch + 0.5) * (fhi - flo) / NCHAN;
		double k = 65536.0 * MAXD / (NDM - 1) * (1.0 / (f * f) - 1.0 / (fhi * fhi)) / (1.0 / (flo * flo) - 1.0 / (fhi * fhi));
		for (int d = 0; d < NDM; d++)
			delay[d * NCHAN + ch] = (int)(((long long)d * (long long)floor(k)) >> 16);
	}

	unsigned char *staging[2], *d_data[2];
	int *d_delay, *d_series;
	struct candidate *d_best, *d_cand, *cand_ring[2];
	cudaStream_t feed, dsp;
	cudaEvent_t up_done[2], consumed[2], cand_ready[2];
	struct stage_timer t_dd = {0, 0, 0.0, 0}, t_search = {0, 0, 0.0, 0};
	CHECK(cudaStreamCreateWithFlags(&feed, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&dsp, cudaStreamNonBlocking));
	CHECK(cudaEventCreate(&t_dd.start));
	CHECK(cudaEventCreate(&t_dd.stop));
	CHECK(cudaEventCreate(&t_search.start));
	CHECK(cudaEventCreate(&t_search.stop));
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMallocHost(&staging[k], chunk_bytes)); // SYNCSPY-CLEAN: setup, pinned staging double buffer
		CHECK(cudaMalloc(&d_data[k], chunk_bytes)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMallocHost(&cand_ring[k], sizeof(struct candidate))); // SYNCSPY-CLEAN: setup, pinned candidate ring
		CHECK(cudaEventCreateWithFlags(&up_done[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&consumed[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&cand_ready[k], cudaEventDisableTiming));
	}
	CHECK(cudaMalloc(&d_delay, NDM * NCHAN * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_series, (size_t)NDM * NSAMP * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_best, NDM * WIDTHS * SEGS * sizeof(struct candidate))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_cand, sizeof(struct candidate))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(d_delay, delay, NDM * NCHAN * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the delay table
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup done before the streams start
	assemble_chunk(0, noise, delay, staging[0]);
	CHECK(cudaMemcpyAsync(d_data[0], staging[0], chunk_bytes, cudaMemcpyHostToDevice, feed)); // SYNCSPY-CLEAN: the first chunk, from pinned staging
	CHECK(cudaEventRecord(up_done[0], feed));

	int found = 0;
	unsigned long long checksum = 14695981039346656037ull;
	for (int c = 0; c <= CHUNKS; c++) {
		int k = c % 2;
		if (c < CHUNKS) {
			if (c + 1 < CHUNKS) { /* the feed: chunk c+1 into the other slot */
				int n = k ^ 1;
				if (c + 1 >= 2)
					CHECK(cudaEventSynchronize(up_done[n])); // SYNCSPY-CLEAN: the staging slot's upload two chunks back, before it is written again
				assemble_chunk(c + 1, noise, delay, staging[n]);
				CHECK(cudaStreamWaitEvent(feed, consumed[n], 0));
				CHECK(cudaMemcpyAsync(d_data[n], staging[n], chunk_bytes, cudaMemcpyHostToDevice, feed)); // SYNCSPY-CLEAN: from pinned staging, on the feed stream
				CHECK(cudaEventRecord(up_done[n], feed));
			}
			CHECK(cudaStreamWaitEvent(dsp, up_done[k], 0));
			timer_start(&t_dd, dsp);
			dedisperse<<<dim3(NSAMP / 256, NDM), 256, 0, dsp>>>(d_data[k], d_delay, d_series);
			CHECK_LAUNCH();
			CHECK(cudaEventRecord(consumed[k], dsp));
			timer_stop(&t_dd, dsp);
			timer_start(&t_search, dsp);
			boxcar<<<(NDM * WIDTHS * SEGS + 255) / 256, 256, 0, dsp>>>(d_series, d_best);
			CHECK_LAUNCH();
			pick<<<1, 32, 0, dsp>>>(d_best, d_cand);
			CHECK_LAUNCH();
			timer_stop(&t_search, dsp);
			CHECK(cudaMemcpyAsync(cand_ring[k], d_cand, sizeof(struct candidate), cudaMemcpyDeviceToHost, dsp)); // SYNCSPY-CLEAN: into the pinned ring
			CHECK(cudaEventRecord(cand_ready[k], dsp));
		}
		if (c > 0) { /* the sifter, one chunk behind */
			int p = c - 1;
			CHECK(cudaEventSynchronize(cand_ready[p % 2])); // SYNCSPY-CLEAN: the ring's wait, one chunk behind
			struct candidate b = *cand_ring[p % 2];
			if (abs(b.dm - burst_dm(p)) > 3 || abs(b.t - burst_t(p)) > 16)
				fail(name, "chunk's candidate DM (time off by more than 16 or DM by more than 3)", b.dm, burst_dm(p));
			found++;
			checksum = (checksum ^ (unsigned long long)b.score) * 1099511628211ull;
			checksum = (checksum ^ (unsigned)(b.dm << 20 | b.width << 16 | b.t)) * 1099511628211ull;
		}
	}

	/* the check: samples of the last chunk's series at its burst's DM, on the host */
	const int last = CHUNKS - 1, dm = burst_dm(last);
	int *row = (int *)malloc(NSAMP * sizeof(int));
	CHECK(cudaStreamSynchronize(dsp)); // SYNCSPY-CLEAN: the final wait
	CHECK(cudaMemcpy(row, d_series + (size_t)dm * NSAMP, NSAMP * sizeof(int), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of one dedispersed series
	for (int q = 0; q < CHECKS; q++) {
		int t = q < CHECKS / 2 ? burst_t(last) - CHECKS / 4 + q : (int)(mix32((uint32_t)q) % NSAMP), sum = 0;
		for (int ch = 0; ch < NCHAN; ch++)
			sum += staging[last % 2][(size_t)ch * STRIDE + t + delay[dm * NCHAN + ch]];
		if (row[t] != sum)
			fail(name, "dedispersed sample", row[t], sum);
	}
	fprintf(stderr, "%s: dedispersion %.3f ms a chunk, search %.3f ms a chunk\n", name, t_dd.total_ms / t_dd.count,
		t_search.total_ms / t_search.count);

	for (int k = 0; k < 2; k++) {
		CHECK(cudaFreeHost(staging[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(d_data[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(cand_ring[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(up_done[k]));
		CHECK(cudaEventDestroy(consumed[k]));
		CHECK(cudaEventDestroy(cand_ready[k]));
	}
	CHECK(cudaFree(d_delay)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_series)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_best)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_cand)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaEventDestroy(t_dd.start));
	CHECK(cudaEventDestroy(t_dd.stop));
	CHECK(cudaEventDestroy(t_search.start));
	CHECK(cudaEventDestroy(t_search.stop));
	CHECK(cudaStreamDestroy(feed));
	CHECK(cudaStreamDestroy(dsp));
	printf("%s: chunks=%d found=%d last_dm=%d last_t=%d checksum=%016llx result=OK\n", name, CHUNKS, found, dm,
	       burst_t(last), checksum);
	free(delay);
	free(noise);
	free(row);
	return 0;
}
