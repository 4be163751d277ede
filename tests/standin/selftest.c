/* SPDX-License-Identifier: MIT */
/*
 * selftest.c: proves the CPU stand-ins (libcuda.so.1, libcudart.so.13, libnccl.so.2) behave
 * like the real libraries on their own, before any syncspy test relies on them.
 *
 * Linked against the three by soname and run by selftest.sh with LD_LIBRARY_PATH set to the
 * build directory. Prints one line per check ("ok"/"FAIL") and exits non-zero on any failure.
 *
 * The NCCL checks run first, in forked children, while this process has not touched CUDA yet:
 * like the real driver, the stand-in's worker threads do not survive fork().
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

static int failures;

static void check(bool ok, const char *what, const char *detail_fmt, ...)
    __attribute__((format(printf, 3, 4)));

#include <stdarg.h>
static void check(bool ok, const char *what, const char *detail_fmt, ...)
{
	char detail[256] = "";
	va_list ap;

	va_start(ap, detail_fmt);
	vsnprintf(detail, sizeof(detail), detail_fmt, ap);
	va_end(ap);
	printf("%-4s %-52s %s\n", ok ? "ok" : "FAIL", what, detail);
	fflush(stdout);
	if (!ok)
		failures++;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms)
{
	struct timespec ts = {(time_t)(ms / 1e3),
			      (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};

	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ kernels (host functions) */

/* The stand-in kernel convention: the kernel handle is void (*)(void *), called with the
 * value of the first kernel parameter. */
struct sleep_arg {
	double ms;
	int *flag_to_set;  /* set to 1 at the end, if not NULL */
	int *flag_to_read; /* copied into *seen at the start, if not NULL */
	int *seen;
};

static void sleep_kernel(void *p)
{
	struct sleep_arg *a = p;

	/* atomics: in the non-blocking check the reader races the writer on purpose */
	if (a->flag_to_read)
		__atomic_store_n(a->seen, __atomic_load_n(a->flag_to_read, __ATOMIC_SEQ_CST),
				 __ATOMIC_SEQ_CST);
	sleep_ms(a->ms);
	if (a->flag_to_set)
		__atomic_store_n(a->flag_to_set, 1, __ATOMIC_SEQ_CST);
}

static cudaError_t launch(struct sleep_arg *arg, cudaStream_t s)
{
	void *args[] = {&arg};
	dim3 one = {1, 1, 1};

	return cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, s);
}

/* ------------------------------------------------------------------ CUDA checks */

static void check_stream_sync(void)
{
	cudaStream_t s;
	struct sleep_arg a = {.ms = 20};

	cudaStreamCreate(&s);
	double t0 = now_ms();
	cudaError_t lr = launch(&a, s);
	double t_launch = now_ms() - t0;
	cudaError_t q = cudaStreamQuery(s);
	cudaError_t r = cudaStreamSynchronize(s);
	double t_sync = now_ms() - t0;
	cudaError_t q2 = cudaStreamQuery(s);

	check(lr == cudaSuccess && t_launch < 5, "kernel launch returns at once", "%.2f ms",
	      t_launch);
	check(q == cudaErrorNotReady, "cudaStreamQuery while the kernel runs", "-> %s",
	      cudaGetErrorName(q));
	check(r == cudaSuccess && t_sync >= 19 && t_sync < 200,
	      "cudaStreamSynchronize blocks ~20 ms", "%.1f ms", t_sync);
	check(q2 == cudaSuccess, "cudaStreamQuery after sync", "-> %s", cudaGetErrorName(q2));
	cudaStreamDestroy(s);
}

static void check_events(void)
{
	cudaStream_t s;
	cudaEvent_t a, b, never;
	struct sleep_arg k = {.ms = 20};
	float ms = -1;

	cudaStreamCreate(&s);
	cudaEventCreate(&a);
	cudaEventCreate(&b);
	cudaEventCreate(&never);
	cudaEventRecord(a, s);
	launch(&k, s);
	cudaEventRecord(b, s);
	cudaError_t q = cudaEventQuery(b);
	cudaError_t e_early = cudaEventElapsedTime(&ms, a, b);
	double t0 = now_ms();
	cudaError_t sy = cudaEventSynchronize(b);
	double waited = now_ms() - t0;
	cudaError_t q2 = cudaEventQuery(b);
	cudaError_t el = cudaEventElapsedTime(&ms, a, b);

	check(q == cudaErrorNotReady, "cudaEventQuery before the event", "-> %s",
	      cudaGetErrorName(q));
	check(e_early == cudaErrorNotReady, "cudaEventElapsedTime before completion", "-> %s",
	      cudaGetErrorName(e_early));
	check(sy == cudaSuccess && waited >= 15, "cudaEventSynchronize waits", "%.1f ms", waited);
	check(q2 == cudaSuccess, "cudaEventQuery after the event", "-> %s", cudaGetErrorName(q2));
	check(el == cudaSuccess && ms >= 19 && ms < 200, "cudaEventElapsedTime ~20 ms", "%.2f ms",
	      ms);
	check(cudaEventQuery(never) == cudaSuccess, "never-recorded event is complete", "-");

	/* cudaStreamWaitEvent: s2 waits for s without blocking the host */
	cudaStream_t s2;
	int flag = 0, seen = -1;
	struct sleep_arg slow = {.ms = 30, .flag_to_set = &flag};
	struct sleep_arg reader = {.ms = 0, .flag_to_read = &flag, .seen = &seen};
	cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
	launch(&slow, s);
	cudaEventRecord(a, s);
	t0 = now_ms();
	cudaStreamWaitEvent(s2, a, 0);
	launch(&reader, s2);
	double host = now_ms() - t0;
	cudaStreamSynchronize(s2);
	check(seen == 1 && host < 5, "cudaStreamWaitEvent orders, host not blocked",
	      "seen=%d host=%.2f ms", seen, host);

	cudaEventDestroy(a);
	cudaEventDestroy(b);
	cudaEventDestroy(never);
	cudaStreamDestroy(s);
	cudaStreamDestroy(s2);
}

static void check_legacy_stream(void)
{
	cudaStream_t blocking, nonblocking;
	int flag = 0, seen = -1;

	cudaStreamCreate(&blocking);
	cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking);

	/* legacy work waits for prior work in blocking streams */
	struct sleep_arg slow = {.ms = 30, .flag_to_set = &flag};
	struct sleep_arg reader = {.ms = 0, .flag_to_read = &flag, .seen = &seen};
	launch(&slow, blocking);
	launch(&reader, 0);
	cudaDeviceSynchronize();
	check(seen == 1, "legacy stream waits for a blocking stream", "seen=%d", seen);

	/* later blocking-stream work waits for prior legacy work */
	flag = 0;
	seen = -1;
	launch(&slow, 0);
	launch(&reader, blocking);
	cudaDeviceSynchronize();
	check(seen == 1, "blocking stream waits for the legacy stream", "seen=%d", seen);

	/* non-blocking streams are exempt */
	flag = 0;
	seen = -1;
	launch(&slow, nonblocking);
	launch(&reader, 0);
	cudaStreamSynchronize(0);
	int seen_nb = seen;
	cudaDeviceSynchronize();
	check(seen_nb == 0, "non-blocking stream does not order with legacy", "seen=%d", seen_nb);

	/* cudaStreamPerThread behaves as a blocking stream of its own */
	flag = 0;
	seen = -1;
	launch(&slow, cudaStreamPerThread);
	launch(&reader, cudaStreamLegacy);
	cudaDeviceSynchronize();
	check(seen == 1, "legacy stream waits for the per-thread stream", "seen=%d", seen);

	cudaStreamDestroy(blocking);
	cudaStreamDestroy(nonblocking);
}

extern __typeof__(cudaLaunchKernel) cudaLaunchKernel_ptsz;
extern __typeof__(cudaStreamSynchronize) cudaStreamSynchronize_ptsz;
extern __typeof__(cudaStreamQuery) cudaStreamQuery_ptsz;

/* In _ptsz entry points stream 0 is the calling thread's own per-thread default stream. */
static void *per_thread_worker(void *arg)
{
	struct sleep_arg k = {.ms = 30};
	void *args[] = {&(struct sleep_arg *){&k}};
	dim3 one = {1, 1, 1};
	double *waited = arg;

	cudaLaunchKernel_ptsz((const void *)sleep_kernel, one, one, args, 0, 0);
	double t0 = now_ms();
	cudaStreamSynchronize_ptsz(0);
	*waited = now_ms() - t0;
	return NULL;
}

static void check_per_thread_stream(void)
{
	pthread_t t;
	double waited = -1;
	struct sleep_arg k = {.ms = 30};
	void *args[] = {&(struct sleep_arg *){&k}};
	dim3 one = {1, 1, 1};

	cudaLaunchKernel_ptsz((const void *)sleep_kernel, one, one, args, 0, 0);
	cudaError_t mine = cudaStreamQuery_ptsz(0);
	pthread_create(&t, NULL, per_thread_worker, &waited);
	pthread_join(t, NULL);
	cudaStreamSynchronize_ptsz(0);
	check(mine == cudaErrorNotReady && waited >= 25 && waited < 200,
	      "_ptsz: stream 0 is the thread's own stream", "other thread waited %.1f ms", waited);
}

static void check_copies(void)
{
	const size_t n = 16u << 20; /* 16 MiB: 8 ms pinned, 32 ms pageable at 2 GB/s */
	cudaStream_t s;
	void *dev;
	char *pinned, *pageable = malloc(n), *back = malloc(n);

	cudaStreamCreate(&s);
	cudaMalloc(&dev, n);
	cudaMallocHost((void **)&pinned, n);
	for (size_t i = 0; i < n; i++)
		pageable[i] = (char)(i * 7 + 3);
	memcpy(pinned, pageable, n);

	double t0 = now_ms();
	cudaMemcpyAsync(dev, pageable, n, cudaMemcpyHostToDevice, s);
	double t_pageable = now_ms() - t0;
	cudaStreamSynchronize(s);

	t0 = now_ms();
	cudaMemcpyAsync(dev, pinned, n, cudaMemcpyHostToDevice, s);
	double t_pinned = now_ms() - t0;
	cudaError_t q = cudaStreamQuery(s);
	cudaStreamSynchronize(s);
	double t_pinned_done = now_ms() - t0;

	check(t_pageable >= 25, "pageable cudaMemcpyAsync blocks the host", "%.1f ms", t_pageable);
	/* the query right after the call proves the copy was still running when it returned; the
	 * time bound is relative, as a loaded machine (CI runs tests in parallel) slows both */
	check(t_pinned < t_pageable / 2 && q == cudaErrorNotReady,
	      "pinned cudaMemcpyAsync returns at once", "%.2f ms, query %s, done after %.1f ms",
	      t_pinned, cudaGetErrorName(q), t_pinned_done);

	memset(back, 0, n);
	t0 = now_ms();
	cudaError_t r = cudaMemcpy(back, dev, n, cudaMemcpyDeviceToHost);
	double t_d2h = now_ms() - t0;
	check(r == cudaSuccess && memcmp(back, pageable, n) == 0 && t_d2h >= 25,
	      "cudaMemcpy D2H returns the right bytes when done", "%.1f ms", t_d2h);

	cudaMemset(dev, 0x5a, 4096);
	cudaMemcpy(back, dev, 4096, cudaMemcpyDefault);
	bool all = true;
	for (int i = 0; i < 4096; i++)
		all = all && back[i] == 0x5a;
	check(all, "cudaMemset + cudaMemcpyDefault", "-");

	struct cudaPointerAttributes at;
	cudaError_t a1 = cudaPointerGetAttributes(&at, pageable);
	enum cudaMemoryType t_pageable_type = at.type;
	cudaPointerGetAttributes(&at, pinned);
	enum cudaMemoryType t_pinned_type = at.type;
	cudaPointerGetAttributes(&at, (char *)dev + 100);
	check(a1 == cudaSuccess && t_pageable_type == cudaMemoryTypeUnregistered &&
		  t_pinned_type == cudaMemoryTypeHost && at.type == cudaMemoryTypeDevice,
	      "cudaPointerGetAttributes from the registry", "%d %d %d", t_pageable_type,
	      t_pinned_type, at.type);

	CUresult cr = cuPointerGetAttribute(&(unsigned int){0}, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					    (CUdeviceptr)(uintptr_t)pageable);
	check(cr == CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute on pageable memory", "-> %d",
	      cr);

	cudaFreeHost(pinned);
	cudaFree(dev);
	cudaStreamDestroy(s);
	free(pageable);
	free(back);
}

static void check_errors_and_graphs(void)
{
	cudaGetLastError();
	cudaError_t e = cudaStreamSynchronize((cudaStream_t)(uintptr_t)0xdead0);
	cudaError_t peek = cudaPeekAtLastError();
	cudaError_t last = cudaGetLastError();
	cudaError_t after = cudaGetLastError();
	check(e == cudaErrorInvalidResourceHandle && peek == e && last == e && after == cudaSuccess,
	      "invalid handle and sticky last error", "%s", cudaGetErrorName(e));

	/* capture three 10 ms kernels, launch the graph twice */
	cudaStream_t s;
	cudaGraph_t g;
	cudaGraphExec_t x;
	struct sleep_arg k = {.ms = 10};
	cudaStreamCreate(&s);
	cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
	for (int i = 0; i < 3; i++)
		launch(&k, s);
	double t0 = now_ms();
	cudaStreamEndCapture(s, &g);
	double captured = now_ms() - t0;
	cudaGraphInstantiate(&x, g, 0);
	cudaGraphUpload(x, s);
	t0 = now_ms();
	cudaGraphLaunch(x, s);
	cudaGraphLaunch(x, s);
	cudaStreamSynchronize(s);
	double ran = now_ms() - t0;
	check(captured < 5 && ran >= 55 && ran < 500, "stream capture + graph launch x2", "%.1f ms",
	      ran);
	cudaGraphExecDestroy(x);
	cudaGraphDestroy(g);
	cudaStreamDestroy(s);

	/* the driver hands out per-thread variants */
	void *legacy = NULL, *pts = NULL;
	CUdriverProcAddressQueryResult st;
	cuGetProcAddress("cuStreamSynchronize", &legacy, 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
			 &st);
	cuGetProcAddress("cuStreamSynchronize", &pts, 13000,
			 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st);
	void *unknown = (void *)1;
	CUresult ur = cuGetProcAddress("cuNoSuchFunction", &unknown, 13000, 0, &st);
	check(legacy && pts && legacy != pts && ur == CUDA_ERROR_NOT_FOUND && !unknown &&
		  st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
	      "cuGetProcAddress legacy / per-thread / unknown", "-");

	char name[64] = "";
	struct cudaDeviceProp prop;
	cudaGetDeviceProperties(&prop, 0);
	cuDeviceGetName(name, sizeof(name), 0);
	check(strcmp(prop.name, "syncspy CPU stand-in") == 0 && strcmp(name, prop.name) == 0,
	      "device name", "%s", prop.name);
}

/* ------------------------------------------------------------------ NCCL checks (children) */

static int rank_allreduce(ncclUniqueId id, int rank, int nranks)
{
	const size_t n = 3u << 20; /* floats: 12 MiB, several chunks of the 4 MiB slot */
	ncclComm_t comm;
	cudaStream_t s;
	float *host = malloc(n * sizeof(float)), *dev;
	int bad = 0;

	if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess)
		return 10;
	cudaStreamCreate(&s);
	cudaMalloc((void **)&dev, n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		host[i] = (float)(rank + 1) * (float)(i % 1000);
	cudaMemcpy(dev, host, n * sizeof(float), cudaMemcpyHostToDevice);
	if (ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s) != ncclSuccess)
		return 11;
	cudaStreamSynchronize(s);
	cudaMemcpy(host, dev, n * sizeof(float), cudaMemcpyDeviceToHost);
	float factor = (float)(nranks * (nranks + 1) / 2);
	for (size_t i = 0; i < n; i++)
		bad += host[i] != factor * (float)(i % 1000);

	/* int64 max and an allgather in the same group */
	int64_t v = rank * 10, mx = -1, all[16];
	ncclGroupStart();
	ncclAllReduce(&v, &mx, 1, ncclInt64, ncclMax, comm, s);
	ncclAllGather(&v, all, 1, ncclInt64, comm, s);
	ncclGroupEnd();
	cudaStreamSynchronize(s);
	bad += mx != (nranks - 1) * 10;
	for (int r = 0; r < nranks; r++)
		bad += all[r] != r * 10;

	if (bad)
		return 12;

	/* reduce-scatter, all-to-all, broadcast, half and bfloat16 sums */
	int32_t rs_in[64], rs_out[16], a2a_in[16], a2a_out[16], bc = rank == 2 ? 77 : 0;
	uint16_t h_in = 0x3c00 /* 1.0 */, h_out = 0, b_in = 0x3f80 /* 1.0 */, b_out = 0;
	for (int i = 0; i < nranks * 4; i++)
		rs_in[i] = i + rank;
	for (int p = 0; p < nranks; p++)
		a2a_in[p] = rank * 100 + p;
	ncclReduceScatter(rs_in, rs_out, 4, ncclInt32, ncclSum, comm, s);
	ncclAlltoAll(a2a_in, a2a_out, 1, ncclInt32, comm, s);
	ncclBcast(&bc, 1, ncclInt32, 2, comm, s);
	ncclAllReduce(&h_in, &h_out, 1, ncclFloat16, ncclSum, comm, s);
	ncclAllReduce(&b_in, &b_out, 1, ncclBfloat16, ncclAvg, comm, s);
	cudaStreamSynchronize(s);
	for (int i = 0; i < 4; i++)
		bad += rs_out[i] != nranks * (rank * 4 + i) + nranks * (nranks - 1) / 2;
	for (int p = 0; p < nranks; p++)
		bad += a2a_out[p] != p * 100 + rank;
	bad += bc != 77;
	bad += h_out != 0x4400; /* 4.0 for 4 ranks */
	bad += b_out != 0x3f80; /* avg of 1.0 */
	if (bad)
		return 13;

	/* split into even and odd ranks, ordered by descending key */
	ncclComm_t half;
	int sub_rank = -1, sub_n = -1, sum = 0, one = 1;
	if (ncclCommSplit(comm, rank % 2, -rank, &half, NULL) != ncclSuccess)
		return 14;
	ncclCommUserRank(half, &sub_rank);
	ncclCommCount(half, &sub_n);
	ncclAllReduce(&one, &sum, 1, ncclInt32, ncclSum, half, s);
	cudaStreamSynchronize(s);
	bad += sub_n != nranks / 2 || sum != nranks / 2 || sub_rank != (nranks - 1 - rank) / 2;
	ncclCommDestroy(half);

	ncclCommDestroy(comm);
	cudaFree(dev);
	free(host);
	return bad ? 15 : 0;
}

static int rank_sendrecv(ncclUniqueId id, int rank)
{
	const size_t n = 1u << 20; /* ints: 4 MiB, larger than the 1 MiB mailbox */
	ncclComm_t comm;
	cudaStream_t s;
	int *out = malloc(n * sizeof(int)), *in = malloc(n * sizeof(int)), bad = 0;
	int peer = 1 - rank;

	if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess)
		return 20;
	cudaStreamCreate(&s);
	for (size_t i = 0; i < n; i++)
		out[i] = (int)i * 2 + rank;
	/* symmetric send-then-recv of a small message: buffered, no group needed */
	int small_out = 100 + rank, small_in = -1;
	ncclSend(&small_out, 1, ncclInt32, peer, comm, s);
	ncclRecv(&small_in, 1, ncclInt32, peer, comm, s);
	/* a large exchange inside a group */
	ncclGroupStart();
	ncclSend(out, n, ncclInt32, peer, comm, s);
	ncclRecv(in, n, ncclInt32, peer, comm, s);
	ncclGroupEnd();
	cudaStreamSynchronize(s);
	bad += small_in != 100 + peer;
	for (size_t i = 0; i < n; i++)
		bad += in[i] != (int)i * 2 + peer;
	ncclResult_t async;
	ncclCommGetAsyncError(comm, &async);
	bad += async != ncclSuccess;
	ncclCommDestroy(comm);
	free(out);
	free(in);
	return bad ? 21 : 0;
}

/* Forks nranks children running fn; true when all exit 0. */
static bool run_ranks(int nranks, int (*fn)(ncclUniqueId, int, int), char *detail, size_t len)
{
	ncclUniqueId id;
	pid_t pids[16];

	ncclGetUniqueId(&id);
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			alarm(60);
			_exit(fn(id, r, nranks));
		}
	}
	bool ok = true;
	detail[0] = 0;
	for (int r = 0; r < nranks; r++) {
		int st;
		waitpid(pids[r], &st, 0);
		int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		size_t used = strlen(detail);
		snprintf(detail + used, len - used, "%sr%d=%d", r ? " " : "", r, code);
		ok = ok && code == 0;
	}
	return ok;
}

static int sendrecv_entry(ncclUniqueId id, int rank, int nranks)
{
	return rank_sendrecv(id, rank);
}

int main(void)
{
	char detail[128];
	int version = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ncclGetVersion(&version);
	check(version == NCCL_VERSION_CODE, "ncclGetVersion", "%d", version);
	double t0 = now_ms();
	bool ok = run_ranks(4, rank_allreduce, detail, sizeof(detail));
	check(ok, "4-rank collectives, group, split", "%s, %.0f ms", detail, now_ms() - t0);
	ok = run_ranks(2, sendrecv_entry, detail, sizeof(detail));
	check(ok, "2-rank ncclSend/ncclRecv (buffered + group)", "%s", detail);

	check_stream_sync();
	check_events();
	check_legacy_stream();
	check_per_thread_stream();
	check_copies();
	check_errors_and_graphs();

	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
