/*
 * examples/corpus/d54_beamformer_rdma_ring_sync_memops_copy.c: corpus workload (CUDA driver API).
 * The beamformer of a radio telescope station: every frame, 16384 time samples of 256 antennas'
 * complex int8 voltages (8 MB) arrive from the digitizers' network card by RDMA into one of two
 * slots of a receive ring in device memory. The GPU forms 256 beams and adds up each beam's power
 * over the frame (beam_power). The powers come back into a pinned ring that the host reads one
 * frame behind, for its transient detector. The program is a simple one-stream design:
 * everything runs on the legacy NULL stream, in order. Here the NIC's RDMA write is emulated by an
 * async upload from the digitizer's pinned buffer, queued on that stream.
 * The NIC's SDK registers the receive ring in rdma_ring_register(), which sets
 * CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on it, as GPUDirect RDMA code does before pinning a buffer for
 * a peer device (gdrcopy's tests, Open MPI's CUDA support, capture-card sources). The driver API
 * reference: when set, "the region of memory that ptr points to is guaranteed to always
 * synchronize memory operations that are synchronous". To hand each slot back to the NIC at once,
 * the pipeline copies the frame out of the ring with cuMemcpyDtoD, a synchronous-API copy. Between
 * two device buffers such a copy normally returns at once ("for transfers from device memory to
 * device memory, no host-side synchronization is performed", API synchronization behavior), but
 * on this region it synchronizes. Every frame the host waits in the copy for the previous frame's
 * beamforming and this frame's delivery before it can queue the beams. It then fills the next
 * frame's digitizer buffer while the GPU beamforms, so host and GPU take turns instead of
 * overlapping. cuMemcpyDtoDAsync on the NULL stream (an asynchronous memory operation, not
 * covered by the attribute) keeps the same order without the wait.
 * Planted: the cuMemcpyDtoD out of the receive ring in take_frame(), every frame (one line).
 * Clean: the setup allocations and the beam weights' upload, the emulated RDMA delivery (an async
 * upload from a pinned buffer reused after a cuEventSynchronize on its delivery two frames back),
 * the powers' async download into a pinned ring read one frame behind, the final wait, teardown.
 * Voltages, weights and powers are integers (64-bit sums): the host checks four beams of two
 * frames exactly.
 *   d54_beamformer_rdma_ring_sync_memops_copy driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { FRAMES = 40, ANTENNAS = 256, SAMPLES = 16384, BEAMS = 256, RX_SLOTS = 2, SLOTS = 2 };
enum { THREADS = 256, CHECKED = 2, CHECKED_BEAMS = 4 };

#define FRAME_BYTES ((size_t)SAMPLES * ANTENNAS * 2)
#define WEIGHT_BYTES ((size_t)BEAMS * ANTENNAS * 2)
#define POWER_BYTES ((size_t)BEAMS * sizeof(unsigned long long))
#define RECORDING_BYTES ((size_t)32 << 20)

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* --- the NIC's SDK (its RDMA path emulated) -------------------------------------------------- */

/* pins the ring for the NIC's DMA; GPUDirect RDMA wants synchronous copies to be synchronous */
static void rdma_ring_register(CUdeviceptr ring)
{
	unsigned int on = 1;
	CUpointer_attribute sync_memops = CU_POINTER_ATTRIBUTE_SYNC_MEMOPS;
	DCHECK(cuPointerSetAttribute(&on, sync_memops, ring)); // SYNCSPY-CLEAN: setup, once
}

/* the NIC writes frame f into its ring slot (here: an async copy on the NULL stream) */
static void nic_deliver(CUdeviceptr ring, int f, const signed char *digitizer)
{
	CUdeviceptr slot = ring + (size_t)(f % RX_SLOTS) * FRAME_BYTES;
	DCHECK(cuMemcpyHtoDAsync(slot, digitizer, FRAME_BYTES, 0)); // SYNCSPY-CLEAN: pinned, async
}

/* the digitizers' recorded voltages, replayed: frame f is a stretch of them */
static signed char *record_voltages(void)
{
	signed char *rec = (signed char *)malloc(RECORDING_BYTES);
	uint32_t *w = (uint32_t *)rec, x = 0x1234567u;
	for (size_t i = 0; i < RECORDING_BYTES / 4; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		w[i] = x;
	}
	return rec;
}

static void digitize(int f, const signed char *rec, signed char *v)
{
	size_t samples = RECORDING_BYTES / (ANTENNAS * 2) - SAMPLES;
	memcpy(v, rec + (size_t)(mix32((uint32_t)f) % samples) * ANTENNAS * 2, FRAME_BYTES);
}

/* --- the beamformer -------------------------------------------------------------------------- */

struct beamformer {
	CUfunction beam;
	CUdeviceptr ring, work, weights, power;
};

/* the frame leaves the ring at once, so the NIC can reuse the slot */
static void take_frame(struct beamformer *b, int f)
{
	CUdeviceptr slot = b->ring + (size_t)(f % RX_SLOTS) * FRAME_BYTES;
	DCHECK(cuMemcpyDtoD(b->work, slot, FRAME_BYTES)); // SYNCSPY-PROBLEM: sync memops: waits
}

static void form_beams(struct beamformer *b, unsigned long long *power_slot)
{
	int antennas = ANTENNAS, samples = SAMPLES;
	void *args[] = {&b->work, &antennas, &samples, &b->weights, &b->power};
	DCHECK(cuMemsetD32Async(b->power, 0, BEAMS * 2, 0));
	unsigned int blocks = SAMPLES / THREADS;
	DCHECK(cuLaunchKernel(b->beam, blocks, BEAMS, 1, THREADS, 1, 1, 0, 0, args, NULL));
	DCHECK(cuMemcpyDtoHAsync(power_slot, b->power, POWER_BYTES, 0)); // SYNCSPY-CLEAN: pinned
}

/* the host's reference of one beam's power over a frame */
static unsigned long long host_power(const signed char *v, const signed char *w, int beam)
{
	unsigned long long p = 0;
	for (int s = 0; s < SAMPLES; s++) {
		const signed char *vs = v + (size_t)s * ANTENNAS * 2;
		const signed char *wb = w + (size_t)beam * ANTENNAS * 2;
		long long re = 0, im = 0;
		for (int a = 0; a < ANTENNAS; a++) {
			re += wb[2 * a] * vs[2 * a] - wb[2 * a + 1] * vs[2 * a + 1];
			im += wb[2 * a] * vs[2 * a + 1] + wb[2 * a + 1] * vs[2 * a];
		}
		p += (unsigned long long)(re * re + im * im);
	}
	return p;
}

/* four beams of checked frame c against the host */
static void check_frame(int c, const signed char *v, const signed char *w,
			const unsigned long long *power)
{
	for (int j = 0; j < CHECKED_BEAMS; j++) {
		int beam = (c * 97 + j * 61) % BEAMS;
		if (power[beam] != host_power(v, w, beam)) {
			fprintf(stderr, "d54: checked frame %d beam %d\n", c, beam);
			exit(1);
		}
	}
}

/* the transient detector: beams brighter than 9/8 of the frame's mean beam */
static unsigned long long detect(const unsigned long long *power)
{
	unsigned long long sum = 0, h = 0;
	for (int b = 0; b < BEAMS; b++)
		sum += power[b] / BEAMS;
	for (int b = 0; b < BEAMS; b++) {
		int hot = power[b] / 8 > sum / 9;
		h = h * 1000003u + power[b] * 2u + (unsigned long long)hot;
	}
	return h;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	const int checked[CHECKED] = {7, 33};
	struct beamformer bf, *b = &bf;
	signed char *digitizer[SLOTS], *weights = (signed char *)malloc(WEIGHT_BYTES);
	signed char *kept = (signed char *)malloc(FRAME_BYTES * CHECKED);
	signed char *recording = record_voltages();
	unsigned long long *powers[SLOTS], checksum = 0;
	CUevent delivered[SLOTS], done[SLOTS];
	for (size_t i = 0; i < WEIGHT_BYTES; i++)
		weights[i] = (signed char)((int)(mix32((uint32_t)i + 0xbea7u) % 16u) - 8);

	DCHECK(cuModuleGetFunction(&b->beam, module, "beam_power"));
	DCHECK(cuMemAlloc(&b->ring, RX_SLOTS * FRAME_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&b->work, FRAME_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&b->weights, WEIGHT_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&b->power, POWER_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemcpyHtoD(b->weights, weights, WEIGHT_BYTES)); // SYNCSPY-CLEAN: setup upload
	rdma_ring_register(b->ring);
	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemAllocHost((void **)&digitizer[k], FRAME_BYTES)); // SYNCSPY-CLEAN: setup
		DCHECK(cuMemAllocHost((void **)&powers[k], POWER_BYTES)); // SYNCSPY-CLEAN: setup
		DCHECK(cuEventCreate(&delivered[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&done[k], CU_EVENT_DISABLE_TIMING));
	}

	for (int f = 0; f < FRAMES; f++) {
		int k = f % SLOTS;
		if (f >= SLOTS)
			DCHECK(cuEventSynchronize(delivered[k])); // SYNCSPY-CLEAN: 2 frames back
		digitize(f, recording, digitizer[k]);
		for (int c = 0; c < CHECKED; c++)
			if (f == checked[c])
				memcpy(kept + (size_t)c * FRAME_BYTES, digitizer[k], FRAME_BYTES);
		nic_deliver(b->ring, f, digitizer[k]);
		DCHECK(cuEventRecord(delivered[k], 0));
		take_frame(b, f);
		form_beams(b, powers[k]);
		DCHECK(cuEventRecord(done[k], 0));
		if (f >= 1) {
			int m = (f - 1) % SLOTS;
			DCHECK(cuEventSynchronize(done[m])); // SYNCSPY-CLEAN: one frame behind
			checksum = checksum * 31u + detect(powers[m]);
			for (int c = 0; c < CHECKED; c++) {
				const signed char *v = kept + (size_t)c * FRAME_BYTES;
				if (f - 1 == checked[c])
					check_frame(c, v, weights, powers[m]);
			}
		}
	}
	DCHECK(cuEventSynchronize(done[(FRAMES - 1) % SLOTS])); // SYNCSPY-CLEAN: the last frame
	checksum = checksum * 31u + detect(powers[(FRAMES - 1) % SLOTS]);

	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemFreeHost(digitizer[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(powers[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(delivered[k]));
		DCHECK(cuEventDestroy(done[k]));
	}
	DCHECK(cuMemFree(b->ring)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(b->work)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(b->weights)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(b->power)); // SYNCSPY-CLEAN: teardown
	free(weights);
	free(kept);
	free(recording);
	driver_teardown(module);
	printf("d54_beamformer_rdma_ring_sync_memops_copy: frames=%d checksum=%llu result=OK\n",
	       FRAMES, checksum);
	return 0;
}
