/*
 * tests/progs/steady.c: a program with a setup, a step loop and a teardown, for the report's
 * steady state (report/steps.c, docs/rules.md "Steady state"; t212).
 *
 *   steady [marked|pipeline|legacy|varying|growing|managed|managed-once|requests|requests-trim|
 *           stepless|burst-setup|host-setup|periodic-eval|log-every]
 *
 * setup:    three device buffers from one cudaMalloc line (@setup-alloc), two pinned buffers,
 *           the weights copied once, blocking (@setup-copy), one device sync (@setup-sync);
 * loop:     STEPS steps of: an async H2D copy from pinned memory on the kernel's stream
 *           (@loop-copy: copy-on-compute-stream), a kernel of KERNEL_US, a stream sync every
 *           step (@loop-sync: the planted problem, the costliest: it waits for the kernel), a
 *           scratch buffer allocated and freed every step after it (@loop-alloc, @loop-free:
 *           they sync the device too, but it is idle by then), and in the first step only a
 *           workspace allocation (@warmup-alloc: the caching allocator's growth);
 * teardown: the result read with a blocking copy (@final-read), the buffers freed.
 * marked: each step starts with syncspy_step("train") (looked up at run time, so the program
 * runs without the shim too). pipeline, legacy, varying, growing, managed, requests, stepless,
 * burst-setup, host-setup, periodic-eval, log-every:
 * below. The
 * @tags are what the test greps for to know the lines.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

#define STEPS	  20
#define KERNEL_US 3000
#define BYTES	  (1u << 20)

static const dim3 one = {1, 1, 1};

static void launch(cudaStream_t s, unsigned usec)
{
	void *param = (void *)(uintptr_t)usec;
	void *args[] = {&param};

	CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, s));
}

/* A triple-buffered pipeline: step k queues its kernel, then waits for step k-2's event (its
 * buffer is free again) while step k-1's kernel runs, with step k's queued behind it: the GPU
 * never idles behind the wait. */
static int pipeline(void)
{
	cudaStream_t s;
	cudaEvent_t done[3];

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (int i = 0; i < 3; i++)
		CHECK(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming));
	for (int step = 0; step < STEPS; step++) {
		launch(s, KERNEL_US);
		CHECK(cudaEventRecord(done[step % 3], s));
		if (step > 1)
			CHECK(cudaEventSynchronize(done[(step + 1) % 3])); /* @pipeline-wait */
	}
	CHECK(cudaStreamSynchronize(s));
	printf("steady: %d steps, pipeline\n", STEPS);
	for (int i = 0; i < 3; i++)
		CHECK(cudaEventDestroy(done[i]));
	CHECK(cudaStreamDestroy(s));
	return 0;
}

/* The legacy stream in the loop, a blocking stream (created without cudaStreamNonBlocking)
 * used at setup only: nothing of the loop serializes with it. */
static int legacy_after_setup(void)
{
	cudaStream_t setup;

	CHECK(cudaStreamCreate(&setup));
	launch(setup, 100);
	CHECK(cudaStreamSynchronize(setup));
	for (int step = 0; step < STEPS; step++) {
		launch(0, 200); /* @legacy-launch */
		CHECK(cudaStreamSynchronize(0));
	}
	printf("steady: %d steps, legacy\n", STEPS);
	CHECK(cudaStreamDestroy(setup));
	return 0;
}

/* A loop whose steps vary (a branch taken in some steps adds calls: no call comes back at an
 * exact period) after a burst of 40 stream creations at setup (as torch creates its stream
 * pool): the steps are the loop's 20, not the burst's. */
static int varying(void)
{
	cudaStream_t pool[40], s;
	void *scratch;

	for (int i = 0; i < 40; i++)
		CHECK(cudaStreamCreateWithFlags(&pool[i], cudaStreamNonBlocking));
	s = pool[0];
	for (int step = 0; step < STEPS; step++) {
		launch(s, 200);
		launch(s, 200);
		if (step % 3 == 0) { /* every third step: more work */
			launch(s, 100);
			launch(s, 100);
		}
		CHECK(cudaStreamSynchronize(s)); /* @varying-sync */
		CHECK(cudaMalloc(&scratch, 64));
		CHECK(cudaFree(scratch));
	}
	printf("steady: %d steps, varying\n", STEPS);
	for (int i = 0; i < 40; i++)
		CHECK(cudaStreamDestroy(pool[i]));
	return 0;
}

/* A cache grown all through the loop, a little every few steps (as a KV cache concatenated one
 * token longer at every decode step makes torch's caching allocator ask for a larger block every
 * few steps), beside a workspace grown in the first steps only (the allocator's warm-up): 60
 * steps of a kernel and a stream sync. */
static int growing(void)
{
	void (*step_mark)(const char *) =
	    (void (*)(const char *))dlsym(RTLD_DEFAULT, "syncspy_step");
	cudaStream_t s;
	void *cache[60], *early[3];
	int ncache = 0;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (int step = 0; step < 60; step++) {
		if (step_mark) /* marked: a loop this plain has a period of its own every 7 steps */
			step_mark("decode");
		if (step >= 1 && step <= 3)
			CHECK(cudaMalloc(&early[step - 1], BYTES)); /* @early-alloc */
		size_t grown = (size_t)(step + 1) * 4096;
		if (step % 7 == 3)
			CHECK(cudaMalloc(&cache[ncache++], grown)); /* @grow-alloc */
		launch(s, 200);
		CHECK(cudaStreamSynchronize(s));
	}
	printf("steady: 60 steps, growing %d\n", ncache);
	for (int i = 0; i < ncache; i++)
		CHECK(cudaFree(cache[i]));
	for (int i = 0; i < 3; i++)
		CHECK(cudaFree(early[i]));
	CHECK(cudaStreamDestroy(s));
	return 0;
}

/* Managed memory moved to the host and back every step (@managed-to-host, @managed-to-gpu: a
 * kernel works on the grid, the host counts something in it), 30 steps; `managed-once`: the
 * grid prefetched to the GPU once at setup and the host reading a small result instead. */
static int managed(int round_trip)
{
	void (*step_mark)(const char *) =
	    (void (*)(const char *))dlsym(RTLD_DEFAULT, "syncspy_step");
	struct cudaMemLocation host = {cudaMemLocationTypeHost, 0};
	struct cudaMemLocation gpu = {cudaMemLocationTypeDevice, 0};
	cudaStream_t s;
	unsigned char *grid, *result;
	long count = 0;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMallocManaged((void **)&grid, BYTES, cudaMemAttachGlobal));
	CHECK(cudaMallocHost((void **)&result, 64));
	memset(grid, 1, BYTES);
	CHECK(cudaMemPrefetchAsync(grid, BYTES, gpu, 0, s)); /* @managed-setup */
	for (int step = 0; step < 30; step++) {
		if (step_mark)
			step_mark("tick");
		launch(s, 200);
		if (round_trip) {
			CHECK(cudaMemPrefetchAsync(grid, BYTES, host, 0, s)); /* @managed-to-host */
			CHECK(cudaStreamSynchronize(s));
			for (size_t i = 0; i < BYTES; i += 4096)
				count += grid[i];
			CHECK(cudaMemPrefetchAsync(grid, BYTES, gpu, 0, s)); /* @managed-to-gpu */
		} else {
			CHECK(cudaMemcpyAsync(result, grid, 64, cudaMemcpyDeviceToHost, s));
			CHECK(cudaStreamSynchronize(s));
			count += result[0];
		}
	}
	CHECK(cudaStreamSynchronize(s));
	printf("steady: 30 steps, managed %ld\n", count);
	CHECK(cudaFree(grid));
	CHECK(cudaFreeHost(result));
	CHECK(cudaStreamDestroy(s));
	return 0;
}

/* A request loop, 30 requests, as a server answers them one at a time: a stream-ordered scratch
 * allocation (@request-alloc), the query uploaded from pinned memory, a kernel, the scratch
 * freed stream-ordered, the reply downloaded to pinned memory and the one wait of the protocol
 * (@request-sync). Under the stand-in with STANDIN_POOL_REMAP_US=N the allocation after each
 * sync maps memory again (a default pool, release threshold 0): N us of host time a request.
 * requests-trim: the same, the pool trimmed after every reply (cudaMemPoolTrimTo, @request-trim:
 * c72 of examples/corpus); with STANDIN_POOL_KEEP=1 (a pool that keeps its memory across
 * syncs) the trim alone makes the next allocation map memory again. */
static int requests(int trim)
{
	void (*step_mark)(const char *) =
	    (void (*)(const char *))dlsym(RTLD_DEFAULT, "syncspy_step");
	cudaStream_t s;
	unsigned *query, *reply, *d_query, *d_reply, *scratch;
	unsigned long answers = 0;

	cudaMemPool_t pool;

	CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMallocHost((void **)&query, 4096));
	CHECK(cudaMallocHost((void **)&reply, 64));
	CHECK(cudaMalloc((void **)&d_query, 4096));
	CHECK(cudaMalloc((void **)&d_reply, 64));
	for (unsigned r = 0; r < 30; r++) {
		if (step_mark)
			step_mark("request");
		memset(query, (int)r, 4096);
		CHECK(cudaMallocAsync((void **)&scratch, 4096, s)); /* @request-alloc */
		CHECK(cudaMemcpyAsync(d_query, query, 4096, cudaMemcpyHostToDevice, s));
		launch(s, 200);
		CHECK(cudaMemcpyAsync(d_reply, d_query, 64, cudaMemcpyDeviceToDevice, s));
		CHECK(cudaFreeAsync(scratch, s));
		CHECK(cudaMemcpyAsync(reply, d_reply, 64, cudaMemcpyDeviceToHost, s));
		CHECK(cudaStreamSynchronize(s)); /* @request-sync */
		answers += reply[0] & 0xff;
		if (trim)
			CHECK(cudaMemPoolTrimTo(pool, 0)); /* @request-trim */
	}
	printf("steady: 30 requests, answers %lu\n", answers);
	CHECK(cudaFree(d_query));
	CHECK(cudaFree(d_reply));
	CHECK(cudaFreeHost(query));
	CHECK(cudaFreeHost(reply));
	CHECK(cudaStreamDestroy(s));
	return 0;
}

/* No step to find (STEPS-3): four lanes' buffers allocated in a setup loop before any work
 * (@lanes-alloc) and freed in a teardown loop after the last (@lanes-free), and between them
 * passes of 1 to 5 kernels, their number drawn at random, each pass followed by a scratch
 * allocation and free (@pass-alloc: the planted problem, interleaved with the work). */
static int stepless(void)
{
	void *lane[4], *scratch;
	unsigned draw = 12345, launches = 0;
	cudaStream_t s;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (int k = 0; k < 4; k++)
		CHECK(cudaMalloc(&lane[k], BYTES)); /* @lanes-alloc */
	for (int pass = 0; pass < 24; pass++) {
		draw = draw * 1103515245u + 12345u;
		for (unsigned n = 1 + (draw >> 16) % 5; n > 0; n--, launches++)
			launch(s, 100);
		CHECK(cudaMalloc(&scratch, 64)); /* @pass-alloc */
		CHECK(cudaFree(scratch));
	}
	CHECK(cudaStreamSynchronize(s));
	for (int k = 0; k < 4; k++)
		CHECK(cudaFree(lane[k])); /* @lanes-free */
	printf("steady: 24 passes, %u launches\n", launches);
	CHECK(cudaStreamDestroy(s));
	return 0;
}

/* burst-setup: after the first GPU work, eight small uploads from pageable memory, each with its
 * stream sync (@burst-copy, @burst-sync: a model's parameters moved to the device one by one, an
 * exactly repeating burst of 16 calls), then 24 passes of 1 to 30 launches each, with a scratch
 * allocation per pass (@burst-pass-alloc): too irregular for a step to be detected. The burst is
 * not the program's loop (STEPS-4), and without steps it is not repeated work (STEPS-5), where
 * the passes' allocation, all through the work, is. */
static int burst_setup(void)
{
	static char host[4096];
	const enum cudaMemcpyKind h2d = cudaMemcpyHostToDevice;
	void *dev, *scratch;
	unsigned draw = 777, launches = 0;
	cudaStream_t s;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&dev, sizeof(host)));
	/* setup's sync point: the shim's first stack (its unwinder loaded) is taken here, not in
	 * the burst, which would then fill much of the work's time in a slow (sanitizer) build */
	CHECK(cudaDeviceSynchronize());
	launch(s, 100); /* the first GPU work */
	for (int k = 0; k < 8; k++) {
		CHECK(cudaMemcpyAsync(dev, host, sizeof(host), h2d, s)); /* @burst-copy */
		CHECK(cudaStreamSynchronize(s));			 /* @burst-sync */
	}
	for (int pass = 0; pass < 24; pass++) {
		draw = draw * 1103515245u + 12345u;
		for (unsigned n = 1 + (draw >> 16) % 30; n > 0; n--, launches++)
			launch(s, 20);
		CHECK(cudaMalloc(&scratch, 64)); /* @burst-pass-alloc */
		CHECK(cudaFree(scratch));
	}
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaFree(dev));
	printf("steady: 24 passes, %u launches\n", launches);
	CHECK(cudaStreamDestroy(s));
	return 0;
}

/* What periodic-eval's and log-every's steps work with: a non-blocking stream, two events
 * recorded on it and a 4 KiB device buffer. */
struct step_objects {
	cudaStream_t s;
	cudaEvent_t done, half;
	void *buf;
};

static void step_objects_make(struct step_objects *o)
{
	CHECK(cudaStreamCreateWithFlags(&o->s, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&o->done, cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&o->half, cudaEventDisableTiming));
	CHECK(cudaMalloc(&o->buf, 4096));
}

/* after the last step: waits for the stream, then frees them */
static void step_objects_free(struct step_objects *o)
{
	CHECK(cudaStreamSynchronize(o->s));
	CHECK(cudaFree(o->buf));
	CHECK(cudaEventDestroy(o->done));
	CHECK(cudaEventDestroy(o->half));
	CHECK(cudaStreamDestroy(o->s));
}

/* periodic-eval: 40 training steps of a memset, a 1 ms kernel and an event record (three calls
 * once a step: STEPS-7 finds the steps, as in a PyTorch loop), the loss read once every 10 steps
 * (@eval-log: one read, clean), and every 10 steps an evaluation of 40 samples that reads each
 * sample's result (@eval-sync: a kernel and a stream sync a sample, STEPS-9: bursts of 40 syncs
 * in 4 of the steady steps, a periodic phase's loop); a one-call wait after the third
 * evaluation only (@eval-once) stays once. */
static int periodic_eval(void)
{
	void *param = (void *)(uintptr_t)1000;
	void *args[] = {&param};
	struct step_objects o;
	unsigned samples = 0;

	step_objects_make(&o);
	for (int step = 0; step < 40; step++) {
		CHECK(cudaMemsetAsync(o.buf, step, 4096, o.s));
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, o.s));
		CHECK(cudaEventRecord(o.done, o.s));
		if ((step + 1) % 10 == 0)
			CHECK(cudaStreamSynchronize(o.s)); /* @eval-log */
		if ((step + 1) % 10 == 5) {
			for (int k = 0; k < 40; k++, samples++) {
				launch(o.s, 20);
				CHECK(cudaStreamSynchronize(o.s)); /* @eval-sync */
			}
			if (step == 24)
				CHECK(cudaDeviceSynchronize()); /* @eval-once */
		}
	}
	step_objects_free(&o);
	printf("steady: 40 steps, %u samples evaluated\n", samples);
	return 0;
}

/* log-every: 60 steps of a memset, thirteen kernels and two event records (16 calls), the loss
 * read back every 5 steps (@log-read: a copy and a stream sync between two steps): the steps'
 * own calls repeat every 16 calls but every 18 where a read came between (tight, not exact), the
 * read's exactly every 82 (5 steps and itself); the steps are the 60 (detected steps), not blocks
 * of 5 (t175 of examples/corpus, its loss logged every 10 steps). */
static int log_every(void)
{
	void *param = (void *)(uintptr_t)100;
	void *args[] = {&param};
	struct step_objects o;
	unsigned loss = 0, reads = 0;

	step_objects_make(&o);
	for (int step = 0; step < 60; step++) {
		CHECK(cudaMemsetAsync(o.buf, step, 4096, o.s));
		for (int k = 0; k < 7; k++)
			CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, o.s));
		CHECK(cudaEventRecord(o.half, o.s));
		for (int k = 0; k < 6; k++)
			CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, o.s));
		CHECK(cudaEventRecord(o.done, o.s));
		if (step % 5 == 4) {
			CHECK(cudaMemcpyAsync(&loss, o.buf, sizeof(loss), cudaMemcpyDeviceToHost,
					      o.s));
			CHECK(cudaStreamSynchronize(o.s)); /* @log-read */
			reads++;
		}
	}
	step_objects_free(&o);
	printf("steady: 60 steps, %u reads\n", reads);
	return 0;
}

/* host-setup: one upload, then HOST_SETUP_US of host work before anything else reaches the GPU
 * (a program that loads its data or compiles after its first upload), then 24 passes of 1, 4, 9,
 * 16 or 25 launches (some 200 work calls: SS_FALLBACK_MIN_WORK; no regular gaps, even loose ones,
 * for a step to be detected) with a scratch allocation each
 * (@host-setup-pass-alloc). The passes fill a few percent of the
 * work's time but nearly all its GPU work: they are repeated work (STEPS-5 slices the work by
 * its GPU work calls, not by its time). */
#define HOST_SETUP_US 400000
static int host_setup(void)
{
	static char host[4096];
	void *dev, *scratch;
	unsigned draw = 12345, launches = 0;
	cudaStream_t s;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&dev, sizeof(host)));
	CHECK(cudaMemcpyAsync(dev, host, sizeof(host), cudaMemcpyHostToDevice, s));
	CHECK(cudaStreamSynchronize(s));
	usleep(HOST_SETUP_US);
	for (int pass = 0; pass < 24; pass++) {
		draw = draw * 1103515245u + 12345u;
		unsigned root = 1 + (draw >> 16) % 5;

		for (unsigned n = root * root; n > 0; n--, launches++)
			launch(s, 100);
		CHECK(cudaMalloc(&scratch, 64)); /* @host-setup-pass-alloc */
		CHECK(cudaFree(scratch));
	}
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaFree(dev));
	printf("steady: 24 passes, %u launches\n", launches);
	CHECK(cudaStreamDestroy(s));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "stepless") == 0)
		return stepless();
	if (argc > 1 && strcmp(argv[1], "host-setup") == 0)
		return host_setup();
	if (argc > 1 && strcmp(argv[1], "periodic-eval") == 0)
		return periodic_eval();
	if (argc > 1 && strcmp(argv[1], "log-every") == 0)
		return log_every();
	if (argc > 1 && strcmp(argv[1], "burst-setup") == 0)
		return burst_setup();
	if (argc > 1 && strcmp(argv[1], "requests") == 0)
		return requests(0);
	if (argc > 1 && strcmp(argv[1], "requests-trim") == 0)
		return requests(1);
	if (argc > 1 && strcmp(argv[1], "managed") == 0)
		return managed(1);
	if (argc > 1 && strcmp(argv[1], "managed-once") == 0)
		return managed(0);
	if (argc > 1 && strcmp(argv[1], "growing") == 0)
		return growing();
	if (argc > 1 && strcmp(argv[1], "varying") == 0)
		return varying();
	if (argc > 1 && strcmp(argv[1], "pipeline") == 0)
		return pipeline();
	if (argc > 1 && strcmp(argv[1], "legacy") == 0)
		return legacy_after_setup();
	int marked = argc > 1 && strcmp(argv[1], "marked") == 0;
	void (*step_mark)(const char *) =
	    marked ? (void (*)(const char *))dlsym(RTLD_DEFAULT, "syncspy_step") : NULL;
	void *dev[3], *pinned[2], *workspace = NULL, *scratch;
	cudaStream_t s;
	float result = 0;

	for (int i = 0; i < 3; i++)
		CHECK(cudaMalloc(&dev[i], BYTES)); /* @setup-alloc */
	for (int i = 0; i < 2; i++)
		CHECK(cudaMallocHost(&pinned[i], BYTES));
	memset(pinned[0], 0, BYTES);
	CHECK(cudaMemcpy(dev[0], pinned[0], BYTES, cudaMemcpyHostToDevice)); /* @setup-copy */
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaDeviceSynchronize()); /* @setup-sync */

	for (int step = 0; step < STEPS; step++) {
		if (step_mark)
			step_mark("train");
		if (step == 0)
			CHECK(cudaMalloc(&workspace, BYTES)); /* @warmup-alloc */
		void *in = dev[1], *src = pinned[step % 2];

		CHECK(cudaMemcpyAsync(in, src, BYTES, cudaMemcpyHostToDevice, s)); /* @loop-copy */
		launch(s, KERNEL_US);
		CHECK(cudaStreamSynchronize(s));   /* @loop-sync */
		CHECK(cudaMalloc(&scratch, 4096)); /* @loop-alloc */
		CHECK(cudaFree(scratch));	   /* @loop-free */
	}

	CHECK(cudaMemcpy(&result, dev[2], 4, cudaMemcpyDeviceToHost)); /* @final-read */
	printf("steady: %d steps, result %.1f\n", STEPS, result);
	CHECK(cudaFree(workspace));
	for (int i = 0; i < 3; i++)
		CHECK(cudaFree(dev[i]));
	for (int i = 0; i < 2; i++)
		CHECK(cudaFreeHost(pinned[i]));
	CHECK(cudaStreamDestroy(s));
	return 0;
}
