/*
 * report/rules/async_alloc_slow.c: the async-alloc-slow rule (docs/rules.md), a site rule on the
 * aggregate (SS_RULE_SITE): stream-ordered allocations (cudaMallocAsync,
 * cudaMallocFromPoolAsync, cuMemAllocAsync, cuMemAllocFromPoolAsync) that take long on the host
 * in the steady state, per call site. Served from a pool's cached memory such an allocation
 * returns in a few microseconds; the default pool's release threshold is 0, so at every
 * synchronization it gives its unused memory back to the driver and the next allocation maps
 * memory again, tens of microseconds or more, every step of a loop that synchronizes once a
 * step (a request loop's one wait). The shim times these calls although they are enqueues
 * (ALLOC in interpose/wrapper.h); the cost is their host time.
 */
#include "../analysis_int.h"
#include "../commands.h"

/* Two or more calls that recur in the steady state (steps.h), taking on average at least this
 * long: a pool's cached memory comes back in a few microseconds (the H200, c47: 1.5 us for
 * cudaFreeAsync, 54 us for a cudaMallocAsync that mapped memory again). */
#define SS_ASYNC_ALLOC_MIN_CALLS 2
#define SS_ASYNC_ALLOC_SLOW_NS 20000

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	return format("%s, each one long on the host (worst %.3f ms): the memory pool mapped "
		      "memory again, as one with release threshold 0 (the default pool's) does "
		      "after every synchronization, where it gave its unused memory back",
		      apis, ms(worst));
}

const struct ss_rule ss_rule_async_alloc_slow = {
    .id = "async-alloc-slow",
    .advice = "Keep the pool's memory across synchronizations: raise its release threshold "
	      "(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &bytes) on the pool "
	      "of cudaDeviceGetDefaultMemPool, UINT64_MAX to keep it all), or allocate once before "
	      "the loop and reuse the buffer.",
    .phase = SS_RULE_SITE,
    .sql = SITE_RULE_SQL("a.name IN ('cudaMallocAsync', 'cudaMallocAsync_ptsz',"
			 " 'cudaMallocFromPoolAsync', 'cudaMallocFromPoolAsync_ptsz',"
			 " 'cuMemAllocAsync', 'cuMemAllocAsync_ptsz', 'cuMemAllocFromPoolAsync',"
			 " 'cuMemAllocFromPoolAsync_ptsz')"),
    .min_count = SS_ASYNC_ALLOC_MIN_CALLS,
    .min_mean_ns = SS_ASYNC_ALLOC_SLOW_NS,
    .detail = detail,
};
