/*
 * report/analysis.c: the analysis engine of `syncspy report` (analysis.h): rank databases in,
 * ranks and findings out. docs/rules.md explains each rule to users; this file is its code.
 *
 * How a database is read, so that 8 ranks of a million calls each report in seconds:
 *   1. one pass over `calls` in C (scan_rows) groups every row by (api, class, dir, host memory,
 *      site, legacy stream, steady state) into a TEMP table, ss_agg (a few hundred rows for real
 *      programs), and keeps in memory the few rows two rules need single: async H2D copies
 *      followed by a kernel launch (copy-on-compute-stream, summed in C) and N2 calls. No sort:
 *      an SQL GROUP BY sorted all rows;
 *   2. the rank's totals, its calls per API and the per-site rules are queries on ss_agg;
 *   3. the NCCL straggler rule: each rank's collectives become one time-ordered array per
 *      (id_hash, op) (load_arrivals), and the ranks' arrays are compared element by element
 *      after loading (run_straggler_rule), in C: no per-collective rows go through SQLite;
 *   4. only when the database has NVTX ranges or steps: the sync points of the threads that
 *      opened ranges go into a TEMP table indexed by (tid, start_ns), and each range (a small
 *      table) is joined to it by thread and time (load_ranges). Without ranges this costs one
 *      lookup, so large recordings without ranges are not slowed down.
 *   5. only when the database has CUPTI's tables (gpu_activity, gpu_api): the GPU timeline in C
 *      (run_gpu): overlap per rank, GPU idle time behind host syncs, copy-without-overlap.
 *      Without them this costs one lookup of the schema.
 * Databases load in parallel (load_all: one thread and one connection each, up to the cores) and
 * are merged in path order, so the report does not depend on which thread loaded what.
 * Databases are only read: TEMP tables live in the connection's own temporary schema.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "analysis.h"
#include "steps.h"
#include "lines.h"
#include "commands.h"
#include "db.h"

/* ------------------------------------------------------------------ documented constants */

/* alloc-in-loop: a site with fewer calls is not reported even as `info` (one cudaMalloc per
 * buffer at setup is how programs start). Whether it costs per step is steps.h's question. */
#define SS_LOOP_MIN_CALLS 2
/* host-sync, sync-copy: with a GPU timeline, syncs that left the GPU idle less than this per
 * step (without steps: per call), or less than SS_GPU_BUSY_PERMILLE of the step time, cost
 * nothing measurable: `info` (docs/rules.md, "Cost and severity"). The GPU still had work
 * queued when the host woke up (a pipeline waiting for a buffer to be free). */
#define SS_GPU_BUSY_NS	     2000
#define SS_GPU_BUSY_PERMILLE 5
/* polling: a site's loops must make this many queries each, on average. */
#define SS_POLL_MIN_QUERIES 2
/* copy-on-compute-stream: a site must show the pattern this often (once per step, >= 2 steps). */
#define SS_OVERLAP_MIN_COPIES 2
/* Pinned copy bandwidth when the run has no blocking pinned copy of >= SS_PINNED_MIN_BYTES to
 * measure it from: 64 MiB in 1.47 ms on an H200 (docs/architecture.md F9), rounded down. */
#define SS_PINNED_BW_DEFAULT 45e9 /* bytes/s, both directions */
#define SS_PINNED_MIN_BYTES  (1 << 20)
/* nccl-straggler: the last rank must start a collective this much after the first one. */
#define SS_STRAGGLER_MIN_NS 1000000LL
/* rank-imbalance: blocked time must also differ from the median by this much (noise floor). */
#define SS_IMBALANCE_MIN_NS 1000000LL
/* Severity of a steady-state finding: its cost per step per mille of the step time (without
 * steps: its cost per mille of the rank's wall time). */
#define SS_SEVERITY_HIGH_PERMILLE   100
#define SS_SEVERITY_MEDIUM_PERMILLE 20

#define NO_SITE "(no call site)"

/* ------------------------------------------------------------------ rules */

/* X(id, advice). The ids are stable: JSON consumers and `syncspy check` budgets name them. */
#define SS_RULES(X)                                                                                \
	X(HOST_SYNC, "host-sync",                                                                  \
	  "Move the result read (.item(), a stream or device sync) out of the step loop or later "  \
	  "in it, or wait on an event with cudaStreamWaitEvent so the host keeps queuing work.")   \
	X(SYNC_COPY, "sync-copy",                                                                  \
	  "Use cudaMemcpyAsync from pinned memory on a non-default stream and synchronize only "   \
	  "where the result is needed (for one scalar, read it a step later).")                    \
	X(PAGEABLE_ASYNC_COPY, "pageable-async-copy",                                              \
	  "Allocate the host buffer pinned (cudaHostAlloc, tensor.pin_memory(), "                  \
	  "DataLoader(pin_memory=True)) so the async copy returns at once and overlaps.")          \
	X(MEMSET_PINNED, "memset-pinned",                                                          \
	  "Clear host memory with memset on the host, or use cudaMemsetAsync on a stream, instead " \
	  "of a blocking cudaMemset on pinned or managed memory.")                                 \
	X(ALLOC_IN_LOOP, "alloc-in-loop",                                                          \
	  "Allocate once before the loop and reuse the buffer, or use a caching allocator or "     \
	  "cudaMallocAsync/cudaFreeAsync, which do not synchronize the device.")                   \
	X(LEGACY_STREAM, "legacy-stream",                                                          \
	  "Give this work a stream of its own (cudaStreamNonBlocking) or build with "              \
	  "--default-stream per-thread: the legacy stream serializes with every blocking stream.") \
	X(POLLING, "polling",                                                                      \
	  "Replace the query loop by cudaEventSynchronize with a blocking-sync event, or a host "  \
	  "function callback, so the CPU is free while the GPU works.")                            \
	X(COPY_ON_COMPUTE_STREAM, "copy-on-compute-stream",                                        \
	  "Issue the next step's input copy on a separate copy stream and make the kernel wait "   \
	  "with cudaEventRecord/cudaStreamWaitEvent, so the copy overlaps the current compute.")   \
	X(COPY_WITHOUT_OVERLAP, "copy-without-overlap",                                            \
	  "Issue the copy from pinned memory on a separate stream ahead of the kernels that need "  \
	  "it (prefetch the next batch during the current step), so the copy engine and the "      \
	  "compute run at the same time.")                                                         \
	X(NCCL_STRAGGLER, "nccl-straggler",                                                        \
	  "Look at what this rank does before the collective (data loading, host syncs, uneven "   \
	  "work): every other rank waits for it.")                                                 \
	X(RANK_IMBALANCE, "rank-imbalance",                                                        \
	  "Compare this rank's findings with the other ranks': a rank that syncs or waits more "   \
	  "than the others slows every collective down to its pace.")

enum ss_rule_id {
#define SS_RULE_ENUM(e, id, advice) RULE_##e,
	SS_RULES(SS_RULE_ENUM)
#undef SS_RULE_ENUM
};

static const struct {
	const char *id;
	const char *advice;
} rules[] = {
#define SS_RULE_ENTRY(e, id, advice) {id, advice},
    SS_RULES(SS_RULE_ENTRY)
#undef SS_RULE_ENTRY
};

/* ------------------------------------------------------------------ SQL */

/*
 * Step 1: one pass over calls, in id order, in C (scan_rows): a GROUP BY over seven keys sorts
 * every row (about 2 s per million on SQLite 3.40), while reading the columns costs a fifth of
 * that. The pass fills two TEMP tables:
 *   ss_agg      one row per (api, class, dir, host memory, site, legacy stream, steady state),
 *               the columns the SQL GROUP BY of the first version made (est: see group_est);
 *   ss_overlap  the ids of async H2D copies followed by a kernel launch, filled only when one site
 *               shows several copy APIs (run_overlap_sql); else the rule is summed in C.
 * The N2 calls on a communicator (nccl-straggler) stay in memory, in id order.
 */
#define SCAN_SQL                                                                                   \
	"SELECT id, tid, api_id, class, start_ns, end_ns, stream, comm, bytes, dir, host_mem,"     \
	" site_id, count FROM calls ORDER BY id"

#define TEMP_SQL                                                                                   \
	"CREATE TEMP TABLE ss_agg(api_id, class, dir, host_mem, site_id, legacy, steady, n,"       \
	" queries, t, w, b, est, steps);"                                                          \
	"CREATE TEMP TABLE ss_overlap(id INTEGER PRIMARY KEY)"

/* The APIs whose call right after an async H2D copy makes the copy "before a kernel". */
#define LAUNCH_APIS_SQL "SELECT id FROM apis WHERE name LIKE '%Launch%Kernel%' ORDER BY id"
/* Streams created blocking (without cudaStreamNonBlocking/CU_STREAM_NON_BLOCKING, flag 1): the
 * legacy stream serializes with these only. A stream the recording never saw created is not
 * assumed blocking (docs/rules.md, legacy-stream). */
#define BLOCKING_STREAMS_SQL "SELECT DISTINCT stream FROM streams WHERE (flags & 1) = 0 ORDER BY stream"

#define META_SQL                                                                                   \
	"SELECT max(CASE key WHEN 'rank' THEN value END), max(CASE key WHEN 'world_size' THEN"     \
	" value END), max(CASE key WHEN 'host' THEN value END), max(CASE key WHEN 'pid' THEN"      \
	" value END), max(CASE key WHEN 'start_mono_ns' THEN value END),"                          \
	" max(CASE key WHEN 'start_realtime_ns' THEN value END),"                                  \
	" max(CASE key WHEN 'end_mono_ns' THEN value END),"                                        \
	" max(key = 'exit_reason'), max(CASE key WHEN 'dropped_events' THEN value END),"           \
	" max(CASE key WHEN 'cupti' THEN value END),"                                              \
	" max(CASE key WHEN 'cupti_pauses' THEN value END),"                                       \
	" max(CASE key WHEN 'cupti_paused_ns' THEN value END),"                                    \
	" max(CASE key WHEN 'cupti_sample' THEN value END),"                                       \
	" max(CASE key WHEN 'cupti_windows' THEN value END),"                                      \
	" max(CASE key WHEN 'cupti_traced_ns' THEN value END)"                                     \
	" FROM meta"

#define TOTALS_SQL                                                                                 \
	"SELECT coalesce(sum(CASE WHEN k.sync_point THEN"                                          \
	"  CASE WHEN g.class = 'S7' THEN g.queries ELSE g.n END END), 0),"                         \
	" coalesce(sum(CASE WHEN k.sync_point THEN g.t END), 0),"                                  \
	" coalesce(sum(CASE WHEN g.dir BETWEEN 1 AND 5 THEN g.n END), 0),"                         \
	" coalesce(sum(CASE WHEN g.dir BETWEEN 1 AND 5 THEN g.b END), 0),"                         \
	" coalesce(sum(CASE WHEN g.class = 'N2' AND a.name NOT IN"                                 \
	"  ('ncclGroupStart', 'ncclGroupEnd') THEN g.n END), 0),"                                  \
	" coalesce(sum(CASE WHEN g.class = 'N2' THEN g.t END), 0),"                                \
	" (SELECT json_group_object(api, n) FROM (SELECT a2.name AS api,"                          \
	"  sum(CASE WHEN g2.class = 'S7' THEN g2.queries ELSE g2.n END) AS n"                      \
	"  FROM temp.ss_agg g2 JOIN apis a2 ON a2.id = g2.api_id GROUP BY a2.name ORDER BY 1)),"   \
	" coalesce(sum(CASE WHEN k.sync_point AND g.steady = 1 THEN"                               \
	"  CASE WHEN g.class = 'S7' THEN g.queries ELSE g.n END END), 0),"                         \
	" coalesce(sum(CASE WHEN k.sync_point AND g.steady = 1 THEN g.t END), 0)"                  \
	" FROM temp.ss_agg g JOIN apis a ON a.id = g.api_id LEFT JOIN classes k ON k.class = g.class"

/*
 * Per-site rules on ss_agg: one row per site (ANALYSIS-2) with, over the whole run, count (S7:
 * queries), blocked, worst, bytes, estimate, rows (S7: loops) and the APIs seen there, most
 * calls first; then the same over the steady state (ss_agg.steady = SS_PHASE_STEADY) and the
 * most distinct steady steps one of the site's groups came in (a lower bound for the site).
 */
#define STEADY(x) "CASE WHEN g.steady = 1 THEN " x " END"
#define SITE_RULE_SQL(where)                                                                       \
	"SELECT site, sum(n), sum(t), max(w), sum(b), sum(est), sum(rows),"                        \
	" group_concat(api || ' x' || n, ', '), coalesce(sum(sn), 0), coalesce(sum(st), 0),"       \
	" coalesce(max(sw), 0), sum(sb), sum(sest), coalesce(sum(srows), 0),"                     \
	" coalesce(max(ssteps), 0), group_concat(CASE WHEN sn > 0 THEN api || ' x' || sn END,"     \
	" ', ') FROM (SELECT coalesce(s.text, '" NO_SITE "') AS site, a.name AS api,"              \
	" sum(CASE WHEN g.class = 'S7' THEN g.queries ELSE g.n END) AS n,"                         \
	" sum(g.n) AS rows, sum(g.t) AS t, max(g.w) AS w, sum(g.b) AS b, sum(g.est) AS est,"       \
	" sum(" STEADY("CASE WHEN g.class = 'S7' THEN g.queries ELSE g.n END") ") AS sn,"         \
	" sum(" STEADY("g.n") ") AS srows, sum(" STEADY("g.t") ") AS st,"                         \
	" max(" STEADY("g.w") ") AS sw, sum(" STEADY("g.b") ") AS sb,"                            \
	" sum(" STEADY("g.est") ") AS sest, max(" STEADY("g.steps") ") AS ssteps"                 \
	" FROM temp.ss_agg g JOIN apis a ON a.id = g.api_id LEFT JOIN sites s ON s.id = g.site_id" \
	" WHERE " where " GROUP BY site, api ORDER BY site, n DESC, api)"                           \
	" GROUP BY site HAVING sum(n) >= :min_count"

static const struct site_rule {
	enum ss_rule_id rule;
	const char *sql;
	long long min_count;
} site_rules[] = {
    {RULE_HOST_SYNC, SITE_RULE_SQL("g.class IN ('S1', 'S2', 'S3')"), 1},
    {RULE_SYNC_COPY, SITE_RULE_SQL("g.class = 'S4'"), 1},
    {RULE_PAGEABLE_ASYNC_COPY, SITE_RULE_SQL("g.class = 'S5'"), 1},
    {RULE_MEMSET_PINNED, SITE_RULE_SQL("g.class = 'S6' AND g.dir = 6"), 1},
    {RULE_ALLOC_IN_LOOP, SITE_RULE_SQL("g.class = 'S6' AND g.dir IS NULL"),
     SS_LOOP_MIN_CALLS},
    {RULE_LEGACY_STREAM,
     SITE_RULE_SQL("g.class IN ('E1', 'E2') AND g.legacy AND :other_streams"), 1},
    {RULE_POLLING, SITE_RULE_SQL("g.class = 'S7'"), 1},
};

/*
 * copy-on-compute-stream (host-side heuristic): an async H2D copy from non-pageable memory whose
 * next row of the same thread (rows are written thread by thread in call order) is a kernel
 * launch on the same stream, when that stream is the compute stream (the one with the most
 * kernel launches): the kernel probably consumes it, and nothing else could overlap the copy on
 * that stream.
 */
#define OVERLAP_SQL                                                                                \
	"SELECT coalesce(s.text, '" NO_SITE "') AS site, count(*), sum(c.end_ns - c.start_ns),"    \
	" max(c.end_ns - c.start_ns), sum(c.bytes), group_concat(DISTINCT a.name)"                 \
	" FROM temp.ss_overlap o JOIN calls c ON c.id = o.id JOIN apis a ON a.id = c.api_id"      \
	" LEFT JOIN sites s ON s.id = c.site_id GROUP BY site HAVING count(*) >= :min_count"

/* nccl-straggler (load_arrivals, run_straggler_rule) is C over the pass's N2 calls: the k-th
 * call of each collective on each communicator (by id_hash, the same on every rank), by start
 * time; send/recv are point to point and not compared. */

/*
 * Step 4, per-range statistics. Recordings have no index on calls(tid, start_ns) and are opened
 * read-only, so the sync points of the threads that opened ranges are copied once into a TEMP
 * table with that index; each range then finds its calls by an index range scan instead of a
 * scan of calls per range. A call is in a range when it starts and ends inside it; a range
 * still open at the end of the recording (end_ns NULL) ends there (?1).
 */
#define HAS_RANGES_SQL "SELECT EXISTS (SELECT 1 FROM ranges)"

#define RANGE_CALLS_SQL                                                                            \
	"CREATE TEMP TABLE ss_rsync AS SELECT c.tid AS tid, c.start_ns AS start_ns,"               \
	" c.end_ns AS end_ns, CASE WHEN c.class = 'S7' THEN c.count ELSE 1 END AS n FROM calls c"  \
	" WHERE c.class IN (SELECT class FROM classes WHERE sync_point)"                           \
	" AND c.tid IN (SELECT tid FROM ranges);"                                                  \
	"CREATE INDEX temp.ss_rsync_t ON ss_rsync(tid, start_ns)"

/* Per (name, kind): instances, sync points per instance (min, lower median, max), blocked ns
 * per instance (lower median, max); the names with the most sync points first. */
#define RANGE_STATS_SQL                                                                            \
	"WITH inst AS (SELECT r.id, coalesce(r.name, '(unnamed)') AS name, r.kind AS kind,"        \
	"  coalesce(sum(t.n), 0) AS sp, coalesce(sum(t.end_ns - t.start_ns), 0) AS bl"             \
	"  FROM ranges r LEFT JOIN temp.ss_rsync t ON t.tid = r.tid AND t.start_ns >= r.start_ns"  \
	"  AND t.start_ns <= coalesce(r.end_ns, ?1) AND t.end_ns <= coalesce(r.end_ns, ?1)"        \
	"  GROUP BY r.id),"                                                                        \
	" ranked AS (SELECT name, kind, sp, bl, count(*) OVER w AS cnt,"                           \
	"  row_number() OVER (w ORDER BY sp, id) AS rs,"                                           \
	"  row_number() OVER (w ORDER BY bl, id) AS rb"                                            \
	"  FROM inst WINDOW w AS (PARTITION BY name, kind))"                                       \
	" SELECT name, kind, cnt, min(sp), max(CASE WHEN rs = (cnt + 1) / 2 THEN sp END),"         \
	" max(sp),"                                                                                \
	" sum(sp), max(CASE WHEN rb = (cnt + 1) / 2 THEN bl END), max(bl)"                         \
	" FROM ranked GROUP BY name, kind ORDER BY sum(sp) DESC, cnt DESC, name, kind LIMIT ?2"

/* ------------------------------------------------------------------ helpers */

/* SYNCSPY_REPORT_TIMING=1: the seconds each step took, on stderr, to find where the time goes
 * (bench/report-scale.sh). Not documented for users: the steps change with the code. */
static int timing = -1;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Prints the time since *since for step and restarts *since. */
static void lap(double *since, const char *what, const char *step)
{
	double t;

	if (timing < 0)
		timing = getenv("SYNCSPY_REPORT_TIMING") && *getenv("SYNCSPY_REPORT_TIMING");
	if (!timing)
		return;
	t = now_s();
	fprintf(stderr, "syncspy: timing: %s: %s %.3f s\n", what, step, t - *since);
	*since = t;
}


struct loader {
	struct ss_report *report;
	size_t findings_capacity;
	size_t ranks_capacity;
	size_t ranges_capacity;
	char *err;
	size_t errlen;
};

static int fail(struct loader *ld, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct loader *ld, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ld->err, ld->errlen, fmt, ap);
	va_end(ap);
	return code;
}

static int out_of_memory(struct loader *ld)
{
	return fail(ld, SS_EXIT_INTERNAL, "out of memory");
}

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *format(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

static double ms(long long ns)
{
	return (double)ns / 1e6;
}

const char *ss_severity(double share)
{
	if (share * 1000 >= SS_SEVERITY_HIGH_PERMILLE)
		return "high";
	if (share * 1000 >= SS_SEVERITY_MEDIUM_PERMILLE)
		return "medium";
	return "low";
}

static long long column_or(sqlite3_stmt *stmt, int col, long long fallback)
{
	if (sqlite3_column_type(stmt, col) == SQLITE_NULL)
		return fallback;
	return sqlite3_column_int64(stmt, col);
}

static void bind_named_int(sqlite3_stmt *stmt, const char *name, long long value)
{
	int i = sqlite3_bind_parameter_index(stmt, name);

	if (i > 0)
		sqlite3_bind_int64(stmt, i, value);
}

/* Takes ownership of site and detail (freed on failure too). */
static int add_finding(struct loader *ld, enum ss_rule_id rule, const struct ss_rank *rank,
		       long long count, long long blocked_ns, long long worst_ns, long long bytes,
		       long long estimate_ns, char *site, char *detail)
{
	struct ss_report *r = ld->report;
	struct ss_finding *f;

	if (!site || !detail) {
		free(site);
		free(detail);
		return out_of_memory(ld);
	}
	if (r->nfindings == ld->findings_capacity) {
		size_t capacity = ld->findings_capacity ? 2 * ld->findings_capacity : 32;
		struct ss_finding *grown = realloc(r->findings, capacity * sizeof(*grown));

		if (!grown) {
			free(site);
			free(detail);
			return out_of_memory(ld);
		}
		r->findings = grown;
		ld->findings_capacity = capacity;
	}
	f = &r->findings[r->nfindings++];
	f->rule = rules[rule].id;
	f->advice = rules[rule].advice;
	f->rank = rank->rank;
	f->severity = NULL; /* judge_findings, once the GPU figures are in */
	f->phase = "steady";
	f->steps = -1;
	f->cost_ns = f->cost_per_step_ns = -1;
	f->share = 0;
	f->cleared = NULL;
	f->count = count;
	f->blocked_ns = blocked_ns;
	f->worst_ns = worst_ns;
	f->bytes = bytes;
	f->estimate_ns = estimate_ns;
	f->gpu_idle_ns = -1;
	f->site = site;
	f->detail = detail;
	return SS_EXIT_OK;
}

/*
 * The cost of a finding, its share of the step and its severity (docs/rules.md, "Cost and
 * severity"): the lost GPU time where the GPU timeline measured it (a sync's idle time behind
 * it), the estimate for pageable copies, else the host time of the flagged calls. `once`
 * findings are `info`: they do not cost the program per step. Appends the per-step figures to
 * the detail. Returns 0 when out of memory.
 */
static int judge_finding(struct ss_finding *f, const struct ss_rank *rk)
{
	int sync = strcmp(f->rule, "host-sync") == 0 || strcmp(f->rule, "sync-copy") == 0;
	long long cost = f->blocked_ns;
	char *detail;

	if (sync && f->gpu_idle_ns >= 0)
		cost = f->gpu_idle_ns;
	else if ((strcmp(f->rule, "pageable-async-copy") == 0 ||
		  strcmp(f->rule, "copy-without-overlap") == 0) &&
		 f->estimate_ns >= 0)
		cost = f->estimate_ns;
	f->cost_ns = cost;
	/* a sync behind which the GPU never waited (it still had work queued: a pipeline that
	 * waits for a buffer to be free) costs no throughput */
	if (sync && f->gpu_idle_ns >= 0 && !f->cleared && strcmp(f->phase, "steady") == 0) {
		long long n = rk->steady_steps > 0 ? rk->steady_steps : f->count;
		long long per = f->gpu_idle_ns / (n > 0 ? n : 1);

		if (per < SS_GPU_BUSY_NS ||
		    (rk->steady_steps > 0 && per * 1000 < rk->step_ns * SS_GPU_BUSY_PERMILLE))
			f->cleared = "the GPU stayed busy behind these syncs (idle under 0.5% of the "
				     "step): no throughput lost";
	}
	if (f->cleared) {
		f->severity = "info";
		f->share = 0;
		detail = format("%s; %s", f->detail, f->cleared);
	} else if (strcmp(f->phase, "once") == 0) {
		f->severity = "info";
		f->share = 0;
		detail = format("%s; once: not in the steady state (setup, warm-up, teardown, or in "
				"too few steps)",
				f->detail);
	} else if (rk->steady_steps > 0 && rk->step_ns > 0) {
		f->cost_per_step_ns = cost / rk->steady_steps;
		f->share = (double)f->cost_per_step_ns / (double)rk->step_ns;
		f->severity = ss_severity(f->share);
		detail = f->steps >= 0
			     ? format("%s; in %lld of %lld steady steps: %.3f ms per step, %.1f%% of "
				      "a %.3f ms step",
				      f->detail, f->steps, rk->steady_steps, ms(f->cost_per_step_ns),
				      100 * f->share, ms(rk->step_ns))
			     : format("%s; %.3f ms per step, %.1f%% of a %.3f ms step", f->detail,
				      ms(f->cost_per_step_ns), 100 * f->share, ms(rk->step_ns));
	} else {
		f->share = (double)cost / (double)(rk->wall_ns > 0 ? rk->wall_ns : 1);
		f->severity = ss_severity(f->share);
		return 1; /* no steps: the rank's note says how it was judged */
	}
	if (!detail)
		return 0;
	free(f->detail);
	f->detail = detail;
	return 1;
}

/* copy-on-compute-stream is a host-side guess; with a GPU timeline copy-without-overlap
 * measures the same thing. A copy site the GPU rule did not flag held no compute up (the copy
 * was small, or nothing waited behind it): the guess is cleared. */
static void confirm_on_gpu(struct ss_report *found)
{
	for (size_t i = 0; i < found->nfindings; i++) {
		struct ss_finding *f = &found->findings[i];
		int confirmed = 0;

		if (strcmp(f->rule, rules[RULE_COPY_ON_COMPUTE_STREAM].id) != 0)
			continue;
		for (size_t j = 0; j < found->nfindings && !confirmed; j++)
			confirmed = strcmp(found->findings[j].rule,
					   rules[RULE_COPY_WITHOUT_OVERLAP].id) == 0 &&
				    strcmp(found->findings[j].phase, "steady") == 0 &&
				    strcmp(found->findings[j].site, f->site) == 0;
		if (!confirmed)
			f->cleared = "the GPU timeline shows no compute waiting behind these copies "
				     "(copy-without-overlap did not flag them)";
	}
}

/* A finding's phase (steps.h): its figures are the steady state's, or the whole run's. */
static void set_phase(struct ss_finding *f, const struct ss_steps *steps, int steady,
		      long long nsteps)
{
	f->phase = steady ? "steady" : "once";
	f->steps = steps->nsteps ? nsteps : -1;
}

static int add_note(struct ss_report *r, char *note)
{
	char **grown;

	if (!note)
		return SS_EXIT_INTERNAL;
	grown = realloc(r->notes, (r->nnotes + 1) * sizeof(*grown));
	if (!grown) {
		free(note);
		return SS_EXIT_INTERNAL;
	}
	r->notes = grown;
	r->notes[r->nnotes++] = note;
	return SS_EXIT_OK;
}

static int compare_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}


/* ------------------------------------------------------------------ one database */

struct overlap_candidate;
struct n2_call;

struct db_state {
	sqlite3 *db;
	const char *path;
	struct ss_rank *rank;
	double bw[3];	  /* pinned bandwidth by dir (1 H2D, 2 D2H), bytes/s */
	int measured[3];  /* 1: bw[dir] comes from this run's pinned copies */
	int other_streams; /* the process used blocking streams besides the legacy one: in the
			      steady state, when there are steps (phase_groups) */
	struct overlap_candidate *overlap; /* the pass's candidates on the compute stream */
	size_t noverlap;
	struct n2_call *n2; /* the pass's N2 calls on a communicator, in id order */
	size_t nn2;
	int gpu_api;	    /* the gpu_api table exists (with gpu_activity: rank->gpu) */
	int gpu_paused;	    /* the gpu_paused table exists: the timeline was off at times */
	struct ss_steps steps; /* the rank's repeating step (steps.h) */
	struct api_first *api_first; /* load_api_first: by correlation id */
	size_t napi_first, cap_api_first;
	int api_first_loaded;
};

static int prepare(struct loader *ld, struct db_state *st, const char *sql, sqlite3_stmt **stmt)
{
	int rc = sqlite3_prepare_v2(st->db, sql, -1, stmt, NULL);

	if (rc != SQLITE_OK)
		return ss_db_failure(st->db, rc, st->path, ld->err, ld->errlen);
	return SS_EXIT_OK;
}

static int step_failed(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt, int rc)
{
	int code = ss_db_failure(st->db, rc, st->path, ld->err, ld->errlen);

	sqlite3_finalize(stmt);
	return code;
}

/* Prepares a query that always yields a row (an aggregate) and steps to it: no row is a
 * database failure. On success the caller reads the row and finalizes *stmt. */
static int query_row(struct loader *ld, struct db_state *st, const char *sql, sqlite3_stmt **stmt)
{
	int rc, code = prepare(ld, st, sql, stmt);

	if (code != SS_EXIT_OK)
		return code;
	rc = sqlite3_step(*stmt);
	if (rc != SQLITE_ROW)
		return step_failed(ld, st, *stmt, rc);
	return SS_EXIT_OK;
}

/* Ends a loop over the rows of stmt that stopped at step result rc, or earlier when a row
 * failed with code: the row's failure comes first, then a step that did not reach the end.
 * Finalizes stmt either way. */
static int end_rows(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt, int rc, int code)
{
	if (code != SS_EXIT_OK) {
		sqlite3_finalize(stmt);
		return code;
	}
	if (rc != SQLITE_DONE)
		return step_failed(ld, st, stmt, rc);
	sqlite3_finalize(stmt);
	return SS_EXIT_OK;
}

static int load_meta(struct loader *ld, struct db_state *st)
{
	struct ss_rank *rk = st->rank;
	sqlite3_stmt *stmt;
	long long end_ns;
	int code;

	code = query_row(ld, st, META_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	rk->rank = column_or(stmt, 0, -1);
	rk->world_size = column_or(stmt, 1, -1);
	rk->host = xstrdup((const char *)sqlite3_column_text(stmt, 2));
	rk->pid = column_or(stmt, 3, -1);
	rk->start_mono_ns = column_or(stmt, 4, 0);
	rk->start_realtime_ns = column_or(stmt, 5, 0);
	end_ns = column_or(stmt, 6, -1);
	rk->finished = sqlite3_column_int(stmt, 7) == 1;
	rk->dropped = column_or(stmt, 8, 0);
	const char *cupti = (const char *)sqlite3_column_text(stmt, 9);
	rk->cupti = cupti ? xstrdup(cupti) : NULL;
	rk->cupti_pauses = column_or(stmt, 10, 0);
	rk->cupti_paused_ns = column_or(stmt, 11, 0);
	const char *sample = (const char *)sqlite3_column_text(stmt, 12);
	rk->cupti_sample = sample ? xstrdup(sample) : NULL;
	rk->cupti_windows = column_or(stmt, 13, 0);
	rk->cupti_traced_ns = column_or(stmt, 14, -1);
	sqlite3_finalize(stmt);
	if (!rk->host || (cupti && !rk->cupti) || (sample && !rk->cupti_sample))
		return out_of_memory(ld);

	if (end_ns < 0) { /* an unfinished recording: it lasted until its last call */
		code = query_row(ld, st, "SELECT max(end_ns) FROM calls", &stmt);
		if (code != SS_EXIT_OK)
			return code;
		end_ns = column_or(stmt, 0, rk->start_mono_ns);
		sqlite3_finalize(stmt);
	}
	rk->wall_ns = end_ns - rk->start_mono_ns;
	if (rk->wall_ns <= 0)
		rk->wall_ns = 1;
	return SS_EXIT_OK;
}

/* ------------------------------------------------------------------ the pass over calls */

/* A class as the pass sees it: its text (as in calls.class) and what the pass does with it. */
struct scan_class {
	char *text;
	size_t len;
	int s4, s5, e1, n2, x1;
};

/* One ss_agg row: the GROUP BY key (nulls: bit 0 dir, 1 host_mem, 2 site_id are NULL) and the
 * aggregates. b and est are NULL (has_* 0) when no row had a value, as SQL's sum() gives. */
struct agg_group {
	long long api_id, dir, host_mem, site_id;
	int klass, legacy, steady, nulls; /* steady: the enum ss_phase of the calls */
	long long n, queries, t, w, b, est;
	int has_b, has_est;
	long long steps;  /* distinct steady steps the calls came in (steps.h) */
	size_t last_step; /* the last of them, (size_t)-1 before the first */
};

/* A call as the phase pass reads it again once the steps are known (find_steps): the steps
 * come from the whole recording, so the phase of a call is known only after the pass. */
struct call_rec {
	long long start, ns, bytes, queries; /* bytes -1: NULL */
	unsigned group;			     /* its group in the pass (steady 0) */
	unsigned tid : 31;		     /* index into scan.tids */
	unsigned other : 1; /* work on a blocking stream other than the legacy one */
};

struct n2_call {
	long long api_id, comm, start_ns, end_ns;
};

/* An async H2D copy followed by a launch on its stream, that stream, and what the
 * copy-on-compute-stream rule reads of the copy (OVERLAP_SQL read it back from calls). */
struct overlap_candidate {
	long long id, stream, start;
	long long api_id, site_id, ns, bytes;
	int no_site, has_bytes;
};

struct stream_launches {
	long long stream, launches;
};

struct scan {
	struct scan_class *classes;
	size_t nclasses;
	struct agg_group *groups;
	size_t ngroups, groups_capacity;
	size_t *slots; /* open addressing: group index + 1, 0 empty */
	size_t nslots;
	struct call_rec *rows; /* every call, in id order */
	size_t nrows, rows_capacity;
	struct tid_rows {
		long long tid;
		size_t rows;
	} *tids;
	size_t ntids, tids_capacity;
	struct overlap_candidate *overlap; /* candidates for ss_overlap */
	size_t noverlap, overlap_capacity;
	struct stream_launches *launches; /* kernel launches per stream */
	size_t nlaunch_streams, launch_streams_capacity;
	struct n2_call *n2;
	size_t nn2, n2_capacity;
	long long *launch_apis; /* sorted ids of the kernel launch APIs */
	size_t nlaunch;
	long long *blocking_streams; /* sorted handles of streams created blocking */
	size_t nblocking;
	long long pinned_bytes[3], pinned_ns[3]; /* by dir: S4 copies of pinned memory */
};

static void scan_free(struct scan *sc)
{
	for (size_t i = 0; i < sc->nclasses; i++)
		free(sc->classes[i].text);
	free(sc->classes);
	free(sc->groups);
	free(sc->slots);
	free(sc->rows);
	free(sc->tids);
	free(sc->overlap);
	free(sc->launches);
	free(sc->n2);
	free(sc->launch_apis);
	free(sc->blocking_streams);
}

/* Grows *array (of *capacity elements of size) to hold one more than used; 0 when out of memory. */
static int reserve(void *array, size_t *capacity, size_t used, size_t size)
{
	void *grown;
	size_t n;

	if (used < *capacity)
		return 1;
	n = *capacity ? 2 * *capacity : 64;
	grown = realloc(*(void **)array, n * size);
	if (!grown)
		return 0;
	*(void **)array = grown;
	*capacity = n;
	return 1;
}

#define PUSH(arr, n, cap, value)                                                                   \
	(reserve(&(arr), &(cap), (n), sizeof(*(arr))) ? ((arr)[(n)++] = (value), 1) : 0)

/* The index of a class text in sc->classes, added on first sight; -1 when out of memory. A
 * recording has a dozen classes, so a linear search is cheapest. */
static int scan_class(struct scan *sc, const char *text)
{
	struct scan_class *grown;

	for (size_t i = 0; i < sc->nclasses; i++)
		if (strcmp(sc->classes[i].text, text) == 0)
			return (int)i;
	grown = realloc(sc->classes, (sc->nclasses + 1) * sizeof(*grown));
	if (!grown)
		return -1;
	sc->classes = grown;
	grown = &sc->classes[sc->nclasses];
	grown->text = strdup(text);
	if (!grown->text)
		return -1;
	grown->s4 = strcmp(text, "S4") == 0;
	grown->s5 = strcmp(text, "S5") == 0;
	grown->e1 = strcmp(text, "E1") == 0;
	grown->n2 = strcmp(text, "N2") == 0;
	grown->x1 = strcmp(text, "X1") == 0;
	grown->len = strlen(text);
	return (int)sc->nclasses++;
}

static size_t group_hash(const struct agg_group *k)
{
	unsigned long long h = 1469598103934665603ULL;
	long long parts[8] = {k->api_id, k->dir, k->host_mem, k->site_id,
			      k->klass, k->legacy, k->steady, k->nulls};

	for (int i = 0; i < 8; i++) {
		h ^= (unsigned long long)parts[i];
		h *= 1099511628211ULL;
		h ^= h >> 29;
	}
	return (size_t)h;
}

static int same_key(const struct agg_group *a, const struct agg_group *b)
{
	return a->api_id == b->api_id && a->dir == b->dir && a->host_mem == b->host_mem &&
	       a->site_id == b->site_id && a->klass == b->klass && a->legacy == b->legacy &&
	       a->steady == b->steady && a->nulls == b->nulls;
}

static int rehash(struct scan *sc)
{
	size_t n = sc->nslots ? 2 * sc->nslots : 1024;
	size_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return 0;
	for (size_t g = 0; g < sc->ngroups; g++) {
		size_t i = group_hash(&sc->groups[g]) & (n - 1);

		while (slots[i])
			i = (i + 1) & (n - 1);
		slots[i] = g + 1;
	}
	free(sc->slots);
	sc->slots = slots;
	sc->nslots = n;
	return 1;
}

/* The group of key, created empty on first sight; NULL when out of memory. */
static struct agg_group *find_group(struct scan *sc, const struct agg_group *key, size_t *index)
{
	size_t i;

	if (2 * (sc->ngroups + 1) > sc->nslots && !rehash(sc))
		return NULL;
	i = group_hash(key) & (sc->nslots - 1);
	while (sc->slots[i]) {
		struct agg_group *g = &sc->groups[sc->slots[i] - 1];

		if (same_key(g, key)) {
			*index = sc->slots[i] - 1;
			return g;
		}
		i = (i + 1) & (sc->nslots - 1);
	}
	if (!reserve(&sc->groups, &sc->groups_capacity, sc->ngroups, sizeof(*sc->groups)))
		return NULL;
	*index = sc->ngroups;
	sc->groups[sc->ngroups] = *key;
	sc->slots[i] = ++sc->ngroups;
	return &sc->groups[*index];
}

static int sorted_contains(const long long *values, size_t n, long long value)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (values[mid] == value)
			return 1;
		if (values[mid] < value)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* The first column of every row of sql, in order, into *values. */
static int load_ids(struct loader *ld, struct db_state *st, const char *sql, long long **values,
		    size_t *n)
{
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, sql, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long *grown = realloc(*values, (*n + 1) * sizeof(*grown));

		if (!grown) {
			code = out_of_memory(ld);
			break;
		}
		*values = grown;
		(*values)[(*n)++] = sqlite3_column_int64(stmt, 0);
	}
	return end_rows(ld, st, stmt, rc, code);
}

static long long nullable(sqlite3_value *value, int bit, int *nulls)
{
	if (sqlite3_value_type(value) == SQLITE_NULL) {
		*nulls |= bit;
		return 0;
	}
	return sqlite3_value_int64(value);
}

/* The class of the row: the previous row's (most rows repeat a class), compared by bytes
 * without a call, else looked up; -1 when out of memory. */
static int row_class(struct scan *sc, const char *text, int len, int last)
{
	if (last >= 0 && (size_t)len == sc->classes[last].len &&
	    memcmp(text, sc->classes[last].text, (size_t)len) == 0)
		return last;
	return scan_class(sc, text);
}

/*
 * Reads every call once. Copy-on-compute-stream compares a row with the next one of the same
 * thread: rows are written thread by thread, so "next" is id + 1 with the same tid.
 */
static int scan_rows(struct loader *ld, struct db_state *st, struct scan *sc)
{
	long long prev_id = 0, prev_tid = 0, prev_stream = 0;
	struct overlap_candidate prev = {0};
	int prev_copy = 0, last_class = -1, rc, code;
	size_t tid_slot = 0;
	sqlite3_stmt *stmt;

	code = prepare(ld, st, SCAN_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		/* One sqlite3_column_value per column: each sqlite3_column_* call takes the
		 * connection's mutex, so reading type and value from the sqlite3_value halves
		 * the locking (this connection is used by this thread only). */
		sqlite3_value *v[13];
		for (int c = 0; c < 13; c++)
			v[c] = sqlite3_column_value(stmt, c);
		long long id = sqlite3_value_int64(v[0]), tid = sqlite3_value_int64(v[1]);
		const char *text = (const char *)sqlite3_value_text(v[3]);
		int len = sqlite3_value_bytes(v[3]);
		long long start = sqlite3_value_int64(v[4]);
		long long ns = sqlite3_value_int64(v[5]) - start;
		int has_stream = sqlite3_value_type(v[6]) != SQLITE_NULL;
		long long stream = has_stream ? sqlite3_value_int64(v[6]) : 0;
		int has_bytes = sqlite3_value_type(v[8]) != SQLITE_NULL;
		long long bytes = has_bytes ? sqlite3_value_int64(v[8]) : 0;
		struct agg_group key = {.api_id = sqlite3_value_int64(v[2])}, *g;
		const struct scan_class *k;
		size_t index;

		if (!text) {
			text = "";
			len = 0;
		}
		last_class = row_class(sc, text, len, last_class);
		if (last_class < 0)
			break;
		k = &sc->classes[last_class];
		key.klass = last_class;
		key.dir = nullable(v[9], 1, &key.nulls);
		key.host_mem = nullable(v[10], 2, &key.nulls);
		key.site_id = nullable(v[11], 4, &key.nulls);
		key.legacy = has_stream && stream == 1;
		g = find_group(sc, &key, &index);
		if (!g)
			break;
		if (tid_slot >= sc->ntids || sc->tids[tid_slot].tid != tid) {
			for (tid_slot = 0; tid_slot < sc->ntids && sc->tids[tid_slot].tid != tid;
			     tid_slot++)
				;
			if (tid_slot == sc->ntids &&
			    !PUSH(sc->tids, sc->ntids, sc->tids_capacity, ((struct tid_rows){tid, 0})))
				break;
		}
		sc->tids[tid_slot].rows++;
		if (!PUSH(sc->rows, sc->nrows, sc->rows_capacity,
			  ((struct call_rec){start, ns, has_bytes ? bytes : -1,
					     sqlite3_value_int64(v[12]), (unsigned)index,
					     (unsigned)tid_slot, 0})))
			break;
		if (k->s4 && !(key.nulls & 3) && key.host_mem == 2 && (key.dir == 1 || key.dir == 2) &&
		    has_bytes && bytes > 0) {
			sc->pinned_bytes[key.dir] += bytes;
			sc->pinned_ns[key.dir] += ns;
		}
		/* Work on a blocking stream (not its creation or destruction, X1) is what the
		 * legacy stream would serialize with. */
		if (has_stream && !k->x1 &&
		    (stream == 2 ||
		     (stream > 2 && sorted_contains(sc->blocking_streams, sc->nblocking, stream)))) {
			st->other_streams = 1;
			sc->rows[sc->nrows - 1].other = 1;
		}
		int launch = has_stream && k->e1 &&
			     sorted_contains(sc->launch_apis, sc->nlaunch, key.api_id);
		if (launch) { /* the stream with the most launches is the compute stream */
			size_t i = 0;
			while (i < sc->nlaunch_streams && sc->launches[i].stream != stream)
				i++;
			if (i == sc->nlaunch_streams) {
				if (!reserve(&sc->launches, &sc->launch_streams_capacity,
					     sc->nlaunch_streams, sizeof(*sc->launches)))
					break;
				sc->launches[sc->nlaunch_streams++] = (struct stream_launches){stream, 0};
			}
			sc->launches[i].launches++;
		}
		if (prev_copy && id == prev_id + 1 && tid == prev_tid && stream == prev_stream &&
		    launch) {
			if (!reserve(&sc->overlap, &sc->overlap_capacity, sc->noverlap,
				     sizeof(*sc->overlap)))
				break;
			sc->overlap[sc->noverlap++] = prev;
		}
		prev_copy = k->e1 && !(key.nulls & 1) && key.dir == 1 && has_stream;
		prev_id = id;
		prev_tid = tid;
		prev_stream = stream;
		if (prev_copy)
			prev = (struct overlap_candidate){
			    .id = id,
			    .stream = stream,
			    .start = start,
			    .api_id = key.api_id,
			    .site_id = key.site_id,
			    .ns = ns,
			    .bytes = bytes,
			    .no_site = (key.nulls & 4) != 0,
			    .has_bytes = has_bytes,
			};
		if (k->n2 && sqlite3_value_type(v[7]) != SQLITE_NULL) {
			if (!reserve(&sc->n2, &sc->n2_capacity, sc->nn2, sizeof(*sc->n2)))
				break;
			sc->n2[sc->nn2++] =
			    (struct n2_call){key.api_id, sqlite3_value_int64(v[7]), start, start + ns};
		}
	}
	if (rc == SQLITE_ROW) {
		sqlite3_finalize(stmt);
		return out_of_memory(ld);
	}
	if (rc != SQLITE_DONE)
		return step_failed(ld, st, stmt, rc);
	sqlite3_finalize(stmt);
	return SS_EXIT_OK;
}

/* SQL's CAST(real AS INTEGER): truncation, clamped to the 64-bit range. */
static long long cast_integer(double r)
{
	if (r <= (double)INT64_MIN)
		return INT64_MIN;
	if (r >= (double)INT64_MAX)
		return INT64_MAX;
	return (long long)r;
}

static int exec_temp(struct loader *ld, struct db_state *st, const char *sql)
{
	int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return ss_db_failure(st->db, rc, st->path, ld->err, ld->errlen);
	return SS_EXIT_OK;
}

/* Pinned bandwidth per direction, from blocking (S4) copies of pinned memory, which return when
 * the transfer is done: bytes over host time. Then an S5 copy's lost time is its host time minus
 * bytes / pinned bandwidth, never below 0 (per call: phase_groups). */
static void pinned_bandwidth(struct db_state *st, const struct scan *sc)
{
	st->bw[1] = st->bw[2] = SS_PINNED_BW_DEFAULT;
	for (int dir = 1; dir <= 2; dir++) {
		if (sc->pinned_bytes[dir] >= SS_PINNED_MIN_BYTES && sc->pinned_ns[dir] > 0) {
			st->bw[dir] = (double)sc->pinned_bytes[dir] * 1e9 / (double)sc->pinned_ns[dir];
			st->measured[dir] = 1;
		}
	}
}

/* Marks: every range, the steps.h rules pick the step name among them. */
#define STEP_MARKS_SQL                                                                             \
	"SELECT tid, kind = 'step', name, start_ns, coalesce(end_ns, -1) FROM ranges"              \
	" ORDER BY start_ns, id"
#define ANCHOR_SQL                                                                                 \
	"SELECT a.name, coalesce(s.text, '" NO_SITE "') FROM apis a LEFT JOIN sites s ON s.id = ?2" \
	" WHERE a.id = ?1"

static int load_step_marks(struct loader *ld, struct db_state *st, int *found)
{
	struct ss_step_mark *marks = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *stmt;
	int rc, code = query_row(ld, st, HAS_RANGES_SQL, &stmt);

	*found = 0;
	if (code != SS_EXIT_OK)
		return code;
	rc = sqlite3_column_int(stmt, 0);
	sqlite3_finalize(stmt);
	if (!rc)
		return SS_EXIT_OK;
	code = prepare(ld, st, STEP_MARKS_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(stmt, 2);
		struct ss_step_mark m = {sqlite3_column_int64(stmt, 0), name ? strdup(name) : NULL,
					 sqlite3_column_int(stmt, 1), sqlite3_column_int64(stmt, 3),
					 sqlite3_column_int64(stmt, 4)};

		if ((name && !m.name) || !PUSH(marks, n, cap, m)) {
			free((char *)m.name);
			code = out_of_memory(ld);
			break;
		}
	}
	code = end_rows(ld, st, stmt, rc, code);
	if (code == SS_EXIT_OK) {
		int got = ss_steps_from_marks(&st->steps, marks, n);

		if (got < 0)
			code = out_of_memory(ld);
		*found = got > 0;
	}
	for (size_t i = 0; i < n; i++)
		free((char *)marks[i].name);
	free(marks);
	return code;
}

/* The rank's steps (steps.h): the program's marks, else detected from the calls of the thread
 * that made the most calls, else none. */
static int find_steps(struct loader *ld, struct db_state *st, const struct scan *sc)
{
	struct ss_step_call *calls = NULL;
	size_t main_tid = 0, n = 0;
	sqlite3_stmt *stmt;
	int found, code;

	code = load_step_marks(ld, st, &found);
	if (code != SS_EXIT_OK || found)
		return code;
	for (size_t i = 1; i < sc->ntids; i++)
		if (sc->tids[i].rows > sc->tids[main_tid].rows)
			main_tid = i;
	if (sc->ntids) {
		calls = malloc((sc->tids[main_tid].rows + 1) * sizeof(*calls));
		if (!calls)
			return out_of_memory(ld);
	}
	for (size_t i = 0; i < sc->nrows; i++) {
		const struct call_rec *r = &sc->rows[i];

		if (r->tid == main_tid)
			calls[n++] = (struct ss_step_call){r->group, r->start, r->start + r->ns};
	}
	found = ss_steps_detect(&st->steps, calls, n, (unsigned)sc->ngroups);
	free(calls);
	if (found < 0)
		return out_of_memory(ld);
	if (!found)
		return SS_EXIT_OK;
	/* name the anchor: "API at SITE, every N calls of the main thread" */
	code = prepare(ld, st, ANCHOR_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	{
		const struct agg_group *a = &sc->groups[st->steps.anchor];

		sqlite3_bind_int64(stmt, 1, a->api_id);
		if (a->nulls & 4)
			sqlite3_bind_null(stmt, 2);
		else
			sqlite3_bind_int64(stmt, 2, a->site_id);
	}
	if (sqlite3_step(stmt) == SQLITE_ROW) {
		st->steps.name = format("%s at %s, every %zu calls of the main thread",
					(const char *)sqlite3_column_text(stmt, 0),
					(const char *)sqlite3_column_text(stmt, 1), st->steps.period);
		if (!st->steps.name)
			code = out_of_memory(ld);
	}
	sqlite3_finalize(stmt);
	return code;
}

/* The groups of the pass split by phase (ss_agg.steady), with each steady group's distinct
 * steps, into ph. S5 copies get their estimate here, per call (pinned_bandwidth). */
static int phase_groups(struct loader *ld, struct db_state *st, struct scan *sc, struct scan *ph)
{
	int other_steady = 0;

	for (size_t i = 0; i < sc->nrows; i++) {
		const struct call_rec *r = &sc->rows[i];
		const struct agg_group *base = &sc->groups[r->group];
		struct agg_group key = {.api_id = base->api_id,
					.dir = base->dir,
					.host_mem = base->host_mem,
					.site_id = base->site_id,
					.klass = base->klass,
					.legacy = base->legacy,
					.nulls = base->nulls,
					.last_step = (size_t)-1},
				 *g;
		size_t index, step;

		key.steady = (int)ss_steps_phase(&st->steps, r->start, &step);
		if (r->other && key.steady == SS_PHASE_STEADY)
			other_steady = 1;
		g = find_group(ph, &key, &index);
		if (!g)
			return out_of_memory(ld);
		g->n++;
		g->queries += r->queries;
		g->t += r->ns;
		if (g->n == 1 || r->ns > g->w)
			g->w = r->ns;
		if (r->bytes >= 0) {
			g->b += r->bytes;
			g->has_b = 1;
		}
		if (step != (size_t)-1 && step != g->last_step) {
			g->steps++;
			g->last_step = step;
		}
		if (sc->classes[key.klass].s5 && !(key.nulls & 1) && (key.dir == 1 || key.dir == 2) &&
		    r->bytes > 0) {
			long long lost =
			    r->ns - cast_integer((double)r->bytes * 1e9 / st->bw[key.dir]);

			g->est += lost > 0 ? lost : 0;
			g->has_est = 1;
		}
	}
	/* legacy-stream: the legacy stream serializes the steady state only with blocking streams
	 * working in it (a stream used at setup only costs the loop nothing) */
	if (st->steps.nsteps)
		st->other_streams = other_steady;
	return SS_EXIT_OK;
}

static void bind_nullable(sqlite3_stmt *stmt, int col, int is_null, long long value)
{
	if (is_null)
		sqlite3_bind_null(stmt, col);
	else
		sqlite3_bind_int64(stmt, col, value);
}

/* Runs one bound INSERT and resets it for the next row's bindings. */
static int insert_row(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt)
{
	int code = SS_EXIT_OK;

	if (sqlite3_step(stmt) != SQLITE_DONE)
		code =
		    ss_db_failure(st->db, sqlite3_errcode(st->db), st->path, ld->err, ld->errlen);
	sqlite3_reset(stmt);
	return code;
}

/* Writes what the pass found into the TEMP tables, in one transaction of the temp schema. */
/* The groups of ph, with the class texts of sc. */
static int fill_tables(struct loader *ld, struct db_state *st, const struct scan *sc,
		       const struct scan *ph)
{
	sqlite3_stmt *agg = NULL;
	int code = exec_temp(ld, st, TEMP_SQL ";BEGIN");

	if (code == SS_EXIT_OK)
		code = prepare(ld, st,
			       "INSERT INTO temp.ss_agg VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &agg);
	for (size_t i = 0; code == SS_EXIT_OK && i < ph->ngroups; i++) {
		const struct agg_group *g = &ph->groups[i];

		sqlite3_bind_int64(agg, 1, g->api_id);
		sqlite3_bind_text(agg, 2, sc->classes[g->klass].text, -1, SQLITE_STATIC);
		bind_nullable(agg, 3, g->nulls & 1, g->dir);
		bind_nullable(agg, 4, g->nulls & 2, g->host_mem);
		bind_nullable(agg, 5, g->nulls & 4, g->site_id);
		sqlite3_bind_int(agg, 6, g->legacy);
		sqlite3_bind_int(agg, 7, g->steady);
		sqlite3_bind_int64(agg, 8, g->n);
		sqlite3_bind_int64(agg, 9, g->queries);
		sqlite3_bind_int64(agg, 10, g->t);
		sqlite3_bind_int64(agg, 11, g->w);
		bind_nullable(agg, 12, !g->has_b, g->b);
		bind_nullable(agg, 13, !g->has_est, g->est);
		sqlite3_bind_int64(agg, 14, g->steps);
		code = insert_row(ld, st, agg);
	}
	sqlite3_finalize(agg);
	if (code == SS_EXIT_OK)
		code = exec_temp(ld, st, "COMMIT");
	return code;
}

/* Keeps what the later steps read of the pass in *st (moved out of sc): the N2 calls, and the
 * overlap candidates on the compute stream. Only copies on the compute stream (the one with
 * the most launches) count: a copy followed by a kernel on a side stream (a prefetcher's own
 * conversion) already overlaps the compute. */
static void keep_for_rules(struct db_state *st, struct scan *sc)
{
	long long compute_stream = 0, most = -1;
	size_t kept = 0;

	for (size_t i = 0; i < sc->nlaunch_streams; i++)
		if (sc->launches[i].launches > most) {
			most = sc->launches[i].launches;
			compute_stream = sc->launches[i].stream;
		}
	for (size_t i = 0; i < sc->noverlap; i++) {
		size_t step;

		if (sc->overlap[i].stream == compute_stream &&
		    ss_steps_phase(&st->steps, sc->overlap[i].start, &step) == SS_PHASE_STEADY)
			sc->overlap[kept++] = sc->overlap[i];
	}
	st->overlap = sc->overlap;
	st->noverlap = kept;
	sc->overlap = NULL;
	st->n2 = sc->n2;
	st->nn2 = sc->nn2;
	sc->n2 = NULL;
}

static int build_aggregate(struct loader *ld, struct db_state *st)
{
	struct ss_rank *rk = st->rank;
	struct scan sc = {0}, ph = {0};
	double t = now_s();
	sqlite3_stmt *stmt;
	int code;

	code = load_ids(ld, st, LAUNCH_APIS_SQL, &sc.launch_apis, &sc.nlaunch);
	if (code == SS_EXIT_OK)
		code = load_ids(ld, st, BLOCKING_STREAMS_SQL, &sc.blocking_streams, &sc.nblocking);
	if (code == SS_EXIT_OK)
		code = scan_rows(ld, st, &sc);
	lap(&t, st->path, "scan");
	if (code == SS_EXIT_OK) {
		pinned_bandwidth(st, &sc);
		code = find_steps(ld, st, &sc);
	}
	lap(&t, st->path, "steps");
	if (code == SS_EXIT_OK)
		code = phase_groups(ld, st, &sc, &ph);
	if (code == SS_EXIT_OK) {
		code = fill_tables(ld, st, &sc, &ph);
		keep_for_rules(st, &sc);
	}
	lap(&t, st->path, "temp tables");
	scan_free(&sc);
	scan_free(&ph);
	if (code != SS_EXIT_OK)
		return code;
	code = query_row(ld, st, TOTALS_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	rk->sync_points = sqlite3_column_int64(stmt, 0);
	rk->blocked_ns = sqlite3_column_int64(stmt, 1);
	rk->copies = sqlite3_column_int64(stmt, 2);
	rk->copy_bytes = sqlite3_column_int64(stmt, 3);
	rk->nccl_ops = sqlite3_column_int64(stmt, 4);
	rk->nccl_ns = sqlite3_column_int64(stmt, 5);
	rk->calls_json = xstrdup(sqlite3_column_type(stmt, 6) == SQLITE_NULL
					 ? "{}"
					 : (const char *)sqlite3_column_text(stmt, 6));
	rk->steady_sync_points = sqlite3_column_int64(stmt, 7);
	rk->steady_blocked_ns = sqlite3_column_int64(stmt, 8);
	sqlite3_finalize(stmt);
	static const char *const sources[] = {"none", "marked", "detected"};
	rk->steps_source = sources[st->steps.source];
	rk->steps_name = st->steps.name; /* moved: the rank owns it */
	st->steps.name = NULL;
	rk->steps = (long long)st->steps.nsteps;
	rk->steady_steps = (long long)ss_steps_steady(&st->steps);
	rk->step_ns = st->steps.step_ns;
	rk->steady_start_ns = rk->steady_end_ns = -1;
	if (ss_steps_steady(&st->steps)) {
		rk->steady_start_ns = st->steps.start[st->steps.first_steady];
		rk->steady_end_ns = st->steps.start[st->steps.nsteps];
	}
	if (!st->steps.nsteps) { /* every call is judged: the run is the steady state */
		rk->steady_sync_points = rk->sync_points;
		rk->steady_blocked_ns = rk->blocked_ns;
	}
	return rk->calls_json ? SS_EXIT_OK : out_of_memory(ld);
}

static char *site_detail(const struct db_state *st, enum ss_rule_id rule, const char *apis,
			 long long worst, long long bytes, long long estimate, long long rows)
{
	switch (rule) {
	case RULE_HOST_SYNC:
		if (st->rank->gpu) /* run_gpu appends the GPU idle time */
			return format("%s; worst %.3f ms", apis, ms(worst));
		return format("%s; worst %.3f ms; GPU idle time behind it: not measurable without "
			      "GPU timeline",
			      apis, ms(worst));
	case RULE_SYNC_COPY:
	case RULE_MEMSET_PINNED:
		return format("%s; %lld bytes; worst %.3f ms", apis, bytes, ms(worst));
	case RULE_PAGEABLE_ASYNC_COPY: {
		const char *source = "default";

		if (st->measured[1] || st->measured[2])
			source = "measured from this run's blocking pinned copies";
		return format("%s; %lld bytes; estimate: %.3f ms lost against pinned copies at "
			      "%.1f GB/s H2D, %.1f GB/s D2H (%s)",
			      apis, bytes, ms(estimate), st->bw[1] / 1e9, st->bw[2] / 1e9, source);
	}
	case RULE_ALLOC_IN_LOOP:
		return format("%s (each one synchronizes the device)", apis);
	case RULE_LEGACY_STREAM:
		return format("%s on the legacy default stream while the process also used other "
			      "streams",
			      apis);
	case RULE_POLLING:
		return format("%lld polling loops: %s", rows, apis);
	default:
		return format("%s", apis);
	}
}

static int run_site_rules(struct loader *ld, struct db_state *st)
{
	for (size_t r = 0; r < sizeof(site_rules) / sizeof(site_rules[0]); r++) {
		const struct site_rule *sr = &site_rules[r];
		sqlite3_stmt *stmt;
		int rc, code;

		code = prepare(ld, st, sr->sql, &stmt);
		if (code != SS_EXIT_OK)
			return code;
		bind_named_int(stmt, ":min_count", sr->min_count);
		bind_named_int(stmt, ":other_streams", st->other_streams);
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			long long count = sqlite3_column_int64(stmt, 1);
			long long blocked = sqlite3_column_int64(stmt, 2);
			long long worst = sqlite3_column_int64(stmt, 3);
			long long bytes = column_or(stmt, 4, -1);
			long long estimate = column_or(stmt, 5, -1);
			long long rows = sqlite3_column_int64(stmt, 6);
			const char *apis = (const char *)sqlite3_column_text(stmt, 7);
			long long steady_rows = sqlite3_column_int64(stmt, 13);
			long long steps = sqlite3_column_int64(stmt, 14);
			/* steady: the site's calls recur in the steady state (steps.h), and the
			 * finding's figures are the steady state's; else the whole run's, `info` */
			int steady = ss_steps_recurring(&st->steps, steps, steady_rows);

			if (steady) {
				count = sqlite3_column_int64(stmt, 8);
				blocked = sqlite3_column_int64(stmt, 9);
				worst = sqlite3_column_int64(stmt, 10);
				bytes = column_or(stmt, 11, -1);
				estimate = column_or(stmt, 12, -1);
				rows = steady_rows;
				apis = (const char *)sqlite3_column_text(stmt, 15);
			}
			/* A query that finds the work done at once is a check, not a loop: torch's
			 * caching allocators ask an event once per block they may reuse. */
			if (sr->rule == RULE_POLLING && count < SS_POLL_MIN_QUERIES * rows)
				continue;

			if (sr->rule != RULE_PAGEABLE_ASYNC_COPY)
				estimate = -1;
			if (sr->rule == RULE_HOST_SYNC || sr->rule == RULE_POLLING ||
			    sr->rule == RULE_ALLOC_IN_LOOP || sr->rule == RULE_LEGACY_STREAM)
				bytes = -1;
			code = add_finding(
			    ld, sr->rule, st->rank, count, blocked, worst, bytes, estimate,
			    xstrdup((const char *)sqlite3_column_text(stmt, 0)),
			    site_detail(st, sr->rule, apis ? apis : "", worst, bytes, estimate, rows));
			if (code != SS_EXIT_OK)
				break;
			set_phase(&ld->report->findings[ld->report->nfindings - 1], &st->steps, steady,
				  steps);
		}
		code = end_rows(ld, st, stmt, rc, code);
		if (code != SS_EXIT_OK)
			return code;
	}
	return SS_EXIT_OK;
}

/* The SQL form of the copy-on-compute-stream rule, over the candidates' ids in ss_overlap: used
 * when a site shows several copy APIs, whose list (group_concat DISTINCT) keeps SQLite's order. */
static int run_overlap_sql(struct loader *ld, struct db_state *st)
{
	sqlite3_stmt *stmt = NULL;
	int rc, code = exec_temp(ld, st, "BEGIN");

	if (code == SS_EXIT_OK)
		code = prepare(ld, st, "INSERT INTO temp.ss_overlap VALUES(?)", &stmt);
	for (size_t i = 0; code == SS_EXIT_OK && i < st->noverlap; i++) {
		sqlite3_bind_int64(stmt, 1, st->overlap[i].id);
		code = insert_row(ld, st, stmt);
	}
	sqlite3_finalize(stmt);
	if (code == SS_EXIT_OK)
		code = exec_temp(ld, st, "COMMIT");
	if (code != SS_EXIT_OK)
		return code;
	code = prepare(ld, st, OVERLAP_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	bind_named_int(stmt, ":min_count", SS_OVERLAP_MIN_COPIES);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long count = sqlite3_column_int64(stmt, 1);
		long long bytes = column_or(stmt, 4, 0);

		code = add_finding(
		    ld, RULE_COPY_ON_COMPUTE_STREAM, st->rank, count, sqlite3_column_int64(stmt, 2),
		    sqlite3_column_int64(stmt, 3), bytes, -1,
		    xstrdup((const char *)sqlite3_column_text(stmt, 0)),
		    format("%lld async H2D copies (%s, %lld bytes) enqueued right before a kernel "
			   "launch on the same stream; host-side heuristic: confirm with GPU "
			   "timeline",
			   count, (const char *)sqlite3_column_text(stmt, 5), bytes));
		if (code != SS_EXIT_OK)
			break;
	}
	return end_rows(ld, st, stmt, rc, code);
}

/* The candidates of one (site id, API): what OVERLAP_SQL sums, then the texts it joins. */
struct overlap_group {
	long long site_id, api_id;
	int no_site, has_bytes;
	long long count, t, w, b;
	long long steps;  /* distinct steady steps (steps.h) */
	size_t last_step; /* the last of them */
	char *site, *api; /* NULL api: no such API (the SQL's inner join drops the rows) */
};

static int compare_overlap_groups(const void *a, const void *b)
{
	const struct overlap_group *x = a, *y = b;

	return strcmp(x->site, y->site);
}

/* One text column of the row of stmt bound to id, or NULL (no row or NULL text): *text. */
static int lookup_text(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt, long long id,
		       char **text)
{
	int rc;

	*text = NULL;
	sqlite3_bind_int64(stmt, 1, id);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL) {
		*text = xstrdup((const char *)sqlite3_column_text(stmt, 0));
		if (!*text) {
			sqlite3_reset(stmt);
			return out_of_memory(ld);
		}
	} else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		sqlite3_reset(stmt);
		return ss_db_failure(st->db, rc, st->path, ld->err, ld->errlen);
	}
	sqlite3_reset(stmt);
	return SS_EXIT_OK;
}

/*
 * copy-on-compute-stream from the pass's candidates (OVERLAP_SQL's result, without reading the
 * candidates back from calls): grouped by (site id, API) in C, then by site text, in site order.
 */
static int run_overlap_rule(struct loader *ld, struct db_state *st)
{
	struct overlap_group *groups = NULL, *g;
	size_t ngroups = 0, capacity = 0, last = 0;
	sqlite3_stmt *site_stmt = NULL, *api_stmt = NULL;
	int code = SS_EXIT_OK, mixed = 0;

	if (!st->noverlap)
		return SS_EXIT_OK; /* OVERLAP_SQL has no row */
	for (size_t i = 0; i < st->noverlap; i++) {
		const struct overlap_candidate *c = &st->overlap[i];

		if (ngroups == 0 || groups[last].api_id != c->api_id ||
		    groups[last].no_site != c->no_site ||
		    (!c->no_site && groups[last].site_id != c->site_id)) {
			for (last = 0; last < ngroups; last++)
				if (groups[last].api_id == c->api_id &&
				    groups[last].no_site == c->no_site &&
				    (c->no_site || groups[last].site_id == c->site_id))
					break;
			if (last == ngroups) {
				if (!reserve(&groups, &capacity, ngroups, sizeof(*groups))) {
					code = out_of_memory(ld);
					goto out;
				}
				groups[ngroups++] = (struct overlap_group){.site_id = c->site_id,
									   .api_id = c->api_id,
									   .no_site = c->no_site,
									   .last_step = (size_t)-1};
			}
		}
		g = &groups[last];
		{
			size_t step;

			ss_steps_phase(&st->steps, c->start, &step);
			if (step != (size_t)-1 && step != g->last_step) {
				g->steps++;
				g->last_step = step;
			}
		}
		if (g->count++ == 0 || c->ns > g->w)
			g->w = c->ns;
		g->t += c->ns;
		if (c->has_bytes) {
			g->b += c->bytes;
			g->has_bytes = 1;
		}
	}
	code = prepare(ld, st, "SELECT text FROM sites WHERE id = ?", &site_stmt);
	if (code == SS_EXIT_OK)
		code = prepare(ld, st, "SELECT name FROM apis WHERE id = ?", &api_stmt);
	for (size_t i = 0; code == SS_EXIT_OK && i < ngroups; i++) {
		g = &groups[i];
		code = lookup_text(ld, st, api_stmt, g->api_id, &g->api);
		if (code == SS_EXIT_OK && !g->no_site)
			code = lookup_text(ld, st, site_stmt, g->site_id, &g->site);
		if (code == SS_EXIT_OK && !g->site && !(g->site = xstrdup(NO_SITE)))
			code = out_of_memory(ld);
	}
	if (code != SS_EXIT_OK)
		goto out;
	qsort(groups, ngroups, sizeof(*groups), compare_overlap_groups);
	for (size_t i = 0; i < ngroups && !mixed; i++)
		for (size_t j = i + 1; j < ngroups && strcmp(groups[j].site, groups[i].site) == 0; j++)
			if (groups[i].api && groups[j].api && strcmp(groups[i].api, groups[j].api))
				mixed = 1;
	if (mixed) {
		code = run_overlap_sql(ld, st);
		goto out;
	}
	for (size_t i = 0, j; code == SS_EXIT_OK && i < ngroups; i = j) {
		const char *api = NULL;
		long long count = 0, blocked = 0, worst = 0, bytes = 0, steps = 0;

		for (j = i; j < ngroups && strcmp(groups[j].site, groups[i].site) == 0; j++) {
			g = &groups[j];
			if (!g->api)
				continue;
			if (count == 0 || g->w > worst)
				worst = g->w;
			api = g->api;
			count += g->count;
			blocked += g->t;
			bytes += g->b;
			if (g->steps > steps)
				steps = g->steps;
		}
		/* a loop's pattern: once per step (steps.h), not the first steps' */
		if (count < SS_OVERLAP_MIN_COPIES || !ss_steps_recurring(&st->steps, steps, count))
			continue;
		code = add_finding(
		    ld, RULE_COPY_ON_COMPUTE_STREAM, st->rank, count, blocked, worst, bytes, -1,
		    xstrdup(groups[i].site),
		    format("%lld async H2D copies (%s, %lld bytes) enqueued right before a kernel "
			   "launch on the same stream; host-side heuristic: confirm with GPU "
			   "timeline",
			   count, api, bytes));
		if (code == SS_EXIT_OK && st->steps.nsteps)
			ld->report->findings[ld->report->nfindings - 1].steps = steps;
	}
out:
	sqlite3_finalize(site_stmt);
	sqlite3_finalize(api_stmt);
	for (size_t i = 0; i < ngroups; i++) {
		free(groups[i].site);
		free(groups[i].api);
	}
	free(groups);
	return code;
}

/* One collective of one communicator on this rank: its calls' start and end times in wall-clock
 * ns, by start time (the k-th is the collective's k-th instance), kept until the ranks are
 * compared (clock alignment, then nccl-straggler). */
struct series {
	const char *hash, *op; /* in job.strings, one pointer per text */
	struct ss_collective_call *c;
	size_t n, capacity;
};

/* One database as loaded by a worker thread: its own error text and findings. */
struct job {
	const char *path;
	int code;
	int meta_loaded; /* the duplicate-rank check can run */
	char err[1024];
	struct ss_report found; /* findings and range statistics only */
	struct series *series;
	size_t nseries;
	char **strings;
	size_t nstrings;
	size_t ranges_capacity;
};

static void job_free(struct job *job)
{
	for (size_t i = 0; i < job->found.nfindings; i++) {
		free(job->found.findings[i].site);
		free(job->found.findings[i].detail);
	}
	free(job->found.findings);
	for (size_t i = 0; i < job->found.nranges; i++) {
		free(job->found.ranges[i].name);
		free(job->found.ranges[i].kind);
	}
	free(job->found.ranges);
	for (size_t i = 0; i < job->nstrings; i++)
		free(job->strings[i]);
	free(job->strings);
	for (size_t i = 0; i < job->nseries; i++)
		free(job->series[i].c);
	free(job->series);
}

/* text as a string of job->strings, one pointer per text; NULL when out of memory. */
static const char *job_string(struct job *job, const char *text)
{
	char **grown;

	if (!text)
		text = "";
	for (size_t i = 0; i < job->nstrings; i++)
		if (strcmp(job->strings[i], text) == 0)
			return job->strings[i];
	grown = realloc(job->strings, (job->nstrings + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	job->strings = grown;
	job->strings[job->nstrings] = strdup(text);
	return job->strings[job->nstrings] ? job->strings[job->nstrings++] : NULL;
}

/* A communicator as the straggler rule joins it (comms rows with an id_hash). */
struct comm_row {
	long long comm, created_ns, destroyed_ns;
	int destroyed;
	const char *hash;
};

/* An N2 API that is a collective (not send/recv, not a group bracket), by id. */
struct collective_api {
	long long id;
	const char *op;
};

static int compare_calls(const void *a, const void *b)
{
	const struct ss_collective_call *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
}

/*
 * This rank's collectives, in wall-clock ns: what the SQL of the first version selected
 * (the N2 calls joined to apis and to comms by handle and lifetime, id_hash not NULL, send,
 * recv and group brackets left out, numbered per (id_hash, API) by start time), from the
 * pass's N2 calls, grouped into one series per (id_hash, API).
 */
static int load_arrivals(struct loader *ld, struct db_state *st, struct job *job)
{
	long long offset = st->rank->start_realtime_ns - st->rank->start_mono_ns;
	struct comm_row *comms = NULL;
	struct collective_api *apis = NULL;
	size_t ncomms = 0, comms_capacity = 0, napis = 0, apis_capacity = 0, last = 0;
	sqlite3_stmt *stmt;
	int rc, code;

	if (!st->nn2)
		return SS_EXIT_OK;
	code = prepare(ld, st,
		       "SELECT comm, id_hash, created_ns, destroyed_ns FROM comms"
		       " WHERE id_hash IS NOT NULL",
		       &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *hash = job_string(job, (const char *)sqlite3_column_text(stmt, 1));

		if (!hash || !reserve(&comms, &comms_capacity, ncomms, sizeof(*comms))) {
			code = out_of_memory(ld);
			break;
		}
		comms[ncomms++] = (struct comm_row){
		    .comm = sqlite3_column_int64(stmt, 0),
		    .created_ns = column_or(stmt, 2, 0),
		    .destroyed = sqlite3_column_type(stmt, 3) != SQLITE_NULL,
		    .destroyed_ns = sqlite3_column_int64(stmt, 3),
		    .hash = hash,
		};
	}
	code = end_rows(ld, st, stmt, rc, code);
	if (code == SS_EXIT_OK)
		code = prepare(ld, st,
			       "SELECT id, name FROM apis WHERE name NOT IN ('ncclSend', 'ncclRecv',"
			       " 'ncclGroupStart', 'ncclGroupEnd') ORDER BY id",
			       &stmt);
	if (code != SS_EXIT_OK)
		goto out;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *op = job_string(job, (const char *)sqlite3_column_text(stmt, 1));

		if (!op || !reserve(&apis, &apis_capacity, napis, sizeof(*apis))) {
			code = out_of_memory(ld);
			break;
		}
		apis[napis++] = (struct collective_api){sqlite3_column_int64(stmt, 0), op};
	}
	code = end_rows(ld, st, stmt, rc, code);
	for (size_t i = 0; code == SS_EXIT_OK && i < st->nn2; i++) {
		const struct n2_call *c = &st->n2[i];
		size_t lo = 0, hi = napis;

		while (lo < hi) { /* the API, by id */
			size_t mid = lo + (hi - lo) / 2;

			if (apis[mid].id < c->api_id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == napis || apis[lo].id != c->api_id)
			continue;
		for (size_t m = 0; code == SS_EXIT_OK && m < ncomms; m++) {
			const struct comm_row *cm = &comms[m];
			struct series *se;

			if (cm->comm != c->comm || c->start_ns < cm->created_ns ||
			    (cm->destroyed && c->start_ns > cm->destroyed_ns))
				continue;
			if (last >= job->nseries || job->series[last].hash != cm->hash ||
			    job->series[last].op != apis[lo].op) {
				for (last = 0; last < job->nseries; last++)
					if (job->series[last].hash == cm->hash &&
					    job->series[last].op == apis[lo].op)
						break;
				if (last == job->nseries) {
					se = realloc(job->series, (job->nseries + 1) * sizeof(*se));
					if (!se) {
						code = out_of_memory(ld);
						break;
					}
					job->series = se;
					job->series[job->nseries++] =
					    (struct series){.hash = cm->hash, .op = apis[lo].op};
				}
			}
			se = &job->series[last];
			if (!reserve(&se->c, &se->capacity, se->n, sizeof(*se->c))) {
				code = out_of_memory(ld);
				break;
			}
			se->c[se->n++] =
			    (struct ss_collective_call){c->start_ns + offset, c->end_ns + offset};
		}
	}
	/* row_number() by start time: equal times are the same arrival, whichever comes first */
	for (size_t i = 0; code == SS_EXIT_OK && i < job->nseries; i++) {
		struct series *se = &job->series[i];
		int sorted = 1;

		for (size_t k = 1; k < se->n && sorted; k++)
			sorted = se->c[k - 1].start_ns <= se->c[k].start_ns;
		if (!sorted)
			qsort(se->c, se->n, sizeof(*se->c), compare_calls);
	}
out:
	free(comms);
	free(apis);
	return code;
}

/* Step 4: this rank's range names with the sync points per instance (nothing without ranges). */
static int load_ranges(struct loader *ld, struct db_state *st, struct job *job)
{
	const struct ss_rank *rk = st->rank;
	sqlite3_stmt *stmt;
	int rc, code, any;

	code = query_row(ld, st, HAS_RANGES_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	any = sqlite3_column_int(stmt, 0);
	sqlite3_finalize(stmt);
	if (!any)
		return SS_EXIT_OK;
	code = exec_temp(ld, st, RANGE_CALLS_SQL);
	if (code == SS_EXIT_OK)
		code = prepare(ld, st, RANGE_STATS_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	/* the end of the recording, as load_meta found it: where open ranges end */
	sqlite3_bind_int64(stmt, 1, rk->start_mono_ns + rk->wall_ns);
	sqlite3_bind_int(stmt, 2, SS_RANGE_NAMES_MAX);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct ss_range_stat *r;

		if (!reserve(&job->found.ranges, &job->ranges_capacity, job->found.nranges,
			     sizeof(*job->found.ranges))) {
			code = out_of_memory(ld);
			break;
		}
		r = &job->found.ranges[job->found.nranges++];
		*r = (struct ss_range_stat){
		    .rank = rk->rank,
		    .path = rk->path,
		    .name = xstrdup((const char *)sqlite3_column_text(stmt, 0)),
		    .kind = xstrdup((const char *)sqlite3_column_text(stmt, 1)),
		    .instances = sqlite3_column_int64(stmt, 2),
		    .sync_min = sqlite3_column_int64(stmt, 3),
		    .sync_median = sqlite3_column_int64(stmt, 4),
		    .sync_max = sqlite3_column_int64(stmt, 5),
		    .sync_total = sqlite3_column_int64(stmt, 6),
		    .blocked_median_ns = sqlite3_column_int64(stmt, 7),
		    .blocked_max_ns = sqlite3_column_int64(stmt, 8),
		};
		if (!r->name || !r->kind) {
			code = out_of_memory(ld);
			break;
		}
	}
	return end_rows(ld, st, stmt, rc, code);
}

/* ------------------------------------------------------------------ GPU timeline */

/*
 * Step 5, only for databases with the extension tables of CUPTI (docs/cupti.md): gpu_activity
 * (kernels, copies, memsets, syncs as the GPU ran them) and gpu_api (the runtime/driver calls
 * they came from). Without them this costs one lookup (HAS_GPU_SQL). Everything is C over
 * arrays read once: interval unions are a sort and a sweep, so millions of kernels are cheap.
 *   - per rank: communication/compute overlap as HolisticTraceAnalysis defines it;
 *   - host-sync findings: the GPU idle time after each sync (gpu_idle_ns);
 *   - copy-without-overlap findings: H2D/D2H copies beside idle compute.
 * A GPU row is tied to its host call (GPU_JOIN_NS): correlation id -> gpu_api (the earliest
 * record of that id: its thread and start) -> the calls row of that thread that started last at
 * or before the API record's start, at most GPU_JOIN_NS before it.
 */
#define HAS_GPU_SQL                                                                                \
	"SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpu_activity'),"\
	" EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpu_api'),"          \
	" EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpu_paused')"
/* When the GPU timeline was off (syncspy_gpu_trace, SYNCSPY_CUPTI_SAMPLE: CUPTI-3, CUPTI-4) */
#define GPU_PAUSED_SQL "SELECT start_ns, end_ns FROM gpu_paused ORDER BY start_ns"
#define GPU_ACTIVITY_SQL                                                                           \
	"SELECT kind, start_ns, end_ns, coalesce(device, 0), coalesce(correlation_id, 0),"         \
	" coalesce(copy_kind, 0), coalesce(bytes, 0), coalesce(substr(name, 1, 4) = 'nccl', 0),"   \
	" coalesce(stream_id, -1)"                                                                 \
	" FROM gpu_activity WHERE start_ns IS NOT NULL AND end_ns >= start_ns"
/* The earliest API record of each correlation id: the call the program made (when both layers
 * report a call, the driver call inside a runtime call starts later). */
#define GPU_API_SQL                                                                                \
	"SELECT correlation_id, tid, min(start_ns) FROM gpu_api GROUP BY correlation_id"           \
	" ORDER BY correlation_id"
#define GPU_CALLS_SQL "SELECT id, tid, start_ns, site_id FROM calls"
#define GPU_SYNCS_SQL                                                                              \
	"SELECT c.id, coalesce(s.text, '" NO_SITE "'), c.end_ns, c.start_ns, c.class = 'S4'"       \
	" FROM calls c LEFT JOIN sites s ON s.id = c.site_id"                                      \
	" WHERE c.class IN ('S1', 'S2', 'S3', 'S4') ORDER BY c.start_ns"
#define GPU_SITE_SQL "SELECT text FROM sites WHERE id = ?"

/* The join window: a gpu_api record belongs to the last call of its thread that started at
 * most this long before it (the wrapper's start precedes the runtime's own). */
#define GPU_JOIN_NS 1000000LL
/* CUpti_ActivityMemcpyKind: host to device, device to host. */
#define CUPTI_MEMCPY_HTOD 1
#define CUPTI_MEMCPY_DTOH 2

struct interval {
	long long device, s, e;
};

static int compare_intervals(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return (x->s > y->s) - (x->s < y->s);
}

/* Sorts v by (device, start) and merges overlapping intervals of one device in place: the union,
 * per device, sorted. Returns its length. */
static size_t union_intervals(struct interval *v, size_t n)
{
	size_t out = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), compare_intervals);
	for (size_t i = 1; i < n; i++) {
		struct interval *last = &v[out];

		if (v[i].device == last->device && v[i].s <= last->e) {
			if (v[i].e > last->e)
				last->e = v[i].e;
		} else
			v[++out] = v[i];
	}
	return out + 1;
}

static long long union_length(const struct interval *v, size_t n)
{
	long long total = 0;

	for (size_t i = 0; i < n; i++)
		total += v[i].e - v[i].s;
	return total;
}

/* Length of the intersection of two unions (each sorted and disjoint, device ignored: the
 * rank's kernels of every device count as one timeline). */
static long long intersection_length(const struct interval *a, size_t na, const struct interval *b,
				     size_t nb)
{
	long long total = 0;
	size_t i = 0, j = 0;

	while (i < na && j < nb) {
		long long s = a[i].s > b[j].s ? a[i].s : b[j].s;
		long long e = a[i].e < b[j].e ? a[i].e : b[j].e;

		if (e > s)
			total += e - s;
		if (a[i].e < b[j].e)
			i++;
		else
			j++;
	}
	return total;
}

/* The first interval of union u (sorted by device, start) of device d that ends after t, or n. */
static size_t first_ending_after(const struct interval *u, size_t n, long long d, long long t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u[mid].device < d || (u[mid].device == d && u[mid].e <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && u[lo].device == d ? lo : n;
}

/* A GPU row to tie to its host call (a copy, or a sync record), and what the join found. */
struct gpu_target {
	long long correlation;
	long long tid, api_ns;	     /* from gpu_api: tid -1 when no record */
	long long call_id, site_id;  /* the host call: call_id -1 when none */
	long long call_start;
	int has_site;
	long long device; /* sync records: the device */
	size_t index;	  /* copies: the index in gpu_rows.copies */
};

static int compare_targets_by_thread(const void *a, const void *b)
{
	const struct gpu_target *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->api_ns > y->api_ns) - (x->api_ns < y->api_ns);
}

/* The earliest API record of a correlation id (GPU_API_SQL), read once per database for both
 * the syncs' and the kernels' joins. */
struct api_first {
	long long correlation, tid, start_ns;
};

static int load_api_first(struct loader *ld, struct db_state *st)
{
	sqlite3_stmt *stmt;
	int rc, code;

	if (st->api_first_loaded || !st->gpu_api)
		return SS_EXIT_OK;
	st->api_first_loaded = 1;
	code = prepare(ld, st, GPU_API_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct api_first first = {sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1),
					  sqlite3_column_int64(stmt, 2)};

		if (!PUSH(st->api_first, st->napi_first, st->cap_api_first, first)) {
			sqlite3_finalize(stmt);
			return out_of_memory(ld);
		}
	}
	return end_rows(ld, st, stmt, rc, SS_EXIT_OK);
}

static int compare_api_first(const void *a, const void *b)
{
	const struct api_first *x = a, *y = b;

	return (x->correlation > y->correlation) - (x->correlation < y->correlation);
}

static const struct api_first *api_first_of(const struct db_state *st, long long correlation)
{
	struct api_first key = {.correlation = correlation};

	return st->napi_first ? bsearch(&key, st->api_first, st->napi_first, sizeof(key),
					compare_api_first)
			      : NULL;
}

/* Ties each target to its host call (GPU_JOIN_NS). Reorders targets (by thread, API start). */
static int join_targets(struct loader *ld, struct db_state *st, struct gpu_target *tg, size_t n)
{
	sqlite3_stmt *stmt;
	int rc, code;

	for (size_t i = 0; i < n; i++) {
		tg[i].tid = -1;
		tg[i].call_id = -1;
	}
	if (!n || !st->gpu_api)
		return SS_EXIT_OK;
	code = load_api_first(ld, st);
	if (code != SS_EXIT_OK)
		return code;
	for (size_t i = 0; i < n; i++) {
		const struct api_first *first = api_first_of(st, tg[i].correlation);

		if (first) {
			tg[i].tid = first->tid;
			tg[i].api_ns = first->start_ns;
		}
	}
	qsort(tg, n, sizeof(*tg), compare_targets_by_thread);
	code = prepare(ld, st, GPU_CALLS_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long id = sqlite3_column_int64(stmt, 0), tid = sqlite3_column_int64(stmt, 1);
		long long start = sqlite3_column_int64(stmt, 2);
		int has_site = sqlite3_column_type(stmt, 3) != SQLITE_NULL;
		long long site = sqlite3_column_int64(stmt, 3);
		size_t lo = 0, hi = n;

		/* the first target of this thread with api_ns >= start */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (tg[mid].tid < tid || (tg[mid].tid == tid && tg[mid].api_ns < start))
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t i = lo; i < n && tg[i].tid == tid && tg[i].api_ns - start <= GPU_JOIN_NS;
		     i++)
			if (tg[i].call_id < 0 || start > tg[i].call_start ||
			    (start == tg[i].call_start && id > tg[i].call_id)) {
				tg[i].call_id = id;
				tg[i].call_start = start;
				tg[i].site_id = site;
				tg[i].has_site = has_site;
			}
	}
	return end_rows(ld, st, stmt, rc, SS_EXIT_OK);
}

/* What step 5 reads of gpu_activity, and of gpu_paused. */
struct gpu_rows {
	struct interval *off; /* when the timeline was off, in time order (device unused) */
	size_t noff, cap_off;
	struct interval *busy, *kernels, *comm, *compute;
	size_t nbusy, nkernels, ncomm, ncompute;
	size_t cap_busy, cap_kernels, cap_comm, cap_compute;
	struct copy_row {
		long long device, s, e, bytes, correlation, stream;
		int h2d;
	} *copies;
	size_t ncopies, cap_copies;
	/* each kernel with its stream and when its launch call started (-1: no API record) */
	struct kernel_row {
		long long device, stream, s, correlation, launch_ns, e;
	} *krows;
	size_t nkrows, cap_krows;
	/* per device, the stream that ran most of its kernels (kernel_launch_times) */
	struct compute_stream {
		long long device, stream;
	} *compute_streams;
	size_t ncompute_streams, cap_compute_streams;
	struct gpu_target *syncs; /* sync records, joined to their calls when needed */
	size_t nsyncs, cap_syncs;
};

static void gpu_rows_free(struct gpu_rows *g)
{
	free(g->busy);
	free(g->off);
	free(g->kernels);
	free(g->comm);
	free(g->compute);
	free(g->copies);
	free(g->krows);
	free(g->compute_streams);
	free(g->syncs);
}

static int load_gpu_rows(struct loader *ld, struct db_state *st, struct gpu_rows *g)
{
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, GPU_ACTIVITY_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(stmt, 0);
		struct interval iv = {sqlite3_column_int64(stmt, 3), sqlite3_column_int64(stmt, 1),
				      sqlite3_column_int64(stmt, 2)};
		long long correlation = sqlite3_column_int64(stmt, 4);
		int ok = 1;

		if (!kind)
			continue;
		if (strcmp(kind, "sync") == 0) {
			struct gpu_target t = {.correlation = correlation, .device = iv.device};

			ok = PUSH(g->syncs, g->nsyncs, g->cap_syncs, t);
		} else if (strcmp(kind, "kernel") == 0 || strcmp(kind, "memcpy") == 0 ||
			   strcmp(kind, "memset") == 0) {
			ok = PUSH(g->busy, g->nbusy, g->cap_busy, iv);
			if (ok && kind[0] == 'k') {
				struct kernel_row kr = {iv.device, sqlite3_column_int64(stmt, 8),
							iv.s, correlation, -1, iv.e};

				ok = PUSH(g->kernels, g->nkernels, g->cap_kernels, iv) &&
				     PUSH(g->krows, g->nkrows, g->cap_krows, kr);
				struct interval all = {0, iv.s, iv.e}; /* one timeline */

				if (ok && sqlite3_column_int(stmt, 7))
					ok = PUSH(g->comm, g->ncomm, g->cap_comm, all);
				else if (ok)
					ok = PUSH(g->compute, g->ncompute, g->cap_compute, all);
			}
			if (ok && kind[2] == 'm' && kind[3] == 'c') { /* memcpy */
				int copy_kind = sqlite3_column_int(stmt, 5);
				struct copy_row c = {iv.device,
						     iv.s,
						     iv.e,
						     sqlite3_column_int64(stmt, 6),
						     correlation,
						     sqlite3_column_int64(stmt, 8),
						     copy_kind == CUPTI_MEMCPY_HTOD};

				if (copy_kind == CUPTI_MEMCPY_HTOD || copy_kind == CUPTI_MEMCPY_DTOH)
					ok = PUSH(g->copies, g->ncopies, g->cap_copies, c);
			}
		}
		if (!ok) {
			code = out_of_memory(ld);
			break;
		}
	}
	code = end_rows(ld, st, stmt, rc, code);
	if (code != SS_EXIT_OK || !st->gpu_paused)
		return code;
	code = prepare(ld, st, GPU_PAUSED_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct interval off = {0, sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1)};

		if (!PUSH(g->off, g->noff, g->cap_off, off)) {
			code = out_of_memory(ld);
			break;
		}
	}
	return end_rows(ld, st, stmt, rc, code);
}

/* Whether the timeline was off at some time in (from, to]: then GPU activity in between may
 * have gone unrecorded, and "idle" cannot be told from "not recorded". Off intervals are
 * disjoint and in time order, so their ends are too: the first ending after FROM decides. */
static int timeline_off_between(const struct gpu_rows *g, long long from, long long to)
{
	size_t lo = 0, hi = g->noff;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->off[mid].e <= from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->noff && g->off[lo].s < to;
}

/* Per-site sums (host-sync and sync-copy idle time, copy-without-overlap copies); a few dozen
 * sites. kind tells apart sites of different rules with one text. */
struct gpu_site {
	char *site;
	int kind;
	long long n, ns, worst, bytes, h2d, d2h;
	struct ss_tally tally; /* steady and whole-run (steps.h) */
};

static struct gpu_site *gpu_site(struct gpu_site **sites, size_t *n, size_t *cap, const char *text,
				 int kind)
{
	for (size_t i = 0; i < *n; i++)
		if ((*sites)[i].kind == kind && strcmp((*sites)[i].site, text) == 0)
			return &(*sites)[i];
	if (!reserve(sites, cap, *n, sizeof(**sites)))
		return NULL;
	(*sites)[*n] = (struct gpu_site){.site = strdup(text), .kind = kind};
	ss_tally_init(&(*sites)[*n].tally);
	return (*sites)[*n].site ? &(*sites)[(*n)++] : NULL;
}

static void gpu_sites_free(struct gpu_site *sites, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(sites[i].site);
	free(sites);
}

/* The device of a sync call: the only device, else the one of its CUPTI sync record. */
static int sync_device(const struct gpu_rows *g, long long only, long long call_id, long long *dev)
{
	if (only >= 0) {
		*dev = only;
		return 1;
	}
	for (size_t i = 0; i < g->nsyncs; i++) /* few syncs: linear */
		if (g->syncs[i].call_id == call_id) {
			*dev = g->syncs[i].device;
			return 1;
		}
	return 0;
}

/* host-sync and sync-copy: per site, the GPU idle time after each sync (S1-S4) until the
 * device's next activity; 0 when the device was busy at the sync's end; a sync with nothing
 * after it on its device, or with the timeline off at some time before that activity
 * (gpu_paused), is skipped. Sets gpu_idle_ns of this rank's host-sync and sync-copy findings:
 * the steady syncs' for a steady finding, all of them for an `info` one; and the rank's
 * steady_gpu_idle_ns. */
/* A kernel or copy and when its host call issued it (its API record's start; -1 unknown), by
 * (device, start): whether the GPU had work queued when a sync ended. */
struct issued_work {
	long long device, s, issued;
};

static int compare_issued(const void *a, const void *b)
{
	const struct issued_work *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return (x->s > y->s) - (x->s < y->s);
}

static struct issued_work *issued_work(const struct db_state *st, const struct gpu_rows *g,
				       size_t *n)
{
	struct issued_work *w = malloc((g->nkrows + g->ncopies + 1) * sizeof(*w));
	size_t k = 0;

	if (!w)
		return NULL;
	for (size_t i = 0; i < g->nkrows; i++) {
		const struct api_first *a = api_first_of(st, g->krows[i].correlation);

		w[k++] = (struct issued_work){g->krows[i].device, g->krows[i].s,
					      a ? a->start_ns : -1};
	}
	for (size_t i = 0; i < g->ncopies; i++) {
		const struct api_first *a = api_first_of(st, g->copies[i].correlation);

		w[k++] = (struct issued_work){g->copies[i].device, g->copies[i].s,
					      a ? a->start_ns : -1};
	}
	qsort(w, k, sizeof(*w), compare_issued);
	*n = k;
	return w;
}

/* Whether the first kernel or copy to start on device d at or after t had been issued before
 * t: then the GPU was not waiting for the host at t (what idle there was is the GPU's own
 * scheduling: the next work was queued). */
static int queued_at(const struct issued_work *w, size_t n, long long d, long long t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w[mid].device < d || (w[mid].device == d && w[mid].s < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && w[lo].device == d && w[lo].issued >= 0 && w[lo].issued < t;
}

static int gpu_idle_rule(struct loader *ld, struct db_state *st, struct gpu_rows *g)
{
	struct issued_work *work = NULL;
	size_t nwork = 0;
	struct gpu_site *sites = NULL;
	size_t nsites = 0, cap = 0;
	long long only = g->nbusy ? g->busy[0].device : -1;
	sqlite3_stmt *stmt;
	int rc, code;

	for (size_t i = 1; i < g->nbusy; i++)
		if (g->busy[i].device != only)
			only = -1;
	if (only < 0 && g->nsyncs) {
		code = join_targets(ld, st, g->syncs, g->nsyncs);
		if (code != SS_EXIT_OK)
			return code;
	}
	code = load_api_first(ld, st);
	if (code != SS_EXIT_OK)
		return code;
	work = issued_work(st, g, &nwork);
	if (!work)
		return out_of_memory(ld);
	code = prepare(ld, st, GPU_SYNCS_SQL, &stmt);
	if (code != SS_EXIT_OK) {
		free(work);
		return code;
	}
	st->rank->steady_gpu_idle_ns = 0;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long id = sqlite3_column_int64(stmt, 0), end = sqlite3_column_int64(stmt, 2);
		const char *text = (const char *)sqlite3_column_text(stmt, 1);
		long long start = sqlite3_column_int64(stmt, 3);
		int copy = sqlite3_column_int(stmt, 4);
		struct gpu_site *site;
		long long dev, idle;
		size_t k, step;

		if (!sync_device(g, only, id, &dev))
			continue;
		k = first_ending_after(g->busy, g->nbusy, dev, end);
		if (k == g->nbusy)
			continue; /* nothing ran on the device after it */
		if (timeline_off_between(g, end, g->busy[k].s))
			continue; /* the timeline was off in between: not measured (CUPTI-3) */
		idle = g->busy[k].s > end ? g->busy[k].s - end : 0;
		if (idle > 0 && queued_at(work, nwork, dev, end))
			idle = 0; /* the next work was queued already: the host was not the cause */
		site = gpu_site(&sites, &nsites, &cap, text ? text : NO_SITE, copy);
		if (!site) {
			code = out_of_memory(ld);
			break;
		}
		site->n++;
		site->ns += idle;
		ss_tally_add(&site->tally, &st->steps, start, idle, 1);
		if (ss_steps_phase(&st->steps, start, &step) == SS_PHASE_STEADY)
			st->rank->steady_gpu_idle_ns += idle;
	}
	code = end_rows(ld, st, stmt, rc, code);
	for (size_t i = 0; code == SS_EXIT_OK && i < ld->report->nfindings; i++) {
		struct ss_finding *f = &ld->report->findings[i];
		const struct gpu_site *hit = NULL;
		int copy = f->rule == rules[RULE_SYNC_COPY].id, steady;
		long long idle = 0;
		char *detail;

		if (f->rule != rules[RULE_HOST_SYNC].id && !copy)
			continue;
		steady = strcmp(f->phase, "steady") == 0;
		for (size_t j = 0; j < nsites && !hit; j++)
			if (sites[j].kind == copy && strcmp(sites[j].site, f->site) == 0)
				hit = &sites[j];
		if (hit && (steady ? hit->tally.n : hit->tally.all_n) == 0)
			hit = NULL; /* none measured in this phase */
		if (hit)
			f->gpu_idle_ns = idle = steady ? hit->tally.ns : hit->tally.all_ns;
		if (copy && !hit)
			continue; /* a blocking copy says nothing when nothing is measured */
		detail = hit ? format("%s; GPU idle behind it: %.3f ms", f->detail, ms(idle))
			     : format("%s; GPU idle behind it: not measurable (no GPU activity "
				      "after these syncs)",
				      f->detail);
		if (!detail) {
			code = out_of_memory(ld);
			break;
		}
		free(f->detail);
		f->detail = detail;
	}
	free(work);
	gpu_sites_free(sites, nsites);
	return code;
}

static int compare_gpu_sites(const void *a, const void *b)
{
	return strcmp(((const struct gpu_site *)a)->site, ((const struct gpu_site *)b)->site);
}

static int compare_krows_by_stream(const void *a, const void *b)
{
	const struct kernel_row *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return (x->s > y->s) - (x->s < y->s);
}

/* Fills krows[].launch_ns (the earliest API record of the kernel's correlation id: the call the
 * program made), then sorts krows by (device, stream, start). */
static int kernel_launch_times(struct loader *ld, struct db_state *st, struct gpu_rows *g)
{
	int code;

	if (!g->nkrows)
		return SS_EXIT_OK;
	code = load_api_first(ld, st);
	if (code != SS_EXIT_OK)
		return code;
	for (size_t i = 0; i < g->nkrows; i++) {
		const struct api_first *first = api_first_of(st, g->krows[i].correlation);

		if (first)
			g->krows[i].launch_ns = first->start_ns;
	}
	qsort(g->krows, g->nkrows, sizeof(*g->krows), compare_krows_by_stream);
	/* One pass over the sorted rows: per device, the stream whose kernels ran longest (a
	 * loader stream runs as many kernels as the compute stream, a short one per batch). */
	long long best_ns = 0;
	for (size_t i = 0; i < g->nkrows;) {
		size_t j = i;
		long long ns = 0;

		while (j < g->nkrows && g->krows[j].device == g->krows[i].device &&
		       g->krows[j].stream == g->krows[i].stream) {
			ns += g->krows[j].e - g->krows[j].s;
			j++;
		}
		struct compute_stream cs = {g->krows[i].device, g->krows[i].stream};
		struct compute_stream *last =
		    g->ncompute_streams ? &g->compute_streams[g->ncompute_streams - 1] : NULL;

		if (!last || last->device != cs.device) {
			if (!PUSH(g->compute_streams, g->ncompute_streams, g->cap_compute_streams,
				  cs))
				return out_of_memory(ld);
			best_ns = ns;
		} else if (ns > best_ns) {
			*last = cs;
			best_ns = ns;
		}
		i = j;
	}
	return SS_EXIT_OK;
}

/* The compute stream of a device (the stream whose kernels ran longest); -2 when it ran none.
 * A few devices: a linear search. */
static long long compute_stream_of(const struct gpu_rows *g, long long device)
{
	for (size_t i = 0; i < g->ncompute_streams; i++)
		if (g->compute_streams[i].device == device)
			return g->compute_streams[i].stream;
	return -2;
}

/* The first kernel of (device, stream) that starts at or after t, or NULL. */
static const struct kernel_row *next_kernel_on_stream(const struct gpu_rows *g, long long device,
						      long long stream, long long t)
{
	size_t lo = 0, hi = g->nkrows;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct kernel_row *k = &g->krows[mid];

		if (k->device < device || (k->device == device && k->stream < stream) ||
		    (k->device == device && k->stream == stream && k->s < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->nkrows && g->krows[lo].device == device && g->krows[lo].stream == stream
		   ? &g->krows[lo]
		   : NULL;
}

/*
 * copy-without-overlap: H2D/D2H copies of the steady state (steps.h), recurring there, during which no kernel ran on their device, on a device that ran
 * kernels in the steady state, of at least COPY_OVERLAP_MIN_BYTES, on the device's compute stream
 * (the stream that ran most of its kernels), and that held the compute up: the next kernel of
 * that stream had been launched before the copy ended and started only after it. A copy on a
 * stream of its own, or one that found no compute waiting, cost nothing an overlap (a copy
 * issued earlier on a side stream) would win back. Per site of the host call (GPU_JOIN_NS; "(no
 * call site)" when the copy joins no call or the call has no site).
 */
#define COPY_OVERLAP_MIN_BYTES (64 * 1024) /* below: a latency-bound read of a result */

/* When a copy was issued: its API record's start (the host call, on the recording's clock),
 * else its own start. The host runs ahead of the GPU, so a step's copies may run on the GPU
 * after the host has left the step: the phase of a GPU record is its host call's (STEPS-1). */
static long long copy_issued(const struct db_state *st, const struct copy_row *c)
{
	const struct api_first *a = api_first_of(st, c->correlation);

	return a ? a->start_ns : c->s;
}

static int copy_rule(struct loader *ld, struct db_state *st, const struct gpu_rows *g)
{
	/* the steady state's start: the first steady step's, or the recording's (steps.h) */
	long long steady_ns = st->steps.nsteps ? st->steps.start[st->steps.first_steady]
					       : st->rank->start_mono_ns;
	struct gpu_target *tg = NULL;
	struct gpu_site *sites = NULL;
	size_t ntg = 0, cap_tg = 0, nsites = 0, cap_sites = 0;
	sqlite3_stmt *lookup = NULL;
	int code = load_api_first(ld, st);

	if (code != SS_EXIT_OK)
		return code;
	for (size_t i = 0; i < g->ncopies; i++) {
		const struct copy_row *c = &g->copies[i];
		size_t k = first_ending_after(g->kernels, g->nkernels, c->device, c->s);
		struct gpu_target t = {.correlation = c->correlation, .index = i};
		size_t step;

		if (ss_steps_phase(&st->steps, copy_issued(st, c), &step) != SS_PHASE_STEADY ||
		    (k < g->nkernels && g->kernels[k].s < c->e))
			continue; /* not in the steady state, or a kernel ran beside it */
		if (first_ending_after(g->kernels, g->nkernels, c->device, steady_ns) == g->nkernels)
			continue; /* the device computes nothing in the steady state */
		if (c->bytes < COPY_OVERLAP_MIN_BYTES)
			continue; /* a result read: latency, nothing to overlap */
		if (c->stream != compute_stream_of(g, c->device))
			continue; /* a copy stream of its own: the compute was not behind it */
		const struct kernel_row *next = next_kernel_on_stream(g, c->device, c->stream, c->e);
		if (!next || next->launch_ns < 0 || next->launch_ns >= c->e)
			continue; /* no compute was waiting behind it */
		if (!PUSH(tg, ntg, cap_tg, t)) {
			free(tg);
			return out_of_memory(ld);
		}
	}
	if (!ntg)
		return SS_EXIT_OK;
	code = join_targets(ld, st, tg, ntg);
	if (code == SS_EXIT_OK)
		code = prepare(ld, st, GPU_SITE_SQL, &lookup);
	for (size_t i = 0; code == SS_EXIT_OK && i < ntg; i++) {
		const struct copy_row *c = &g->copies[tg[i].index];
		const char *text = NULL;
		struct gpu_site *site;
		long long ns = c->e - c->s;

		if (tg[i].call_id >= 0 && tg[i].has_site) {
			sqlite3_bind_int64(lookup, 1, tg[i].site_id);
			if (sqlite3_step(lookup) == SQLITE_ROW)
				text = (const char *)sqlite3_column_text(lookup, 0);
		}
		site = gpu_site(&sites, &nsites, &cap_sites, text ? text : NO_SITE, 0);
		sqlite3_reset(lookup);
		if (!site) {
			code = out_of_memory(ld);
			break;
		}
		if (site->n++ == 0 || ns > site->worst)
			site->worst = ns;
		site->ns += ns;
		ss_tally_add(&site->tally, &st->steps, copy_issued(st, c), ns, 1);
		site->bytes += c->bytes;
		if (c->h2d)
			site->h2d++;
		else
			site->d2h++;
	}
	sqlite3_finalize(lookup);
	free(tg);
	if (nsites)
		qsort(sites, nsites, sizeof(*sites), compare_gpu_sites);
	/* An overlap wins back at most the copies' time and at most the compute that could run
	 * beside them: a copy-bound program (copies 10 ms, kernels 0.3 ms) gains 0.3 ms. */
	long long compute_ns = union_length(g->kernels, g->nkernels);
	for (size_t i = 0; code == SS_EXIT_OK && i < nsites; i++) {
		const struct gpu_site *s = &sites[i];
		/* not every step's (the first steps' or a few): `info` */
		int steady = ss_steps_recurring(&st->steps, s->tally.steps, s->n);
		long long gain = s->ns < compute_ns ? s->ns : compute_ns;

		code = add_finding(
		    ld, RULE_COPY_WITHOUT_OVERLAP, st->rank, s->n, s->ns, s->worst, s->bytes, gain,
		    xstrdup(s->site),
		    format("%lld H2D and %lld D2H copies (%lld bytes) ran %.3f ms on the copy engine "
			   "while no kernel ran on their device, each with the next kernel of its "
			   "stream already launched and waiting behind it; blocked_ns is that GPU copy "
			   "time; an overlap wins back at most %.3f ms (the kernels ran %.3f ms)",
			   s->h2d, s->d2h, s->bytes, ms(s->ns), ms(gain), ms(compute_ns)));
		if (code == SS_EXIT_OK)
			set_phase(&ld->report->findings[ld->report->nfindings - 1], &st->steps, steady,
				  s->tally.steps);
	}
	gpu_sites_free(sites, nsites);
	return code;
}

/* Whether the database has the GPU tables (one lookup of the schema). */
static int check_gpu_tables(struct loader *ld, struct db_state *st)
{
	sqlite3_stmt *stmt;
	int code = query_row(ld, st, HAS_GPU_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	st->rank->gpu = sqlite3_column_int(stmt, 0);
	st->gpu_api = sqlite3_column_int(stmt, 1);
	st->gpu_paused = sqlite3_column_int(stmt, 2);
	sqlite3_finalize(stmt);
	return SS_EXIT_OK;
}

/*
 * The step time with the GPU's work in it. A host that runs ahead (syncing once at the end)
 * enqueues a step in microseconds while the GPU takes milliseconds: its host steps say nothing
 * of throughput. The steady steps end when the last kernel or copy they issued has run (STEPS-1:
 * issued by a call in a steady step); their time over their number is the step time, when it is
 * longer than the host's median step.
 */
static int gpu_step_time(struct loader *ld, struct db_state *st, const struct gpu_rows *g)
{
	struct ss_rank *rk = st->rank;
	long long end, first;
	size_t steady = ss_steps_steady(&st->steps), step;
	int code;

	if (!steady)
		return SS_EXIT_OK;
	code = load_api_first(ld, st);
	if (code != SS_EXIT_OK)
		return code;
	first = st->steps.start[st->steps.first_steady];
	end = st->steps.start[st->steps.nsteps];
	for (size_t i = 0; i < g->nkrows; i++) {
		const struct api_first *a = api_first_of(st, g->krows[i].correlation);

		if (a && g->krows[i].e > end &&
		    ss_steps_phase(&st->steps, a->start_ns, &step) == SS_PHASE_STEADY)
			end = g->krows[i].e;
	}
	for (size_t i = 0; i < g->ncopies; i++) {
		const struct api_first *a = api_first_of(st, g->copies[i].correlation);

		if (a && g->copies[i].e > end &&
		    ss_steps_phase(&st->steps, a->start_ns, &step) == SS_PHASE_STEADY)
			end = g->copies[i].e;
	}
	if ((end - first) / (long long)steady > rk->step_ns)
		rk->step_ns = (end - first) / (long long)steady;
	return SS_EXIT_OK;
}

/* Step 5 (nothing without the GPU tables): overlap per rank, then the two GPU rules. */
static int run_gpu(struct loader *ld, struct db_state *st)
{
	struct ss_rank *rk = st->rank;
	struct gpu_rows g = {0};
	int code;

	if (!rk->gpu)
		return SS_EXIT_OK;
	code = load_gpu_rows(ld, st, &g);
	if (code == SS_EXIT_OK) {
		long long during;

		g.nbusy = union_intervals(g.busy, g.nbusy);
		g.nkernels = union_intervals(g.kernels, g.nkernels);
		g.ncomm = union_intervals(g.comm, g.ncomm);
		g.ncompute = union_intervals(g.compute, g.ncompute);
		rk->comm_ns = union_length(g.comm, g.ncomm);
		during = intersection_length(g.comm, g.ncomm, g.compute, g.ncompute);
		rk->comm_overlap = rk->comm_ns > 0 ? (double)during / (double)rk->comm_ns : -1;
		rk->exposed_comm_ns = rk->comm_ns - during;
		code = gpu_idle_rule(ld, st, &g);
	}
	if (code == SS_EXIT_OK)
		code = gpu_step_time(ld, st, &g);
	if (code == SS_EXIT_OK)
		code = kernel_launch_times(ld, st, &g);
	if (code == SS_EXIT_OK)
		code = copy_rule(ld, st, &g);
	gpu_rows_free(&g);
	return code;
}

/* Two files that claim one rank of one job size, from different processes, are two runs mixed. */
static int check_duplicate_rank(struct loader *ld, size_t index)
{
	const struct ss_rank *rk = &ld->report->ranks[index];

	if (rk->rank < 0)
		return SS_EXIT_OK;
	for (size_t i = 0; i < index; i++) {
		const struct ss_rank *o = &ld->report->ranks[i];

		if (o->rank == rk->rank && o->world_size == rk->world_size &&
		    (o->pid != rk->pid || strcmp(o->host, rk->host) != 0))
			return fail(ld, SS_EXIT_INPUT,
				    "%s: rank %lld of %lld is also recorded by %s (pid %lld): "
				    "name the databases of one run only",
				    rk->path, rk->rank, rk->world_size, o->path, o->pid);
	}
	return SS_EXIT_OK;
}

/* Loads one database into *rk and job (a worker thread: touches nothing shared). */
static void load_one(struct job *job, struct ss_rank *rk)
{
	struct loader ld = {.report = &job->found, .err = job->err, .errlen = sizeof(job->err)};
	const char *path = job->path;
	struct db_state st = {0};
	double t = now_s();
	int code;

	memset(rk, 0, sizeof(*rk));
	rk->comm_ns = rk->exposed_comm_ns = -1;
	rk->comm_overlap = -1;
	rk->steady_gpu_idle_ns = rk->step_ns = rk->steady_start_ns = rk->steady_end_ns = -1;
	rk->steps_source = "none";
	rk->path = xstrdup(path);
	if (!rk->path) {
		job->code = out_of_memory(&ld);
		return;
	}
	code = ss_db_open(path, &st.db, ld.err, ld.errlen);
	if (code != SS_EXIT_OK) {
		job->code = code;
		return;
	}
	ss_lines_attach(st.db); /* file:line of native sites where debug info has it */
	st.path = path;
	st.rank = rk;
	code = load_meta(&ld, &st);
	job->meta_loaded = code == SS_EXIT_OK;
	if (code == SS_EXIT_OK)
		code = check_gpu_tables(&ld, &st);
	lap(&t, path, "open+meta");
	if (code == SS_EXIT_OK)
		code = build_aggregate(&ld, &st);
	lap(&t, path, "aggregate");
	if (code == SS_EXIT_OK)
		code = run_site_rules(&ld, &st);
	lap(&t, path, "site rules");
	if (code == SS_EXIT_OK)
		code = run_overlap_rule(&ld, &st);
	lap(&t, path, "overlap");
	if (code == SS_EXIT_OK)
		code = load_arrivals(&ld, &st, job);
	lap(&t, path, "arrivals");
	if (code == SS_EXIT_OK)
		code = load_ranges(&ld, &st, job);
	lap(&t, path, "ranges");
	if (code == SS_EXIT_OK)
		code = run_gpu(&ld, &st);
	lap(&t, path, "gpu");
	if (code == SS_EXIT_OK && rk->gpu)
		confirm_on_gpu(&job->found);
	for (size_t i = 0; code == SS_EXIT_OK && i < job->found.nfindings; i++)
		if (!judge_finding(&job->found.findings[i], rk))
			code = out_of_memory(&ld);
	ss_steps_free(&st.steps);
	sqlite3_close(st.db);
	free(st.overlap);
	free(st.n2);
	free(st.api_first);
	job->code = code;
}

/* Databases are loaded by this many threads at most, one connection each: the scan is CPU-bound
 * once the file is cached, so more threads than cores only add memory. */
#define SS_LOAD_THREADS_MAX 8

struct pool {
	struct job *jobs;
	struct ss_rank *ranks;
	size_t njobs;
	size_t next; /* the next job to take, atomically */
};

static void *load_worker(void *arg)
{
	struct pool *pool = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&pool->next, 1, __ATOMIC_RELAXED)) < pool->njobs)
		load_one(&pool->jobs[i], &pool->ranks[i]);
	return NULL;
}

static void load_all(struct pool *pool)
{
	pthread_t threads[SS_LOAD_THREADS_MAX];
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	size_t n = cores > 0 ? (size_t)cores : 1, started = 0;

	if (n > SS_LOAD_THREADS_MAX)
		n = SS_LOAD_THREADS_MAX;
	if (n > pool->njobs)
		n = pool->njobs;
	/* This thread is one of the workers; a thread that cannot start leaves its share to it. */
	while (started + 1 < n && pthread_create(&threads[started], NULL, load_worker, pool) == 0)
		started++;
	load_worker(pool);
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
}

/* Adds a loaded job to the report, as the one-by-one loader of the first version did: the first
 * failure in path order wins, and a duplicate rank is found before the database's other errors. */
static int merge_job(struct loader *ld, struct job *job, size_t index)
{
	struct ss_report *r = ld->report;
	int code = SS_EXIT_OK;

	if (!job->meta_loaded)
		return fail(ld, job->code, "%s", job->err);
	code = check_duplicate_rank(ld, index);
	if (code != SS_EXIT_OK)
		return code;
	if (job->code != SS_EXIT_OK)
		return fail(ld, job->code, "%s", job->err);
	for (size_t i = 0; i < job->found.nfindings; i++) {
		struct ss_finding *f = &job->found.findings[i];

		if (!reserve(&r->findings, &ld->findings_capacity, r->nfindings, sizeof(*f)))
			return out_of_memory(ld);
		r->findings[r->nfindings++] = *f;
		f->site = f->detail = NULL; /* moved */
	}
	for (size_t i = 0; i < job->found.nranges; i++) {
		struct ss_range_stat *rs = &job->found.ranges[i];

		if (!reserve(&r->ranges, &ld->ranges_capacity, r->nranges, sizeof(*rs)))
			return out_of_memory(ld);
		r->ranges[r->nranges++] = *rs;
		rs->name = rs->kind = NULL; /* moved */
	}
	return SS_EXIT_OK;
}

/* ------------------------------------------------------------------ across ranks */

/* One rank's series of one (id_hash, op), for the comparison across ranks. */
struct series_ref {
	const struct series *se;
	size_t rank_index; /* the job's index: path order */
};

static int compare_series_refs(const void *a, const void *b)
{
	const struct series_ref *x = a, *y = b;
	int c = strcmp(x->se->hash, y->se->hash);

	if (c)
		return c;
	c = strcmp(x->se->op, y->se->op);
	if (c)
		return c;
	return (x->rank_index > y->rank_index) - (x->rank_index < y->rank_index);
}

/* What one rank did at one communicator's collectives: the late-arrival totals. */
struct late_stats {
	long long times, total, worst;
	int first;
};

/* When a rank started the k-th call of a series, on the report's axis (ANALYSIS-4). */
static long long arrival(const struct loader *ld, const struct series_ref *ref, size_t k)
{
	return ref->se->c[k].start_ns - ld->report->ranks[ref->rank_index].clock_offset_ns;
}

/* ------------------------------------------------------------------ clock alignment */

int ss_clock_samples(const struct ss_collective_call *x, size_t nx,
		     const struct ss_collective_call *ref, size_t nref, long long **samples,
		     size_t *nsamples, size_t *capacity)
{
	for (size_t k = 0; k < nx && k < nref; k++) {
		if (x[k].end_ns - x[k].start_ns < SS_CLOCK_WAIT_MIN_NS &&
		    ref[k].end_ns - ref[k].start_ns < SS_CLOCK_WAIT_MIN_NS)
			continue; /* nobody waited: an enqueue, its end says nothing */
		if (!reserve(samples, capacity, *nsamples, sizeof(**samples)))
			return -1;
		(*samples)[(*nsamples)++] = x[k].end_ns - ref[k].end_ns;
	}
	return 0;
}

int ss_clock_fit(long long *samples, size_t n, long long *offset_ns, long long *spread_ns)
{
	long long median;

	if (n < SS_CLOCK_MIN_SAMPLES)
		return 0;
	qsort(samples, n, sizeof(*samples), compare_ll);
	median = samples[(n - 1) / 2];
	for (size_t i = 0; i < n; i++)
		samples[i] = samples[i] < median ? median - samples[i] : samples[i] - median;
	qsort(samples, n, sizeof(*samples), compare_ll);
	*offset_ns = median;
	*spread_ns = samples[(n - 1) / 2];
	return 1;
}

static int compare_ranks(const void *a, const void *b);

/*
 * ANALYSIS-4: each rank's clock offset against the reference rank (the first in rank order).
 * Same host as the reference: 0, exactly (one CLOCK_MONOTONIC, one wall clock). Another host:
 * the median over the collectives both ranks made on a shared communicator (same id_hash, same
 * API, k-th call) of end(rank) - end(reference), wall-clock mapped, when at least
 * SS_CLOCK_MIN_SAMPLES of them were blocking (ss_clock_samples); else 0, by the wall clock.
 */
static int estimate_clocks(struct loader *ld, const struct job *jobs, size_t njobs)
{
	struct ss_rank *ranks = ld->report->ranks;
	long long *samples = NULL;
	size_t ref = 0, capacity = 0;

	for (size_t i = 1; i < njobs; i++)
		if (compare_ranks(&ranks[i], &ranks[ref]) < 0)
			ref = i;
	for (size_t i = 0; i < njobs; i++) {
		struct ss_rank *rk = &ranks[i];
		size_t n = 0;

		rk->clock_offset_ns = 0;
		rk->clock_offset_spread_ns = 0;
		rk->clock_offset_method = "same-host";
		if (i == ref || strcmp(rk->host, ranks[ref].host) == 0)
			continue;
		for (size_t a = 0; a < jobs[i].nseries; a++)
			for (size_t b = 0; b < jobs[ref].nseries; b++) {
				const struct series *x = &jobs[i].series[a], *y = &jobs[ref].series[b];

				if (strcmp(x->hash, y->hash) != 0 || strcmp(x->op, y->op) != 0)
					continue;
				if (ss_clock_samples(x->c, x->n, y->c, y->n, &samples, &n,
						     &capacity) != 0) {
					free(samples);
					return out_of_memory(ld);
				}
			}
		if (ss_clock_fit(samples, n, &rk->clock_offset_ns, &rk->clock_offset_spread_ns)) {
			rk->clock_offset_method = "collectives";
		} else {
			rk->clock_offset_method = "wall-clock";
			rk->clock_offset_spread_ns = -1;
		}
	}
	free(samples);
	return SS_EXIT_OK;
}

/*
 * nccl-straggler, per communicator (id_hash): each instance (op, k) that at least two ranks
 * reached is compared; when the last rank started at least SS_STRAGGLER_MIN_NS after the first,
 * every rank that started last is late by that much. The rank late most often (then by the
 * most time, then the first in path order) is the finding, one per communicator, in id_hash
 * order. Each rank's series is ordered by time, so instance k is the k-th element of each.
 */
static int run_straggler_rule(struct loader *ld, const struct job *jobs, size_t njobs)
{
	struct series_ref *refs = NULL;
	struct late_stats *per = calloc(njobs ? njobs : 1, sizeof(*per));
	size_t nrefs = 0, capacity = 0;
	int code = SS_EXIT_OK, corrected = 0;

	for (size_t j = 0; j < njobs; j++)
		corrected |= ld->report->ranks[j].clock_offset_ns != 0;

	if (!per)
		return out_of_memory(ld);
	for (size_t j = 0; j < njobs; j++)
		for (size_t i = 0; i < jobs[j].nseries; i++) {
			if (!reserve(&refs, &capacity, nrefs, sizeof(*refs))) {
				free(per);
				free(refs);
				return out_of_memory(ld);
			}
			refs[nrefs++] = (struct series_ref){&jobs[j].series[i], j};
		}
	if (nrefs)
		qsort(refs, nrefs, sizeof(*refs), compare_series_refs);
	for (size_t h = 0, hend; code == SS_EXIT_OK && h < nrefs; h = hend) {
		const char *hash = refs[h].se->hash;
		long long instances = 0, nranks = 0;
		size_t best = njobs;

		for (hend = h; hend < nrefs && strcmp(refs[hend].se->hash, hash) == 0; hend++)
			;
		memset(per, 0, njobs * sizeof(*per));
		for (size_t o = h, oend; o < hend; o = oend) {
			size_t longest = 0;

			for (oend = o; oend < hend && strcmp(refs[oend].se->op, refs[o].se->op) == 0;
			     oend++)
				if (refs[oend].se->n > longest)
					longest = refs[oend].se->n;
			for (size_t k = 0; k < longest; k++) {
				long long first_t = 0, last_t = 0, n = 0;

				for (size_t r = o; r < oend; r++) {
					long long t;

					if (refs[r].se->n <= k)
						continue;
					t = arrival(ld, &refs[r], k);
					if (n++ == 0)
						first_t = last_t = t;
					else if (t < first_t)
						first_t = t;
					else if (t > last_t)
						last_t = t;
				}
				if (n < 2)
					continue;
				instances++;
				if (n > nranks)
					nranks = n;
				if (last_t - first_t < SS_STRAGGLER_MIN_NS)
					continue;
				for (size_t r = o; r < oend; r++) {
					struct late_stats *p = &per[refs[r].rank_index];
					long long late = last_t - first_t;

					if (refs[r].se->n <= k || arrival(ld, &refs[r], k) != last_t)
						continue;
					if (p->times++ == 0 || late > p->worst)
						p->worst = late;
					p->total += late;
					if (k == 0)
						p->first = 1;
				}
			}
		}
		for (size_t j = 0; j < njobs; j++) {
			if (!per[j].times)
				continue;
			if (best == njobs || per[j].times > per[best].times ||
			    (per[j].times == per[best].times && per[j].total > per[best].total))
				best = j;
		}
		if (best == njobs)
			continue;
		code = add_finding(
		    ld, RULE_NCCL_STRAGGLER, &ld->report->ranks[best], per[best].times,
		    per[best].total, per[best].worst, -1, -1, format("communicator %s", hash),
		    format("last to start %lld of %lld collectives of communicator %s (%lld ranks), "
			   "%.3f ms after the first rank at worst%s; blocked_ns is the earliest "
			   "ranks' wait, from host start times aligned by wall clock%s",
			   per[best].times, instances, hash, nranks, ms(per[best].worst),
			   per[best].first ? "; late at the first collective too" : "",
			   corrected ? " corrected by the ranks' clock offsets" : ""));
	}
	free(per);
	free(refs);
	return code;
}

/* The median of one per-rank total (the lower middle value for an even count). */
static long long median_of(const struct ss_report *r, size_t offset)
{
	long long *values = malloc(r->nranks * sizeof(*values)), m;

	if (!values)
		return 0;
	for (size_t i = 0; i < r->nranks; i++)
		values[i] = *(const long long *)((const char *)&r->ranks[i] + offset);
	qsort(values, r->nranks, sizeof(*values), compare_ll);
	m = values[(r->nranks - 1) / 2];
	free(values);
	return m;
}

static int deviates(long long value, long long median)
{
	long long diff = value > median ? value - median : median - value;

	return diff * 100 > median * SS_IMBALANCE_PERCENT && diff > 0;
}

static long long percent(long long value, long long median)
{
	return median ? (value - median) * 100 / median : 100;
}

static int run_imbalance_rule(struct loader *ld)
{
	struct ss_report *r = ld->report;
	long long m_sync, m_blocked, m_copies, m_nccl;

	if (r->nranks < 2)
		return SS_EXIT_OK;
	/* Ranks of one job only: databases without a rank are separate programs (a directory of
	 * unrelated recordings), whose differences say nothing. */
	for (size_t i = 0; i < r->nranks; i++)
		if (r->ranks[i].rank < 0)
			return SS_EXIT_OK;
	m_sync = median_of(r, offsetof(struct ss_rank, sync_points));
	m_blocked = median_of(r, offsetof(struct ss_rank, blocked_ns));
	m_copies = median_of(r, offsetof(struct ss_rank, copies));
	m_nccl = median_of(r, offsetof(struct ss_rank, nccl_ops));
	for (size_t i = 0; i < r->nranks; i++) {
		struct ss_rank *rk = &r->ranks[i];
		long long diff = rk->blocked_ns - m_blocked;
		int code;

		if (diff < 0)
			diff = -diff;
		if (deviates(rk->sync_points, m_sync))
			rk->deviates |= SS_DEV_SYNC_POINTS;
		if (deviates(rk->blocked_ns, m_blocked) && diff >= SS_IMBALANCE_MIN_NS)
			rk->deviates |= SS_DEV_BLOCKED;
		if (deviates(rk->copies, m_copies))
			rk->deviates |= SS_DEV_COPIES;
		if (deviates(rk->nccl_ops, m_nccl))
			rk->deviates |= SS_DEV_NCCL_OPS;
		if (!(rk->deviates & (SS_DEV_SYNC_POINTS | SS_DEV_BLOCKED)))
			continue;
		code = add_finding(ld, RULE_RANK_IMBALANCE, rk, rk->sync_points, diff, -1, -1, -1,
				   format("(whole rank)"),
				   format("sync points %lld (median %lld, %+lld%%), blocked %.3f ms "
					  "(median %.3f ms, %+lld%%); blocked_ns is the difference "
					  "from the median",
					  rk->sync_points, m_sync, percent(rk->sync_points, m_sync),
					  ms(rk->blocked_ns), ms(m_blocked),
					  percent(rk->blocked_ns, m_blocked)));
		if (code != SS_EXIT_OK)
			return code;
	}
	return SS_EXIT_OK;
}

/* ------------------------------------------------------------------ order and notes */

static int compare_findings(const void *a, const void *b)
{
	const struct ss_finding *x = a, *y = b;
	int c;

	int xi = strcmp(x->severity, "info") == 0, yi = strcmp(y->severity, "info") == 0;

	if (xi != yi) /* ANALYSIS-1 */
		return xi - yi;
	if (!xi && x->share != y->share)
		return x->share > y->share ? -1 : 1;
	if (x->blocked_ns != y->blocked_ns)
		return x->blocked_ns > y->blocked_ns ? -1 : 1;
	c = strcmp(x->rule, y->rule);
	if (c)
		return c;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->site, y->site);
}

static int compare_ranks(const void *a, const void *b)
{
	const struct ss_rank *x = a, *y = b;

	if (x->rank != y->rank) { /* unknown ranks (-1) last */
		if (x->rank < 0 || y->rank < 0)
			return x->rank < 0 ? 1 : -1;
		return x->rank < y->rank ? -1 : 1;
	}
	return strcmp(x->path, y->path);
}

/* Range statistics follow the rank order (compare_ranks), then the most sync points first. */
static int compare_range_stats(const void *a, const void *b)
{
	const struct ss_range_stat *x = a, *y = b;
	int c;

	if (x->rank != y->rank) {
		if (x->rank < 0 || y->rank < 0)
			return x->rank < 0 ? 1 : -1;
		return x->rank < y->rank ? -1 : 1;
	}
	c = strcmp(x->path, y->path);
	if (c)
		return c;
	if (x->sync_total != y->sync_total)
		return x->sync_total > y->sync_total ? -1 : 1;
	if (x->instances != y->instances)
		return x->instances > y->instances ? -1 : 1;
	c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->kind, y->kind);
}

static int add_notes(struct ss_report *r)
{
	int hosts_differ = 0, code = SS_EXIT_OK;
	size_t wall_clock = 0;
	long long spread = 0;

	if (!r->gpu_ranks) {
		code = add_note(r, format("GPU idle time behind host syncs: not measurable without "
					  "GPU timeline (the recording holds host-side calls only)"));
		if (code == SS_EXIT_OK)
			code = add_note(r, format("communication/compute overlap: not measurable "
						  "without GPU timeline"));
	}
	for (size_t i = 0; code == SS_EXIT_OK && i < r->nranks; i++) {
		const struct ss_rank *rk = &r->ranks[i];

		/* Why a rank has no GPU timeline, or only part of one (meta.cupti, docs/cupti.md) */
		if (rk->cupti && strncmp(rk->cupti, "off", 3) == 0)
			code = add_note(r, format("%s: GPU timeline not recorded: %s", rk->path,
						  rk->cupti));
		else if (rk->cupti && strncmp(rk->cupti, "yielded", 7) == 0)
			code = add_note(r, format("%s: GPU timeline partial: %s", rk->path,
						  rk->cupti));
		else if (rk->cupti && strncmp(rk->cupti, "on: only", 8) == 0)
			code = add_note(r, format("%s: GPU timeline limited to what was asked: %s",
						  rk->path, rk->cupti));
		if (code == SS_EXIT_OK && rk->cupti_sample)
			code = add_note(
			    r, format("%s: GPU timeline sampled (SYNCSPY_CUPTI_SAMPLE=%s ms): %lld "
				      "windows, %.3f s of %.3f s traced: GPU figures cover the traced part "
				      "only",
				      rk->path, rk->cupti_sample, rk->cupti_windows,
				      (rk->cupti_traced_ns >= 0 ? rk->cupti_traced_ns
							       : rk->wall_ns - rk->cupti_paused_ns) /
					  1e9,
				      rk->wall_ns / 1e9));
		else if (code == SS_EXIT_OK && rk->cupti_pauses > 0)
			code = add_note(
			    r, format("%s: GPU timeline paused by the program (syncspy_gpu_trace) %lld "
				      "times, %.3f s of %.3f s: GPU figures cover the traced part only",
				      rk->path, rk->cupti_pauses, rk->cupti_paused_ns / 1e9,
				      rk->wall_ns / 1e9));
		if (code != SS_EXIT_OK)
			break;
		if (r->gpu_ranks && !rk->gpu)
			code = add_note(r, format("%s: no GPU timeline (recorded without CUPTI): GPU "
						  "idle time, communication/compute overlap and "
						  "copy-without-overlap not measurable for it",
						  rk->path));
		if (code != SS_EXIT_OK)
			break;

		if (rk->steps == 0)
			code = add_note(r, format("%s: no repeating step found (no syncspy_step or NVTX "
						  "step ranges, and no call that recurs at a regular "
						  "period): every call is judged, a site with %d calls or "
						  "more as repeating, its cost against the wall time",
						  rk->path, SS_FALLBACK_MIN_CALLS));
		if (code == SS_EXIT_OK && rk->dropped > 0)
			code = add_note(r, format("%s: %lld calls were dropped while recording: its "
						  "counts are lower bounds",
						  rk->path, rk->dropped));
		if (code == SS_EXIT_OK && !rk->finished)
			code = add_note(r, format("%s: unfinished recording (still running, or "
						  "killed): read up to its last commit",
						  rk->path));
		if (strcmp(rk->host, r->ranks[0].host) != 0)
			hosts_differ = 1;
	}
	for (size_t i = 0; i < r->nranks; i++) {
		const struct ss_rank *rk = &r->ranks[i];

		if (strcmp(rk->clock_offset_method, "wall-clock") == 0)
			wall_clock++;
		else if (strcmp(rk->clock_offset_method, "collectives") == 0 &&
			 rk->clock_offset_spread_ns > spread)
			spread = rk->clock_offset_spread_ns;
	}
	if (code == SS_EXIT_OK && hosts_differ && wall_clock)
		code = add_note(r, format("ranks ran on several hosts: arrival times at collectives "
					  "are as exact as the hosts' clock synchronization (%zu "
					  "rank%s without blocking collectives to align by)",
					  wall_clock, wall_clock == 1 ? "" : "s"));
	else if (code == SS_EXIT_OK && hosts_differ)
		code = add_note(r, format("ranks ran on several hosts: clocks aligned by the end "
					  "times of blocking collectives (clock_offset_ns; largest "
					  "spread %.3f ms)",
					  ms(spread)));
	return code;
}

/* ------------------------------------------------------------------ entry points */

int ss_analyze(char *const *paths, size_t npaths, const struct ss_analysis_options *options,
	       struct ss_report *report, char *err, size_t errlen)
{
	struct loader ld = {.report = report, .err = err, .errlen = errlen};
	struct job *jobs = NULL;
	double t = now_s();
	int code = SS_EXIT_OK;

	memset(report, 0, sizeof(*report));
	report->ranks = calloc(npaths ? npaths : 1, sizeof(*report->ranks));
	if (!report->ranks)
		return out_of_memory(&ld);
	jobs = calloc(npaths ? npaths : 1, sizeof(*jobs));
	if (!jobs)
		code = out_of_memory(&ld);
	for (size_t i = 0; code == SS_EXIT_OK && i < npaths; i++)
		jobs[i].path = paths[i];
	if (code == SS_EXIT_OK) {
		struct pool pool = {.jobs = jobs, .ranks = report->ranks, .njobs = npaths};

		load_all(&pool);
		report->nranks = npaths; /* so that ss_report_free frees what load_one began */
	}
	lap(&t, "all", "load");
	for (size_t i = 0; code == SS_EXIT_OK && i < npaths; i++) {
		code = merge_job(&ld, &jobs[i], i);
		if (code == SS_EXIT_OK && options && options->progress)
			fprintf(stderr, "syncspy: loaded %zu/%zu %s (rank %lld)\n", i + 1, npaths,
				paths[i], report->ranks[i].rank);
	}
	lap(&t, "all", "merge");
	if (code == SS_EXIT_OK)
		code = estimate_clocks(&ld, jobs, npaths);
	if (code == SS_EXIT_OK)
		code = run_straggler_rule(&ld, jobs, npaths);
	lap(&t, "all", "straggler rule");
	for (size_t i = 0; jobs && i < npaths; i++)
		job_free(&jobs[i]);
	free(jobs);
	if (code == SS_EXIT_OK)
		code = run_imbalance_rule(&ld);
	for (size_t i = 0; code == SS_EXIT_OK && i < report->nfindings; i++) {
		struct ss_finding *f = &report->findings[i];
		const struct ss_rank *rk = NULL;

		if (f->severity) /* judged when its database was loaded */
			continue;
		for (size_t j = 0; j < report->nranks && !rk; j++)
			if (report->ranks[j].rank == f->rank)
				rk = &report->ranks[j];
		if (rk && !judge_finding(f, rk))
			code = out_of_memory(&ld);
		else if (!rk)
			f->severity = "low";
	}
	for (size_t i = 0; code == SS_EXIT_OK && i < report->nranks; i++)
		report->gpu_ranks += report->ranks[i].gpu != 0;
	if (code == SS_EXIT_OK)
		code = add_notes(report) == SS_EXIT_OK ? SS_EXIT_OK : out_of_memory(&ld);
	if (code != SS_EXIT_OK)
		return code;
	qsort(report->findings, report->nfindings, sizeof(*report->findings), compare_findings);
	qsort(report->ranks, report->nranks, sizeof(*report->ranks), compare_ranks);
	if (report->nranges)
		qsort(report->ranges, report->nranges, sizeof(*report->ranges),
		      compare_range_stats);
	return SS_EXIT_OK;
}

int ss_steady_window(const char *path, long long *start_ns, long long *end_ns, long long *steps,
		     char *err, size_t errlen)
{
	char *paths[1] = {(char *)path};
	struct ss_report r;
	int code = ss_analyze(paths, 1, NULL, &r, err, errlen);

	if (code == SS_EXIT_OK) {
		*start_ns = r.ranks[0].steady_start_ns;
		*end_ns = r.ranks[0].steady_end_ns;
		*steps = r.ranks[0].steady_steps;
	}
	ss_report_free(&r);
	return code;
}

void ss_report_free(struct ss_report *report)
{
	for (size_t i = 0; i < report->nranks; i++) {
		free(report->ranks[i].path);
		free(report->ranks[i].host);
		free(report->ranks[i].calls_json);
		free(report->ranks[i].cupti);
		free(report->ranks[i].cupti_sample);
		free(report->ranks[i].steps_name);
	}
	for (size_t i = 0; i < report->nfindings; i++) {
		free(report->findings[i].site);
		free(report->findings[i].detail);
	}
	for (size_t i = 0; i < report->nranges; i++) {
		free(report->ranges[i].name);
		free(report->ranges[i].kind);
	}
	free(report->ranges);
	for (size_t i = 0; i < report->nnotes; i++)
		free(report->notes[i]);
	free(report->ranks);
	free(report->findings);
	free(report->notes);
	memset(report, 0, sizeof(*report));
}
