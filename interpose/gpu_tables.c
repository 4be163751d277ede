/*
 * interpose/gpu_tables.c: the GPU timeline in the database, on the writer thread. What
 * cupti/ queued (kernels, copies, memsets, syncs, events as the GPU ran them, and the runtime
 * and driver calls that caused them, tied by correlation id) becomes gpu_activity and gpu_api
 * rows; the intervals the timeline was off (CUPTI-3, CUPTI-4) become gpu_paused rows, with
 * meta.cupti* saying why and for how long. These are extension tables (SS_GPU_TABLES_SQL,
 * SS_GPU_PAUSED_SQL), created when the first record arrives, so that a recording without
 * CUPTI keeps exactly SS_SCHEMA_SQL (docs/cupti.md). Built either way: without CUPTI,
 * cupti/stub.c has nothing to take and meta.cupti says it was not built.
 *
 * The writer makes no CUPTI call that could start GPU work (SHIM-4): it only takes records
 * CUPTI's thread has already converted (cupti/cupti.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "syncspy/schema.h"
#include "cupti/cupti.h"

#include "dbfile.h"
#include "env.h"
#include "gpu_tables.h"
#include "ring.h"
#include "shim.h"
#include "sites.h"

static sqlite3_stmt *gpu_activity_insert, *gpu_api_insert;

static const char *gpu_memory_kind(uint8_t kind)
{
	static const char *const names[] = {"unknown",	     "pageable",      "pinned",
					    "device",	     "array",	      "managed",
					    "device_static", "managed_static"};
	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "unknown";
}

/* CUPTI names a thread by the low 32 bits of its pthread_t; calls.tid is the kernel's thread id.
 * The thread's ring knows both (ring.c); 0 when no recording thread matches. */
static pid_t tid_of_cupti_thread(uint32_t cupti_thread)
{
	static uint32_t last_cupti;
	static pid_t last_tid;
	if (cupti_thread == last_cupti && last_tid)
		return last_tid;
	for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next)
		if (ring->pthread_id == cupti_thread) {
			last_cupti = cupti_thread;
			last_tid = ring->tid;
			return ring->tid;
		}
	return 0;
}

/* The timeline's off intervals (gpu_paused), at each commit with the meta: the closed ones
 * once each (rows 1..stored_off_intervals), and the open one, if any, replaced each time. */
static size_t stored_off_intervals;

static void store_gpu_paused(void)
{
	uint64_t(*intervals)[2] = NULL;
	int open = 0;
	size_t n = ss_cupti_off_intervals(stored_off_intervals, &intervals, &open);
	sqlite3_stmt *insert = NULL;
	char drop_open[96];
	snprintf(drop_open, sizeof(drop_open), "DELETE FROM gpu_paused WHERE rowid > %zu",
		 stored_off_intervals);
	if (n && ss_db_exec(SS_GPU_PAUSED_SQL) == SQLITE_OK && ss_db_exec(drop_open) == SQLITE_OK &&
	    ss_sq.sqlite3_prepare_v2(ss_db, "INSERT INTO gpu_paused VALUES(?,?)", -1, &insert,
				     NULL) == SQLITE_OK) {
		stored_off_intervals += n - (size_t)open;
		for (size_t i = 0; i < n; i++) {
			ss_sq.sqlite3_bind_int64(insert, 1, (sqlite3_int64)intervals[i][0]);
			ss_sq.sqlite3_bind_int64(insert, 2, (sqlite3_int64)intervals[i][1]);
			ss_sq.sqlite3_step(insert);
			ss_sq.sqlite3_reset(insert);
		}
	}
	ss_sq.sqlite3_finalize(insert);
	free(intervals);
}

void ss_gpu_tables_store(void)
{
	struct ss_gpu_rec *records;
	size_t n = ss_cupti_take(&records);
	if (n == 0)
		return;
	if (!gpu_activity_insert &&
	    (ss_db_exec(SS_GPU_TABLES_SQL) != SQLITE_OK ||
	     ss_sq.sqlite3_prepare_v2(
		 ss_db,
		 "INSERT INTO gpu_activity(kind, start_ns, end_ns, device,"
		 " stream_id, correlation_id, bytes, copy_kind, src_kind, dst_kind,"
		 " detail, name, grid, block, symbol) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
		 -1, &gpu_activity_insert, NULL) != SQLITE_OK ||
	     ss_sq.sqlite3_prepare_v2(ss_db, "INSERT INTO gpu_api VALUES(?,?,?,?,?,?,?,?)", -1,
				      &gpu_api_insert, NULL) != SQLITE_OK))
		gpu_activity_insert = NULL;
	static const char *const kinds[] = {[SS_GPU_KERNEL] = "kernel",
					    [SS_GPU_MEMCPY] = "memcpy",
					    [SS_GPU_MEMSET] = "memset",
					    [SS_GPU_SYNC] = "sync",
					    [SS_GPU_EVENT] = "event"};
	for (size_t i = 0; i < n; i++) {
		struct ss_gpu_rec *g = &records[i];
		if (g->kind == SS_GPU_RUNTIME_API || g->kind == SS_GPU_DRIVER_API) {
			sqlite3_stmt *st = gpu_api_insert;
			if (st) {
				ss_sq.sqlite3_bind_int64(st, 1, g->correlation);
				ss_sq.sqlite3_bind_text(
				    st, 2, g->kind == SS_GPU_RUNTIME_API ? "runtime" : "driver", -1,
				    SQLITE_STATIC);
				ss_sq.sqlite3_bind_int64(st, 3, g->detail);
				pid_t tid = tid_of_cupti_thread(g->thread);
				ss_db_bind_u64_or_null(st, 4, tid != 0, (uint64_t)tid);
				ss_sq.sqlite3_bind_int64(st, 8, g->thread);
				ss_sq.sqlite3_bind_int64(st, 5, (sqlite3_int64)g->start_ns);
				ss_sq.sqlite3_bind_int64(st, 6, (sqlite3_int64)g->end_ns);
				if (g->api_name)
					ss_sq.sqlite3_bind_text(st, 7, g->api_name, -1,
								SQLITE_STATIC);
				else
					ss_sq.sqlite3_bind_null(st, 7);
				ss_db_step(st);
			}
		} else if (gpu_activity_insert && g->kind < sizeof(kinds) / sizeof(kinds[0]) &&
			   kinds[g->kind]) {
			sqlite3_stmt *st = gpu_activity_insert;
			char grid[48], block[48];
			snprintf(grid, sizeof(grid), "%d,%d,%d", g->grid[0], g->grid[1],
				 g->grid[2]);
			snprintf(block, sizeof(block), "%d,%d,%d", g->block[0], g->block[1],
				 g->block[2]);
			int kernel = g->kind == SS_GPU_KERNEL, copy = g->kind == SS_GPU_MEMCPY;
			int timed = g->kind != SS_GPU_EVENT || g->start_ns; /* event: 0 = no time */
			ss_sq.sqlite3_bind_text(st, 1, kinds[g->kind], -1, SQLITE_STATIC);
			ss_db_bind_u64_or_null(st, 2, timed, g->start_ns);
			ss_db_bind_u64_or_null(st, 3, timed, g->end_ns);
			ss_sq.sqlite3_bind_int64(st, 4, g->device);
			ss_sq.sqlite3_bind_int64(st, 5, g->stream);
			ss_sq.sqlite3_bind_int64(st, 6, g->correlation);
			ss_db_bind_u64_or_null(
			    st, 7, !kernel && g->kind != SS_GPU_SYNC && g->kind != SS_GPU_EVENT,
			    g->bytes);
			ss_db_bind_u64_or_null(st, 8, copy, g->copy_kind);
			if (copy) {
				ss_sq.sqlite3_bind_text(st, 9, gpu_memory_kind(g->src_kind), -1,
							SQLITE_STATIC);
				ss_sq.sqlite3_bind_text(st, 10, gpu_memory_kind(g->dst_kind), -1,
							SQLITE_STATIC);
			} else {
				ss_sq.sqlite3_bind_null(st, 9);
				ss_sq.sqlite3_bind_null(st, 10);
			}
			ss_db_bind_u64_or_null(st, 11, !kernel && !copy, g->detail);
			/* kernels: name demangled (what people read), symbol as compiled */
			char *readable = g->name ? ss_demangle(g->name) : NULL;
			if (g->name)
				ss_sq.sqlite3_bind_text(st, 12, readable ? readable : g->name, -1,
							SQLITE_TRANSIENT);
			else
				ss_sq.sqlite3_bind_null(st, 12);
			if (g->name)
				ss_sq.sqlite3_bind_text(st, 15, g->name, -1, SQLITE_TRANSIENT);
			else
				ss_sq.sqlite3_bind_null(st, 15);
			free(readable);
			if (kernel) {
				ss_sq.sqlite3_bind_text(st, 13, grid, -1, SQLITE_TRANSIENT);
				ss_sq.sqlite3_bind_text(st, 14, block, -1, SQLITE_TRANSIENT);
			} else {
				ss_sq.sqlite3_bind_null(st, 13);
				ss_sq.sqlite3_bind_null(st, 14);
			}
			ss_db_step(st);
		}
		free(g->name);
	}
	free(records);
}

void ss_gpu_tables_meta(void)
{
	char status[SS_CUPTI_STATUS_MAX];
	ss_cupti_status(status, sizeof(status));
	ss_meta_text("cupti", status); /* without CUPTI: cupti/stub.c's reason */
	uint64_t paused_ns, traced_ns;
	unsigned pauses, windows;
	ss_cupti_pauses(&paused_ns, &pauses, &windows, &traced_ns);
	int cupti_on = strncmp(status, "on", 2) == 0;
	if (pauses && cupti_on) { /* syncspy_gpu_trace, the sampler (CUPTI-3, CUPTI-4) */
		ss_meta_int("cupti_pauses", pauses);
		ss_meta_int("cupti_paused_ns", (int64_t)paused_ns);
		ss_meta_int("cupti_traced_ns", (int64_t)traced_ns);
		store_gpu_paused();
	}
	char correlation[160]; /* CUPTI-11 */
	ss_cupti_correlation(correlation, sizeof(correlation));
	if (correlation[0] && (cupti_on || strncmp(status, "yielded", 7) == 0))
		ss_meta_text("cupti_correlation", correlation);
	/* CUPTI-8: SYNCSPY_CUPTI_PAUSE=detach, what detaching and attaching again cost */
	int detach_asked;
	unsigned detaches, attaches;
	uint64_t detach_ns, attach_ns;
	const char *fallback =
	    ss_cupti_detach_stats(&detach_asked, &detaches, &attaches, &detach_ns, &attach_ns);
	if (detach_asked && (cupti_on || strncmp(status, "yielded", 7) == 0)) {
		ss_meta_text("cupti_pause", "detach");
		ss_meta_int("cupti_detaches", detaches);
		ss_meta_int("cupti_attaches", attaches);
		ss_meta_int("cupti_detach_ns", (int64_t)detach_ns);
		ss_meta_int("cupti_attach_ns", (int64_t)attach_ns);
		if (fallback)
			ss_meta_text("cupti_detach_fallback", fallback);
		unsigned deferrals = ss_cupti_detach_deferrals(); /* CUPTI-10 */
		if (deferrals)
			ss_meta_int("cupti_detach_deferrals", deferrals);
		unsigned skips = ss_cupti_detach_skips(); /* GATE-4 */
		if (skips)
			ss_meta_int("cupti_detach_skips", skips);
	}
	/* CUPTI-4, CUPTI-5 (auto: only when it did pause; it may have decided to sample and
	 * changed its mind before the next sync point) */
	int sampled = windows && (pauses || strcmp(ss_cupti_sample_text(), "auto") != 0);
	if (sampled && cupti_on) {
		ss_meta_text("cupti_sample", ss_cupti_sample_text());
		ss_meta_int("cupti_windows", windows);
		unsigned unsynced_closes = ss_cupti_unsynced_closes(); /* CUPTI-9 */
		if (unsynced_closes)
			ss_meta_int("cupti_unsynced_closes", unsynced_closes);
		if (ss_cupti_auto_peak())
			ss_meta_int("cupti_auto_permille", ss_cupti_auto_peak());
		unsigned on_syncs, off_syncs; /* CUPTI-6 */
		unsigned measured = ss_cupti_auto_measured(&on_syncs, &off_syncs);
		if (on_syncs || off_syncs) {
			char syncs[32];
			snprintf(syncs, sizeof(syncs), "%u/%u", on_syncs, off_syncs);
			ss_meta_text("cupti_auto_measured_syncs", syncs);
			ss_meta_int("cupti_auto_measured_permille", measured);
		}
	}
}

void ss_gpu_tables_close(void)
{
	ss_sq.sqlite3_finalize(gpu_activity_insert); /* NULL (a no-op) when none came */
	ss_sq.sqlite3_finalize(gpu_api_insert);
	gpu_activity_insert = gpu_api_insert = NULL;
}

void ss_gpu_tables_fork_child(void)
{
	stored_off_intervals = 0;		     /* the parent's timeline */
	gpu_activity_insert = gpu_api_insert = NULL; /* statements of the parent's connection */
}
