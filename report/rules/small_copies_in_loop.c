/*
 * report/rules/small_copies_in_loop.c: the small-copies-in-loop rule (docs/rules.md), a
 * per-database rule in C (SS_RULE_DATABASE): one source line that issues many small async copies
 * every step (one cudaMemcpyAsync per KV-cache page, one cuMemcpyHtoDAsync per image row) where
 * one batched copy would do. Each copy is correct, but each costs the host the time to issue it
 * (1.5-3 us on an H100, whatever its size) and the copy engine a fixed cost per transfer (2-2.7 us
 * for 2-16 KB, 0.8-6 GB/s where a large pinned copy moves ~25 GB/s): thousands of them a step
 * are the step (examples/corpus c98 and d47; c103 and d50 are their fixes).
 *
 * The sites are found on the aggregate (async copies, E1 H2D/D2H/D2D, of a site that names a
 * source line), then read one row each: E1 calls are not timed (end == start), so the host's time
 * issuing a copy is taken from the call to its thread's next call, at most SMALL_COPY_GAP_CAP_NS
 * (an estimate: ANALYSIS-3). Where the GPU timeline has the copies, the detail gives their copy
 * engine time too (the join of GPU_JOIN_NS).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "../analysis_int.h"
#include "../commands.h"
#include "../db.h"

extern const struct ss_rule ss_rule_small_copies_in_loop; /* at the end: its findings name it */

/* A line is flagged from this many copies per steady step on average: a loop over the pieces of
 * something (pages, rows, tensors). 64 keeps a model's per-tensor copies (a hundred a step) in
 * reach; the rule's floor (min_share_permille) makes those that cost little `info`. The corpus has
 * no user line between 4 and 1,216 copies a step: it does not tell 64 from 256. */
#define SMALL_COPIES_MIN_PER_STEP 64
/* ... that move at most this much on average: a copy's fixed costs dominate below it (a 64 KiB
 * copy at 25 GB/s takes 2.6 us, about its setup), and a large copy is already batched. */
#define SMALL_COPY_MAX_MEAN_BYTES (64 * 1024)
/* A copy's issue time is the time to its thread's next call, at most this much: the loop around
 * the copies may do other work, a wait or a sleep, that batching the copies would not remove. */
#define SMALL_COPY_GAP_CAP_NS 20000LL

/* Sites of async copies (E1; dir 1 H2D, 2 D2H, 3 D2D: model.h) that name a source line
 * ("FILE:LINE in FUNCTION", as host-sync's same-operation folding decides): a library's own
 * copies (cuDNN's, libtorch's, at `module+0xOFF`) have no line the program could batch. */
#define CANDIDATES_SQL                                                                             \
	SITE_RULE_SQL("g.class = 'E1' AND g.dir IN (1, 2, 3) AND s.text GLOB '*:[0-9]* in *'")

/* Every call in id order, with whether it is an async copy of the site :site: a thread's rows
 * are written in call order, so its next row is its next call. One pass, no sort. */
#define SITE_CALLS_SQL                                                                             \
	"SELECT tid, start_ns, end_ns, coalesce(bytes, 0), dir, class = 'E1' AND dir IN (1, 2, 3)" \
	" AND site_id IN (SELECT id FROM sites WHERE text = :site) FROM calls ORDER BY id"

/* The GPU timeline's copies, with the correlation id that ties them to their API record. */
#define GPU_COPIES_SQL                                                                             \
	"SELECT correlation_id, start_ns, end_ns, coalesce(bytes, 0) FROM gpu_activity"            \
	" WHERE kind = 'memcpy' AND correlation_id IS NOT NULL AND " SS_GPU_TIMED("")

/* A candidate site from CANDIDATES_SQL: its text and the steady copies' APIs. */
struct candidate {
	char *site, *apis;
};

/* A steady copy of the site, for the GPU join: its thread, its start and its thread's next
 * call's start (-1: none). */
struct steady_copy {
	long long tid, start, next;
};

/* What one site's steady copies add up to. */
struct site_copies {
	struct steady_copy *copies; /* in call order; by thread and start for the GPU join */
	size_t n, cap;
	long long bytes, host_ns, issue_ns, worst_ns;
	long long by_dir[4];		    /* copies per direction (1 H2D, 2 D2H, 3 D2D) */
	long long steps;		    /* distinct steady steps */
	long long gpu_n, gpu_ns, gpu_bytes; /* the copies the GPU timeline has */
};

static int compare_steady_copies(const void *a, const void *b)
{
	const struct steady_copy *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

/* A thread whose last call so far is one of the site's steady copies (index in copies), or
 * none (NO_COPY). */
#define NO_COPY ((size_t)-1)
struct thread_last {
	long long tid;
	size_t copy;
};

/* Reads the steady copies of site into *sc (STEPS-1: a copy's phase is its start's), each with
 * its thread's next call. */
static int read_site_copies(struct loader *ld, struct db_state *st, const char *site,
			    struct site_copies *sc)
{
	const struct ss_steps *steps = &st->steps;
	unsigned char *seen = calloc(ss_steps_steady(steps), 1);
	struct thread_last *threads = NULL;
	size_t nthreads = 0, cap_threads = 0;
	sqlite3_stmt *stmt = NULL;
	int rc, code;

	if (!seen)
		return out_of_memory(ld);
	code = prepare(ld, st, SITE_CALLS_SQL, &stmt);
	if (code != SS_EXIT_OK) {
		free(seen);
		return code;
	}
	sqlite3_bind_text(stmt, sqlite3_bind_parameter_index(stmt, ":site"), site, -1,
			  SQLITE_STATIC);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long tid = sqlite3_column_int64(stmt, 0);
		long long start = sqlite3_column_int64(stmt, 1);
		long long ns = sqlite3_column_int64(stmt, 2) - start;
		long long dir = sqlite3_column_int64(stmt, 4);
		struct thread_last *t = NULL;
		size_t step;

		for (size_t i = 0; i < nthreads && !t; i++)
			if (threads[i].tid == tid)
				t = &threads[i];
		if (t && t->copy != NO_COPY) { /* this call ends the thread's last copy's issue */
			struct steady_copy *c = &sc->copies[t->copy];
			long long gap = start - c->start;

			c->next = start;
			if (gap > 0)
				sc->issue_ns +=
				    gap < SMALL_COPY_GAP_CAP_NS ? gap : SMALL_COPY_GAP_CAP_NS;
			t->copy = NO_COPY;
		}
		if (!sqlite3_column_int(stmt, 5) ||
		    ss_steps_phase(steps, start, &step) != SS_PHASE_STEADY || step == (size_t)-1)
			continue;
		if (!t &&
		    !PUSH(threads, nthreads, cap_threads, ((struct thread_last){tid, NO_COPY}))) {
			code = out_of_memory(ld);
			break;
		}
		t = t ? t : &threads[nthreads - 1];
		if (!PUSH(sc->copies, sc->n, sc->cap, ((struct steady_copy){tid, start, -1}))) {
			code = out_of_memory(ld);
			break;
		}
		t->copy = sc->n - 1;
		if (ns < 0)
			ns = 0;
		if (ns > sc->worst_ns)
			sc->worst_ns = ns;
		sc->host_ns += ns;
		sc->bytes += sqlite3_column_int64(stmt, 3);
		if (dir >= 1 && dir <= 3)
			sc->by_dir[dir]++;
		if (!seen[step - steps->first_steady]) {
			seen[step - steps->first_steady] = 1;
			sc->steps++;
		}
	}
	free(seen);
	free(threads);
	return end_rows(ld, st, stmt, rc, code);
}

/* The last of sc's copies of thread tid that started at or before t, or NULL. */
static const struct steady_copy *copy_before(const struct site_copies *sc, long long tid,
					     long long t)
{
	size_t lo = 0, hi = sc->n; /* the first copy after (tid, t) */

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct steady_copy *c = &sc->copies[mid];

		if (c->tid < tid || (c->tid == tid && c->start <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && sc->copies[lo - 1].tid == tid ? &sc->copies[lo - 1] : NULL;
}

/* The GPU timeline's rows of sc's copies: a GPU copy belongs to the call of its API record's
 * thread that started last at or before the record, at most GPU_JOIN_NS before it (gpu.c's
 * join); that call is one of sc's copies when the record lies between the copy and its thread's
 * next call. A sampled timeline has some of them (CUPTI-4, CUPTI-5): the detail gives their
 * mean, never their sum as if complete (GPU-IDLE-4). */
static int join_gpu_copies(struct loader *ld, struct db_state *st, struct site_copies *sc)
{
	sqlite3_stmt *stmt;
	int rc, code;

	if (!st->rank->gpu || !sc->n)
		return SS_EXIT_OK;
	code = load_api_first(ld, st);
	if (code != SS_EXIT_OK || !st->napi_first)
		return code;
	qsort(sc->copies, sc->n, sizeof(*sc->copies), compare_steady_copies);
	code = prepare(ld, st, GPU_COPIES_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const struct api_first *a = api_first_of(st, sqlite3_column_int64(stmt, 0));
		const struct steady_copy *c = a ? copy_before(sc, a->tid, a->start_ns) : NULL;

		if (!c || a->start_ns - c->start > GPU_JOIN_NS ||
		    (c->next >= 0 && a->start_ns >= c->next))
			continue; /* another call's copy */
		sc->gpu_n++;
		sc->gpu_ns += sqlite3_column_int64(stmt, 2) - sqlite3_column_int64(stmt, 1);
		sc->gpu_bytes += sqlite3_column_int64(stmt, 3);
	}
	return end_rows(ld, st, stmt, rc, SS_EXIT_OK);
}

/* "H2D", "H2D and D2H", ...: the directions of sc's copies. */
static void directions(const struct site_copies *sc, char *buf, size_t size)
{
	static const char *const names[4] = {NULL, "H2D", "D2H", "D2D"};

	buf[0] = '\0';
	for (int d = 1; d <= 3; d++)
		if (sc->by_dir[d])
			snprintf(buf + strlen(buf), size - strlen(buf), "%s%s",
				 buf[0] ? " and " : "", names[d]);
}

/* The finding of one candidate site, when its steady copies make the pattern. */
static int judge_site(struct loader *ld, struct db_state *st, const struct candidate *cand)
{
	long long steady = (long long)ss_steps_steady(&st->steps);
	struct site_copies sc = {0};
	char dirs[32], gpu[160] = "";
	long long count;
	int code = read_site_copies(ld, st, cand->site, &sc);

	count = (long long)sc.n;
	/* many a step, recurring (steps.h), small on average */
	if (code != SS_EXIT_OK || count < SMALL_COPIES_MIN_PER_STEP * steady ||
	    !ss_steps_recurring(&st->steps, sc.steps, count) ||
	    sc.bytes > SMALL_COPY_MAX_MEAN_BYTES * count)
		goto out;
	code = join_gpu_copies(ld, st, &sc);
	if (code != SS_EXIT_OK)
		goto out;
	if (sc.gpu_n > 0 && sc.gpu_ns > 0)
		snprintf(gpu, sizeof(gpu),
			 "; the GPU timeline has %lld of them: %.2f us a copy on the copy engine "
			 "(%.2f GB/s), about %.3f ms a step",
			 sc.gpu_n, (double)sc.gpu_ns / (double)sc.gpu_n / 1e3,
			 (double)sc.gpu_bytes / (double)sc.gpu_ns,
			 ms(sc.gpu_ns / sc.gpu_n * count / steady));
	directions(&sc, dirs, sizeof(dirs));
	code = add_finding(
	    ld, &ss_rule_small_copies_in_loop, st->rank, count, sc.host_ns, sc.worst_ns, sc.bytes,
	    sc.issue_ns, xstrdup(cand->site),
	    format("%s: %.1f small async %s copies a step from this line, %lld bytes each on "
		   "average; estimate: the host issued them for %.3f ms a step, %.2f us a copy "
		   "(from each call to its thread's next call, at most %lld us)%s",
		   cand->apis, (double)count / (double)steady, dirs, sc.bytes / count,
		   ms(sc.issue_ns / steady), (double)sc.issue_ns / (double)count / 1e3,
		   SMALL_COPY_GAP_CAP_NS / 1000, gpu));
	if (code == SS_EXIT_OK)
		set_phase(&ld->report->findings[ld->report->nfindings - 1], &st->steps, 1,
			  sc.steps);
out:
	free(sc.copies);
	return code;
}

static int run_small_copies(struct loader *ld, struct db_state *st)
{
	long long steady = (long long)ss_steps_steady(&st->steps);
	struct candidate *cands = NULL;
	size_t ncands = 0, cap = 0;
	sqlite3_stmt *stmt;
	int rc, code;

	if (!steady)
		return SS_EXIT_OK; /* without steps there is no "a step" to count copies in */
	code = prepare(ld, st, CANDIDATES_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	/* every call of the run at least as many as the steady floor needs */
	bind_named_int(stmt, ":min_count", SMALL_COPIES_MIN_PER_STEP * steady);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long steady_n = sqlite3_column_int64(stmt, 8);
		long long steady_bytes = column_or(stmt, 11, 0);
		const char *apis = (const char *)sqlite3_column_text(stmt, 15);
		struct candidate c;

		if (steady_n < SMALL_COPIES_MIN_PER_STEP * steady ||
		    steady_bytes > SMALL_COPY_MAX_MEAN_BYTES * steady_n)
			continue; /* judge_site decides on the rows; this only skips early */
		c.site = xstrdup((const char *)sqlite3_column_text(stmt, 0));
		c.apis = xstrdup(apis ? apis : "");
		if (!c.site || !c.apis || !PUSH(cands, ncands, cap, c)) {
			free(c.site);
			free(c.apis);
			code = out_of_memory(ld);
			break;
		}
	}
	code = end_rows(ld, st, stmt, rc, code);
	/* one finding per site (ANALYSIS-2): CANDIDATES_SQL has one row per site text */
	for (size_t i = 0; code == SS_EXIT_OK && i < ncands; i++)
		code = judge_site(ld, st, &cands[i]);
	for (size_t i = 0; i < ncands; i++) {
		free(cands[i].site);
		free(cands[i].apis);
	}
	free(cands);
	return code;
}

const struct ss_rule ss_rule_small_copies_in_loop = {
    .id = "small-copies-in-loop",
    .advice = "Batch the copies: gather the pieces into one contiguous pinned staging buffer, "
	      "copy it with one cudaMemcpyAsync and scatter it on the GPU with a kernel; copy "
	      "strided rows with one cudaMemcpy2DAsync (cuMemcpy2DAsync); or submit the copies "
	      "together with cudaMemcpyBatchAsync. Each copy costs the host microseconds to issue "
	      "and the copy engine a fixed cost, whatever its size.",
    .phase = SS_RULE_DATABASE,
    .cost = SS_COST_ESTIMATE,
    .needs_enqueue_rows = 1, /* each copy's thread's next call */
    /* the estimate is an upper bound of the host time batching wins back */
    .min_share_permille = 10,
    .run_database = run_small_copies,
};
