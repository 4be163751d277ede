/*
 * interpose/aggregate.c: aggregate mode (SYNCSPY_MODE=aggregate, SHIM-7), for runs of hours. A
 * launch-bound loop makes thousands of enqueues per sync point; in trace mode each is a calls
 * row (about 57 bytes on disk: bench/aggregate_bytes.sh), so the file grows with them. Here, on the
 * writer thread, each enqueue record (E1-E3, N2) is counted into its aggregate instead: one per
 * (thread, API, class, stream, direction, host memory kind, site), with its count, bytes, errors,
 * first and last start, and where the calls were timed (N2 always, E1-E3 with
 * SYNCSPY_ENQUEUE_TIMING) their host time, longest call and a log2 histogram of their host times.
 * Sync points keep their rows (writer.c does not change for them), so the file grows with syncs and
 * steps only.
 *
 * Step figures: the first thread that marks a syncspy_step is the process's stepping thread
 * (ss_stepping_tid, set by syncspy_step itself); each of its steps gets one step_figures row
 * with the enqueues and sync points (S7 by queries) of every thread that started in it, and
 * their blocked time. A record is placed by its start time among the steps kept in memory
 * (STEP_WINDOW, the latest; an older one counts as late in meta.aggregate_late). writer.c
 * drains the stepping thread's ring before the others, from heads read after theirs, so that
 * the marks up to any other record's start are known when it is placed (a mark is appended as
 * soon as its time is read).
 *
 * What reaches the file: at every commit (writer.c, ss_agg_flush), the aggregates, histogram
 * buckets and steps that changed since the last one, rewritten whole (INSERT OR REPLACE on
 * their ids): a killed process keeps them as of its last commit, and a commit that fails (a
 * full disk) loses nothing for good: everything is written again at the next (ss_agg_lost).
 * Memory: the aggregates (about 600 bytes each: a few hundred sites make a program) and
 * STEP_WINDOW steps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "dbfile.h"
#include "syncspy/schema.h"

/* log2 buckets of host times: bucket b holds times of bit length b (0: 0 ns) */
#define BUCKETS 64
/* Steps kept in memory for placing records: the writer is at most a few commits behind. */
#define STEP_WINDOW 4096

struct agg {
	/* the key */
	pid_t tid;
	uint16_t api;
	uint8_t cls, dir, host_mem;
	uint64_t stream; /* SCHEMA-4; 0: no stream (NULL) */
	int64_t site;	 /* sites.id; 0: none (NULL) */
	/* the figures */
	uint64_t count, bytes, errors, first_ns, last_ns, host_ns, max_ns;
	int has_bytes, timed, dirty;
	uint64_t hist_dirty; /* bit b: bucket b changed since the last flush */
	uint64_t hist[BUCKETS];
};

struct step {
	char *name;
	uint64_t start_ns, end_ns; /* end_ns OPEN while it lasts */
	uint64_t enqueues, syncs, sync_ns;
	int dirty;
};
#define OPEN UINT64_MAX

static struct agg *aggs;
static size_t naggs, aggs_capacity;
static size_t *slots; /* index + 1, 0 empty; power of two */
static size_t nslots;
static size_t last_found = (size_t)-1; /* loops repeat one site: checked first */
static uint64_t folded;		       /* enqueues counted */

_Atomic pid_t ss_stepping_tid;
static struct step steps[STEP_WINDOW];
static uint64_t nsteps, kept_from; /* steps [kept_from, nsteps) are in steps[n % STEP_WINDOW] */
static uint64_t late;		   /* records that started in a step no longer kept */

enum { ST_AGG, ST_HIST, ST_STEP, ST_COUNT };
static sqlite3_stmt *st[ST_COUNT];
static const char *const st_sql[ST_COUNT] = {
    "INSERT OR REPLACE INTO enqueue_aggregates VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    "INSERT OR REPLACE INTO enqueue_histogram VALUES(?,?,?)",
    "INSERT OR REPLACE INTO step_figures VALUES(?,?,?,?,?,?,?,?,?)",
};
static int opened;

int ss_agg_open(void)
{
	if (ss_db_exec(SS_AGGREGATE_SQL) != SQLITE_OK)
		return -1;
	for (int i = 0; i < ST_COUNT; i++) {
		int rc = ss_sq.sqlite3_prepare_v2(ss_db, st_sql[i], -1, &st[i], NULL);
		if (rc != SQLITE_OK) {
			ss_db_note_write_error(rc, 0);
			return -1;
		}
	}
	opened = 1;
	return 0;
}

/* ------------------------------------------------------------------ aggregates */

/* An aggregate's key, as a record gives it. */
struct key {
	pid_t tid;
	uint16_t api;
	uint8_t cls, dir, host_mem;
	uint64_t stream;
	int64_t site;
};

static size_t key_hash(const struct key *k)
{
	const uint64_t parts[5] = {(uint64_t)k->tid, k->api,
				   (uint64_t)k->cls << 8 | (uint64_t)k->dir << 4 | k->host_mem,
				   k->stream, (uint64_t)k->site};
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < 5; i++) {
		h ^= parts[i];
		h *= 1099511628211ull;
		h ^= h >> 29;
	}
	return (size_t)h;
}

static struct key key_of(const struct agg *a)
{
	return (struct key){a->tid, a->api, a->cls, a->dir, a->host_mem, a->stream, a->site};
}

static int same_key(const struct agg *a, const struct key *k)
{
	return a->tid == k->tid && a->api == k->api && a->cls == k->cls && a->dir == k->dir &&
	       a->host_mem == k->host_mem && a->stream == k->stream && a->site == k->site;
}

static int rehash(void)
{
	size_t n = nslots ? 2 * nslots : 256;
	size_t *grown = calloc(n, sizeof(*grown));
	if (!grown)
		return 0;
	for (size_t i = 0; i < naggs; i++) {
		struct key k = key_of(&aggs[i]);
		size_t j = key_hash(&k) & (n - 1);
		while (grown[j])
			j = (j + 1) & (n - 1);
		grown[j] = i + 1;
	}
	free(slots);
	slots = grown;
	nslots = n;
	return 1;
}

/* The aggregate of a key, made empty at its first call; NULL when out of memory (the call is
 * then counted as dropped: ss_agg_enqueue's caller). */
static struct agg *find(const struct key *k)
{
	if (last_found < naggs && same_key(&aggs[last_found], k))
		return &aggs[last_found];
	if (2 * (naggs + 1) > nslots && !rehash())
		return NULL;
	size_t j = key_hash(k) & (nslots - 1);
	for (; slots[j]; j = (j + 1) & (nslots - 1))
		if (same_key(&aggs[slots[j] - 1], k)) {
			last_found = slots[j] - 1;
			return &aggs[last_found];
		}
	if (naggs == aggs_capacity) {
		size_t n = aggs_capacity ? 2 * aggs_capacity : 64;
		struct agg *grown = realloc(aggs, n * sizeof(*grown));
		if (!grown)
			return NULL;
		aggs = grown;
		aggs_capacity = n;
	}
	struct agg *a = &aggs[naggs];
	memset(a, 0, sizeof(*a));
	a->tid = k->tid;
	a->api = k->api;
	a->cls = k->cls;
	a->dir = k->dir;
	a->host_mem = k->host_mem;
	a->stream = k->stream;
	a->site = k->site;
	slots[j] = naggs + 1;
	last_found = naggs++;
	return a;
}

/* ------------------------------------------------------------------ steps */

static struct step *step_at(uint64_t n)
{
	return &steps[n % STEP_WINDOW];
}

/* The step a record that started at T belongs to: the last one started at or before T, if it
 * had not ended by then; NULL before the first step, between two (a capture range's gap), after
 * the last, or in a step no longer kept (counted late). */
static struct step *step_of(uint64_t t)
{
	if (nsteps == 0 || t < step_at(kept_from)->start_ns) {
		late += nsteps > 0 && kept_from > 0;
		return NULL;
	}
	uint64_t lo = kept_from, hi = nsteps; /* the last n in [lo, hi) with start <= t */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (step_at(mid)->start_ns <= t)
			lo = mid;
		else
			hi = mid;
	}
	struct step *s = step_at(lo);
	return t < s->end_ns ? s : NULL;
}

static void flush_step(uint64_t n)
{
	struct step *s = step_at(n);
	sqlite3_stmt *q = st[ST_STEP];
	ss_sq.sqlite3_bind_int64(q, 1, (sqlite3_int64)n + 1);
	ss_sq.sqlite3_bind_int64(q, 2, ss_agg_stepper());
	ss_sq.sqlite3_bind_int64(q, 3, (sqlite3_int64)n);
	if (s->name)
		ss_sq.sqlite3_bind_text(q, 4, s->name, -1, SQLITE_STATIC);
	else
		ss_sq.sqlite3_bind_null(q, 4);
	ss_sq.sqlite3_bind_int64(q, 5, (sqlite3_int64)s->start_ns);
	ss_db_bind_u64_or_null(q, 6, s->end_ns != OPEN, s->end_ns);
	ss_sq.sqlite3_bind_int64(q, 7, (sqlite3_int64)s->enqueues);
	ss_sq.sqlite3_bind_int64(q, 8, (sqlite3_int64)s->syncs);
	ss_sq.sqlite3_bind_int64(q, 9, (sqlite3_int64)s->sync_ns);
	int rc = ss_sq.sqlite3_step(q);
	ss_sq.sqlite3_reset(q);
	if (rc != SQLITE_DONE)
		ss_db_note_write_error(rc, 0); /* written again at the next commit */
	else
		s->dirty = 0;
}

void ss_agg_step(pid_t tid, const char *name, uint64_t ns)
{
	if (!opened || tid != ss_agg_stepper())
		return;
	if (nsteps > kept_from && step_at(nsteps - 1)->end_ns == OPEN) {
		step_at(nsteps - 1)->end_ns = ns;
		step_at(nsteps - 1)->dirty = 1;
	}
	if (nsteps - kept_from == STEP_WINDOW) { /* the oldest leaves: written as it is now */
		if (step_at(kept_from)->dirty)
			flush_step(kept_from);
		free(step_at(kept_from)->name);
		kept_from++;
	}
	struct step *s = step_at(nsteps++);
	*s = (struct step){
	    .name = name ? strdup(name) : NULL, .start_ns = ns, .end_ns = OPEN, .dirty = 1};
}

void ss_agg_step_end(pid_t tid, uint64_t ns)
{
	if (!opened || tid != ss_agg_stepper() || nsteps == kept_from)
		return;
	struct step *s = step_at(nsteps - 1);
	if (s->end_ns == OPEN) {
		s->end_ns = ns;
		s->dirty = 1;
	}
}

pid_t ss_agg_stepper(void)
{
	return atomic_load_explicit(&ss_stepping_tid, memory_order_relaxed);
}

/* ------------------------------------------------------------------ records */

int ss_agg_enqueue(pid_t tid, const struct ss_rec *r, uint64_t start_ns, uint64_t end_ns,
		   int64_t site_id)
{
	if (!opened)
		return -1;
	const struct key k = {tid, r->api, r->cls, r->dir, r->host_mem, r->stream, site_id};
	struct agg *a = find(&k);
	if (!a)
		return -1;
	uint64_t ns = end_ns > start_ns ? end_ns - start_ns : 0;
	if (a->count++ == 0)
		a->first_ns = start_ns;
	if (start_ns > a->last_ns)
		a->last_ns = start_ns;
	/* as trace mode's calls.bytes: present when the call has bytes or a direction */
	if (r->bytes || r->dir) {
		a->bytes += r->bytes;
		a->has_bytes = 1;
	}
	a->errors += r->ret != 0;
	/* timed: N2, E1-E3 with SYNCSPY_ENQUEUE_TIMING, and stream-ordered allocations (ALLOC in
	 * wrapper.h times them always) */
	if (ss_needs_end_time(r->cls) || end_ns > start_ns) {
		int b = ns ? 64 - __builtin_clzll(ns) : 0;
		if (b >= BUCKETS)
			b = BUCKETS - 1;
		a->timed = 1;
		a->host_ns += ns;
		if (ns > a->max_ns)
			a->max_ns = ns;
		a->hist[b]++;
		a->hist_dirty |= 1ull << b;
	}
	a->dirty = 1;
	folded++;
	struct step *s = step_of(start_ns);
	if (s) {
		s->enqueues++;
		s->dirty = 1;
	}
	return 0;
}

void ss_agg_sync(uint64_t start_ns, uint64_t end_ns, uint64_t queries)
{
	if (!opened)
		return;
	struct step *s = step_of(start_ns);
	if (s) {
		s->syncs += queries;
		s->sync_ns += end_ns > start_ns ? end_ns - start_ns : 0;
		s->dirty = 1;
	}
}

/* ------------------------------------------------------------------ to the file */

static int flush_agg(size_t i)
{
	struct agg *a = &aggs[i];
	sqlite3_stmt *q = st[ST_AGG];
	ss_sq.sqlite3_bind_int64(q, 1, (sqlite3_int64)i + 1);
	ss_sq.sqlite3_bind_int64(q, 2, a->tid);
	ss_sq.sqlite3_bind_int64(q, 3, a->api);
	ss_sq.sqlite3_bind_text(q, 4, ss_class_names[a->cls], -1, SQLITE_STATIC);
	ss_db_bind_u64_or_null(q, 5, a->stream != 0, a->stream);
	ss_db_bind_u64_or_null(q, 6, a->dir != 0, a->dir);
	ss_db_bind_u64_or_null(q, 7, a->host_mem != 0, a->host_mem);
	ss_db_bind_u64_or_null(q, 8, a->site != 0, (uint64_t)a->site);
	ss_sq.sqlite3_bind_int64(q, 9, (sqlite3_int64)a->count);
	ss_db_bind_u64_or_null(q, 10, a->has_bytes, a->bytes);
	ss_sq.sqlite3_bind_int64(q, 11, (sqlite3_int64)a->errors);
	ss_sq.sqlite3_bind_int64(q, 12, (sqlite3_int64)a->first_ns);
	ss_sq.sqlite3_bind_int64(q, 13, (sqlite3_int64)a->last_ns);
	ss_db_bind_u64_or_null(q, 14, a->timed, a->host_ns);
	ss_db_bind_u64_or_null(q, 15, a->timed, a->max_ns);
	int rc = ss_sq.sqlite3_step(q);
	ss_sq.sqlite3_reset(q);
	if (rc != SQLITE_DONE) {
		ss_db_note_write_error(rc, 0);
		return -1;
	}
	q = st[ST_HIST];
	for (int b = 0; b < BUCKETS; b++) {
		if (!(a->hist_dirty & (1ull << b)))
			continue;
		ss_sq.sqlite3_bind_int64(q, 1, (sqlite3_int64)i + 1);
		ss_sq.sqlite3_bind_int64(q, 2, b);
		ss_sq.sqlite3_bind_int64(q, 3, (sqlite3_int64)a->hist[b]);
		rc = ss_sq.sqlite3_step(q);
		ss_sq.sqlite3_reset(q);
		if (rc != SQLITE_DONE) {
			ss_db_note_write_error(rc, 0);
			return -1;
		}
	}
	a->hist_dirty = 0;
	a->dirty = 0;
	return 0;
}

void ss_agg_flush(void)
{
	if (!opened)
		return;
	for (size_t i = 0; i < naggs; i++)
		if (aggs[i].dirty && flush_agg(i) != 0)
			break; /* the transaction is likely gone: all again at the next commit */
	for (uint64_t n = kept_from; n < nsteps; n++)
		if (step_at(n)->dirty)
			flush_step(n);
	ss_meta_int("aggregate_enqueues", (int64_t)folded);
	ss_meta_int("aggregate_rows", (int64_t)naggs);
	ss_meta_int("aggregate_steps", (int64_t)nsteps);
	ss_meta_int("aggregate_late", (int64_t)late);
}

void ss_agg_lost(void)
{
	for (size_t i = 0; i < naggs; i++) {
		aggs[i].dirty = 1;
		for (int b = 0; b < BUCKETS; b++)
			if (aggs[i].hist[b])
				aggs[i].hist_dirty |= 1ull << b;
	}
	for (uint64_t n = kept_from; n < nsteps; n++)
		step_at(n)->dirty = 1;
}

uint64_t ss_agg_enqueues(void)
{
	return folded;
}

static void forget(void)
{
	free(aggs);
	free(slots);
	aggs = NULL;
	slots = NULL;
	naggs = aggs_capacity = nslots = 0;
	last_found = (size_t)-1;
	folded = 0;
	for (uint64_t n = kept_from; n < nsteps; n++)
		free(step_at(n)->name);
	nsteps = kept_from = late = 0;
	opened = 0;
}

void ss_agg_close(void)
{
	for (int i = 0; i < ST_COUNT; i++) {
		if (st[i])
			ss_sq.sqlite3_finalize(st[i]);
		st[i] = NULL;
	}
	forget();
}

void ss_agg_fork_child(void)
{
	atomic_store(&ss_stepping_tid, 0); /* the parent's thread */
	for (int i = 0; i < ST_COUNT; i++)
		st[i] = NULL; /* the parent's connection's */
	forget();
}
