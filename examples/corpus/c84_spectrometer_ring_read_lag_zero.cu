/*
 * examples/corpus/c84_spectrometer_ring_read_lag_zero.cu: corpus workload (CUDA C++). The
 * spectrometer back end of a radio telescope in its test mode: every integration the digitizer
 * stand-in writes 64M 8-bit voltage samples, a 64-channel integer DFT filter bank channelizes
 * them and integrates 256 spectra per time bin into a 4096 x 64 power spectrogram, and the host
 * flags radio-frequency interference in it (per-channel mean, bins over four times the mean).
 * The spectrograms leave the GPU through SpectrumRing, a three-slot ring: the compute stream
 * writes a device slot, a copy stream downloads it into the matching pinned host slot, and the
 * host reads integration i - read_lag with a cudaEventSynchronize on that slot's download, so
 * that the flagger works on an older integration while the GPU channelizes the newest one. But
 * the observation's ring_config leaves read_lag at its default, 0 ("read each integration as soon
 * as it lands", a leftover of bring-up), so SpectrumRing::wait() synchronizes on the download of
 * the integration that was queued a moment before: cudaEventSynchronize waits until all work
 * captured by the event has completed (runtime API reference), here the digitizer, the filter
 * bank and the download of this very integration. Every integration the host waits for the whole
 * GPU pipeline, then flags while the GPU idles, then queues the next integration: the ring's
 * three slots never hold more than one integration in flight. read_lag = 2 (depth - 1) would
 * keep the GPU one to two integrations ahead of the flagger, with the same wait line.
 * Planted: the cudaEventSynchronize in SpectrumRing::wait(), on the integration just queued
 * because read_lag is 0, every integration.
 * Clean: the twiddle table's upload and the setup allocations (pinned ring slots included), the
 * per-integration download into the pinned ring slot on the copy stream, teardown.
 */
#include "corpus.h"

#include <math.h>
#include <string.h>

enum { INTEGRATIONS = 48, SAMPLES = 1 << 26, NCHAN = 64, FRAMES_PER_BIN = 256, BINS = SAMPLES / (NCHAN * FRAMES_PER_BIN), THREADS = 256, RING_SLOTS = 3 };

__constant__ int c_twiddle[2 * NCHAN]; /* 127 cos, 127 sin */

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the digitizer's test pattern: noise, a continuum tone in channel 9, bursts of RFI near 23 */
__host__ __device__ static inline int adc(int integ, uint32_t n)
{
	uint32_t h = mix32(n * 0x9e3779b1u + (uint32_t)integ * 0x85ebca77u);
	int noise = (int)(h & 31u) - 16;
	int tone = ((n * 9u) & 63u) < 32u ? 20 : -20;
	int rfi = (integ % 7 == 3 && ((n >> 14) & 15u) == 5u) ? (((n * 23u) & 63u) < 32u ? 40 : -40) : 0;
	return noise + tone + rfi;
}

__global__ void digitize(int integ, int8_t *raw)
{
	uint32_t n = blockIdx.x * blockDim.x + threadIdx.x;
	if (n < SAMPLES)
		raw[n] = (int8_t)adc(integ, n);
}

__host__ __device__ static inline uint32_t frame_power(const int8_t *x, int chan, const int *cos_t, const int *sin_t)
{
	int re = 0, im = 0;
	for (int n = 0; n < NCHAN; n++) {
		int k = (chan * n) & (NCHAN - 1);
		re += x[n] * cos_t[k];
		im -= x[n] * sin_t[k];
	}
	re /= 64;
	im /= 64;
	return (uint32_t)(re * re + im * im) >> 4;
}

/* thread (bin, chan): the channel's power integrated over the bin's FRAMES_PER_BIN frames */
__global__ void channelize(const int8_t *raw, uint32_t *spec)
{
	__shared__ int s_cos[NCHAN], s_sin[NCHAN];
	if (threadIdx.x < NCHAN) {
		s_cos[threadIdx.x] = c_twiddle[threadIdx.x];
		s_sin[threadIdx.x] = c_twiddle[NCHAN + threadIdx.x];
	}
	__syncthreads();
	int i = blockIdx.x * blockDim.x + threadIdx.x, chan = i % NCHAN, bin = i / NCHAN;
	const int8_t *x = raw + (size_t)bin * FRAMES_PER_BIN * NCHAN;
	uint32_t p = 0;
	for (int f = 0; f < FRAMES_PER_BIN; f++, x += NCHAN)
		p += frame_power(x, chan, s_cos, s_sin);
	spec[i] = p;
}

/* --- the spectrogram ring ------------------------------------------------------------------- */

struct ring_config {
	int depth = RING_SLOTS;
	int read_lag = 0; /* integrations between the newest one queued and the one the host reads */
};

class SpectrumRing {
public:
	SpectrumRing(const ring_config &cfg, cudaStream_t compute) : depth_(cfg.depth), compute_(compute)
	{
		CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
		for (int s = 0; s < depth_; s++) {
			CHECK(cudaMalloc(&dev_[s], BINS * NCHAN * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation, a device slot
			CHECK(cudaMallocHost(&host_[s], BINS * NCHAN * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation, a host slot
			CHECK(cudaEventCreateWithFlags(&computed_[s], cudaEventDisableTiming));
			CHECK(cudaEventCreateWithFlags(&downloaded_[s], cudaEventDisableTiming));
		}
	}
	~SpectrumRing()
	{
		for (int s = 0; s < depth_; s++) {
			CHECK(cudaFree(dev_[s])); // SYNCSPY-CLEAN: teardown
			CHECK(cudaFreeHost(host_[s])); // SYNCSPY-CLEAN: teardown
			CHECK(cudaEventDestroy(computed_[s]));
			CHECK(cudaEventDestroy(downloaded_[s]));
		}
		CHECK(cudaStreamDestroy(copy_));
	}

	/* the device slot for integration i; the compute stream first waits for its last download */
	uint32_t *acquire(int i)
	{
		int s = i % depth_;
		if (i >= depth_)
			CHECK(cudaStreamWaitEvent(compute_, downloaded_[s], 0));
		return dev_[s];
	}

	void push(int i)
	{
		int s = i % depth_;
		CHECK(cudaEventRecord(computed_[s], compute_));
		CHECK(cudaStreamWaitEvent(copy_, computed_[s], 0));
		CHECK(cudaMemcpyAsync(host_[s], dev_[s], BINS * NCHAN * sizeof(uint32_t), cudaMemcpyDeviceToHost, copy_)); // SYNCSPY-CLEAN: the spectrogram, async into the pinned ring slot on the copy stream
		CHECK(cudaEventRecord(downloaded_[s], copy_));
	}

	const uint32_t *wait(int i)
	{
		int s = i % depth_;
		CHECK(cudaEventSynchronize(downloaded_[s])); // SYNCSPY-PROBLEM: read_lag 0: waits for the integration queued just before, the whole GPU pipeline, every integration
		return host_[s];
	}

private:
	int depth_;
	cudaStream_t compute_, copy_;
	uint32_t *dev_[RING_SLOTS], *host_[RING_SLOTS];
	cudaEvent_t computed_[RING_SLOTS], downloaded_[RING_SLOTS];
};

/* --- the RFI flagger (host) ------------------------------------------------------------------ */

struct flagger {
	int flagged[INTEGRATIONS];
	unsigned long long power[INTEGRATIONS];
	uint32_t *kept; /* the checked integrations' spectrograms */
};

static const int checked_integ[3] = {2, 3, 30};

static void flag_rfi(struct flagger *fl, int integ, const uint32_t *spec)
{
	unsigned long long mean[NCHAN] = {0}, total = 0;
	uint32_t limit[NCHAN];
	for (int b = 0; b < BINS; b++)
		for (int c = 0; c < NCHAN; c++)
			mean[c] += spec[b * NCHAN + c];
	for (int c = 0; c < NCHAN; c++) {
		total += mean[c];
		limit[c] = (uint32_t)(4 * (mean[c] / BINS) + 16);
	}
	int flagged = 0;
	for (int b = 0; b < BINS; b++)
		for (int c = 0; c < NCHAN; c++)
			flagged += spec[b * NCHAN + c] > limit[c];
	fl->flagged[integ] = flagged;
	fl->power[integ] = total;
	for (int k = 0; k < 3; k++)
		if (integ == checked_integ[k])
			memcpy(fl->kept + (size_t)k * BINS * NCHAN, spec, BINS * NCHAN * sizeof(uint32_t));
}

int main(void)
{
	const char *name = "c84_spectrometer_ring_read_lag_zero";
	int h_twiddle[2 * NCHAN];
	cudaStream_t compute;
	int8_t *d_raw;
	struct flagger fl;
	fl.kept = (uint32_t *)malloc(3 * BINS * NCHAN * sizeof(uint32_t));

	for (int n = 0; n < NCHAN; n++) {
		h_twiddle[n] = (int)lrint(127.0 * cos(2.0 * M_PI * n / NCHAN));
		h_twiddle[NCHAN + n] = (int)lrint(127.0 * sin(2.0 * M_PI * n / NCHAN));
	}
	CHECK(cudaMemcpyToSymbol(c_twiddle, h_twiddle, sizeof h_twiddle)); // SYNCSPY-CLEAN: setup, the twiddles once
	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_raw, SAMPLES)); // SYNCSPY-CLEAN: setup allocation

	{
		ring_config cfg; /* the observation's settings: depth 3, read_lag left at its default */
		SpectrumRing ring(cfg, compute);
		for (int integ = 0; integ < INTEGRATIONS; integ++) {
			digitize<<<SAMPLES / THREADS, THREADS, 0, compute>>>(integ, d_raw);
			CHECK_LAUNCH();
			uint32_t *slot = ring.acquire(integ);
			channelize<<<BINS * NCHAN / THREADS, THREADS, 0, compute>>>(d_raw, slot);
			CHECK_LAUNCH();
			ring.push(integ);
			int ready = integ - cfg.read_lag;
			if (ready >= 0)
				flag_rfi(&fl, ready, ring.wait(ready));
		}
		for (int ready = INTEGRATIONS - cfg.read_lag; ready < INTEGRATIONS; ready++)
			flag_rfi(&fl, ready, ring.wait(ready));
	}

	/* sampled bins of the kept spectrograms, channelized on the CPU */
	int8_t frame[NCHAN];
	const int bins[3] = {0, 1234, BINS - 1};
	for (int k = 0; k < 3; k++)
		for (int j = 0; j < 3; j++)
			for (int c = 0; c < NCHAN; c++) {
				uint32_t want = 0;
				for (int f = 0; f < FRAMES_PER_BIN; f++) {
					uint32_t base = ((uint32_t)bins[j] * FRAMES_PER_BIN + (uint32_t)f) * NCHAN;
					for (int n = 0; n < NCHAN; n++)
						frame[n] = (int8_t)adc(checked_integ[k], base + (uint32_t)n);
					want += frame_power(frame, c, h_twiddle, h_twiddle + NCHAN);
				}
				corpus_expect(name, "spectrogram power", fl.kept[((size_t)k * BINS + bins[j]) * NCHAN + c], want);
			}
	unsigned long long checksum = 0;
	for (int integ = 0; integ < INTEGRATIONS; integ++)
		checksum = checksum * 1000003u + fl.power[integ] * 31u + (unsigned long long)fl.flagged[integ];

	CHECK(cudaFree(d_raw)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(compute));
	free(fl.kept);
	corpus_result(name, INTEGRATIONS, checksum);
	return 0;
}
