/*
 * report/load.c: one database, read for the analysis (analysis_int.h): its meta, the pass over
 * calls into the aggregate ss_agg (steps 1 and 2 of analysis.c's outline), the steady state's
 * phases (steps.h), the N2 calls that collectives.c groups for the clock alignment and
 * nccl-straggler (step 3) and the NVTX range statistics (step 4). The rules read what this file
 * leaves in db_state and in ss_agg; none is here. A database recorded in aggregate mode (its
 * enqueues counted per site in enqueue_aggregates, docs/recording.md) gets its aggregates added
 * to ss_agg beside the rows of its sync points (add_aggregates).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "analysis_int.h"
#include "commands.h"
#include "db.h"

/* Pinned copy bandwidth when the run has no blocking pinned copy of >= SS_PINNED_MIN_BYTES to
 * measure it from: 64 MiB in 1.47 ms on an H200 (docs/architecture.md F9), rounded down. */
#define SS_PINNED_BW_DEFAULT 45e9 /* bytes/s, both directions */
#define SS_PINNED_MIN_BYTES  (1 << 20)

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
	" queries, t, w, b, est, steps, first_step, last_step);"                                   \
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
	" max(CASE key WHEN 'cupti_traced_ns' THEN value END),"                                    \
	" max(CASE key WHEN 'dropped_calls' THEN value END),"                                      \
	" max(CASE key WHEN 'dropped_calls_by_class' THEN value END),"                             \
	" max(CASE key WHEN 'capture_range' THEN value END),"                                      \
	" max(CASE key WHEN 'capture_skipped_calls' THEN value END),"                              \
	" max(CASE key WHEN 'capture_skipped_by_class' THEN value END),"                           \
	" max(CASE key WHEN 'cupti_auto_permille' THEN value END),"                                \
	" max(key = 'mode' AND value = 'aggregate')"                                               \
	" FROM meta"

/* An aggregate recording's last call: a row, or the last enqueue an aggregate counted (a killed
 * program's last commit may hold enqueues after its last sync). */
#define LAST_CALL_AGGREGATE_SQL                                                                    \
	"SELECT max(coalesce((SELECT max(end_ns) FROM calls), 0),"                                 \
	" coalesce((SELECT max(last_ns) FROM enqueue_aggregates"                                   \
	"  WHERE typeof(last_ns) = 'integer' AND last_ns BETWEEN 0 AND 1152921504606846976), 0))"

/* The capture table's intervals (schema version 3, only with a capture range): how many, and
 * how long in all; one left open (a killed recording) lasts until the recording's end (?1). */
#define HAS_CAPTURE_SQL                                                                            \
	"SELECT count(*) FROM pragma_table_info('capture') WHERE name IN ('start_ns', 'end_ns')"
#define CAPTURED_SQL                                                                               \
	"SELECT count(*), coalesce(sum(max(coalesce(end_ns, ?1) - start_ns, 0)), 0) FROM capture"  \
	" WHERE typeof(start_ns) = 'integer' AND typeof(coalesce(end_ns, 0)) = 'integer'"

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
	"  coalesce(sum(t.n), 0) AS sp,"                                                           \
	"  coalesce(sum(max(t.end_ns - t.start_ns, 0)), 0) AS bl"                                  \
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

/* The integer SQL's one row starts with, in *value (whether a table exists, how many...). */
static int query_int(struct loader *ld, struct db_state *st, const char *sql, int *value)
{
	sqlite3_stmt *stmt;
	int code = query_row(ld, st, sql, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	*value = sqlite3_column_int(stmt, 0);
	sqlite3_finalize(stmt);
	return SS_EXIT_OK;
}

/* What a capture range recorded (SHIM-6 of the recording library): the capture table, where it
 * exists, else the whole run. */
static int load_capture(struct loader *ld, struct db_state *st, long long end_ns)
{
	struct ss_rank *rk = st->rank;
	sqlite3_stmt *stmt;
	int any = 0, code = query_int(ld, st, HAS_CAPTURE_SQL, &any);

	rk->capture_ranges = 0;
	rk->captured_ns = -1;
	if (code != SS_EXIT_OK || !any)
		return code;
	if (any != 2)
		return fail(
		    ld, SS_EXIT_INPUT,
		    "%s: damaged syncspy database: table 'capture' lacks start_ns or end_ns",
		    st->path);
	code = prepare(ld, st, CAPTURED_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	sqlite3_bind_int64(stmt, 1, end_ns);
	int rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		rk->capture_ranges = sqlite3_column_int64(stmt, 0);
		rk->captured_ns = sqlite3_column_int64(stmt, 1);
	}
	return end_rows(ld, st, stmt, rc == SQLITE_ROW ? SQLITE_DONE : rc, SS_EXIT_OK);
}

/* Aggregate mode's tables (include/syncspy/schema.h, SS_AGGREGATE_SQL), with the columns the
 * readers select: a database whose meta says aggregate and lacks them is damaged. */
#define AGGREGATE_COLUMNS_SQL                                                                      \
	"SELECT (SELECT count(*) FROM pragma_table_info('enqueue_aggregates') WHERE name IN"       \
	" ('id', 'tid', 'api_id', 'class', 'stream', 'dir', 'host_mem', 'site_id', 'count',"       \
	" 'bytes', 'errors', 'first_ns', 'last_ns', 'host_ns', 'max_ns')) = 15,"                   \
	" (SELECT count(*) FROM pragma_table_info('step_figures') WHERE name IN"                   \
	" ('start_ns', 'enqueues')) = 2"

static int check_aggregate_tables(struct loader *ld, struct db_state *st)
{
	sqlite3_stmt *stmt;
	int code = query_row(ld, st, AGGREGATE_COLUMNS_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	const char *missing = !sqlite3_column_int(stmt, 0)   ? "enqueue_aggregates"
			      : !sqlite3_column_int(stmt, 1) ? "step_figures"
							     : NULL;
	sqlite3_finalize(stmt);
	if (missing)
		return fail(ld, SS_EXIT_INPUT,
			    "%s: damaged syncspy database: recorded in aggregate mode (meta.mode), "
			    "but table '%s' is missing or lacks its columns",
			    st->path, missing);
	return SS_EXIT_OK;
}

int load_meta(struct loader *ld, struct db_state *st)
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
	rk->dropped_calls = column_or(stmt, 15, -1);
	rk->cupti_auto_permille = column_or(stmt, 20, 0);
	const char *by_class = (const char *)sqlite3_column_text(stmt, 16);
	int has_by_class = by_class && *by_class;
	rk->dropped_by_class = has_by_class ? xstrdup(by_class) : NULL;
	const char *capture = (const char *)sqlite3_column_text(stmt, 17);
	rk->capture_range = capture ? xstrdup(capture) : NULL;
	rk->capture_skipped = column_or(stmt, 18, 0);
	const char *skipped = (const char *)sqlite3_column_text(stmt, 19);
	int has_skipped = skipped && *skipped;
	rk->capture_skipped_by_class = has_skipped ? xstrdup(skipped) : NULL;
	rk->aggregate = sqlite3_column_int(stmt, 21) == 1;
	sqlite3_finalize(stmt);
	if (rk->aggregate) {
		code = check_aggregate_tables(ld, st);
		if (code != SS_EXIT_OK)
			return code;
	}
	if (!rk->host || (cupti && !rk->cupti) || (sample && !rk->cupti_sample) ||
	    (has_by_class && !rk->dropped_by_class) || (capture && !rk->capture_range) ||
	    (has_skipped && !rk->capture_skipped_by_class))
		return out_of_memory(ld);

	/* SCHEMA-3's clocks, in the range db.h allows for times: differences cannot overflow */
	{
		static const char *const keys[] = {"start_mono_ns", "start_realtime_ns",
						   "end_mono_ns"};
		const long long values[] = {rk->start_mono_ns, rk->start_realtime_ns, end_ns};

		for (int i = 0; i < 3; i++)
			if (values[i] < (i == 2 ? -1 : 0) ||
			    values[i] > (i == 1 ? SS_DB_REALTIME_MAX_NS : SS_DB_TIME_MAX_NS))
				return fail(ld, SS_EXIT_INPUT,
					    "%s: damaged syncspy database: meta.%s out of range "
					    "(%lld; from 0 to %lld)",
					    st->path, keys[i], values[i],
					    i == 1 ? SS_DB_REALTIME_MAX_NS : SS_DB_TIME_MAX_NS);
	}
	if (end_ns < 0) { /* an unfinished recording: it lasted until its last call */
		code = query_row(ld, st,
				 rk->aggregate ? LAST_CALL_AGGREGATE_SQL
					       : "SELECT max(end_ns) FROM calls",
				 &stmt);
		if (code != SS_EXIT_OK)
			return code;
		end_ns = column_or(stmt, 0, rk->start_mono_ns);
		sqlite3_finalize(stmt);
	}
	rk->wall_ns = end_ns - rk->start_mono_ns;
	if (rk->wall_ns <= 0)
		rk->wall_ns = 1;
	return load_capture(ld, st, end_ns);
}

/* ------------------------------------------------------------------ the pass over calls */

/* A class as the pass sees it: its text (as in calls.class) and what the pass does with it. */
struct scan_class {
	char *text;
	size_t len;
	int s4, s5, e1, n2, x1;
	int sync; /* a sync point (S1-S7) */
};

/* One ss_agg row: the GROUP BY key (nulls: bit 0 dir, 1 host_mem, 2 site_id are NULL) and the
 * aggregates. b and est are NULL (has_* 0) when no row had a value, as SQL's sum() gives. */
struct agg_group {
	long long api_id, dir, host_mem, site_id;
	int klass, legacy, steady, nulls; /* steady: the enum ss_phase of the calls */
	long long n, queries, t, w, b, est;
	int has_b, has_est;
	long long steps;   /* distinct steady steps the calls came in (steps.h) */
	size_t first_step; /* the first of them, (size_t)-1 before it (ss_steps_spread) */
	size_t last_step;  /* the last of them, (size_t)-1 before the first */
};

/* A call as the phase pass reads it again once the steps are known (find_steps): the steps
 * come from the whole recording, so the phase of a call is known only after the pass. */
struct call_rec {
	long long start, ns, bytes, queries; /* bytes -1: NULL */
	unsigned group;			     /* its group in the pass (steady 0) */
	unsigned tid : 31;		     /* index into scan.tids */
	unsigned other : 1; /* work on a blocking stream other than the legacy one */
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
int reserve(void *array, size_t *capacity, size_t used, size_t size)
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
	grown->sync = text[0] == 'S';
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

/* SCAN_SQL's columns, for messages. */
static const char *const scan_columns[13] = {"id",	 "tid",	    "api_id", "class", "start_ns",
					     "end_ns",	 "stream",  "comm",   "bytes", "dir",
					     "host_mem", "site_id", "count"};

/*
 * A row the schema does not allow, worded as db.c's ss_db_diagnose words it (so that report
 * and export say the same of one file): a BLOB, text or a real number where an integer goes
 * (class: text), a time outside [0, SS_DB_TIME_MAX_NS]. 0 when the row is fine.
 */
static int bad_row(struct loader *ld, struct db_state *st, sqlite3_value **v)
{
	static const char *const types[] = {"?", "integer", "real", "text", "blob", "null"};

	for (int c = 0; c < 13; c++) {
		int t = sqlite3_value_type(v[c]);
		int ok = c == 3 ? t != SQLITE_BLOB : t == SQLITE_INTEGER || t == SQLITE_NULL;

		if (!ok)
			return fail(
			    ld, SS_EXIT_INPUT,
			    "%s: damaged syncspy database: calls row %lld: %s holds a %s value",
			    st->path, sqlite3_value_int64(v[0]), scan_columns[c], types[t]);
	}
	for (int c = 4; c <= 5; c++) {
		long long t = sqlite3_value_int64(v[c]);

		if (t < 0 || t > SS_DB_TIME_MAX_NS)
			return fail(ld, SS_EXIT_INPUT,
				    "%s: damaged syncspy database: calls row %lld: %s out of range "
				    "(%lld; times are CLOCK_MONOTONIC ns from 0 to %lld)",
				    st->path, sqlite3_value_int64(v[0]), scan_columns[c], t,
				    (long long)SS_DB_TIME_MAX_NS);
	}
	return 0;
}

/* a + b, at most INT64_MAX: sums of counts and times of hostile files cannot overflow. */
static long long add_sat(long long a, long long b)
{
	long long r;

	return __builtin_add_overflow(a, b, &r) ? (b < 0 ? INT64_MIN : INT64_MAX) : r;
}

/*
 * Reads every call once. Copy-on-compute-stream compares a row with the next one of the same
 * thread: rows are written thread by thread, so "next" is id + 1 with the same tid. A call that
 * ends before it starts (a broken clock, a hand-made file) counts 0 ns, and the rank's note
 * says how many (ss_rank.backwards).
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
		long long ns;
		int has_stream = sqlite3_value_type(v[6]) != SQLITE_NULL;
		long long stream = has_stream ? sqlite3_value_int64(v[6]) : 0;
		int has_bytes = sqlite3_value_type(v[8]) != SQLITE_NULL;
		long long bytes = has_bytes ? sqlite3_value_int64(v[8]) : 0;
		struct agg_group key = {.api_id = sqlite3_value_int64(v[2])}, *g;
		const struct scan_class *k;
		size_t index;

		if (bad_row(ld, st, v)) {
			sqlite3_finalize(stmt);
			return SS_EXIT_INPUT;
		}
		ns = sqlite3_value_int64(v[5]) - start; /* both in [0, 2^62]: no overflow */
		if (ns < 0) {
			ns = 0;
			st->rank->backwards++;
		}
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
			sc->pinned_bytes[key.dir] = add_sat(sc->pinned_bytes[key.dir], bytes);
			sc->pinned_ns[key.dir] = add_sat(sc->pinned_ns[key.dir], ns);
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

int exec_temp(struct loader *ld, struct db_state *st, const char *sql)
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
	int rc = 0, code = query_int(ld, st, HAS_RANGES_SQL, &rc);

	*found = 0;
	if (code != SS_EXIT_OK || !rc)
		return code;
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

/* Work is what the GPU runs: E1 (kernels, async copies and memsets, graph launches), a blocking
 * or degraded copy (S4, S5 with a direction) and a collective (N2). */
static int gives_work(const struct scan *sc, const struct call_rec *r)
{
	const struct agg_group *g = &sc->groups[r->group];
	const struct scan_class *k = &sc->classes[g->klass];

	return k->e1 || k->n2 || ((k->s4 || k->s5) && !(g->nulls & 1));
}

/* Without steps: the first and last GPU work of the rank, on any thread (STEPS-3), and the
 * slices between them that hold an equal share of the work calls each, or of the time where the
 * work calls are too few to say where the work is (STEPS-5). Returns -1 when out of memory. */
static int work_window(struct ss_steps *s, const struct scan *sc)
{
	long long *starts = malloc((sc->nrows ? sc->nrows : 1) * sizeof(*starts));
	size_t n = 0;

	if (!starts)
		return -1;
	for (size_t i = 0; i < sc->nrows; i++)
		if (gives_work(sc, &sc->rows[i]))
			starts[n++] = sc->rows[i].start;
	if (n) {
		qsort(starts, n, sizeof(*starts), compare_ll);
		s->has_work = 1;
		s->work_first_ns = starts[0];
		s->work_last_ns = starts[n - 1];
		/* slice k starts at the (k n / 16)-th work call, or (few calls) at the first t
		 * with (t - first) / width >= k / 16 */
		for (size_t k = 0; k < SS_FALLBACK_SLICES; k++)
			s->work_slice_ns[k] =
			    n >= SS_FALLBACK_MIN_WORK
				? starts[k * n / SS_FALLBACK_SLICES]
				: s->work_first_ns +
				      ((s->work_last_ns - s->work_first_ns + 1) * (long long)k +
				       SS_FALLBACK_SLICES - 1) /
					  SS_FALLBACK_SLICES;
	}
	free(starts);
	return 0;
}

/* Steps detected among the calls of thread slot `slot` (ss_steps_detect's answer); *work: how
 * many of them gave the GPU work (STEPS-3's kinds) inside the loop found. */
static int detect_on_thread(struct ss_steps *steps, const struct scan *sc, size_t slot,
			    size_t *work)
{
	struct ss_step_call *calls = calloc(sc->tids[slot].rows + 1, sizeof(*calls));
	size_t n = 0;
	int found;

	*work = 0;
	if (!calls)
		return -1;
	for (size_t i = 0; i < sc->nrows; i++) {
		const struct call_rec *r = &sc->rows[i];

		if (r->tid == slot)
			calls[n++] = (struct ss_step_call){r->group, r->start, r->start + r->ns,
							   gives_work(sc, r)};
	}
	found = ss_steps_detect(steps, calls, n, (unsigned)sc->ngroups);
	for (size_t i = 0; found == 1 && i < n; i++)
		*work += calls[i].work && calls[i].start_ns >= steps->start[0] &&
			 calls[i].start_ns < steps->start[steps->nsteps];
	free(calls);
	return found;
}

/* STEPS-8: whether the loop OWN of the process's main thread, which gave the GPU work `work`
 * times, is the program's loop rather than the loop OTHER of the busiest thread: it gives the GPU
 * work every step, runs through half of OTHER's time at least, and is no loop around OTHER's
 * (fewer steps: an epoch loop found where the batches vary too much to show). */
static int drives(const struct ss_steps *own, size_t work, const struct ss_steps *other)
{
	long long a = own->start[0], b = own->start[own->nsteps];
	long long c = other->start[0], d = other->start[other->nsteps];
	long long both = (b < d ? b : d) - (a > c ? a : c);

	return work >= own->nsteps && own->nsteps >= other->nsteps && both > 0 && 2 * both >= d - c;
}

/* The rank's steps (steps.h): the program's marks, else detected from the calls of the thread
 * that made the most calls, or of the process's main thread where its loop drives that one's
 * (STEPS-8), else none (and then the work's window: STEPS-3). */
static int find_steps(struct loader *ld, struct db_state *st, const struct scan *sc)
{
	size_t main_tid = 0, pid_slot = (size_t)-1, work;
	sqlite3_stmt *stmt;
	int found, code;

	code = load_step_marks(ld, st, &found);
	if (code != SS_EXIT_OK || found)
		return code;
	for (size_t i = 1; i < sc->ntids; i++)
		if (sc->tids[i].rows > sc->tids[main_tid].rows)
			main_tid = i;
	for (size_t i = 0; i < sc->ntids; i++)
		if (sc->tids[i].tid == st->rank->pid)
			pid_slot = i;
	found = sc->ntids ? detect_on_thread(&st->steps, sc, main_tid, &work) : 0;
	if (found == 1 && pid_slot != (size_t)-1 && pid_slot != main_tid) {
		struct ss_steps own;
		int own_found = detect_on_thread(&own, sc, pid_slot, &work);

		if (own_found < 0) {
			found = -1;
		} else if (own_found == 1 && drives(&own, work, &st->steps)) {
			if (ss_steps_adopt(&own, &st->steps) < 0)
				found = -1;
			ss_steps_free(&st->steps);
			st->steps = own;
		} else if (own_found == 1) {
			ss_steps_free(&own);
		}
	}
	if (found < 0)
		return out_of_memory(ld);
	if (!found) {
		if (!st->rank->aggregate && /* its enqueues are counts, not rows: no window */
		    work_window(&st->steps, sc) < 0)
			return out_of_memory(ld);
		return SS_EXIT_OK;
	}
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
		st->steps.name =
		    format(st->steps.varies ? "%s at %s, once a step, steps of varying length "
					      "(%zu calls of the main thread at the median)"
					    : "%s at %s, every %zu calls of the main thread",
			   (const char *)sqlite3_column_text(stmt, 0),
			   (const char *)sqlite3_column_text(stmt, 1), st->steps.period);
		if (!st->steps.name)
			code = out_of_memory(ld);
	}
	sqlite3_finalize(stmt);
	return code;
}

/* A steady call on the legacy stream: work (E1) or a wait for it (a sync point there). */
struct legacy_call {
	long long start, end;
	unsigned tid;
};

static int by_start(const void *a, const void *b)
{
	const struct legacy_call *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

/*
 * legacy-stream: whether threads shared the legacy stream, each waiting for the others' work:
 * another thread enqueued work there while one waited on it (a stream sync or a blocking copy
 * there), in the steady state. Threads that take turns do not: PyTorch's forward on the main
 * thread and backward on its autograd thread use the legacy stream one after the other, and
 * neither waits while the other enqueues. The engine's threads ("pt_autograd_<device>") are left
 * out by name: the engine orders their work with the thread that waits in backward(), and a
 * wait stretched past its own step (t505's edited trace) would otherwise meet them. Sorts WORK.
 */
#define AUTOGRAD_THREADS_SQL                                                                       \
	"SELECT tid FROM threads WHERE name LIKE 'pt\\_autograd\\_%' ESCAPE '\\'"

static int contains_ll(const long long *v, size_t n, long long x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

static int shared_legacy(struct legacy_call *work, size_t nwork, const struct legacy_call *waits,
			 size_t nwaits)
{
	if (!nwork || !nwaits)
		return 0; /* (qsort of no array: work may be NULL) */
	qsort(work, nwork, sizeof(*work), by_start);
	for (size_t i = 0; i < nwaits; i++) {
		size_t lo = 0, hi = nwork; /* the first work starting at or after the wait */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (work[mid].start < waits[i].start)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k < nwork && k < lo + 64 && work[k].start < waits[i].end; k++)
			if (work[k].tid != waits[i].tid)
				return 1;
	}
	return 0;
}

/* The groups of the pass split by phase (ss_agg.steady), with each steady group's distinct
 * steps, into ph. S5 copies get their estimate here, per call (pinned_bandwidth). */
static int phase_groups(struct loader *ld, struct db_state *st, struct scan *sc, struct scan *ph)
{
	int other_steady = 0;
	struct legacy_call *work = NULL, *waits = NULL; /* legacy-stream: see shared_legacy */
	size_t nwork = 0, work_capacity = 0, nwaits = 0, waits_capacity = 0;
	long long autograd[8]; /* the autograd engine's threads, left out of shared_legacy */
	size_t nautograd = 0;
	sqlite3_stmt *stmt;
	int code = prepare(ld, st, AUTOGRAD_THREADS_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while (sqlite3_step(stmt) == SQLITE_ROW && nautograd < 8)
		autograd[nautograd++] = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);

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
					.first_step = (size_t)-1,
					.last_step = (size_t)-1},
				 *g;
		size_t index, step;

		key.steady = (int)ss_steps_phase(&st->steps, r->start, &step);
		if (key.steady == SS_PHASE_STEADY && step == (size_t)-1)
			step = ss_steps_slice(&st->steps, r->start); /* no steps: STEPS-5 */
		if (r->other && key.steady == SS_PHASE_STEADY)
			other_steady = 1;
		if (key.legacy && key.steady == SS_PHASE_STEADY &&
		    (sc->classes[key.klass].e1 || sc->classes[key.klass].sync) &&
		    !contains_ll(autograd, nautograd, sc->tids[r->tid].tid)) {
			struct legacy_call c = {r->start, r->start + r->ns, r->tid};
			int ok = sc->classes[key.klass].e1
				     ? PUSH(work, nwork, work_capacity, c)
				     : PUSH(waits, nwaits, waits_capacity, c);
			if (!ok) {
				free(work);
				free(waits);
				return out_of_memory(ld);
			}
		}
		g = find_group(ph, &key, &index);
		if (!g) {
			free(work);
			free(waits);
			return out_of_memory(ld);
		}
		g->n++;
		g->queries = add_sat(g->queries, r->queries);
		g->t = add_sat(g->t, r->ns);
		if (g->n == 1 || r->ns > g->w)
			g->w = r->ns;
		if (r->bytes >= 0) {
			g->b = add_sat(g->b, r->bytes);
			g->has_b = 1;
		}
		/* rows come in id order, the threads' calls interleaved: a step earlier than the
		 * last one counted is another thread's, not one more step */
		if (step != (size_t)-1 && (g->last_step == (size_t)-1 || step > g->last_step)) {
			g->steps++;
			if (g->first_step == (size_t)-1)
				g->first_step = step;
			g->last_step = step;
		}
		if (sc->classes[key.klass].s5 && !(key.nulls & 1) && (key.dir == 1 || key.dir == 2) &&
		    r->bytes > 0) {
			long long lost =
			    r->ns - cast_integer((double)r->bytes * 1e9 / st->bw[key.dir]);

			g->est = add_sat(g->est, lost > 0 ? lost : 0);
			g->has_est = 1;
		}
	}
	/* legacy-stream: the legacy stream serializes the steady state only with blocking streams
	 * working in it (a stream used at setup only costs the loop nothing) */
	if (st->steps.nsteps)
		st->other_streams = other_steady;
	st->legacy_threads = shared_legacy(work, nwork, waits, nwaits);
	free(work);
	free(waits);
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
int insert_row(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt)
{
	int code = SS_EXIT_OK;

	if (sqlite3_step(stmt) != SQLITE_DONE)
		code =
		    ss_db_failure(st->db, sqlite3_errcode(st->db), st->path, ld->err, ld->errlen);
	sqlite3_reset(stmt);
	return code;
}

/* ------------------------------------------------------------------ aggregate mode */

#define AGGREGATES_SQL                                                                             \
	"SELECT id, tid, api_id, class, stream, dir, host_mem, site_id, count, bytes, errors,"     \
	" first_ns, last_ns, host_ns, max_ns FROM enqueue_aggregates ORDER BY id"
static const char *const aggregate_columns[15] = {
    "id",    "tid",   "api_id", "class",    "stream",  "dir",	  "host_mem", "site_id",
    "count", "bytes", "errors", "first_ns", "last_ns", "host_ns", "max_ns"};

/* An enqueue_aggregates row the schema does not allow, worded as bad_row words a calls row's. */
static int bad_aggregate(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt)
{
	static const char *const types[] = {"?", "integer", "real", "text", "blob", "null"};

	for (int c = 0; c < 15; c++) {
		int t = sqlite3_column_type(stmt, c);
		/* NOT NULL in the schema: id, tid, api_id, class, count, errors, first/last_ns */
		int required = c <= 3 || c == 8 || c == 10 || c == 11 || c == 12;
		int ok = c == 3 ? t == SQLITE_TEXT
				: t == SQLITE_INTEGER || (t == SQLITE_NULL && !required);

		if (!ok)
			return fail(ld, SS_EXIT_INPUT,
				    "%s: damaged syncspy database: enqueue_aggregates row %lld: %s "
				    "holds a %s value",
				    st->path, (long long)sqlite3_column_int64(stmt, 0),
				    aggregate_columns[c], types[t]);
	}
	for (int c = 8; c <= 14; c++) {
		long long v = sqlite3_column_int64(stmt, c);
		long long max = c == 11 || c == 12 || c == 14 ? SS_DB_TIME_MAX_NS : INT64_MAX;

		if (v < 0 || v > max)
			return fail(
			    ld, SS_EXIT_INPUT,
			    "%s: damaged syncspy database: enqueue_aggregates row %lld: %s out "
			    "of range (%lld; from 0 to %lld)",
			    st->path, (long long)sqlite3_column_int64(stmt, 0),
			    aggregate_columns[c], v, max);
	}
	return 0;
}

/* The steady step a time falls in (STEPS-2), clamped into the steady window. */
static size_t steady_step_of(const struct ss_steps *s, long long t)
{
	size_t step, lo = s->first_steady, hi = s->nsteps - 1;

	if (t < s->start[lo])
		return lo;
	if (t >= s->start[s->nsteps])
		return hi;
	(void)ss_steps_phase(s, t, &step);
	return step == (size_t)-1 ? lo : step;
}

/*
 * Aggregate mode: each enqueue aggregate becomes one group of ph beside the sync points' rows,
 * so that the per-site SQL, the totals and the calls per API see every enqueue. A group has no
 * call times but its first and last: its phase is the steady state's when that span overlaps
 * the steady window, and its steps the steady steps the span overlaps (docs/recording.md,
 * "Aggregate mode": what the report can judge from aggregates); else the phase of its first
 * call. Work on a blocking stream there makes the legacy stream serialize (other_streams).
 */
static int add_aggregates(struct loader *ld, struct db_state *st, struct scan *sc, struct scan *ph)
{
	const struct ss_steps *s = &st->steps;
	size_t steady = ss_steps_steady(s);
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, AGGREGATES_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct agg_group key = {.api_id = sqlite3_column_int64(stmt, 2),
					.first_step = (size_t)-1,
					.last_step = (size_t)-1},
				 *g;
		size_t index, step;
		int nulls = 0, klass;

		if (bad_aggregate(ld, st, stmt)) {
			sqlite3_finalize(stmt);
			return SS_EXIT_INPUT;
		}
		long long count = sqlite3_column_int64(stmt, 8);
		long long first = sqlite3_column_int64(stmt, 11),
			  last = sqlite3_column_int64(stmt, 12);
		int has_stream = sqlite3_column_type(stmt, 4) != SQLITE_NULL;
		long long stream = sqlite3_column_int64(stmt, 4);

		klass = scan_class(sc, (const char *)sqlite3_column_text(stmt, 3));
		if (klass < 0)
			break;
		key.klass = klass;
		key.dir = nullable(sqlite3_column_value(stmt, 5), 1, &nulls);
		key.host_mem = nullable(sqlite3_column_value(stmt, 6), 2, &nulls);
		key.site_id = nullable(sqlite3_column_value(stmt, 7), 4, &nulls);
		key.nulls = nulls;
		key.legacy = has_stream && stream == 1;
		if (last < first)
			last = first;
		key.steady = (int)ss_steps_phase(s, first, &step);
		long long steps = 0;
		if (steady && first < s->start[s->nsteps] && last >= s->start[s->first_steady]) {
			key.steady = SS_PHASE_STEADY;
			steps = (long long)(steady_step_of(s, last) - steady_step_of(s, first)) + 1;
		}
		g = find_group(ph, &key, &index);
		if (!g)
			break;
		g->n = add_sat(g->n, count);
		g->queries = add_sat(g->queries, count);
		g->t = add_sat(g->t, sqlite3_column_int64(stmt, 13));
		if (sqlite3_column_int64(stmt, 14) > g->w)
			g->w = sqlite3_column_int64(stmt, 14);
		if (sqlite3_column_type(stmt, 9) != SQLITE_NULL) {
			g->b = add_sat(g->b, sqlite3_column_int64(stmt, 9));
			g->has_b = 1;
		}
		if (steps > g->steps)
			g->steps = steps; /* aggregates of one group (threads) overlap in time */
		if (has_stream && key.steady == SS_PHASE_STEADY &&
		    (stream == 2 ||
		     (stream > 2 && sorted_contains(sc->blocking_streams, sc->nblocking, stream))))
			st->other_streams = 1;
		st->rank->aggregated_enqueues = add_sat(st->rank->aggregated_enqueues, count);
		st->rank->enqueue_aggregates++;
	}
	if (rc == SQLITE_ROW) {
		sqlite3_finalize(stmt);
		return out_of_memory(ld);
	}
	return end_rows(ld, st, stmt, rc, SS_EXIT_OK);
}

/* The median of the enqueues of the steady steps' step_figures (the lower middle); -1 when
 * none lies in the steady window. */
#define STEP_ENQUEUES_SQL                                                                          \
	"SELECT enqueues FROM step_figures WHERE typeof(enqueues) = 'integer'"                     \
	" AND start_ns >= ?1 AND start_ns < ?2 ORDER BY enqueues"

static int load_step_enqueues(struct loader *ld, struct db_state *st)
{
	const struct ss_steps *s = &st->steps;
	long long *values = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *stmt;
	int rc, code;

	st->rank->step_enqueues = -1;
	if (!ss_steps_steady(s))
		return SS_EXIT_OK;
	code = prepare(ld, st, STEP_ENQUEUES_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	sqlite3_bind_int64(stmt, 1, s->start[s->first_steady]);
	sqlite3_bind_int64(stmt, 2, s->start[s->nsteps]);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		if (!PUSH(values, n, cap, sqlite3_column_int64(stmt, 0))) {
			code = out_of_memory(ld);
			break;
		}
	code = end_rows(ld, st, stmt, rc, code);
	if (code == SS_EXIT_OK && n)
		st->rank->step_enqueues = values[(n - 1) / 2];
	free(values);
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
			       "INSERT INTO temp.ss_agg VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &agg);
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
		bind_nullable(agg, 15, g->first_step == (size_t)-1, (long long)g->first_step);
		bind_nullable(agg, 16, g->last_step == (size_t)-1, (long long)g->last_step);
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

int build_aggregate(struct loader *ld, struct db_state *st)
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
	if (code == SS_EXIT_OK && rk->aggregate)
		code = add_aggregates(ld, st, &sc, &ph);
	if (code == SS_EXIT_OK && rk->aggregate)
		code = load_step_enqueues(ld, st);
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
	rk->steps_source = ss_steps_source_names[st->steps.source];
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
	/* no step: the rank's figures are the run's (STEPS-3 is the rules') */
	if (!st->steps.nsteps) {
		rk->steady_sync_points = rk->sync_points;
		rk->steady_blocked_ns = rk->blocked_ns;
	}
	return rk->calls_json ? SS_EXIT_OK : out_of_memory(ld);
}

void job_free(struct job *job)
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
}

/* Step 4: this rank's range names with the sync points per instance (nothing without ranges). */
int load_ranges(struct loader *ld, struct db_state *st, struct job *job)
{
	const struct ss_rank *rk = st->rank;
	sqlite3_stmt *stmt;
	int rc, any = 0, code = query_int(ld, st, HAS_RANGES_SQL, &any);

	if (code != SS_EXIT_OK || !any)
		return code;
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

