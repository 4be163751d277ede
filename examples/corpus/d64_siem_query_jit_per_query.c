/*
 * examples/corpus/d64_siem_query_jit_per_query.c: corpus workload (CUDA driver API). The GPU
 * back end of a security analytics (SIEM) service: a day of firewall flow records, 64M rows in
 * device memory as columns (timestamp, source address, destination port, bytes), and the
 * analysts' dashboards sending filter-and-aggregate queries (a time window, a source subnet, a
 * port, a minimum size: count the flows, add up their kilobytes). The engine compiles every
 * query to a kernel: it writes the predicate into a PTX template with the query's literals as
 * immediates, JIT-compiles it with cuModuleLoadDataEx, looks the kernel up with
 * cuModuleGetFunction (with lazy loading this is where its code is loaded onto the device), runs
 * it over the table on its stream, downloads the two sums into a pinned ring and replies to the
 * previous query after its event, one query behind; a query's module is unloaded once its reply
 * is sent. The plan cache in front of the compiler is keyed by the query text, and the
 * dashboards refresh with new time bounds every time, so it never hits (not shown).
 * What is wrong: a JIT compilation, a module load and a module unload for every query. The
 * programming guide (just-in-time compilation) describes the device driver compiling PTX at load
 * time, which "increases application load time"; here it is paid on every query, on the host,
 * while the GPU has nothing but the previous query's scan queued, and loading and unloading a
 * module allocates and frees the device memory of its code. Keeping the literals out of the code
 * (kernel parameters, one module loaded once) is the fix.
 * Planted: the cuModuleLoadDataEx and the cuModuleGetFunction in compile_query() and the
 * cuModuleUnload in release_query(), every query (one problem, three lines).
 * Clean: the setup allocations and uploads of the table, the setup sync, the per-query download
 * of the sums into the pinned ring and the one-query-behind cuEventSynchronize (the reply needs
 * the sums), the last query's wait, teardown. The per-query cuMemsetD32Async of the sums is an
 * enqueue (unmarked).
 * Per query (estimates, H100): a scan of 64M rows (14 bytes a row, about 0.35-0.45 ms); a PTX
 * JIT of the predicate kernel (ptxas alone takes about 10 ms on this machine's CPU for it) and
 * a module load and unload. The checks, after the loop: every query's count and kilobytes equal
 * a scan of the query's time window on the host (the rows are sorted by time).
 *   d64_siem_query_jit_per_query driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { NROWS = 64 << 20, NQ = 40, THREADS = 256, BLOCKS_PER_SM = 8, DAY = 86400, PTX_MAX = 8192 };

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

struct query {
	unsigned t0, t1, mask, net, port, bmin;
	char text[256];
};

static const unsigned PORTS[8] = {443, 80, 53, 22, 3389, 445, 8080, 25};
static const unsigned NETS[4][2] = {{0xfff00000u, 0x0a100000u}, {0xffff0000u, 0x0a140000u}, {0xff000000u, 0x0a000000u}, {0, 0}};
static const unsigned BMIN[4] = {0, 1024, 65536, 1048576};

/* the dashboards' q-th query */
static void make_query(int q, struct query *Q)
{
	uint32_t a = mix32((uint32_t)q * 4u + 1u), b = mix32((uint32_t)q * 4u + 2u), c = mix32((uint32_t)q * 4u + 3u);
	uint32_t d = mix32((uint32_t)q * 4u + 4u);
	Q->t0 = a % (DAY - 4 * 3600);
	Q->t1 = Q->t0 + 3600u * (1u + b % 4u);
	Q->port = PORTS[c % 8u];
	Q->mask = NETS[d % 4u][0];
	Q->net = NETS[d % 4u][1];
	Q->bmin = BMIN[(d >> 8) % 4u];
	snprintf(Q->text, sizeof Q->text,
		 "SELECT count(*), sum(bytes)/1024 FROM flows WHERE ts >= %u AND ts < %u AND src & %u = %u AND "
		 "dst_port = %u AND bytes >= %u",
		 Q->t0, Q->t1, Q->mask, Q->net, Q->port, Q->bmin);
}

/* the code generator's template: a grid-stride scan, the predicate's literals as immediates, the
 * per-thread sums added up a warp at a time (redux.sync) and atomically into out[0], out[1] */
#define PTX_TEMPLATE \
	".version 8.0\n" \
	".target sm_90\n" \
	".address_size 64\n" \
	"\n" \
	"// %s\n" \
	".visible .entry siem_q(\n" \
	"\t.param .u64 p_ts,\n" \
	"\t.param .u64 p_src,\n" \
	"\t.param .u64 p_port,\n" \
	"\t.param .u64 p_bytes,\n" \
	"\t.param .u32 p_n,\n" \
	"\t.param .u64 p_out\n" \
	")\n" \
	"{\n" \
	"\t.reg .pred %%p<8>;\n" \
	"\t.reg .b16 %%h<4>;\n" \
	"\t.reg .b32 %%r<24>;\n" \
	"\t.reg .b64 %%rd<20>;\n" \
	"\n" \
	"\tld.param.u64 %%rd1, [p_ts];\n" \
	"\tld.param.u64 %%rd2, [p_src];\n" \
	"\tld.param.u64 %%rd3, [p_port];\n" \
	"\tld.param.u64 %%rd4, [p_bytes];\n" \
	"\tld.param.u32 %%r1, [p_n];\n" \
	"\tld.param.u64 %%rd5, [p_out];\n" \
	"\tcvta.to.global.u64 %%rd1, %%rd1;\n" \
	"\tcvta.to.global.u64 %%rd2, %%rd2;\n" \
	"\tcvta.to.global.u64 %%rd3, %%rd3;\n" \
	"\tcvta.to.global.u64 %%rd4, %%rd4;\n" \
	"\tcvta.to.global.u64 %%rd5, %%rd5;\n" \
	"\tmov.u32 %%r2, %%ctaid.x;\n" \
	"\tmov.u32 %%r3, %%ntid.x;\n" \
	"\tmov.u32 %%r4, %%tid.x;\n" \
	"\tmad.lo.u32 %%r5, %%r2, %%r3, %%r4;\n" \
	"\tmov.u32 %%r6, %%nctaid.x;\n" \
	"\tmul.lo.u32 %%r7, %%r6, %%r3;\n" \
	"\tmov.u32 %%r8, 0;\n" \
	"\tmov.u32 %%r9, 0;\n" \
	"\tsetp.ge.u32 %%p1, %%r5, %%r1;\n" \
	"\t@%%p1 bra DONE;\n" \
	"LOOP:\n" \
	"\tmul.wide.u32 %%rd6, %%r5, 4;\n" \
	"\tadd.s64 %%rd7, %%rd1, %%rd6;\n" \
	"\tld.global.nc.u32 %%r10, [%%rd7];\n" \
	"\tadd.s64 %%rd8, %%rd2, %%rd6;\n" \
	"\tld.global.nc.u32 %%r11, [%%rd8];\n" \
	"\tadd.s64 %%rd9, %%rd4, %%rd6;\n" \
	"\tld.global.nc.u32 %%r12, [%%rd9];\n" \
	"\tmul.wide.u32 %%rd10, %%r5, 2;\n" \
	"\tadd.s64 %%rd11, %%rd3, %%rd10;\n" \
	"\tld.global.nc.u16 %%h1, [%%rd11];\n" \
	"\tcvt.u32.u16 %%r13, %%h1;\n" \
	"\tsetp.ge.u32 %%p2, %%r10, %u;\n" \
	"\tsetp.lt.and.u32 %%p2, %%r10, %u, %%p2;\n" \
	"\tand.b32 %%r14, %%r11, %u;\n" \
	"\tsetp.eq.and.u32 %%p2, %%r14, %u, %%p2;\n" \
	"\tsetp.eq.and.u32 %%p2, %%r13, %u, %%p2;\n" \
	"\tsetp.ge.and.u32 %%p2, %%r12, %u, %%p2;\n" \
	"\tselp.u32 %%r15, 1, 0, %%p2;\n" \
	"\tadd.u32 %%r8, %%r8, %%r15;\n" \
	"\tshr.u32 %%r16, %%r12, 10;\n" \
	"\tselp.u32 %%r17, %%r16, 0, %%p2;\n" \
	"\tadd.u32 %%r9, %%r9, %%r17;\n" \
	"\tadd.u32 %%r5, %%r5, %%r7;\n" \
	"\tsetp.lt.u32 %%p3, %%r5, %%r1;\n" \
	"\t@%%p3 bra LOOP;\n" \
	"DONE:\n" \
	"\tredux.sync.add.u32 %%r18, %%r8, -1;\n" \
	"\tredux.sync.add.u32 %%r19, %%r9, -1;\n" \
	"\tmov.u32 %%r20, %%laneid;\n" \
	"\tsetp.ne.u32 %%p4, %%r20, 0;\n" \
	"\t@%%p4 bra END;\n" \
	"\tcvt.u64.u32 %%rd12, %%r18;\n" \
	"\tred.global.add.u64 [%%rd5], %%rd12;\n" \
	"\tcvt.u64.u32 %%rd13, %%r19;\n" \
	"\tred.global.add.u64 [%%rd5+8], %%rd13;\n" \
	"END:\n" \
	"\tret;\n" \
	"}\n"

/* the query's kernel: its PTX, JIT-compiled and loaded */
static CUfunction compile_query(const struct query *Q, CUmodule *mod)
{
	static char ptx[PTX_MAX], jit_log[4096];
	CUfunction fn;
	snprintf(ptx, sizeof ptx, PTX_TEMPLATE, Q->text, Q->t0, Q->t1, Q->mask, Q->net, Q->port, Q->bmin);
	CUjit_option opts[3] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_OPTIMIZATION_LEVEL};
	void *vals[3] = {jit_log, (void *)(uintptr_t)sizeof jit_log, (void *)(uintptr_t)4};
	CUresult r = cuModuleLoadDataEx(mod, ptx, 3, opts, vals); // SYNCSPY-PROBLEM: a PTX JIT and a module load for every query
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "d64: JIT failed: %s\n", jit_log);
		exit(1);
	}
	DCHECK(cuModuleGetFunction(&fn, *mod, "siem_q")); // SYNCSPY-PROBLEM: a fresh module's kernel, loaded onto the device for every query
	return fn;
}

static void release_query(CUmodule mod)
{
	DCHECK(cuModuleUnload(mod)); // SYNCSPY-PROBLEM: the query's module unloaded after its reply, every query
}

int main(int argc, char **argv)
{
	const char *name = "d64_siem_query_jit_per_query";
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx), mods[2];
	CUdevice dev;
	CUstream s;
	CUevent done[2];
	CUdeviceptr d_ts, d_src, d_port, d_bytes, d_out;
	unsigned long long *ring[2], results[NQ][2];
	unsigned *ts = (unsigned *)malloc((size_t)NROWS * 4), *src = (unsigned *)malloc((size_t)NROWS * 4);
	unsigned *bytes = (unsigned *)malloc((size_t)NROWS * 4);
	unsigned short *port = (unsigned short *)malloc((size_t)NROWS * 2);
	struct query queries[NQ];
	int sms;

	for (unsigned i = 0; i < NROWS; i++) { /* the day's flows, sorted by time */
		uint32_t a = mix32(i * 2u + 1u), b = mix32(i ^ 0x9e3779b9u), c = mix32(i * 3u + 7u), p = b % 100u;
		ts[i] = (unsigned)((unsigned long long)i * DAY / NROWS);
		src[i] = a % 10u < 7u ? 0x0a000000u | (16u + (a >> 4) % 16u) << 16 | (a >> 8 & 0xffffu) : mix32(a) | 0x01000000u;
		port[i] = (unsigned short)(p < 35 ? 443 : p < 50 ? 80 : p < 60 ? 53 : p < 65 ? 22 : p < 70 ? 3389 : p < 75 ? 445
					    : p < 80 ? 8080 : p < 85 ? 25 : 1024 + (b >> 8) % 64512u);
		bytes[i] = c % 100u < 95u ? (c >> 8) % 65536u : (c >> 8) % 16777216u;
	}
	for (int q = 0; q < NQ; q++)
		make_query(q, &queries[q]);

	DCHECK(cuDeviceGet(&dev, 0));
	DCHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	DCHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&d_ts, (size_t)NROWS * 4)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_src, (size_t)NROWS * 4)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_port, (size_t)NROWS * 2)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_bytes, (size_t)NROWS * 4)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_out, 2 * 2 * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemAllocHost((void **)&ring[k], 2 * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup, the pinned reply ring
		DCHECK(cuEventCreate(&done[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuMemcpyHtoD(d_ts, ts, (size_t)NROWS * 4)); // SYNCSPY-CLEAN: setup upload of the table
	DCHECK(cuMemcpyHtoD(d_src, src, (size_t)NROWS * 4)); // SYNCSPY-CLEAN: setup upload of the table
	DCHECK(cuMemcpyHtoD(d_port, port, (size_t)NROWS * 2)); // SYNCSPY-CLEAN: setup upload of the table
	DCHECK(cuMemcpyHtoD(d_bytes, bytes, (size_t)NROWS * 4)); // SYNCSPY-CLEAN: setup upload of the table
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup, the table in place before the queries

	unsigned n = NROWS;
	for (int q = 0; q < NQ; q++) {
		int k = q % 2;
		CUfunction fn = compile_query(&queries[q], &mods[k]);
		CUdeviceptr out = d_out + k * 2 * sizeof(unsigned long long);
		DCHECK(cuMemsetD32Async(out, 0, 4, s));
		void *args[] = {&d_ts, &d_src, &d_port, &d_bytes, &n, &out};
		DCHECK(cuLaunchKernel(fn, (unsigned)(sms * BLOCKS_PER_SM), 1, 1, THREADS, 1, 1, 0, s, args, NULL));
		DCHECK(cuMemcpyDtoHAsync(ring[k], out, 2 * sizeof(unsigned long long), s)); // SYNCSPY-CLEAN: into the pinned reply ring
		DCHECK(cuEventRecord(done[k], s));
		if (q > 0) { /* the reply to the previous query */
			DCHECK(cuEventSynchronize(done[k ^ 1])); // SYNCSPY-CLEAN: the reply needs the sums, one query behind
			results[q - 1][0] = ring[k ^ 1][0], results[q - 1][1] = ring[k ^ 1][1];
			release_query(mods[k ^ 1]);
		}
	}
	int last = (NQ - 1) % 2;
	DCHECK(cuEventSynchronize(done[last])); // SYNCSPY-CLEAN: the last query's reply
	results[NQ - 1][0] = ring[last][0], results[NQ - 1][1] = ring[last][1];
	release_query(mods[last]);

	/* the checks: each query against a scan of its time window on the host */
	unsigned long long rows = 0, kb = 0, checksum = 14695981039346656037ull;
	for (int q = 0; q < NQ; q++) {
		const struct query *Q = &queries[q];
		unsigned lo = 0, hi = NROWS, m;
		while (lo < hi) { /* the first row at or after t0 */
			m = lo + (hi - lo) / 2;
			if (ts[m] < Q->t0)
				lo = m + 1;
			else
				hi = m;
		}
		unsigned long long want_n = 0, want_kb = 0;
		for (unsigned i = lo; i < NROWS && ts[i] < Q->t1; i++)
			if ((src[i] & Q->mask) == Q->net && port[i] == Q->port && bytes[i] >= Q->bmin)
				want_n++, want_kb += bytes[i] >> 10;
		if (results[q][0] != want_n || results[q][1] != want_kb) {
			fprintf(stderr, "%s: query %d: %llu flows, %llu KB; want %llu, %llu\n", name, q, results[q][0],
				results[q][1], want_n, want_kb);
			return 1;
		}
		rows += want_n, kb += want_kb;
		checksum = (checksum ^ want_n ^ (want_kb << 24)) * 1099511628211ull;
	}

	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemFreeHost(ring[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(done[k]));
	}
	DCHECK(cuMemFree(d_ts)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_src)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_port)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_bytes)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_out)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	free(ts);
	free(src);
	free(bytes);
	free(port);
	printf("%s: queries=%d rows=%llu kb=%llu checksum=%016llx result=OK\n", name, NQ, rows, kb, checksum);
	return 0;
}
