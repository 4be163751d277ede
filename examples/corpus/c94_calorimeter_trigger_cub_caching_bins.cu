/*
 * examples/corpus/c94_calorimeter_trigger_cub_caching_bins.cu: corpus workload (CUDA C++ + CUB).
 * The level-1 trigger of a calorimeter read-out: every event a digitizer stand-in writes 16M
 * channels (eight time samples each, a pulse-shape maximum minus the module's pedestal) as packed
 * words (channel << 8 | ADC), cub::DeviceSelect::If compacts the words above threshold into a hit
 * buffer, a kernel sums the hits' energy per 4096-channel module, and a trigger kernel counts the
 * modules over the module threshold into a per-event report that leaves the GPU through a two-slot
 * pinned ring on a copy stream; the host reads event e-1's report while event e runs. The
 * pedestals come from the host each event through a pinned double buffer.
 * Per-event device memory comes from a cub::CachingDeviceAllocator, the pipeline's `pool`, "so
 * that per-event buffers cost nothing after the first event": CUB's select temporary storage (a
 * few hundred KB) and the hit buffer, sized for the worst case (every channel a hit, 64 MB) by the
 * RAII HitBuffer. The pool is default-constructed, and CUB's documentation of
 * CachingDeviceAllocator says the default-constructed allocator is configured with bin_growth 8,
 * min_bin 3, max_bin 7 and max_cached_bytes 6 MB - 1 ("five bin-sizes: 512B, 4KB, 32KB, 256KB, and
 * 2MB"), and "allocations above (bin_growth ^ max_bin) are not rounded up to the nearest bin and
 * are simply freed when they are deallocated instead of being returned to a bin-cache". The
 * temporary storage is cached as intended, but the 64 MB hit buffer is above the largest bin:
 * every event DeviceAllocate calls cudaMalloc for it and DeviceFree calls cudaFree, and "managing
 * memory allocations using cudaMalloc and cudaFree causes the GPU to synchronize across all
 * executing CUDA streams" (CUDA programming guide, stream-ordered memory allocator). The free at
 * the end of process_event() waits for the event's whole pipeline and the copy stream, so the host
 * computes the next pedestals and reads the previous report while the GPU idles. A pool built with
 * a max_bin that covers the hit buffer (CachingDeviceAllocator(8, 3, 9, ...)), or a hit buffer
 * allocated once, fixes it.
 * Planted: pool.DeviceAllocate of the hit buffer in HitBuffer's constructor (cudaMalloc inside)
 * and pool.DeviceFree in its destructor (cudaFree inside), every event (one problem, two lines).
 * Clean: the same pool's DeviceAllocate and DeviceFree of the select's temporary storage (served
 * from its 256 KB or 2 MB bin after the first event; the free only records an event), the setup
 * allocations, the pedestals uploaded async from the pinned double buffer (reused after a
 * cudaEventSynchronize on the upload two events back), the report downloaded into the pinned ring
 * on the copy stream and read one event behind, the last event's wait, the pool's FreeAllCached
 * and the other frees at teardown. CUB's size query only computes a size.
 */
#include "corpus.h"

#include <cub/device/device_select.cuh>
#include <cub/util_allocator.cuh>
#include <string.h>

enum { EVENTS = 60, CHANNELS = 1 << 24, MODULE_BITS = 12, MODULES = CHANNELS >> MODULE_BITS, SAMPLES_PER_CHANNEL = 8, SHOWERS = 48, SHOWER_HALF_WIDTH = 64, THREADS = 256, ENERGY_BLOCKS = 264, SLOTS = 2 };

#define HIT_THRESHOLD 24u    /* ADC counts; the noise alone stays at 15 or below */
#define MODULE_THRESHOLD 1500u

static const int checked_events[2] = {9, 44};
static const int pulse_shape[SAMPLES_PER_CHANNEL] = {0, 3, 8, 10, 7, 4, 2, 1};
__constant__ int c_pulse[SAMPLES_PER_CHANNEL] = {0, 3, 8, 10, 7, 4, 2, 1};

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

__host__ __device__ static inline uint32_t shower_module(int event, int s) { return mix32((uint32_t)(event * 64 + s) + 0x0badc0deu) % MODULES; }

/* the deposit in a channel, in ADC counts at the pulse peak, from the event's showers */
__host__ __device__ static inline int deposit(int event, uint32_t ch)
{
	uint32_t module = ch >> MODULE_BITS, off = ch & ((1u << MODULE_BITS) - 1u);
	int d = 0;
	for (int s = 0; s < SHOWERS; s++) {
		if (shower_module(event, s) != module)
			continue;
		uint32_t h = mix32((uint32_t)(event * 64 + s) + 0x5eedu);
		int amp = 40 + (int)(h % 200u), center = (int)(mix32(h) % (1u << MODULE_BITS)), dist = (int)off - center;
		if (dist < 0)
			dist = -dist;
		if (dist < SHOWER_HALF_WIDTH)
			d += amp * (SHOWER_HALF_WIDTH - dist) / SHOWER_HALF_WIDTH;
	}
	return d;
}

__host__ __device__ static inline int pedestal(int event, uint32_t module) { return (int)(mix32(module * 977u + (uint32_t)event) % 4u); }

/* the channel's ADC value: the largest of its samples (shape times deposit, plus noise 0..15) less the pedestal */
__host__ __device__ static inline uint32_t adc_value(int event, uint32_t ch, int ped, const int *shape)
{
	int dep = deposit(event, ch), peak = 0;
	for (int t = 0; t < SAMPLES_PER_CHANNEL; t++) {
		int v = dep * shape[t] / 10 + (int)(mix32(ch * 8u + (uint32_t)t + (uint32_t)event * 0x9e3779b1u) & 15u);
		peak = v > peak ? v : peak;
	}
	int adc = peak - ped;
	return adc < 0 ? 0u : (adc > 255 ? 255u : (uint32_t)adc);
}

__global__ void digitize(int event, const uint8_t *pedestals, uint32_t *words)
{
	uint32_t ch = blockIdx.x * blockDim.x + threadIdx.x;
	if (ch < CHANNELS)
		words[ch] = (ch << 8) | adc_value(event, ch, pedestals[ch >> MODULE_BITS], c_pulse);
}

struct above_threshold {
	__host__ __device__ bool operator()(uint32_t w) const { return (w & 255u) >= HIT_THRESHOLD; }
};

__global__ void module_energy(const uint32_t *hits, const int64_t *num_hits, uint32_t *energy)
{
	int64_t n = *num_hits;
	for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
		atomicAdd(&energy[hits[i] >> (8 + MODULE_BITS)], hits[i] & 255u);
}

struct event_report {
	long long hits;
	unsigned long long energy;
	unsigned int modules_over;
	unsigned int max_module_energy;
};

__global__ void trigger(const uint32_t *energy, const int64_t *num_hits, struct event_report *rep)
{
	__shared__ unsigned long long s_energy;
	__shared__ unsigned int s_over, s_max;
	if (threadIdx.x == 0) {
		s_energy = 0;
		s_over = 0;
		s_max = 0;
	}
	__syncthreads();
	for (int m = threadIdx.x; m < MODULES; m += blockDim.x) {
		uint32_t e = energy[m];
		atomicAdd(&s_energy, (unsigned long long)e);
		atomicMax(&s_max, e);
		if (e >= MODULE_THRESHOLD)
			atomicAdd(&s_over, 1u);
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		rep->hits = *num_hits;
		rep->energy = s_energy;
		rep->modules_over = s_over;
		rep->max_module_energy = s_max;
	}
}

/* --- the hit buffer ---------------------------------------------------------------------------- */

/* the event's hits, sized for the worst case, from the pipeline's caching allocator */
class HitBuffer {
public:
	HitBuffer(cub::CachingDeviceAllocator &pool, size_t words, cudaStream_t stream) : pool_(pool)
	{
		CHECK(pool_.DeviceAllocate((void **)&data_, words * sizeof(uint32_t), stream)); // SYNCSPY-PROBLEM: 64 MB is above the default pool's largest bin (2 MB): cudaMalloc inside, every event
	}
	~HitBuffer()
	{
		CHECK(pool_.DeviceFree(data_)); // SYNCSPY-PROBLEM: not cached above max_bin: cudaFree inside, waits for the event's whole pipeline, every event
	}
	HitBuffer(const HitBuffer &) = delete;
	HitBuffer &operator=(const HitBuffer &) = delete;
	uint32_t *data() const { return data_; }

private:
	cub::CachingDeviceAllocator &pool_;
	uint32_t *data_;
};

/* --- the trigger pipeline ------------------------------------------------------------------------ */

struct trigger_pipeline {
	cub::CachingDeviceAllocator pool; /* default bins: 512 B to 2 MB, 6 MB cached */
	cudaStream_t stream, copy;
	uint32_t *d_words, *d_energy;
	int64_t *d_num_hits;
	uint8_t *d_ped[SLOTS], *h_ped[SLOTS];
	struct event_report *d_report[SLOTS], *h_report[SLOTS];
	cudaEvent_t ped_uploaded[SLOTS], reported[SLOTS], downloaded[SLOTS];
};

static void select_hits(struct trigger_pipeline *tp, uint32_t *hits)
{
	void *d_temp = NULL;
	size_t temp_bytes = 0;
	CHECK(cub::DeviceSelect::If(d_temp, temp_bytes, tp->d_words, hits, tp->d_num_hits, CHANNELS, above_threshold(), tp->stream));
	CHECK(tp->pool.DeviceAllocate(&d_temp, temp_bytes, tp->stream)); // SYNCSPY-CLEAN: the select's temporary storage, served from its bin after the first event
	CHECK(cub::DeviceSelect::If(d_temp, temp_bytes, tp->d_words, hits, tp->d_num_hits, CHANNELS, above_threshold(), tp->stream));
	CHECK(tp->pool.DeviceFree(d_temp)); // SYNCSPY-CLEAN: back to its bin (an event record on the stream, no free)
}

static void process_event(struct trigger_pipeline *tp, int event)
{
	int s = event % SLOTS;
	if (event >= SLOTS)
		CHECK(cudaEventSynchronize(tp->ped_uploaded[s])); // SYNCSPY-CLEAN: the pedestal double buffer: the upload from this slot two events back
	for (uint32_t m = 0; m < MODULES; m++)
		tp->h_ped[s][m] = (uint8_t)pedestal(event, m);
	CHECK(cudaMemcpyAsync(tp->d_ped[s], tp->h_ped[s], MODULES, cudaMemcpyHostToDevice, tp->stream)); // SYNCSPY-CLEAN: async from the pinned slot on the trigger stream
	CHECK(cudaEventRecord(tp->ped_uploaded[s], tp->stream));
	digitize<<<CHANNELS / THREADS, THREADS, 0, tp->stream>>>(event, tp->d_ped[s], tp->d_words);
	CHECK_LAUNCH();
	HitBuffer hits(tp->pool, CHANNELS, tp->stream);
	select_hits(tp, hits.data());
	CHECK(cudaMemsetAsync(tp->d_energy, 0, MODULES * sizeof(uint32_t), tp->stream));
	module_energy<<<ENERGY_BLOCKS, THREADS, 0, tp->stream>>>(hits.data(), tp->d_num_hits, tp->d_energy);
	CHECK_LAUNCH();
	if (event >= SLOTS)
		CHECK(cudaStreamWaitEvent(tp->stream, tp->downloaded[s], 0));
	trigger<<<1, 1024, 0, tp->stream>>>(tp->d_energy, tp->d_num_hits, tp->d_report[s]);
	CHECK_LAUNCH();
	CHECK(cudaEventRecord(tp->reported[s], tp->stream));
	CHECK(cudaStreamWaitEvent(tp->copy, tp->reported[s], 0));
	CHECK(cudaMemcpyAsync(tp->h_report[s], tp->d_report[s], sizeof(struct event_report), cudaMemcpyDeviceToHost, tp->copy)); // SYNCSPY-CLEAN: the report, async into the pinned ring on the copy stream
	CHECK(cudaEventRecord(tp->downloaded[s], tp->copy));
}

/* the CPU's trigger for one event; channels outside the shower modules carry noise only (15 or less: no hits) */
static struct event_report reference_event(int event)
{
	static uint32_t energy[MODULES];
	struct event_report rep = {0, 0, 0, 0};
	memset(energy, 0, sizeof energy);
	for (int s = 0; s < SHOWERS; s++) {
		uint32_t m = shower_module(event, s);
		int seen = 0;
		for (int r = 0; r < s; r++)
			seen |= shower_module(event, r) == m;
		if (seen)
			continue;
		for (uint32_t off = 0; off < (1u << MODULE_BITS); off++) {
			uint32_t adc = adc_value(event, (m << MODULE_BITS) | off, pedestal(event, m), pulse_shape);
			if (adc >= HIT_THRESHOLD) {
				rep.hits++;
				energy[m] += adc;
			}
		}
	}
	for (int m = 0; m < MODULES; m++) {
		rep.energy += energy[m];
		rep.max_module_energy = energy[m] > rep.max_module_energy ? energy[m] : rep.max_module_energy;
		rep.modules_over += energy[m] >= MODULE_THRESHOLD;
	}
	return rep;
}

int main(void)
{
	const char *name = "c94_calorimeter_trigger_cub_caching_bins";
	struct trigger_pipeline tp;
	struct event_report kept[2];
	unsigned long long checksum = 0;

	CHECK(cudaStreamCreateWithFlags(&tp.stream, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&tp.copy, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&tp.d_words, (size_t)CHANNELS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation, the digitized words
	CHECK(cudaMalloc(&tp.d_energy, MODULES * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&tp.d_num_hits, sizeof(int64_t))); // SYNCSPY-CLEAN: setup allocation
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaMalloc(&tp.d_ped[s], MODULES)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&tp.d_report[s], sizeof(struct event_report))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMallocHost(&tp.h_ped[s], MODULES)); // SYNCSPY-CLEAN: setup pinned allocation, a pedestal slot
		CHECK(cudaMallocHost(&tp.h_report[s], sizeof(struct event_report))); // SYNCSPY-CLEAN: setup pinned allocation, a report slot
		CHECK(cudaEventCreateWithFlags(&tp.ped_uploaded[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&tp.reported[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&tp.downloaded[s], cudaEventDisableTiming));
	}

	long long triggered = 0;
	for (int event = 0; event <= EVENTS; event++) {
		if (event < EVENTS)
			process_event(&tp, event);
		if (event >= 1) {
			int prev = event - 1, q = prev % SLOTS;
			CHECK(cudaEventSynchronize(tp.downloaded[q])); // SYNCSPY-CLEAN: one event behind: event e-1's report while event e runs (the last one after the loop)
			const struct event_report *rep = tp.h_report[q];
			triggered += rep->modules_over > 0;
			checksum = checksum * 1000003u + (unsigned long long)rep->hits * 7919u + rep->energy * 31u + rep->modules_over;
			for (int k = 0; k < 2; k++)
				if (prev == checked_events[k])
					kept[k] = *rep;
		}
	}

	for (int k = 0; k < 2; k++) {
		struct event_report want = reference_event(checked_events[k]);
		corpus_expect(name, "hits", kept[k].hits, want.hits);
		corpus_expect(name, "event energy", (long long)kept[k].energy, (long long)want.energy);
		corpus_expect(name, "modules over threshold", kept[k].modules_over, want.modules_over);
		corpus_expect(name, "largest module energy", kept[k].max_module_energy, want.max_module_energy);
	}
	corpus_expect(name, "some events triggered", triggered > 0, 1);

	CHECK(tp.pool.FreeAllCached()); // SYNCSPY-CLEAN: teardown, the pool's cached blocks
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaFree(tp.d_ped[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(tp.d_report[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(tp.h_ped[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(tp.h_report[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(tp.ped_uploaded[s]));
		CHECK(cudaEventDestroy(tp.reported[s]));
		CHECK(cudaEventDestroy(tp.downloaded[s]));
	}
	CHECK(cudaFree(tp.d_words)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(tp.d_energy)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(tp.d_num_hits)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(tp.stream));
	CHECK(cudaStreamDestroy(tp.copy));
	corpus_result(name, EVENTS, checksum);
	return 0;
}
