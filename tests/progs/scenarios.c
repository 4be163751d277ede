/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/scenarios.c: small CUDA/NCCL programs, one per sync-model class or life-cycle
 * case, run by the e2e tests under the shim against the CPU stand-ins (tests/standin/).
 *
 *   scenarios NAME [ARGS]      runs one scenario; prints what it did; exit 0 unless a CUDA
 *                              call returned something the scenario did not expect.
 *
 * A "kernel" is a host function run by the stand-in's stream worker (tests/standin/README.md):
 * sleep_kernel sleeps for the microseconds passed as its one parameter. Each scenario makes a
 * known number of calls so the tests can assert exact row counts.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "progs.h"

extern __typeof__(cudaStreamSynchronize) cudaStreamSynchronize_ptsz;
extern __typeof__(cudaMemcpyAsync) cudaMemcpyAsync_ptsz;
extern __typeof__(cudaLaunchKernel) cudaLaunchKernel_ptsz;
extern __typeof__(cudaMemcpy) cudaMemcpy_ptds;
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
			       size_t sharedMem, cudaStream_t stream);

#define NCHECK(call)                                                                               \
	do {                                                                                       \
		ncclResult_t rc_ = (call);                                                         \
		if (rc_ != ncclSuccess) {                                                          \
			fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)rc_); \
			exit(11);                                                                  \
		}                                                                                  \
	} while (0)

static const dim3 one = {1, 1, 1};

/* Launches sleep_kernel for usec microseconds on stream. */
static void launch_sleep(cudaStream_t stream, unsigned usec)
{
	void *param = (void *)(uintptr_t)usec;
	void *args[] = {&param};
	CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
}

/* ------------------------------------------------------------------ S1-S3, S7 */

static int s1_device_sync(void)
{
	launch_sleep(0, 30000);
	CHECK(cudaDeviceSynchronize());
	return 0;
}

static int s2_stream_sync(void)
{
	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	launch_sleep(s, 30000);
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaStreamDestroy(s));
	return 0;
}

static int s3_event_sync(void)
{
	cudaStream_t s;
	cudaEvent_t e;
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
	launch_sleep(s, 30000);
	CHECK(cudaEventRecord(e, s));
	CHECK(cudaEventSynchronize(e));
	CHECK(cudaEventDestroy(e));
	CHECK(cudaStreamDestroy(s));
	return 0;
}

/* Two polling loops (one on a stream, one on an event) separated by a launch: two S7 rows. */
static int s7_polling(void)
{
	cudaStream_t s;
	cudaEvent_t e;
	int polls = 0;
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaEventCreate(&e));
	launch_sleep(s, 20000);
	while (cudaStreamQuery(s) == cudaErrorNotReady)
		polls++;
	launch_sleep(s, 20000);
	CHECK(cudaEventRecord(e, s));
	while (cudaEventQuery(e) == cudaErrorNotReady)
		polls++;
	printf("polls %d\n", polls > 2 ? 1 : 0);
	CHECK(cudaEventDestroy(e));
	CHECK(cudaStreamDestroy(s));
	return 0;
}

/* ------------------------------------------------------------------ S4, S5, S6 */

#define COPY_BYTES (4u << 20)

static int s4_blocking_copies(void)
{
	void *dev;
	char *host = malloc(COPY_BYTES);
	memset(host, 7, COPY_BYTES);
	CHECK(cudaMalloc(&dev, COPY_BYTES));
	CHECK(cudaMemcpy(dev, host, COPY_BYTES, cudaMemcpyHostToDevice));
	memset(host, 0, COPY_BYTES);
	CHECK(cudaMemcpy(host, dev, COPY_BYTES, cudaMemcpyDeviceToHost));
	printf("roundtrip %s\n", host[COPY_BYTES - 1] == 7 ? "ok" : "BAD");
	CHECK(cudaFree(dev));
	free(host);
	return 0;
}

/* Three async H2D copies: from pageable (S5), from pinned cudaHostAlloc (E1), from registered
 * memory (E1), then a D2H async into pageable memory with cudaMemcpyDefault (S5). */
static int s5_async_copies(void)
{
	cudaStream_t s;
	void *dev, *pinned;
	char *pageable = malloc(COPY_BYTES), *registered = malloc(COPY_BYTES);
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMalloc(&dev, COPY_BYTES));
	CHECK(cudaHostAlloc(&pinned, COPY_BYTES, cudaHostAllocDefault));
	CHECK(cudaHostRegister(registered, COPY_BYTES, cudaHostRegisterDefault));
	CHECK(cudaMemcpyAsync(dev, pageable, COPY_BYTES, cudaMemcpyHostToDevice, s));
	CHECK(cudaMemcpyAsync(dev, pinned, COPY_BYTES, cudaMemcpyHostToDevice, s));
	CHECK(cudaMemcpyAsync(dev, registered, COPY_BYTES, cudaMemcpyHostToDevice, s));
	CHECK(cudaMemcpyAsync(pageable, dev, COPY_BYTES, cudaMemcpyDefault, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaHostUnregister(registered));
	CHECK(cudaFreeHost(pinned));
	CHECK(cudaFree(dev));
	CHECK(cudaStreamDestroy(s));
	free(pageable);
	free(registered);
	return 0;
}

/* Host-to-host async copies, queued on a stream behind a kernel, each step of a loop: "fully
 * synchronous with respect to the host" (S4), each waits for the kernel. One with
 * cudaMemcpyHostToHost between pinned buffers (SITE:h2h), one with cudaMemcpyDefault into
 * pageable memory (SITE:default): S4 as well, not S5. */
static int h2h_async_copies(int steps)
{
	cudaStream_t s;
	char *a, *b, *pageable = malloc(4096);
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaHostAlloc((void **)&a, 4096, cudaHostAllocDefault));
	CHECK(cudaHostAlloc((void **)&b, 4096, cudaHostAllocDefault));
	for (int i = 0; i < steps; i++) {
		memset(a, i, 4096);
		launch_sleep(s, 2000);
		CHECK(cudaMemcpyAsync(b, a, 4096, cudaMemcpyHostToHost, s)); /* SITE:h2h */
		launch_sleep(s, 1000);
		CHECK(cudaMemcpyAsync(pageable, b, 4096, cudaMemcpyDefault, s)); /* SITE:default */
		if (pageable[4095] != (char)i)
			return 1; /* the copy has happened when the call returns */
		usleep(1000); /* the host's own work, the GPU idle */
	}
	CHECK(cudaStreamSynchronize(s));
	printf("h2h %d steps ok\n", steps);
	CHECK(cudaFreeHost(a));
	CHECK(cudaFreeHost(b));
	CHECK(cudaStreamDestroy(s));
	free(pageable);
	return 0;
}

/* Implicit syncs: allocations, frees, and a non-async memset of pinned memory (S6); a memset of
 * device memory is an enqueue (E1); stream-ordered allocation is E1 too. */
static int s6_implicit(void)
{
	void *dev, *host, *managed, *async_mem;
	cudaStream_t s;
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMalloc(&dev, 1 << 20));
	CHECK(cudaMallocHost(&host, 1 << 20));
	CHECK(cudaMallocManaged(&managed, 1 << 20, cudaMemAttachGlobal));
	CHECK(cudaMemset(host, 0, 1 << 20));	/* S6: pinned */
	CHECK(cudaMemset(managed, 0, 1 << 20)); /* S6: managed */
	CHECK(cudaMemset(dev, 0, 1 << 20));	/* E1: device */
	CHECK(cudaMallocAsync(&async_mem, 1 << 20, s));
	CHECK(cudaFreeAsync(async_mem, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaFree(managed));
	CHECK(cudaFreeHost(host));
	CHECK(cudaFree(dev));
	CHECK(cudaStreamDestroy(s));
	return 0;
}

/* A stack size raised around one launch and put back after it, every step, as a guard object
 * does (examples/corpus c90): each change waits for the device (S6: the launch queued before it);
 * the printf FIFO's limit set every step too is X1. once: the fix, the stack raised once before
 * the loop. Lines that tests look up carry a MARK: comment. */
static int stack_limit(int steps, int once)
{
	size_t saved = 0, fifo = 0;
	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaDeviceGetLimit(&fifo, cudaLimitPrintfFifoSize));
	if (once)
		CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 16 << 10)); /* MARK:stack-once */
	for (int step = 0; step < steps; step++) {
		const size_t deep = 16 << 10;

		launch_sleep(s, 2000);					  /* the previous layer */
		CHECK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, fifo)); /* MARK:fifo */
		if (once) {
			launch_sleep(s, 2000);
			continue;
		}
		CHECK(cudaDeviceGetLimit(&saved, cudaLimitStackSize));
		CHECK(cudaDeviceSetLimit(cudaLimitStackSize, deep));  /* MARK:stack-raise */
		launch_sleep(s, 2000);				      /* needs the deeper stack */
		CHECK(cudaDeviceSetLimit(cudaLimitStackSize, saved)); /* MARK:stack-restore */
	}
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaDeviceGetLimit(&saved, cudaLimitStackSize));
	CHECK(cudaStreamDestroy(s));
	printf("stack-limit %s %zu\n", once ? "once" : "per step", saved);
	return 0;
}

/* ------------------------------------------------------------------ E1-E3 */

static int e123_edges(void)
{
	cudaStream_t a, b;
	cudaEvent_t e;
	CHECK(cudaStreamCreateWithPriority(&a, cudaStreamNonBlocking, -1));
	CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
	CHECK(cudaEventCreate(&e));
	for (int i = 0; i < 10; i++) {
		launch_sleep(a, 100);
		CHECK(cudaEventRecord(e, a));
		CHECK(cudaStreamWaitEvent(b, e, 0));
		void *param = (void *)(uintptr_t)100;
		void *args[] = {&param};
		CHECK(__cudaLaunchKernel((cudaKernel_t)(void *)sleep_kernel, one, one, args, 0, b));
	}
	CHECK(cudaStreamSynchronize(b));
	CHECK(cudaEventDestroy(e));
	CHECK(cudaStreamDestroy(a));
	CHECK(cudaStreamDestroy(b));
	return 0;
}

/* Work on a created stream and on the legacy default stream. With a blocking stream the legacy
 * stream serializes with it (an implicit sync, rule legacy-stream); with a non-blocking one it
 * does not. */
/* Work on the legacy stream beside a blocking or non-blocking stream; with work, an event
 * record there too (reported with the work: one finding). records_only: the legacy stream gets
 * event records alone (their own finding). */
static int legacy(int blocking, int records_only)
{
	cudaStream_t s;
	cudaEvent_t ev;
	CHECK(cudaStreamCreateWithFlags(&s, blocking ? cudaStreamDefault : cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	for (int i = 0; i < 5; i++) {
		launch_sleep(s, 200);
		if (!records_only)
			launch_sleep(0, 200);
		CHECK(cudaEventRecord(ev, 0));
	}
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaEventDestroy(ev));
	CHECK(cudaStreamDestroy(s));
	return 0;
}

/* legacy-dtod: a device-to-device cudaMemcpy each iteration beside work on a stream of the
 * process: the copy returns at once but is queued on the legacy stream, which serializes with
 * a blocking stream (d29 of examples/corpus), not with a non-blocking one. */
static int legacy_dtod(int blocking)
{
	cudaStream_t s;
	void *a, *b;
	CHECK(cudaStreamCreateWithFlags(&s, blocking ? cudaStreamDefault : cudaStreamNonBlocking));
	CHECK(cudaMalloc(&a, 4096));
	CHECK(cudaMalloc(&b, 4096));
	for (int i = 0; i < 5; i++) {
		launch_sleep(s, 200);
		CHECK(cudaMemcpy(b, a, 4096, cudaMemcpyDeviceToDevice));
	}
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaFree(b));
	CHECK(cudaFree(a));
	CHECK(cudaStreamDestroy(s));
	return 0;
}

/* legacy-threads: worker threads that each launch and sync on stream 0, the legacy stream
 * they all share (c64 of examples/corpus: CUDA_API_PER_THREAD_DEFAULT_STREAM defined after
 * nvcc's own include does nothing), or each on a non-blocking stream of its own. Each round
 * one worker launches first and syncs; the others launch 100 us after a barrier, while it
 * waits: their work lands inside its wait whatever the scheduler does (t204 found no sharing
 * on a loaded machine when the workers merely ran side by side). */
#define LEGACY_WORKERS 3
#define LEGACY_ROUNDS  5
static pthread_barrier_t legacy_barrier;

struct legacy_job {
	int id, own_stream;
};

static void *legacy_worker(void *arg)
{
	const struct legacy_job *job = arg;
	cudaStream_t s = 0;
	if (job->own_stream)
		CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (int i = 0; i < LEGACY_ROUNDS; i++) {
		int first = i % LEGACY_WORKERS == job->id;
		if (first)
			launch_sleep(s, 300);
		pthread_barrier_wait(&legacy_barrier);
		if (!first) {
			usleep(100);
			launch_sleep(s, 300);
		}
		CHECK(cudaStreamSynchronize(s));
		pthread_barrier_wait(&legacy_barrier);
	}
	if (job->own_stream)
		CHECK(cudaStreamDestroy(s));
	return NULL;
}

static int legacy_threads(int own_stream)
{
	pthread_t t[LEGACY_WORKERS];
	struct legacy_job jobs[LEGACY_WORKERS];
	pthread_barrier_init(&legacy_barrier, NULL, LEGACY_WORKERS);
	for (int i = 0; i < LEGACY_WORKERS; i++) {
		jobs[i] = (struct legacy_job){i, own_stream};
		pthread_create(&t[i], NULL, legacy_worker, &jobs[i]);
	}
	for (int i = 0; i < LEGACY_WORKERS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&legacy_barrier);
	return 0;
}

/* The per-thread default stream entry points (what nvcc --default-stream per-thread calls). */
static int ptsz_variants(void)
{
	void *dev, *pinned;
	CHECK(cudaMalloc(&dev, 4096));
	CHECK(cudaMallocHost(&pinned, 4096));
	void *param = (void *)(uintptr_t)1000;
	void *args[] = {&param};
	CHECK(cudaLaunchKernel_ptsz((const void *)sleep_kernel, one, one, args, 0, 0));
	CHECK(cudaMemcpyAsync_ptsz(dev, pinned, 4096, cudaMemcpyHostToDevice, 0));
	CHECK(cudaStreamSynchronize_ptsz(0));
	CHECK(cudaMemcpy_ptds(pinned, dev, 4096, cudaMemcpyDeviceToHost));
	CHECK(cudaStreamSynchronize(cudaStreamPerThread));
	CHECK(cudaFreeHost(pinned));
	CHECK(cudaFree(dev));
	return 0;
}

/* Errors reach the program unchanged, and are recorded with their code. */
static int errors(void)
{
	cudaError_t rc = cudaStreamSynchronize((cudaStream_t)(uintptr_t)0xdead0);
	printf("bad stream -> %d\n", (int)rc);
	printf("last error -> %d\n", (int)cudaGetLastError());
	printf("again -> %d\n", (int)cudaGetLastError());
	rc = cudaMemcpy(NULL, NULL, 16, cudaMemcpyHostToDevice);
	printf("null copy -> %d\n", (int)rc);
	return 0;
}

/* ------------------------------------------------------------------ threads */

#define THREADS	   16
#define PER_THREAD 5000

static void *thread_body(void *arg)
{
	cudaStream_t s;
	cudaEvent_t e;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaEventCreate(&e));
	for (int i = 0; i < PER_THREAD; i++) {
		CHECK(cudaEventRecord(e, s));
		CHECK(cudaStreamWaitEvent(s, e, 0));
	}
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaEventDestroy(e));
	CHECK(cudaStreamDestroy(s));
	return arg;
}

static int threads(void)
{
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, thread_body, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("threads %d x %d\n", THREADS, PER_THREAD);
	return 0;
}

/* ------------------------------------------------------------------ NCCL */

/* nranks processes: each rank allreduces (rank + 1) over 1024 floats, then sends/receives a
 * ring message, then splits into even and odd ranks and allreduces again. */
static int nccl_ranks(int nranks)
{
	ncclUniqueId id;
	NCHECK(ncclGetUniqueId(&id));
	for (int rank = 0; rank < nranks; rank++) {
		pid_t pid = fork();
		if (pid != 0)
			continue;
		char value[16];
		snprintf(value, sizeof(value), "%d", rank);
		setenv("RANK", value, 1); /* overridden by the communicator's own rank */
		ncclComm_t comm, half;
		cudaStream_t s;
		float *buf;
		CHECK(cudaStreamCreate(&s));
		CHECK(cudaMalloc((void **)&buf, 1024 * sizeof(float)));
		NCHECK(ncclCommInitRank(&comm, nranks, id, rank));
		float host[1024];
		for (int i = 0; i < 1024; i++)
			host[i] = (float)(rank + 1);
		CHECK(cudaMemcpy(buf, host, sizeof(host), cudaMemcpyHostToDevice));
		NCHECK(ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, s));
		NCHECK(ncclGroupStart());
		NCHECK(ncclSend(buf, 16, ncclFloat32, (rank + 1) % nranks, comm, s));
		NCHECK(ncclRecv(buf + 512, 16, ncclFloat32, (rank + nranks - 1) % nranks, comm, s));
		NCHECK(ncclGroupEnd());
		NCHECK(ncclCommSplit(comm, rank % 2, rank, &half, NULL));
		NCHECK(ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, half, s));
		CHECK(cudaStreamSynchronize(s));
		CHECK(cudaMemcpy(host, buf, sizeof(host), cudaMemcpyDeviceToHost));
		NCHECK(ncclCommDestroy(half));
		NCHECK(ncclCommDestroy(comm));
		float expect = (float)(nranks * (nranks + 1) / 2);
		printf("rank %d sum %s\n", rank, host[1000] == expect ? "ok" : "BAD");
		exit(0);
	}
	int failed = 0, status;
	while (wait(&status) > 0)
		failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	return failed;
}

/* ------------------------------------------------------------------ errno (SHIM-2) */

/* Sets errno to a marker before each call and prints what it is after: the program's errno must
 * be the same with and without the shim. The calls are those whose wrappers do extra work that
 * may touch errno: the process's first call (writer, CUPTI), a copy from pageable memory (the
 * driver is asked about the pointer), a sync point (stacks), a free, and NCCL's communicator
 * calls (the registry, the rank query of a split). */
#define ERRNO_AFTER(call)                                                                          \
	do {                                                                                       \
		errno = 4242;                                                                      \
		int result_ = (int)(call);                                                         \
		printf("%-16s -> %d, errno %d\n", #call, result_, errno);                          \
	} while (0)

static int errno_kept(void)
{
	static char pageable[1 << 16];
	void *dev = NULL;
	cudaStream_t s;
	ncclUniqueId id;
	ncclComm_t comm, half;
	NCHECK(ncclGetUniqueId(&id));
	ERRNO_AFTER(cudaMalloc(&dev, sizeof(pageable)));
	ERRNO_AFTER(cudaStreamCreate(&s));
	ERRNO_AFTER(cudaMemcpyAsync(dev, pageable, sizeof(pageable), cudaMemcpyHostToDevice, s));
	ERRNO_AFTER(cudaStreamSynchronize(s));
	ERRNO_AFTER(ncclCommInitRank(&comm, 1, id, 0));
	ERRNO_AFTER(ncclAllReduce(dev, dev, 16, ncclFloat32, ncclSum, comm, s));
	ERRNO_AFTER(ncclCommSplit(comm, 0, 0, &half, NULL));
	ERRNO_AFTER(ncclCommDestroy(half));
	ERRNO_AFTER(ncclCommDestroy(comm));
	ERRNO_AFTER(cudaStreamDestroy(s));
	ERRNO_AFTER(cudaFree(dev));
	return 0;
}

/* ------------------------------------------------------------------ life cycle */

/* The parent records, forks a child that records too, waits for it. */
static int fork_child(void)
{
	CHECK(cudaDeviceSynchronize());
	pid_t pid = fork();
	if (pid == 0) {
		CHECK(cudaDeviceSynchronize());
		CHECK(cudaDeviceSynchronize());
		exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	CHECK(cudaDeviceSynchronize());
	printf("child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}

/* Records, then replaces itself with `scenarios after-exec`, which records too. */
static int exec_self(const char *self)
{
	CHECK(cudaDeviceSynchronize());
	fflush(stdout);
	execl(self, self, "after-exec", (char *)NULL);
	perror("execl");
	return 1;
}

static int after_exec(void)
{
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaDeviceSynchronize());
	printf("after exec\n");
	return 0;
}

/* Records, then is killed by SIGTERM with the default action. */
static int sigterm_default(void)
{
	for (int i = 0; i < 4; i++)
		CHECK(cudaDeviceSynchronize());
	fflush(stdout);
	kill(getpid(), SIGTERM);
	sleep(5);
	return 3; /* not reached */
}

static volatile sig_atomic_t handled;
static void on_sigint(int sig)
{
	handled++;
}

/* Installs its own SIGINT handler after the shim started, gets SIGINT twice, goes on. */
static int sigint_handler(void)
{
	CHECK(cudaDeviceSynchronize());
	signal(SIGINT, on_sigint);
	raise(SIGINT);
	CHECK(cudaDeviceSynchronize());
	struct sigaction old;
	sigaction(SIGINT, NULL, &old);
	printf("handler kept: %s\n", old.sa_handler == on_sigint ? "yes" : "no");
	raise(SIGINT);
	printf("handled %d\n", (int)handled);
	return 0;
}

/* Never touches CUDA. */
static int no_cuda(void)
{
	printf("hello without CUDA\n");
	return 7;
}

/* Many calls: with a tiny buffer cap, some must be counted as dropped (never lost silently). */
static int flood(int calls)
{
	cudaEvent_t e;
	CHECK(cudaEventCreate(&e));
	for (int i = 0; i < calls; i++)
		CHECK(cudaEventRecord(e, 0));
	CHECK(cudaEventDestroy(e));
	printf("flood %d\n", calls);
	return 0;
}

/* Children that use CUDA and leave at once with _exit(): no destructor, no final drain (t854).
 * The parent records too, and waits for them all. */
static int quick_exit_children(int children)
{
	CHECK(cudaDeviceSynchronize());
	for (int i = 0; i < children; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 4;
		if (pid == 0) {
			cudaDeviceSynchronize();
			_exit(0);
		}
	}
	int failed = 0;
	for (int i = 0; i < children; i++) {
		int status;
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}
	CHECK(cudaDeviceSynchronize());
	printf("quick-exit %d children, %d failed\n", children, failed);
	return failed != 0;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "";
	if (!strcmp(name, "s1"))
		return s1_device_sync();
	if (!strcmp(name, "s2"))
		return s2_stream_sync();
	if (!strcmp(name, "s3"))
		return s3_event_sync();
	if (!strcmp(name, "s4"))
		return s4_blocking_copies();
	if (!strcmp(name, "s5"))
		return s5_async_copies();
	if (!strcmp(name, "s6"))
		return s6_implicit();
	if (!strcmp(name, "stack-limit"))
		return stack_limit(argc > 2 ? atoi(argv[2]) : 20, 0);
	if (!strcmp(name, "stack-limit-once"))
		return stack_limit(argc > 2 ? atoi(argv[2]) : 20, 1);
	if (!strcmp(name, "h2h"))
		return h2h_async_copies(argc > 2 ? atoi(argv[2]) : 12);
	if (!strcmp(name, "s7"))
		return s7_polling();
	if (!strcmp(name, "e123"))
		return e123_edges();
	if (!strcmp(name, "legacy-blocking"))
		return legacy(1, 0);
	if (!strcmp(name, "legacy-nonblocking"))
		return legacy(0, 0);
	if (!strcmp(name, "legacy-records"))
		return legacy(1, 1);
	if (!strcmp(name, "legacy-dtod"))
		return legacy_dtod(1);
	if (!strcmp(name, "legacy-dtod-nonblocking"))
		return legacy_dtod(0);
	if (!strcmp(name, "legacy-threads"))
		return legacy_threads(0);
	if (!strcmp(name, "legacy-threads-own"))
		return legacy_threads(1);
	if (!strcmp(name, "ptsz"))
		return ptsz_variants();
	if (!strcmp(name, "errors"))
		return errors();
	if (!strcmp(name, "threads"))
		return threads();
	if (!strcmp(name, "nccl"))
		return nccl_ranks(argc > 2 ? atoi(argv[2]) : 4);
	if (!strcmp(name, "errno"))
		return errno_kept();
	if (!strcmp(name, "fork"))
		return fork_child();
	if (!strcmp(name, "exec"))
		return exec_self(argv[0]);
	if (!strcmp(name, "after-exec"))
		return after_exec();
	if (!strcmp(name, "sigterm"))
		return sigterm_default();
	if (!strcmp(name, "sigint"))
		return sigint_handler();
	if (!strcmp(name, "nocuda"))
		return no_cuda();
	if (!strcmp(name, "quick-exit"))
		return quick_exit_children(argc > 2 ? atoi(argv[2]) : 8);
	if (!strcmp(name, "flood"))
		return flood(argc > 2 ? atoi(argv[2]) : 100000);
	fprintf(
	    stderr,
	    "usage: scenarios s1|s2|s3|s4|s5|s6|stack-limit [N]|stack-limit-once [N]|h2h [N]|s7|"
	    "e123|ptsz|errors|threads|nccl [N]|"
	    "errno|fork|exec|sigterm|sigint|nocuda|flood [N]|quick-exit [N]|legacy-blocking|"
	    "legacy-nonblocking|legacy-records|legacy-dtod|legacy-dtod-nonblocking|"
	    "legacy-threads|legacy-threads-own\n");
	return 2;
}
