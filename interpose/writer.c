/*
 * interpose/writer.c: the writer thread. Drains every thread's ring into the database, commits
 * at least every SYNCSPY_COMMIT_MS (at most a second), and at the end has the database closed
 * and renamed from *.sqlite.partial to its final name (dbfile.c).
 *
 * Only this thread touches SQLite (SHIM-1) and it makes no CUDA or NCCL call (SHIM-4). Requests
 * reach it through a pipe: from a signal handler ('F' commit now, 'X' finalize now: both
 * answered on a second pipe, so the handler can wait with a timeout using only
 * async-signal-safe calls) and from the exit path ('Q').
 *
 * Record-to-row rules live here: an S7 polling loop (folded by its thread, ring.c) is one row,
 * written at a commit while it still runs and completed when it ends (SCHEMA-5); N1 and
 * stream-creation records also fill the comms and streams tables; NVTX and step markers are
 * paired into ranges. What a call's caller address and stacks become is sites.c's, the GPU
 * timeline's rows gpu_tables.c's, the file itself dbfile.c's. In aggregate mode (SHIM-7) the
 * enqueue records go to aggregate.c instead of calls rows, with the sync points and step marks
 * it also counts per step; everything else is as in trace mode.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aggregate.h"
#include "capture.h"
#include "clock.h"
#include "dbfile.h"
#include "driver.h"
#include "env.h"
#include "gpu_tables.h"
#include "guard.h" /* ss_is_sync_point */
#include "lifecycle.h"
#include "native.h"
#include "ring.h"
#include "shim.h"
#include "sites.h"
#include "writer.h"
#include "cupti/cupti.h" /* ss_cupti_calls_drained (CUPTI-5) */
#include "syncspy/schema.h"

pthread_mutex_t ss_writer_lock = PTHREAD_MUTEX_INITIALIZER;

/* The writer is behind after a pass that drained this many records or more: it drains again at
 * once, and runs at WRITER_NICE until a pass drains fewer. */
#define WRITER_BEHIND_RECORDS 4096
/* The writer's nice value while behind, where the process may raise a thread's priority. */
#define WRITER_NICE (-10)

static pthread_t writer_thread;
static int writer_started;
static int request_pipe[2] = {-1, -1}, ack_pipe[2] = {-1, -1};
static const char *_Atomic finalize_reason;

/* What the summary line and the meta table report. */
static uint64_t rows_per_class[SS_CLASS_COUNT];
static unsigned layers_seen;
static int in_transaction;
static uint64_t last_commit_ns;

/* Which column a record's obj goes to, per API (decided once, from the names). */
/* OBJ_DEVICE: a device ordinal (wrapper.h DEVICE), stored in calls.ptr when 0 too. */
enum obj_column { OBJ_NONE, OBJ_EVENT, OBJ_COMM, OBJ_PTR, OBJ_DEVICE };
static unsigned char obj_column[SS_API_COUNT];

static int starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void classify_apis(void)
{
	for (int api = 0; api < SS_API_COUNT; api++) {
		const char *name = ss_apis[api].name;
		if (ss_apis[api].layer == SS_LAYER_NCCL)
			obj_column[api] = OBJ_COMM;
		else if (strstr(name, "Event") || strstr(name, "StreamWaitValue") ||
			 strstr(name, "StreamWriteValue"))
			obj_column[api] = OBJ_EVENT; /* a memory word orders streams as an event
							does (driver_table.h) */
		else if (starts_with(name, "cudaMalloc") || starts_with(name, "cudaFree") ||
			 starts_with(name, "cudaHost") || starts_with(name, "cuMemAlloc") ||
			 starts_with(name, "cuMemFree") || starts_with(name, "cuMemHost") ||
			 starts_with(name, "cudaMemPrefetchAsync") ||
			 starts_with(name, "cuMemPrefetchAsync") || starts_with(name, "cuMemMap") ||
			 starts_with(name, "cuMemUnmap"))
			obj_column[api] = OBJ_PTR;
		else if (strstr(name, "EndCapture") || strstr(name, "BeginCaptureToGraph") ||
			 strstr(name, "GraphInstantiate"))
			obj_column[api] = OBJ_PTR; /* the graph made or read (wrapper.h GRAPH) */
		else if (starts_with(name, "cuCtxCreate") ||
			 starts_with(name, "cuDevicePrimaryCtx"))
			obj_column[api] = OBJ_DEVICE;
	}
}

static int is_comm_creation(int api)
{
	return api == SS_API_ncclCommInitRank || api == SS_API_ncclCommInitRankConfig ||
	       api == SS_API_ncclCommInitRankScalable || api == SS_API_ncclCommInitAll ||
	       api == SS_API_ncclCommSplit || api == SS_API_ncclCommShrink;
}

static int is_stream_creation(int api)
{
	return api == SS_API_cudaStreamCreate || api == SS_API_cudaStreamCreateWithFlags ||
	       api == SS_API_cudaStreamCreateWithPriority || api == SS_API_cuStreamCreate ||
	       api == SS_API_cuStreamCreateWithPriority;
}

/* ------------------------------------------------------------------ records to rows */

/* An NVTX range or step not closed yet. */
struct open_range {
	char *name; /* malloc'd by nvtx.c */
	uint64_t start_ns;
	uint64_t id; /* start/end ranges: NVTX's range id */
	pid_t tid;
};

struct ring_state {
	int thread_known;
	struct open_range *pushes; /* this thread's nvtxRangePush stack */
	size_t npushes, pushes_capacity;
	struct open_range step;	 /* this thread's current syncspy_step (name NULL: none) */
	int64_t last_call_rowid; /* the row a following stack record belongs to */
	int64_t *waiting;	 /* rows whose Python frames come later (python.c, deferred) */
	size_t nwaiting, waiting_capacity;
	/* The open polling loop's row, written at a commit while the loop still ran (from
	 * ss_ring_peek_poll); the loop's final record, when it arrives, updates this row. */
	int64_t snap_rowid;
	uint64_t snap_t_start;
	int snap_api;
	/* The last finished loop drained, so that a peek racing with its close adds no row. */
	uint64_t last_loop_t_start;
	int last_loop_api;
};

static struct ring_state *state_of(struct ss_ring *ring)
{
	if (ring->writer_state == NULL)
		ring->writer_state = calloc(1, sizeof(struct ring_state));
	return ring->writer_state;
}

static void note_thread(struct ss_ring *ring, struct ring_state *rs, uint64_t first_ns)
{
	char path[64], name[64] = "";
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)ring->tid);
	FILE *f = fopen(path, "re");
	if (f) {
		if (fgets(name, sizeof(name), f))
			name[strcspn(name, "\n")] = 0;
		fclose(f);
	}
	sqlite3_stmt *st = ss_statements[SS_ST_THREAD];
	ss_sq.sqlite3_bind_int64(st, 1, ring->tid);
	if (*name)
		ss_sq.sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
	else
		ss_sq.sqlite3_bind_null(st, 2);
	ss_sq.sqlite3_bind_int64(st, 3, (sqlite3_int64)first_ns);
	ss_db_step(st);
	rs->thread_known = 1;
}

/* ------------------------------------------------------------------ calls rows, batched */

/* Rows of calls wait here and go in by 64, 16 or 1 per statement (dbfile.c): the writer
 * numbers them itself, so that a row's id is known before it is inserted. Whatever updates a
 * calls row (a stack attached, a polling loop completed) flushes the batch first. */
#define BATCH_ROWS 64
struct call_row {
	sqlite3_int64 v[SS_CALL_COLUMNS]; /* id, tid, api_id, (class), start_ns, ... aux */
	uint32_t null;			  /* bit c: column c is NULL */
	uint8_t cls;
	uint8_t enq; /* the shape of a plain enqueue (dbfile.c, SS_ST_ENQ_*) */
};
/* The columns an SS_ST_ENQ_* row binds, in order. */
static const int enq_columns[] = {1, 2, 3, 4, 6, 7, 14, 16};
#define ENQ_NULLS ((1u << 8) | (1u << 9) | (1u << 10) | (1u << 11) | (1u << 12))
static struct call_row batch[BATCH_ROWS];
static int nbatch;
static int64_t next_call_id = 1;
/* calls SQLite refused (a full disk...), per class: SHIM-5 */
static uint64_t write_dropped_calls[SS_CLASS_COUNT];

/* Calls rows inserted in the open transaction, per class: they count as written once it is
 * committed, as lost if it is not (a full disk: SHIM-5). */
static uint64_t txn_rows[SS_CLASS_COUNT];

/* After a failed insert SQLite's numbering no longer follows the writer's count: from then on
 * rows go in one by one with their ids given. */
static int explicit_ids;

static void transaction_lost(void)
{
	uint64_t lost = 0;
	ss_agg_lost();	  /* rewritten whole at the next commit: nothing of theirs is lost */
	explicit_ids = 1; /* the rows rolled back leave the writer's count ahead of SQLite's */
	for (int c = 0; c < SS_CLASS_COUNT; c++) {
		write_dropped_calls[c] += txn_rows[c];
		lost += txn_rows[c];
		txn_rows[c] = 0;
	}
	ss_db_dropped_write += lost;
}

static void transaction_committed(void)
{
	for (int c = 0; c < SS_CLASS_COUNT; c++) {
		rows_per_class[c] += txn_rows[c];
		txn_rows[c] = 0;
	}
}

/* After an error: SQLite may have rolled the whole transaction back (SQLITE_FULL, IOERR). The
 * rows it held are lost; a new one starts, so that later rows have a chance. */
static void check_transaction(void)
{
	if (in_transaction && ss_db && ss_sq.sqlite3_get_autocommit(ss_db)) {
		transaction_lost();
		in_transaction = ss_db_exec("BEGIN") == SQLITE_OK;
	}
}

static void bind_value(sqlite3_stmt *st, int i, const struct call_row *row, int c)
{
	if (row->null & (1u << c))
		ss_sq.sqlite3_bind_null(st, i);
	else if (c == 3)
		ss_sq.sqlite3_bind_text(st, i, ss_class_names[row->cls], 2, SQLITE_STATIC);
	else
		ss_sq.sqlite3_bind_int64(st, i, row->v[c]);
}

static void bind_rows(sqlite3_stmt *st, const struct call_row *rows, int n, int first_column)
{
	int i = 1;
	if (rows[0].enq && first_column) {
		for (int k = 0; k < n; k++)
			for (size_t c = 0; c < sizeof(enq_columns) / sizeof(enq_columns[0]); c++)
				bind_value(st, i++, &rows[k], enq_columns[c]);
		return;
	}
	for (int k = 0; k < n; k++) {
		const struct call_row *row = &rows[k];
		for (int c = first_column; c < SS_CALL_COLUMNS; c++, i++) {
			if (row->null & (1u << c))
				ss_sq.sqlite3_bind_null(st, i);
			else if (c == 3)
				ss_sq.sqlite3_bind_text(st, i, ss_class_names[row->cls], 2,
							SQLITE_STATIC);
			else
				ss_sq.sqlite3_bind_int64(st, i, row->v[c]);
		}
	}
}

static void flush_calls(void)
{
	for (int done = 0; done < nbatch;) {
		int first = explicit_ids      ? SS_ST_CALL
			    : batch[done].enq ? SS_ST_ENQ_1
					      : SS_ST_CALL_1;
		/* 64 rows a statement where SQLite takes that many parameters (dbfile.c) */
		int left = nbatch - done, n = explicit_ids			       ? 1
					      : left >= 64 && ss_statements[first + 2] ? 64
					      : left >= 16			       ? 16
										       : 1;
		sqlite3_stmt *st = ss_statements[n == 64 ? first + 2 : n == 16 ? first + 1 : first];
		bind_rows(st, batch + done, n, explicit_ids ? 0 : 1);
		int rc = ss_sq.sqlite3_step(st);
		ss_sq.sqlite3_reset(st);
		for (int k = done; k < done + n; k++)
			if (rc == SQLITE_DONE)
				txn_rows[batch[k].cls]++;
			else
				write_dropped_calls[batch[k].cls]++;
		if (rc != SQLITE_DONE) {
			ss_db_note_write_error(rc, n);
			explicit_ids = 1;
			check_transaction();
		}
		done += n;
	}
	nbatch = 0;
}

static void set_column(struct call_row *row, int c, int present, uint64_t value)
{
	if (present)
		row->v[c] = (sqlite3_int64)value;
	else
		row->null |= 1u << c;
}

static int64_t insert_call(struct ss_ring *ring, const struct ss_rec *r)
{
	sqlite3_stmt *st;
	int api = r->api;
	int created_comm = r->cls == SS_N1 && is_comm_creation(api) && r->obj != 0;
	int polling = r->cls == SS_S7; /* aux is the loop's query count (ring.c) */
	uint64_t start_ns = ss_clock_to_ns(r->t_start);
	uint64_t end_ns = r->t_end == r->t_start ? start_ns : ss_clock_to_ns(r->t_end);
	int64_t rowid = next_call_id++;
	struct call_row *row = &batch[nbatch];
	row->null = 0;
	row->cls = r->cls;
	row->v[0] = rowid;
	row->v[1] = ring->tid;
	row->v[2] = api;
	row->v[4] = (sqlite3_int64)start_ns;
	row->v[5] = (sqlite3_int64)end_ns;
	/* N1 creation records carry the parent communicator in `stream` (nccl.c) */
	set_column(row, 6, r->stream != 0 && r->cls != SS_N1, r->stream);
	set_column(row, 7, obj_column[api] == OBJ_EVENT && r->obj, r->obj);
	set_column(row, 8, obj_column[api] == OBJ_COMM && r->obj, r->obj);
	set_column(row, 9, (obj_column[api] == OBJ_PTR && r->obj) || obj_column[api] == OBJ_DEVICE,
		   r->obj);
	set_column(row, 10, !created_comm && (r->bytes || r->dir), r->bytes);
	set_column(row, 11, r->dir, r->dir);
	set_column(row, 12, r->host_mem, r->host_mem);
	row->v[13] = r->ret;
	int64_t site = ss_site_id(r->caller);
	set_column(row, 14, site != 0, (uint64_t)site);
	row->v[15] = polling ? (sqlite3_int64)r->aux : 1;
	set_column(row, 16, !created_comm && !polling && r->aux != UINT64_MAX, r->aux);
	layers_seen |= 1u << ss_apis[api].layer;
	row->enq = (row->null & ENQ_NULLS) == ENQ_NULLS && r->ret == 0 && row->v[15] == 1 &&
		   start_ns == end_ns;
	/* one statement holds rows of one shape: a batch of the other shape goes in first */
	if (nbatch > 0 && batch[nbatch - 1].enq != row->enq) {
		struct call_row pending = *row;
		flush_calls();
		batch[0] = pending;
	}
	if (++nbatch == BATCH_ROWS)
		flush_calls();

	if (created_comm) {
		char id_hash[17];
		snprintf(id_hash, sizeof(id_hash), "%016llx", (unsigned long long)r->bytes);
		st = ss_statements[SS_ST_COMM];
		ss_sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)r->obj);
		ss_sq.sqlite3_bind_text(st, 2, id_hash, -1, SQLITE_TRANSIENT);
		ss_sq.sqlite3_bind_int64(st, 3, (int32_t)(uint32_t)r->aux);
		ss_sq.sqlite3_bind_int64(st, 4, (int32_t)(r->aux >> 32));
		ss_db_bind_u64_or_null(st, 5, r->stream != 0, r->stream);
		ss_sq.sqlite3_bind_int64(st, 6, api);
		ss_sq.sqlite3_bind_int64(st, 7, (sqlite3_int64)start_ns);
		ss_db_step(st);
	} else if ((api == SS_API_ncclCommDestroy || api == SS_API_ncclCommAbort) && r->ret == 0) {
		st = ss_statements[SS_ST_COMM_END];
		ss_sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)end_ns);
		ss_sq.sqlite3_bind_int64(st, 2, (sqlite3_int64)r->obj);
		ss_db_step(st);
	} else if (is_stream_creation(api) && r->ret == 0) {
		st = ss_statements[SS_ST_STREAM];
		ss_sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)r->stream);
		ss_sq.sqlite3_bind_int64(st, 2, (uint32_t)r->aux);
		ss_sq.sqlite3_bind_int64(st, 3, (int32_t)(r->aux >> 32));
		ss_sq.sqlite3_bind_int64(st, 4, api);
		ss_sq.sqlite3_bind_int64(st, 5, (sqlite3_int64)end_ns);
		ss_db_step(st);
	} else if ((api == SS_API_cudaStreamDestroy || api == SS_API_cuStreamDestroy_v2) &&
		   r->ret == 0) {
		st = ss_statements[SS_ST_STREAM_END];
		ss_sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)end_ns);
		ss_sq.sqlite3_bind_int64(st, 2, (sqlite3_int64)r->stream);
		ss_db_step(st);
	}
	return rowid;
}

static void update_loop_row(int64_t rowid, const struct ss_rec *loop)
{
	flush_calls(); /* the row may still wait in the batch */
	sqlite3_stmt *st = ss_statements[SS_ST_POLL_UPDATE];
	ss_sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)ss_clock_to_ns(loop->t_end));
	ss_sq.sqlite3_bind_int64(st, 2, (sqlite3_int64)loop->aux);
	ss_sq.sqlite3_bind_int64(st, 3, loop->ret);
	ss_sq.sqlite3_bind_int64(st, 4, rowid);
	ss_db_step(st);
}

/* A finished polling loop from the ring (SCHEMA-5): completes the row written while it ran,
 * or becomes a row of its own. */
static void store_loop(struct ss_ring *ring, struct ring_state *rs, const struct ss_rec *loop)
{
	if (rs->snap_rowid && rs->snap_t_start == loop->t_start && rs->snap_api == loop->api)
		update_loop_row(rs->snap_rowid, loop);
	else
		insert_call(ring, loop);
	rs->snap_rowid = 0;
	rs->last_loop_t_start = loop->t_start;
	rs->last_loop_api = loop->api;
}

/* At a commit: the loop a thread is still in gets its row now, with the count so far, so that
 * a killed process keeps it. */
static void store_open_loop(struct ss_ring *ring, struct ring_state *rs)
{
	struct ss_rec loop;
	if (ring->released || !ss_ring_peek_poll(ring, &loop))
		return;
	if (loop.t_start == rs->last_loop_t_start && loop.api == rs->last_loop_api)
		return; /* closed and stored already; the owner has not cleared the flag yet */
	if (rs->snap_rowid && rs->snap_t_start == loop.t_start && rs->snap_api == loop.api) {
		update_loop_row(rs->snap_rowid, &loop);
		return;
	}
	rs->snap_rowid = insert_call(ring, &loop);
	rs->snap_t_start = loop.t_start;
	rs->snap_api = loop.api;
}

/* NVTX start/end ranges may end on another thread: kept process-wide. */
static struct open_range *started;
static size_t nstarted, started_capacity;

static void insert_range(pid_t tid, const char *kind, const char *name, uint64_t start_ns,
			 int has_end, uint64_t end_ns, int64_t depth)
{
	sqlite3_stmt *st = ss_statements[SS_ST_RANGE];
	ss_sq.sqlite3_bind_int64(st, 1, tid);
	ss_sq.sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	if (name)
		ss_sq.sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
	else
		ss_sq.sqlite3_bind_null(st, 3);
	ss_sq.sqlite3_bind_int64(st, 4, (sqlite3_int64)start_ns);
	ss_db_bind_u64_or_null(st, 5, has_end, end_ns);
	if (depth >= 0)
		ss_sq.sqlite3_bind_int64(st, 6, depth);
	else
		ss_sq.sqlite3_bind_null(st, 6);
	ss_db_step(st);
}

static int grow_ranges(struct open_range **items, size_t n, size_t *capacity)
{
	if (n < *capacity)
		return 1;
	size_t grown_capacity = *capacity ? *capacity * 2 : 16;
	struct open_range *grown = realloc(*items, grown_capacity * sizeof(**items));
	if (!grown)
		return 0;
	*items = grown;
	*capacity = grown_capacity;
	return 1;
}

/* Pairs NVTX and step markers (nvtx.c) into ranges rows. */
static void store_marker(struct ss_ring *ring, struct ring_state *rs, const struct ss_rec *r)
{
	char *name = (char *)(uintptr_t)r->obj;
	uint64_t t = ss_clock_to_ns(r->t_start);
	switch (r->api) {
	case SS_REC_NVTX_PUSH:
		if (grow_ranges(&rs->pushes, rs->npushes, &rs->pushes_capacity)) {
			rs->pushes[rs->npushes++] = (struct open_range){name, t, r->aux, ring->tid};
			return;
		}
		break;
	case SS_REC_NVTX_POP:
		if (rs->npushes > 0) {
			struct open_range *open = &rs->pushes[--rs->npushes];
			insert_range(ring->tid, "push", open->name, open->start_ns, 1, t,
				     (int64_t)rs->npushes);
			free(open->name);
		}
		break;
	case SS_REC_NVTX_START:
		if (grow_ranges(&started, nstarted, &started_capacity)) {
			started[nstarted++] = (struct open_range){name, t, r->aux, ring->tid};
			return;
		}
		break;
	case SS_REC_NVTX_END:
		for (size_t i = 0; i < nstarted; i++)
			if (started[i].id == r->aux) {
				insert_range(started[i].tid, "startend", started[i].name,
					     started[i].start_ns, 1, t, -1);
				free(started[i].name);
				started[i] = started[--nstarted];
				break;
			}
		break;
	case SS_REC_STEP:
		if (rs->step.name) {
			insert_range(ring->tid, "step", rs->step.name, rs->step.start_ns, 1, t, -1);
			free(rs->step.name);
		}
		if (ss_aggregate_mode)
			ss_agg_step(ring->tid, name, t);
		rs->step = (struct open_range){name, t, 0, ring->tid};
		return;
	}
	free(name);
}

/* A thread's current syncspy_step ends at NS (the end, or a capture range's). */
static void close_step(struct ss_ring *ring, struct ring_state *rs, uint64_t ns)
{
	if (!rs->step.name)
		return;
	insert_range(ring->tid, "step", rs->step.name, rs->step.start_ns, 1, ns, -1);
	free(rs->step.name);
	rs->step.name = NULL;
	if (ss_aggregate_mode)
		ss_agg_step_end(ring->tid, ns);
}

/* ------------------------------------------------------------------ capture ranges */

/* The capture table (SS_CAPTURE_SQL, SHIM-6): made when the recording has a capture range or
 * the program switched; one row per interval recorded, written when it starts and completed
 * when it stops. */
static int capture_table;
static sqlite3_int64 capture_rowid; /* the interval being recorded; 0 when none */

static void capture_begin(uint64_t ns, const char *trigger)
{
	sqlite3_stmt *st = NULL;
	if (ss_sq.sqlite3_prepare_v2(ss_db, "INSERT INTO capture VALUES(?, NULL, ?, NULL)", -1, &st,
				     NULL) != SQLITE_OK)
		return;
	ss_sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)ns);
	ss_sq.sqlite3_bind_text(st, 2, trigger, -1, SQLITE_STATIC);
	if (ss_db_step(st) == 0)
		capture_rowid = ss_sq.sqlite3_last_insert_rowid(ss_db);
	ss_sq.sqlite3_finalize(st);
}

/* The interval ends at NS; so does every thread's current step (a step does not span what was
 * not recorded: the next one starts with the next syncspy_step). */
static void capture_end(uint64_t ns, const char *trigger)
{
	sqlite3_stmt *st = NULL;
	if (ss_sq.sqlite3_prepare_v2(ss_db,
				     "UPDATE capture SET end_ns = ?, stopped_by = ?"
				     " WHERE rowid = ?",
				     -1, &st, NULL) == SQLITE_OK) {
		ss_sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)ns);
		ss_sq.sqlite3_bind_text(st, 2, trigger, -1, SQLITE_STATIC);
		ss_sq.sqlite3_bind_int64(st, 3, capture_rowid);
		ss_db_step(st);
		ss_sq.sqlite3_finalize(st);
	}
	capture_rowid = 0;
	for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next)
		if (ring->writer_state)
			close_step(ring, ring->writer_state, ns);
}

/* Every pass, after the rings: the window's end (SYNCSPY_DURATION), then the switches. */
static void store_capture(void)
{
	struct ss_capture_switch *sw;
	ss_capture_writer_tick();
	size_t n = ss_capture_take(&sw);
	if (!capture_table && (n || ss_capture_setting())) {
		if (ss_db_exec(SS_CAPTURE_SQL) != SQLITE_OK) {
			free(sw);
			return;
		}
		capture_table = 1;
		/* recording before the first switch: from the process's start */
		if (n ? !sw[0].on : ss_capturing())
			capture_begin(ss_process.start_mono_ns, "start");
	}
	flush_calls(); /* the rows before a switch go in before its steps end */
	for (size_t i = 0; capture_table && i < n; i++)
		if (sw[i].on && !capture_rowid)
			capture_begin(sw[i].ns, sw[i].trigger);
		else if (!sw[i].on && capture_rowid)
			capture_end(sw[i].ns, sw[i].trigger);
	free(sw);
}

/* At the end: ranges still open are written with no end (end_ns NULL), steps end now. */
static void close_open_ranges(void)
{
	uint64_t now = ss_mono_ns();
	for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next) {
		struct ring_state *rs = ring->writer_state;
		if (!rs)
			continue;
		for (size_t i = 0; i < rs->npushes; i++) {
			insert_range(ring->tid, "push", rs->pushes[i].name, rs->pushes[i].start_ns,
				     0, 0, (int64_t)i);
			free(rs->pushes[i].name);
		}
		free(rs->pushes);
		rs->pushes = NULL;
		rs->npushes = rs->pushes_capacity = 0;
		close_step(ring, rs, now);
	}
	for (size_t i = 0; i < nstarted; i++) {
		insert_range(started[i].tid, "startend", started[i].name, started[i].start_ns, 0, 0,
			     -1);
		free(started[i].name);
	}
	free(started);
	started = NULL;
	nstarted = started_capacity = 0;
}
/* SHIM-7: an enqueue (E1-E3, N2) is counted into its aggregate in aggregate mode, not a row. */
static int aggregated(int cls)
{
	return ss_aggregate_mode && ((cls >= SS_E1 && cls <= SS_E3) || cls == SS_N2);
}

static void aggregate_call(struct ss_ring *ring, const struct ss_rec *r)
{
	uint64_t start_ns = ss_clock_to_ns(r->t_start);
	uint64_t end_ns = r->t_end == r->t_start ? start_ns : ss_clock_to_ns(r->t_end);
	layers_seen |= 1u << ss_apis[r->api].layer;
	if (ss_agg_enqueue(ring->tid, r, start_ns, end_ns, ss_site_id(r->caller)) != 0)
		write_dropped_calls[r->cls]++; /* out of memory: counted as lost (SHIM-5) */
}

static void process(struct ss_ring *ring, struct ring_state *rs, const struct ss_rec *r)
{
	if (r->api == SS_REC_NATIVE_STACK) {
		flush_calls(); /* the stack is attached to the row just queued */
		ss_store_native_stack(r, rs->last_call_rowid);
		return;
	}
	if (r->api == SS_REC_PYSTACK) {
		flush_calls();
		/* Deferred frames (r->cls 1) belong to every call waiting for them, others to the
		 * call just before. */
		if (r->cls) {
			ss_store_python_stack(r, rs->waiting, rs->nwaiting);
			rs->nwaiting = 0;
		} else {
			ss_store_python_stack(r, &rs->last_call_rowid, rs->last_call_rowid != 0);
		}
		return;
	}
	if (r->api == SS_REC_PYSTACK_WAIT) {
		if (rs->last_call_rowid && rs->nwaiting < 4096) {
			if (rs->nwaiting == rs->waiting_capacity) {
				size_t capacity =
				    rs->waiting_capacity ? rs->waiting_capacity * 2 : 16;
				int64_t *grown = realloc(rs->waiting, capacity * sizeof(*grown));
				if (!grown)
					return;
				rs->waiting = grown;
				rs->waiting_capacity = capacity;
			}
			rs->waiting[rs->nwaiting++] = rs->last_call_rowid;
		}
		return;
	}
	if (r->api >= SS_REC_STEP && r->api <= SS_REC_NVTX_PUSH) {
		store_marker(ring, rs, r);
		return;
	}
	if (!rs->thread_known)
		note_thread(ring, rs, ss_clock_to_ns(r->t_start));
	if (aggregated(r->cls)) {
		aggregate_call(ring, r);
		return;
	}
	if (r->cls == SS_S7)
		store_loop(ring, rs, r);
	else
		rs->last_call_rowid = insert_call(ring, r);
	/* aggregate mode's step figures: each sync point once, a polling loop when it ends */
	if (ss_aggregate_mode && ss_is_sync_point(r->cls))
		ss_agg_sync(ss_clock_to_ns(r->t_start), ss_clock_to_ns(r->t_end),
			    r->cls == SS_S7 ? r->aux : 1);
}

/* Records drained by the last pass: the writer does not sleep while it is behind; after
 * TRIM_AFTER_NS without any, it gives the pages of free blocks back (ring.c). */
static uint64_t drained_last_pass, last_busy_ns;
static uint64_t drained_total; /* since the start: SYNCSPY_CUPTI_SAMPLE=auto's rate (CUPTI-5) */
/* The writer's priority (writer_priority): its nice value as created, whether it runs at
 * WRITER_NICE now, whether raising it failed once (no CAP_SYS_NICE: never tried again), and how
 * many times it was raised (meta.writer_priority_raises). */
static int writer_own_nice, writer_raised, writer_cannot_raise;
static uint64_t writer_raises;
#define TRIM_AFTER_NS (100 * 1000000ull)

/* A ring's state as a drain pass starts: whether its thread had exited, and its head. */
struct ring_snapshot {
	int orphaned;
	uint64_t head;
};

static struct ring_snapshot snapshot(struct ss_ring *ring)
{
	struct ring_snapshot s;
	s.orphaned = atomic_load_explicit(&ring->orphaned, memory_order_acquire);
	s.head = atomic_load_explicit(&ring->head, memory_order_acquire);
	return s;
}

/* Drains RING up to its head as read now, or as SNAP read it. */
static void drain_ring(struct ss_ring *ring, const struct ring_snapshot *snap)
{
	if (ring->released)
		return;
	struct ring_state *rs = state_of(ring);
	if (rs == NULL)
		return;
	struct ring_snapshot now = snap ? *snap : snapshot(ring);
	int orphaned = now.orphaned;
	uint64_t head = now.head;
	uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	const struct ss_rec *r;
	while ((r = ss_ring_peek(ring, tail, head)) != NULL) {
		process(ring, rs, r);
		tail++;
		/* the blocks consumed go back as the drain goes (ring.c) */
		if (++drained_last_pass % 4096 == 0)
			atomic_store_explicit(&ring->tail, tail, memory_order_release);
	}
	atomic_store_explicit(&ring->tail, tail, memory_order_release);
	if (orphaned) {
		flush_calls(); /* rows may name the thread's state below */
		ss_ring_release(ring);
	}
}

/* What taking stacks cost the program's threads (ss_stacks_attach), in ns: native, Python,
 * and of the syncs that repeated a stack; and how many syncs of each. */
static void stack_cost_ns(uint64_t ns[3], uint64_t *taken, uint64_t *repeated)
{
	uint64_t ticks[3] = {0, 0, 0};
	*taken = *repeated = 0;
	for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next) {
		for (int i = 0; i < 2; i++)
			ticks[i] +=
			    atomic_load_explicit(&ring->stack_ticks[i], memory_order_relaxed);
		ticks[2] += atomic_load_explicit(&ring->stack_ticks_repeated, memory_order_relaxed);
		*taken += atomic_load_explicit(&ring->stacks_taken, memory_order_relaxed);
		*repeated += atomic_load_explicit(&ring->stacks_repeated, memory_order_relaxed);
	}
	for (int i = 0; i < 3; i++)
		ns[i] = ss_clock_ticks_to_ns(ticks[i]);
}

static uint64_t dropped_in_rings(void)
{
	uint64_t total = 0;
	for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next)
		total += atomic_load_explicit(&ring->dropped, memory_order_relaxed);
	return total;
}

/* Calls lost, per class: full rings, threads without one, rows SQLite refused. */
static uint64_t dropped_calls_per_class(uint64_t calls[SS_CLASS_COUNT])
{
	uint64_t total = 0;
	for (int c = 0; c < SS_CLASS_COUNT; c++) {
		calls[c] =
		    atomic_load_explicit(&ss_dropped_no_buffer_calls[c], memory_order_relaxed) +
		    write_dropped_calls[c];
		for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next)
			calls[c] +=
			    atomic_load_explicit(&ring->dropped_calls[c], memory_order_relaxed);
		total += calls[c];
	}
	return total;
}

/* Calls left out by a capture range, per class (SHIM-6); their total. */
static uint64_t skipped_calls_per_class(uint64_t calls[SS_CLASS_COUNT])
{
	uint64_t total = 0;
	for (int c = 0; c < SS_CLASS_COUNT; c++) {
		calls[c] =
		    atomic_load_explicit(&ss_capture_skipped_no_ring[c], memory_order_relaxed);
		for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next)
			calls[c] +=
			    atomic_load_explicit(&ring->skipped_calls[c], memory_order_relaxed);
		total += calls[c];
	}
	return total;
}

/* Counts per class as meta keeps them (docs/schema.md): "E2:883295,S2:8833". */
static void format_by_class(const uint64_t calls[SS_CLASS_COUNT], char *out, size_t len)
{
	*out = 0;
	for (int c = 0; c < SS_CLASS_COUNT; c++)
		if (calls[c])
			snprintf(out + strlen(out), len - strlen(out), "%s%s:%llu", *out ? "," : "",
				 ss_class_names[c], (unsigned long long)calls[c]);
}

/* ------------------------------------------------------------------ meta */

static void write_meta_progress(void)
{
	int rank = atomic_load(&ss_process.rank);
	int world = atomic_load(&ss_process.world_size);
	int local_rank = atomic_load(&ss_process.local_rank);
	int source = atomic_load(&ss_process.rank_source);
	if (rank >= 0) {
		ss_meta_int("rank", rank);
		ss_meta_text("rank_source", source == 2 ? "nccl" : "env");
	}
	if (world > 0)
		ss_meta_int("world_size", world);
	if (local_rank >= 0)
		ss_meta_int("local_rank", local_rank);
	if (atomic_load(&ss_process.cudart_version))
		ss_meta_int("cudart_version", ss_process.cudart_version);
	if (ss_process.cudart_path[0])
		ss_meta_text("cudart_path", ss_process.cudart_path);
	if (atomic_load(&ss_process.driver_version))
		ss_meta_int("driver_version", ss_process.driver_version);
	if (atomic_load(&ss_process.nccl_version))
		ss_meta_int("nccl_version", ss_process.nccl_version);
	if (ss_process.nccl_path[0])
		ss_meta_text("nccl_path", ss_process.nccl_path);
	char layers[64] = "";
	static const char *const layer_names[SS_LAYER_COUNT] = {
#define SS_LAYER_NAME(n, s) [SS_LAYER_##n] = s,
	    SS_LAYERS(SS_LAYER_NAME)
#undef SS_LAYER_NAME
	};
	for (int l = 0; l < SS_LAYER_COUNT; l++)
		if (layers_seen & (1u << l)) {
			if (*layers)
				strcat(layers, ",");
			strcat(layers, layer_names[l]);
		}
	ss_meta_text("hooks_fired", layers);
	ss_meta_text("native_stacks", ss_native_stacks_status);
	ss_meta_int("native_stacks_libgcc_sites", (int64_t)atomic_load(&ss_native_libgcc_sites));
	ss_meta_int("enqueue_path_walks", (int64_t)atomic_load(&ss_enqueue_path_walks));
	ss_meta_int("enqueue_path_walk_ns",
		    (int64_t)ss_clock_ticks_to_ns(atomic_load(&ss_enqueue_path_ticks)));
	ss_meta_int("enqueue_path_lookups", (int64_t)atomic_load(&ss_enqueue_path_lookups));
	ss_gpu_tables_meta();
	char clients[1024];
	if (ss_driver_clients(clients, sizeof(clients)) > 0) {
		ss_meta_text("driver_clients", clients);
		/* A module that bootstraps the driver through cuGetProcAddress carries a CUDA
		 * runtime: every such module but the shared libcudart has a static one. */
		char static_cudart[1024] = "";
		for (char *save = NULL, *m = strtok_r(clients, ",", &save); m;
		     m = strtok_r(NULL, ",", &save))
			if (strncmp(m, "libcudart.so", 12) != 0) {
				if (*static_cudart)
					strncat(static_cudart, ",",
						sizeof(static_cudart) - strlen(static_cudart) - 1);
				strncat(static_cudart, m,
					sizeof(static_cudart) - strlen(static_cudart) - 1);
			}
		ss_meta_text("static_cudart", *static_cudart ? static_cudart : NULL);
	}
	uint64_t stack_ns[3], stacks_taken, stacks_repeated;
	stack_cost_ns(stack_ns, &stacks_taken, &stacks_repeated);
	ss_meta_int("stacks_taken", (int64_t)stacks_taken);
	ss_meta_int("stack_cost_native_ns", (int64_t)stack_ns[0]);
	ss_meta_int("stack_cost_python_ns", (int64_t)stack_ns[1]);
	ss_meta_int("stacks_repeated", (int64_t)stacks_repeated);
	ss_meta_int("stack_cost_repeated_ns", (int64_t)stack_ns[2]);
	uint64_t in_rings = dropped_in_rings();
	uint64_t no_buffer = atomic_load(&ss_dropped_no_buffer);
	ss_meta_int("dropped_full_buffer", (int64_t)in_rings);
	ss_meta_int("dropped_no_buffer", (int64_t)no_buffer);
	ss_meta_int("dropped_write_error", (int64_t)ss_db_dropped_write);
	ss_meta_int("dropped_events", (int64_t)(in_rings + no_buffer + ss_db_dropped_write));
	/* The calls among them, per class (docs/schema.md): "E2:883295,S2:8833" */
	uint64_t calls[SS_CLASS_COUNT];
	uint64_t dropped_calls = dropped_calls_per_class(calls);
	char by_class[SS_CLASS_COUNT * 24 + 1];
	format_by_class(calls, by_class, sizeof(by_class));
	ss_meta_int("dropped_calls", (int64_t)dropped_calls);
	ss_meta_text("dropped_calls_by_class", by_class);
	/* SHIM-6: what a capture range left out, in the same form */
	if (ss_capture_setting()) {
		ss_meta_text("capture_range", ss_capture_setting());
		ss_meta_int("capture_skipped_calls", (int64_t)skipped_calls_per_class(calls));
		format_by_class(calls, by_class, sizeof(by_class));
		ss_meta_text("capture_skipped_by_class", by_class);
	}
	ss_meta_int("buffer_bytes", (int64_t)ss_ring_bytes_in_use());
	ss_meta_int("buffer_peak_bytes", (int64_t)ss_ring_bytes_peak());
	ss_meta_int("buffer_trimmed_bytes", (int64_t)ss_ring_bytes_trimmed());
	ss_meta_int("buffer_region_mb", (int64_t)(ss_ring_region_bytes() >> 20));
	/* the writer's own CPU time: rows per CPU second is its throughput on one core
	 * (bench/writer_throughput.sh) */
	struct timespec cpu;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		ss_meta_int("writer_cpu_ns", (int64_t)cpu.tv_sec * 1000000000 + cpu.tv_nsec);
	ss_meta_int("writer_priority_raises", (int64_t)writer_raises);
	int threads = 0;
	for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next)
		threads++;
	ss_meta_int("threads", threads);
}
/* ------------------------------------------------------------------ open, commit, close */

/* The database with its first rows, committed in the schema's transaction (SCHEMA-1). */
static int open_database(char *err, size_t errlen)
{
	if (ss_db_open(err, errlen) != 0)
		return -1;
	if (ss_aggregate_mode && ss_agg_open() != 0)
		fprintf(stderr,
			"syncspy: aggregate mode: cannot prepare its tables (%s); enqueues "
			"are not recorded\n",
			ss_db_first_error_text());
	classify_apis();
	write_meta_progress();
	if (ss_db_exec("COMMIT") != SQLITE_OK) {
		snprintf(err, errlen, "cannot write %s", ss_db_partial_path());
		return -1;
	}
	last_commit_ns = ss_mono_ns();
	return 0;
}

static void commit(void)
{
	for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next)
		if (ring->writer_state)
			store_open_loop(ring, ring->writer_state);
	flush_calls();
	ss_agg_flush(); /* SHIM-7: the aggregates as of this commit */
	write_meta_progress();
	if (in_transaction) {
		if (ss_db_exec("COMMIT") == SQLITE_OK) {
			transaction_committed();
		} else {
			transaction_lost();
			if (!ss_sq.sqlite3_get_autocommit(ss_db))
				ss_db_exec("ROLLBACK");
		}
	}
	in_transaction = 0;
	last_commit_ns = ss_mono_ns();
}
static void drain_all(void)
{
	ss_clock_calibrate();
	if (!in_transaction) {
		ss_db_exec("BEGIN");
		in_transaction = 1;
	}
	drained_last_pass = 0;
	ss_ring_prefault();
	pid_t stepper = ss_aggregate_mode ? ss_agg_stepper() : 0;
	if (!stepper) {
		for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next)
			drain_ring(ring, NULL);
	} else {
		/* aggregate.c places every record in the step it started in: the other rings'
		 * heads are read first, the stepping thread's ring is drained after, to its head
		 * of now, so that its marks up to any of their records' start are known when those
		 * are placed */
		size_t n = 0;
		for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next)
			n++;
		struct ring_snapshot *snaps = calloc(n ? n : 1, sizeof(*snaps));
		size_t i = 0;
		for (struct ss_ring *ring = ss_ring_list(); snaps && ring; ring = ring->next, i++)
			if (ring->tid != stepper)
				snaps[i] = snapshot(ring);
		for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next)
			if (ring->tid == stepper)
				drain_ring(ring, NULL);
		i = 0;
		for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next, i++)
			if (ring->tid != stepper)
				drain_ring(ring, snaps ? &snaps[i] : NULL);
		free(snaps);
	}
	drained_total += drained_last_pass;
	/* CUPTI-5: what tracing them costs; CUPTI-9: a window to close, by an app thread */
	if (ss_cupti_calls_drained(drained_total) &&
	    !atomic_load_explicit(&ss_hot.cupti_close_wanted, memory_order_relaxed))
		atomic_store_explicit(&ss_hot.cupti_close_wanted, 1, memory_order_relaxed);
	store_capture();
	ss_gpu_tables_store();
}

/* FOLDED: the enqueues aggregate mode counted instead of writing rows (SHIM-7). */
static void print_summary(int self_contained, uint64_t folded)
{
	uint64_t sync_points = 0, enqueues = 0;
#define SS_SUM(c, sync, desc) sync_points += sync ? rows_per_class[SS_##c] : 0;
	SS_CLASSES(SS_SUM)
#undef SS_SUM
	enqueues = rows_per_class[SS_E1] + rows_per_class[SS_E2] + rows_per_class[SS_E3] +
		   rows_per_class[SS_N2] + folded;
	char rank[16] = "-";
	if (atomic_load(&ss_process.rank) >= 0)
		snprintf(rank, sizeof(rank), "%d", ss_process.rank);
	if (ss_db_write_errors || !self_contained) {
		/* not the success line: the file holds less than was recorded (SHIM-5) */
		uint64_t calls[SS_CLASS_COUNT];
		fprintf(stderr,
			"syncspy: rank %s: write error (%s): %llu calls lost; what was committed "
			"(%llu sync points, %llu enqueues) is readable in %s\n",
			rank, *ss_db_first_error_text() ? ss_db_first_error_text() : "?",
			(unsigned long long)dropped_calls_per_class(calls),
			(unsigned long long)sync_points, (unsigned long long)enqueues,
			ss_db_final_path());
		return;
	}
	if (ss_config.SYNCSPY_QUIET)
		return;
	fprintf(stderr, "syncspy: rank %s: %llu sync points, %llu enqueues%s -> %s\n", rank,
		(unsigned long long)sync_points, (unsigned long long)enqueues,
		ss_aggregate_mode ? " (aggregated)" : "", ss_db_final_path());
}

/* What one database counted (a failed exec or a fork child starts another). */
static void reset_counts(void)
{
	memset(rows_per_class, 0, sizeof(rows_per_class));
	memset(txn_rows, 0, sizeof(txn_rows));
	memset(write_dropped_calls, 0, sizeof(write_dropped_calls));
	nbatch = 0;
	next_call_id = 1;
	explicit_ids = 0;
	layers_seen = 0;
	capture_table = 0;
	capture_rowid = 0;
}

static void close_database(const char *reason)
{
	atomic_store(&ss_hot.state, SS_STATE_CLOSED);
	drain_all();
	uint64_t end_ns = ss_mono_ns();
	if (capture_rowid)
		capture_end(end_ns, "end");
	close_open_ranges();
	ss_meta_int("end_mono_ns", (int64_t)end_ns);
	ss_meta_text("exit_reason", reason);
	ss_meta_int("file_final", 1);
	commit();
	ss_sites_close();
	ss_gpu_tables_close();
	uint64_t folded = ss_agg_enqueues();
	ss_agg_close();
	int self_contained = ss_db_close() == 0;
	print_summary(self_contained, folded);
	/* Per-database writer state goes; the rings stay (a failed exec records on). */
	for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next) {
		struct ring_state *rs = ring->writer_state;
		if (rs)
			free(rs->waiting); /* pushes were freed by close_open_ranges */
		free(rs);
		ring->writer_state = NULL;
	}
	reset_counts();
}

/* ------------------------------------------------------------------ the thread */

/* The writer runs at the program's own priority while it keeps up, and ahead of the program's
 * threads (WRITER_NICE) while it is behind, where the process may raise a thread's priority
 * (CAP_SYS_NICE, root). Behind, the rings fill at the rate of all the program's threads: a
 * program with more busy threads than cores would leave the writer one thread's share of the
 * CPU until the cap drops records. Keeping up (a launch-bound loop writes some 50,000 rows a
 * second, under a tenth of what it can), a raised writer would only take its 2% of a core from
 * the program's own threads first, on the cores the program was pinned to
 * (tests/gpu/results/2026-12-07-h200-session31). errno is the writer's own (SHIM-4). */
static void writer_priority(int behind)
{
	if (behind == writer_raised || (behind && writer_cannot_raise))
		return;
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid),
			behind ? WRITER_NICE : writer_own_nice) == 0) {
		writer_raised = behind;
		writer_raises += (uint64_t)behind;
	} else if (behind) {
		writer_cannot_raise = 1;
	}
}

static void *writer_main(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* SHIM-4 */
	/* named, so that top -H, a profiler and bench/torch_step.py's per-thread CPU times tell
	 * it from the program's threads (a thread name is 15 characters at most) */
	prctl(PR_SET_NAME, "syncspy-writer", 0, 0, 0);
	writer_raised = 0, writer_raises = 0; /* a forked child's writer starts its own count */
	/* getpriority may answer -1 */
	errno = 0;
	writer_own_nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
	if (errno)
		writer_own_nice = 0;

	char err[PATH_MAX + 128];
	pthread_mutex_lock(&ss_writer_lock);
	int opened = open_database(err, sizeof(err)) == 0;
	pthread_mutex_unlock(&ss_writer_lock);
	if (!opened) {
		fprintf(stderr, "syncspy: %s; recording disabled (the program runs on)\n", err);
		if (ss_db) {
			ss_sq.sqlite3_close(ss_db);
			ss_db = NULL;
		}
		atomic_store(&ss_hot.state, SS_STATE_CLOSED);
	}

	for (;;) {
		struct pollfd pfd = {.fd = request_pipe[0], .events = POLLIN};
		/* behind (the last pass drained much): no sleep, but a look at the pipe */
		int behind = drained_last_pass >= WRITER_BEHIND_RECORDS;
		writer_priority(behind);
		int timeout = behind ? 0 : (int)ss_config.SYNCSPY_DRAIN_MS;
		int ready = poll(&pfd, 1, timeout);
		char requests[16];
		ssize_t n = 0;
		if (ready > 0)
			n = read(request_pipe[0], requests, sizeof(requests));
		int flushes = 0, finalize = 0, quit = 0;
		for (ssize_t i = 0; i < n; i++) {
			flushes += requests[i] == 'F';
			finalize += requests[i] == 'X';
			quit |= requests[i] == 'Q';
		}
		if (opened) {
			pthread_mutex_lock(&ss_writer_lock);
			drain_all();
			/* quiet for a while: the free blocks' pages go back to the system */
			uint64_t now = ss_mono_ns();
			if (drained_last_pass)
				last_busy_ns = now;
			else if (now - last_busy_ns >= TRIM_AFTER_NS)
				ss_ring_trim();
			if (flushes || ss_mono_ns() - last_commit_ns >=
					   (uint64_t)ss_config.SYNCSPY_COMMIT_MS * 1000000u)
				commit();
			if (finalize || quit) {
				const char *reason = atomic_load(&finalize_reason);
				close_database(finalize ? "signal" : (reason ? reason : "exit"));
				opened = 0;
			}
			pthread_mutex_unlock(&ss_writer_lock);
		}
		for (int i = 0; i < flushes + finalize; i++) /* answer each waiting handler */
			if (write(ack_pipe[1], "A", 1) < 0)
				break;
		if (quit || finalize)
			break;
	}
	return NULL;
}

int ss_writer_start(void)
{
	if (pipe2(request_pipe, O_CLOEXEC) != 0 || pipe2(ack_pipe, O_CLOEXEC) != 0) {
		fprintf(stderr,
			"syncspy: cannot create the writer's pipes: %s; recording disabled\n",
			strerror(errno));
		return -1;
	}
	/* the writer is created with every signal blocked, so none lands on it before it runs */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = pthread_create(&writer_thread, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		fprintf(stderr, "syncspy: cannot start the writer thread: %s; recording disabled\n",
			strerror(rc));
		return -1;
	}
	writer_started = 1;
	return 0;
}

static void close_pipes(void)
{
	for (int i = 0; i < 2; i++) {
		if (request_pipe[i] >= 0)
			close(request_pipe[i]);
		if (ack_pipe[i] >= 0)
			close(ack_pipe[i]);
		request_pipe[i] = ack_pipe[i] = -1;
	}
}

void ss_writer_finalize(const char *reason)
{
	if (!writer_started)
		return;
	atomic_store(&finalize_reason, reason);
	if (write(request_pipe[1], "Q", 1) == 1)
		pthread_join(writer_thread, NULL);
	writer_started = 0;
	close_pipes();
}

void ss_writer_signal_flush(int finalize)
{
	if (!writer_started || request_pipe[1] < 0)
		return;
	if (write(request_pipe[1], finalize ? "X" : "F", 1) != 1)
		return;
	struct pollfd pfd = {.fd = ack_pipe[0], .events = POLLIN};
	char ack;
	if (poll(&pfd, 1, 3000) > 0 && read(ack_pipe[0], &ack, 1) == 1 && finalize)
		writer_started = 0;
}

void ss_writer_fork_prepare(void)
{
	pthread_mutex_lock(&ss_writer_lock);
}

void ss_writer_fork_parent(void)
{
	pthread_mutex_unlock(&ss_writer_lock);
}

/* In the child the writer thread does not exist and the connection belongs to the parent:
 * forget both without touching them (closing would write to the parent's file). */
void ss_writer_fork_child(void)
{
	pthread_mutex_init(&ss_writer_lock, NULL);
	writer_started = 0;
	close_pipes();
	ss_db_fork_child();
	ss_sites_fork_child();
	ss_gpu_tables_fork_child();
	ss_agg_fork_child();
	for (size_t i = 0; i < nstarted; i++) /* the parent's open NVTX ranges are not ours */
		free(started[i].name);
	free(started);
	started = NULL;
	nstarted = started_capacity = 0;
	reset_counts();
	in_transaction = 0;
}
