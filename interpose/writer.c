/*
 * interpose/writer.c: the writer thread. Drains every thread's ring into the database, commits
 * at least every SYNCSPY_COMMIT_MS (at most a second), and at the end closes the database and
 * renames it from *.sqlite.partial to its final name.
 *
 * Only this thread touches SQLite (SHIM-1) and it makes no CUDA or NCCL call (SHIM-4). Requests
 * reach it through a pipe: from a signal handler ('F' commit now, 'X' finalize now: both
 * answered on a second pipe, so the handler can wait with a timeout using only
 * async-signal-safe calls) and from the exit path ('Q').
 *
 * Record-to-row rules live here: an S7 polling loop (folded by its thread, ring.c) is one row,
 * written at a commit while it still runs and completed when it ends (SCHEMA-5); a call's
 * caller address becomes a sites row (dladdr, in this thread, never on the hot path); N1 and
 * stream-creation records also fill the comms and streams tables.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "syncspy/schema.h"
#include "cupti/cupti.h"

#include "clock.h"
#include "ring.h"
#include "shim.h"
#include "store.h"

pthread_mutex_t ss_writer_lock = PTHREAD_MUTEX_INITIALIZER;

static struct ss_sqlite sq;
static sqlite3 *db;
static pthread_t writer_thread;
static int writer_started;
static int request_pipe[2] = {-1, -1}, ack_pipe[2] = {-1, -1};
static char partial_path[PATH_MAX], final_path[PATH_MAX + 64]; /* room for suffixes */
static const char *_Atomic finalize_reason;

enum statement {
	ST_CALL,
	ST_POLL_UPDATE,
	ST_THREAD,
	ST_SITE,
	ST_COMM,
	ST_COMM_END,
	ST_STREAM,
	ST_STREAM_END,
	ST_META,
	ST_STACK,
	ST_ATTACH_STACK,
	ST_RANGE,
	ST_ATTACH_NATIVE,
	ST_COUNT
};
static const char *const statement_sql[ST_COUNT] = {
    [ST_CALL] = "INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, event, comm, ptr,"
		" bytes, dir, host_mem, ret, site_id, count, aux)"
		" VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_POLL_UPDATE] = "UPDATE calls SET end_ns = ?, count = ?, ret = ? WHERE id = ?",
    [ST_THREAD] = "INSERT OR IGNORE INTO threads(tid, name, first_ns) VALUES(?,?,?)",
    [ST_SITE] = "INSERT INTO sites(address, module, module_offset, symbol, text)"
		" VALUES(?,?,?,?,?)",
    [ST_COMM] = "INSERT INTO comms(comm, id_hash, rank, nranks, parent, api_id, created_ns)"
		" VALUES(?,?,?,?,?,?,?)",
    [ST_COMM_END] = "UPDATE comms SET destroyed_ns = ? WHERE comm = ? AND destroyed_ns IS NULL",
    [ST_STREAM] = "INSERT INTO streams(stream, flags, priority, api_id, created_ns)"
		  " VALUES(?,?,?,?,?)",
    [ST_STREAM_END] = "UPDATE streams SET destroyed_ns = ?"
		      " WHERE stream = ? AND destroyed_ns IS NULL",
    [ST_META] = "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)",
    [ST_STACK] = "INSERT INTO stacks(kind, hash, depth, frames) VALUES(?,?,?,?)",
    [ST_ATTACH_NATIVE] = "UPDATE calls SET native_stack_id = ?, site_id = coalesce(?, site_id)"
			 " WHERE id = ?",
    [ST_RANGE] = "INSERT INTO ranges(tid, kind, name, start_ns, end_ns, depth) VALUES(?,?,?,?,?,?)",
    [ST_ATTACH_STACK] = "UPDATE calls SET py_stack_id = ?, site_id = coalesce(?, site_id)"
			" WHERE id = ?",
};
static sqlite3_stmt *statements[ST_COUNT];

/* What the summary line and the meta table report. */
static uint64_t rows_per_class[SS_CLASS_COUNT];
static uint64_t dropped_write; /* rows SQLite refused (disk full...) */
static unsigned layers_seen;
static int in_transaction;
static uint64_t last_commit_ns;

static const char *const class_names[SS_CLASS_COUNT] = {
#define SS_CLASS_NAME(c, sync, desc) [SS_##c] = #c,
    SS_CLASSES(SS_CLASS_NAME)
#undef SS_CLASS_NAME
};

/* Which column a record's obj goes to, per API (decided once, from the names). */
enum obj_column { OBJ_NONE, OBJ_EVENT, OBJ_COMM, OBJ_PTR };
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
		else if (strstr(name, "Event"))
			obj_column[api] = OBJ_EVENT;
		else if (starts_with(name, "cudaMalloc") || starts_with(name, "cudaFree") ||
			 starts_with(name, "cudaHost") || starts_with(name, "cuMemAlloc") ||
			 starts_with(name, "cuMemFree") || starts_with(name, "cuMemHost"))
			obj_column[api] = OBJ_PTR;
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

/* ------------------------------------------------------------------ SQL helpers */

static int exec_sql(const char *sql)
{
	char *message = NULL;
	int rc = sq.sqlite3_exec(db, sql, NULL, NULL, &message);
	if (rc != SQLITE_OK) {
		fprintf(stderr, "syncspy: database error: %s\n", message ? message : "?");
		sq.sqlite3_free(message);
	}
	return rc;
}

static void bind_u64_or_null(sqlite3_stmt *st, int i, int present, uint64_t value)
{
	if (present)
		sq.sqlite3_bind_int64(st, i, (sqlite3_int64)value);
	else
		sq.sqlite3_bind_null(st, i);
}

static int step_reset(sqlite3_stmt *st)
{
	int rc = sq.sqlite3_step(st);
	sq.sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		dropped_write++;
		return -1;
	}
	return 0;
}

static void meta_text(const char *key, const char *value)
{
	sqlite3_stmt *st = statements[ST_META];
	sq.sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	if (value)
		sq.sqlite3_bind_text(st, 2, value, -1, SQLITE_TRANSIENT);
	else
		sq.sqlite3_bind_null(st, 2);
	step_reset(st);
}

static void meta_int(const char *key, int64_t value)
{
	sqlite3_stmt *st = statements[ST_META];
	sq.sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	sq.sqlite3_bind_int64(st, 2, value);
	step_reset(st);
}

/* ------------------------------------------------------------------ call sites */

/* A map from a 64-bit key (an address, a hash) to a row id, open addressing. */
struct id_map {
	uint64_t *keys;
	int64_t *ids;
	size_t capacity, count;
};
static struct id_map sites, text_sites, stacks, native_stacks, native_stack_sites,
    python_stack_sites, modules_noted;

static void id_map_free(struct id_map *map)
{
	free(map->keys);
	free(map->ids);
	memset(map, 0, sizeof(*map));
}

/* The slot of key: its id when present, 0 when not (key 0 is never stored). */
static int64_t *id_map_slot(struct id_map *map, uint64_t key)
{
	if (map->count * 2 >= map->capacity) { /* grow: keep the load under one half */
		size_t capacity = map->capacity ? map->capacity * 2 : 1024;
		uint64_t *keys = calloc(capacity, sizeof(*keys));
		int64_t *ids = calloc(capacity, sizeof(*ids));
		if (!keys || !ids) {
			free(keys);
			free(ids);
			return NULL;
		}
		for (size_t i = 0; i < map->capacity; i++) {
			if (!map->keys[i])
				continue;
			size_t j = ss_hash64(&map->keys[i], 8) & (capacity - 1);
			while (keys[j])
				j = (j + 1) & (capacity - 1);
			keys[j] = map->keys[i];
			ids[j] = map->ids[i];
		}
		free(map->keys);
		free(map->ids);
		map->keys = keys;
		map->ids = ids;
		map->capacity = capacity;
	}
	size_t j = ss_hash64(&key, 8) & (map->capacity - 1);
	while (map->keys[j] && map->keys[j] != key)
		j = (j + 1) & (map->capacity - 1);
	if (!map->keys[j]) {
		map->keys[j] = key;
		map->ids[j] = 0;
		map->count++;
	}
	return &map->ids[j];
}

static int64_t insert_site_row(uint64_t address, const char *module, uint64_t offset,
			       const char *symbol, const char *text)
{
	sqlite3_stmt *st = statements[ST_SITE];
	sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)address);
	if (module)
		sq.sqlite3_bind_text(st, 2, module, -1, SQLITE_TRANSIENT);
	else
		sq.sqlite3_bind_null(st, 2);
	sq.sqlite3_bind_int64(st, 3, (sqlite3_int64)offset);
	if (symbol)
		sq.sqlite3_bind_text(st, 4, symbol, -1, SQLITE_TRANSIENT);
	else
		sq.sqlite3_bind_null(st, 4);
	sq.sqlite3_bind_text(st, 5, text, -1, SQLITE_TRANSIENT);
	if (step_reset(st) != 0)
		return 0;
	return sq.sqlite3_last_insert_rowid(db);
}

void *ss_dlsym(void *handle, const char *name); /* driver.c: the real dlsym */

/* A C++ symbol's readable name, through the C++ runtime's own demangler when the process has
 * one loaded (every C++ and nvcc-built program does); NULL otherwise. The caller frees it. */
static char *demangle(const char *symbol)
{
	static char *(*cxa_demangle)(const char *, char *, size_t *, int *);
	static int looked;
	if (!symbol || symbol[0] != '_' || symbol[1] != 'Z')
		return NULL;
	if (!looked) {
		*(void **)&cxa_demangle = ss_dlsym(RTLD_DEFAULT, "__cxa_demangle");
		looked = 1;
	}
	int status = -1;
	char *name = cxa_demangle ? cxa_demangle(symbol, NULL, NULL, &status) : NULL;
	if (status != 0) {
		free(name);
		return NULL;
	}
	return name;
}

/* ------------------------------------------------------------------ modules and build ids */

/* The modules of native sites, with their GNU build id, so that `syncspy report` reads line
 * numbers only from the very file that ran (docs/schema.md, modules). An extension table
 * (SS_MODULES_SQL), created with the first native site. */
static sqlite3_stmt *module_insert;

struct build_id_search {
	uintptr_t address;
	char hex[2 * 64 + 1]; /* "" until found */
};

/* dl_iterate_phdr callback: the object whose PT_LOAD holds the address; its NT_GNU_BUILD_ID
 * note, read from memory (the mapped file as it ran). */
static int find_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	struct build_id_search *search = data;
	int holds = 0;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum && !holds; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		holds = ph->p_type == PT_LOAD && search->address >= start &&
			search->address < start + ph->p_memsz;
	}
	if (!holds)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *note = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = note + ph->p_memsz;
		while (note + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)note;
			const char *name = note + sizeof(*nh);
			const unsigned char *desc =
			    (const unsigned char *)name + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= 64 &&
			    (const char *)desc + nh->n_descsz <= end) {
				for (unsigned k = 0; k < nh->n_descsz; k++)
					snprintf(search->hex + 2 * k, 3, "%02x", desc[k]);
				return 1;
			}
			note = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 1; /* the object, without a build id */
}

static void note_module(const char *module, uint64_t address)
{
	/* once per module: its sites are many, its build id and path one */
	int64_t *noted = id_map_slot(&modules_noted, ss_hash64(module, strlen(module)) | 1);
	if (noted && *noted)
		return;
	if (noted)
		*noted = 1;
	if (!module_insert &&
	    (exec_sql(SS_MODULES_SQL) != SQLITE_OK ||
	     sq.sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO modules VALUES(?, ?, ?)", -1,
				   &module_insert, NULL) != SQLITE_OK)) {
		module_insert = NULL;
		return;
	}
	struct build_id_search search = {.address = (uintptr_t)address};
	dl_iterate_phdr(find_build_id, &search);
	sq.sqlite3_bind_text(module_insert, 1, module, -1, SQLITE_TRANSIENT);
	if (search.hex[0])
		sq.sqlite3_bind_text(module_insert, 2, search.hex, -1, SQLITE_TRANSIENT);
	else
		sq.sqlite3_bind_null(module_insert, 2);
	/* the absolute path (the main program's name may be relative to the working directory) */
	char *file = realpath(module, NULL);
	if (file)
		sq.sqlite3_bind_text(module_insert, 3, file, -1, SQLITE_TRANSIENT);
	else
		sq.sqlite3_bind_null(module_insert, 3);
	free(file);
	step_reset(module_insert);
}

/* A native return address: "symbol+0xoff (module)" or "module+0xoff"; C++ names demangled in
 * the text (sites.symbol keeps the linker's name). */
static int64_t insert_native_site(uint64_t address)
{
	Dl_info info;
	const char *module = NULL, *symbol = NULL;
	uint64_t offset = address;
	char text[1024];
	if (dladdr((void *)(uintptr_t)address, &info) && info.dli_fname) {
		module = info.dli_fname;
		offset = address - (uint64_t)(uintptr_t)info.dli_fbase;
		symbol = info.dli_sname;
	}
	const char *base = module ? strrchr(module, '/') : NULL;
	base = base ? base + 1 : (module && *module ? module : "?");
	char *readable = demangle(symbol);
	if (symbol)
		snprintf(text, sizeof(text), "%s+0x%llx (%s)", readable ? readable : symbol,
			 (unsigned long long)(address - (uint64_t)(uintptr_t)info.dli_saddr), base);
	else
		snprintf(text, sizeof(text), "%s+0x%llx", base, (unsigned long long)offset);
	free(readable);
	if (module)
		note_module(module, address);
	return insert_site_row(address, module, offset, symbol, text);
}

static int64_t site_id(uint64_t address)
{
	if (address == 0)
		return 0;
	int64_t *slot = id_map_slot(&sites, address);
	if (!slot)
		return 0;
	if (*slot == 0)
		*slot = insert_native_site(address);
	return *slot;
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
	sqlite3_stmt *st = statements[ST_THREAD];
	sq.sqlite3_bind_int64(st, 1, ring->tid);
	if (*name)
		sq.sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
	else
		sq.sqlite3_bind_null(st, 2);
	sq.sqlite3_bind_int64(st, 3, (sqlite3_int64)first_ns);
	step_reset(st);
	rs->thread_known = 1;
}

static int64_t insert_call(struct ss_ring *ring, const struct ss_rec *r)
{
	sqlite3_stmt *st = statements[ST_CALL];
	int api = r->api;
	int created_comm = r->cls == SS_N1 && is_comm_creation(api) && r->obj != 0;
	int polling = r->cls == SS_S7; /* aux is the loop's query count (ring.c) */
	uint64_t start_ns = ss_clock_to_ns(r->t_start), end_ns = ss_clock_to_ns(r->t_end);
	sq.sqlite3_bind_int64(st, 1, ring->tid);
	sq.sqlite3_bind_int64(st, 2, api);
	sq.sqlite3_bind_text(st, 3, class_names[r->cls], -1, SQLITE_STATIC);
	sq.sqlite3_bind_int64(st, 4, (sqlite3_int64)start_ns);
	sq.sqlite3_bind_int64(st, 5, (sqlite3_int64)end_ns);
	/* N1 creation records carry the parent communicator in `stream` (nccl.c) */
	bind_u64_or_null(st, 6, r->stream != 0 && r->cls != SS_N1, r->stream);
	bind_u64_or_null(st, 7, obj_column[api] == OBJ_EVENT && r->obj, r->obj);
	bind_u64_or_null(st, 8, obj_column[api] == OBJ_COMM && r->obj, r->obj);
	bind_u64_or_null(st, 9, obj_column[api] == OBJ_PTR && r->obj, r->obj);
	bind_u64_or_null(st, 10, !created_comm && (r->bytes || r->dir), r->bytes);
	bind_u64_or_null(st, 11, r->dir, r->dir);
	bind_u64_or_null(st, 12, r->host_mem, r->host_mem);
	sq.sqlite3_bind_int64(st, 13, r->ret);
	int64_t site = site_id(r->caller);
	bind_u64_or_null(st, 14, site != 0, (uint64_t)site);
	sq.sqlite3_bind_int64(st, 15, polling ? (sqlite3_int64)r->aux : 1);
	bind_u64_or_null(st, 16, !created_comm && !polling && r->aux != UINT64_MAX, r->aux);
	if (step_reset(st) != 0)
		return 0;
	int64_t rowid = sq.sqlite3_last_insert_rowid(db);
	rows_per_class[r->cls]++;
	layers_seen |= 1u << ss_apis[api].layer;

	if (created_comm) {
		char id_hash[17];
		snprintf(id_hash, sizeof(id_hash), "%016llx", (unsigned long long)r->bytes);
		st = statements[ST_COMM];
		sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)r->obj);
		sq.sqlite3_bind_text(st, 2, id_hash, -1, SQLITE_TRANSIENT);
		sq.sqlite3_bind_int64(st, 3, (int32_t)(uint32_t)r->aux);
		sq.sqlite3_bind_int64(st, 4, (int32_t)(r->aux >> 32));
		bind_u64_or_null(st, 5, r->stream != 0, r->stream);
		sq.sqlite3_bind_int64(st, 6, api);
		sq.sqlite3_bind_int64(st, 7, (sqlite3_int64)start_ns);
		step_reset(st);
	} else if ((api == SS_API_ncclCommDestroy || api == SS_API_ncclCommAbort) && r->ret == 0) {
		st = statements[ST_COMM_END];
		sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)end_ns);
		sq.sqlite3_bind_int64(st, 2, (sqlite3_int64)r->obj);
		step_reset(st);
	} else if (is_stream_creation(api) && r->ret == 0) {
		st = statements[ST_STREAM];
		sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)r->stream);
		sq.sqlite3_bind_int64(st, 2, (uint32_t)r->aux);
		sq.sqlite3_bind_int64(st, 3, (int32_t)(r->aux >> 32));
		sq.sqlite3_bind_int64(st, 4, api);
		sq.sqlite3_bind_int64(st, 5, (sqlite3_int64)end_ns);
		step_reset(st);
	} else if ((api == SS_API_cudaStreamDestroy || api == SS_API_cuStreamDestroy_v2) &&
		   r->ret == 0) {
		st = statements[ST_STREAM_END];
		sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)end_ns);
		sq.sqlite3_bind_int64(st, 2, (sqlite3_int64)r->stream);
		step_reset(st);
	}
	return rowid;
}

static void update_loop_row(int64_t rowid, const struct ss_rec *loop)
{
	sqlite3_stmt *st = statements[ST_POLL_UPDATE];
	sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)ss_clock_to_ns(loop->t_end));
	sq.sqlite3_bind_int64(st, 2, (sqlite3_int64)loop->aux);
	sq.sqlite3_bind_int64(st, 3, loop->ret);
	sq.sqlite3_bind_int64(st, 4, rowid);
	step_reset(st);
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
	if (ring->recs == NULL || !ss_ring_peek_poll(ring, &loop))
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
	sqlite3_stmt *st = statements[ST_RANGE];
	sq.sqlite3_bind_int64(st, 1, tid);
	sq.sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	if (name)
		sq.sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
	else
		sq.sqlite3_bind_null(st, 3);
	sq.sqlite3_bind_int64(st, 4, (sqlite3_int64)start_ns);
	bind_u64_or_null(st, 5, has_end, end_ns);
	if (depth >= 0)
		sq.sqlite3_bind_int64(st, 6, depth);
	else
		sq.sqlite3_bind_null(st, 6);
	step_reset(st);
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
		rs->step = (struct open_range){name, t, 0, ring->tid};
		return;
	}
	free(name);
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
		if (rs->step.name) {
			insert_range(ring->tid, "step", rs->step.name, rs->step.start_ns, 1, now,
				     -1);
			free(rs->step.name);
			rs->step.name = NULL;
		}
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

/* docs/attribution.md: a frame of the frameworks, the libraries or the interpreter; the user
 * call site is the innermost frame that is none of these. */
static int framework_frame(const char *line)
{
	return line[0] == '<' || strstr(line, "/site-packages/") ||
	       strstr(line, "/dist-packages/") || strstr(line, "/lib/python3.") ||
	       strstr(line, "/lib64/python3.");
}

/* The site of a Python frame line "file:line in function", by its text. */
static int64_t python_site(const char *frame, size_t length)
{
	char text[1024], file[768] = "", function[256] = "";
	snprintf(text, sizeof(text), "%.*s", (int)length, frame);
	int64_t *slot = id_map_slot(&text_sites, ss_hash64(text, strlen(text)) | 1);
	if (!slot)
		return 0;
	if (*slot == 0) {
		long line = 0;
		const char *in = strstr(text, " in ");
		const char *colon = in ? in : text + strlen(text);
		while (colon > text && *colon != ':')
			colon--;
		snprintf(file, sizeof(file), "%.*s", (int)(colon - text), text);
		if (*colon == ':')
			line = strtol(colon + 1, NULL, 10);
		if (in)
			snprintf(function, sizeof(function), "%s", in + 4);
		*slot = insert_site_row(0, file, (uint64_t)line, *function ? function : NULL, text);
	}
	return *slot;
}

/* A call's Python frames (python.c): deduplicated into stacks; the user's frame becomes the
 * call's site (SCHEMA-6). A record carries the frames' text the first time its thread sends
 * the stack, only the stack's key (aux) afterwards: the stack and its site are found by key.
 * The text's buffer was the writer's to free from the moment it was pushed. */
static void store_python_stack(struct ring_state *rs, const struct ss_rec *r)
{
	char *frames = (char *)(uintptr_t)r->obj;
	uint64_t hash = r->aux | 1;
	int64_t *slot = id_map_slot(&stacks, hash);
	int64_t *site_slot = id_map_slot(&python_stack_sites, hash);
	int64_t site = site_slot ? *site_slot : 0;
	if (frames && slot && *slot == 0) {
		sqlite3_stmt *st = statements[ST_STACK];
		sq.sqlite3_bind_text(st, 1, "python", -1, SQLITE_STATIC);
		sq.sqlite3_bind_int64(st, 2, (sqlite3_int64)r->aux);
		sq.sqlite3_bind_int64(st, 3, (sqlite3_int64)r->stream);
		sq.sqlite3_bind_text(st, 4, frames, (int)r->bytes, SQLITE_TRANSIENT);
		if (step_reset(st) == 0)
			*slot = sq.sqlite3_last_insert_rowid(db);
	}
	if (frames && !site) {
		const char *user = frames, *line = frames;
		for (;;) {
			const char *end = strchr(line, '\n');
			if (!framework_frame(line)) {
				user = line;
				break;
			}
			if (!end)
				break;
			line = end + 1;
		}
		const char *user_end = strchr(user, '\n');
		site = python_site(user, user_end ? (size_t)(user_end - user) : strlen(user));
		if (site_slot)
			*site_slot = site;
	}
	/* Deferred frames (r->cls 1) belong to every call waiting for them, others to the call
	 * just before. */
	size_t targets = r->cls ? rs->nwaiting : (rs->last_call_rowid != 0);
	for (size_t i = 0; slot && *slot && i < targets; i++) {
		sqlite3_stmt *st = statements[ST_ATTACH_STACK];
		sq.sqlite3_bind_int64(st, 1, *slot);
		if (site)
			sq.sqlite3_bind_int64(st, 2, site);
		else
			sq.sqlite3_bind_null(st, 2);
		sq.sqlite3_bind_int64(st, 3, r->cls ? rs->waiting[i] : rs->last_call_rowid);
		step_reset(st);
	}
	if (r->cls)
		rs->nwaiting = 0;
	free(frames);
}

/* docs/attribution.md: native frames of the shim, CUDA, NCCL, the frameworks and the Python
 * interpreter; the native user site is the first frame outside these. */
int ss_framework_module(const char *path)
{
	static const char *const prefixes[] = {"libsyncspy", "libcudart", "libcuda.",	"libnccl",
					       "libtorch",   "libc10",	  "libpython",	"python",
					       "libcublas",  "libcudnn",  "libc.so",	"_C.",
					       "libcupti",   "ld-linux",  "libffi",	"_ctypes",
					       "libstdc++",  "libgcc_s",  "libcublasLt"};
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(base, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

/* A call's native stack (native.c): stored once per hash, its frames symbolized here, in the
 * recording process, with dladdr; its first frame outside the frameworks becomes the call's
 * site (a Python site, which follows, takes precedence: SCHEMA-6). */
static void store_native_stack(struct ring_state *rs, const struct ss_rec *r)
{
	uintptr_t *ips = (uintptr_t *)(uintptr_t)r->obj;
	size_t n = (size_t)r->stream;
	int64_t *slot = id_map_slot(&native_stacks, r->aux);
	int64_t user_site = 0;
	if (slot && *slot == 0 && ips) {
		size_t capacity = n * 512 + 1, used = 0; /* demangled C++ names run long */
		char *text = malloc(capacity);
		for (size_t i = 0; text && i < n; i++) {
			Dl_info info;
			uintptr_t ip = ips[i], lookup = ip ? ip - 1 : ip; /* inside the call */
			const char *module = "?", *symbol = NULL;
			uintptr_t offset = ip, symbol_offset = 0;
			if (dladdr((void *)lookup, &info) && info.dli_fname) {
				module = strrchr(info.dli_fname, '/')
					     ? strrchr(info.dli_fname, '/') + 1
					     : info.dli_fname;
				offset = ip - (uintptr_t)info.dli_fbase;
				symbol = info.dli_sname;
				symbol_offset = ip - (uintptr_t)info.dli_saddr;
				if (!user_site && !ss_framework_module(info.dli_fname) &&
				    !ss_static_runtime_frame(info.dli_fname,
							     (uintptr_t)info.dli_fbase, lookup))
					user_site = site_id(ip);
			}
			char *readable = demangle(symbol);
			if (symbol)
				used += (size_t)snprintf(text + used, capacity - used,
							 "%s%s+0x%lx (%s)", i ? "\n" : "",
							 readable ? readable : symbol,
							 (unsigned long)symbol_offset, module);
			else
				used += (size_t)snprintf(text + used, capacity - used, "%s%s+0x%lx",
							 i ? "\n" : "", *module ? module : "?",
							 (unsigned long)offset);
			free(readable);
			if (used >= capacity)
				break;
		}
		if (text) {
			sqlite3_stmt *st = statements[ST_STACK];
			sq.sqlite3_bind_text(st, 1, "native", -1, SQLITE_STATIC);
			sq.sqlite3_bind_int64(st, 2, (sqlite3_int64)r->aux);
			sq.sqlite3_bind_int64(st, 3, (sqlite3_int64)n);
			sq.sqlite3_bind_text(st, 4, text, -1, SQLITE_TRANSIENT);
			if (step_reset(st) == 0)
				*slot = sq.sqlite3_last_insert_rowid(db);
			free(text);
		}
	}
	/* A stack's user site is found once, with its frames, and remembered by its hash: a thread
	 * sends the frames of a stack only the first time (native.c). */
	int64_t *site_slot = id_map_slot(&native_stack_sites, r->aux);
	if (site_slot && user_site)
		*site_slot = user_site;
	else if (site_slot)
		user_site = *site_slot;
	if (rs->last_call_rowid && slot && *slot) {
		sqlite3_stmt *st = statements[ST_ATTACH_NATIVE];
		sq.sqlite3_bind_int64(st, 1, *slot);
		if (user_site)
			sq.sqlite3_bind_int64(st, 2, user_site);
		else
			sq.sqlite3_bind_null(st, 2);
		sq.sqlite3_bind_int64(st, 3, rs->last_call_rowid);
		step_reset(st);
	}
	free(ips);
}

static void process(struct ss_ring *ring, struct ring_state *rs, const struct ss_rec *r)
{
	if (r->api == SS_REC_NATIVE_STACK) {
		store_native_stack(rs, r);
		return;
	}
	if (r->api == SS_REC_PYSTACK) {
		store_python_stack(rs, r);
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
	if (r->cls == SS_S7)
		store_loop(ring, rs, r);
	else
		rs->last_call_rowid = insert_call(ring, r);
}

static void drain_ring(struct ss_ring *ring)
{
	if (ring->recs == NULL)
		return;
	struct ring_state *rs = state_of(ring);
	if (rs == NULL)
		return;
	int orphaned = atomic_load_explicit(&ring->orphaned, memory_order_acquire);
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	for (; tail != head; tail++)
		process(ring, rs, &ring->recs[tail & ring->mask]);
	atomic_store_explicit(&ring->tail, tail, memory_order_release);
	if (orphaned)
		ss_ring_release(ring);
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
	uint64_t base = ss_now(); /* ticks to ns: the clock's rate, from any point */
	for (int i = 0; i < 3; i++)
		ns[i] = ss_clock_to_ns(base + ticks[i]) - ss_clock_to_ns(base);
}

static uint64_t dropped_in_rings(void)
{
	uint64_t total = 0;
	for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next)
		total += atomic_load_explicit(&ring->dropped, memory_order_relaxed);
	return total;
}

/* ------------------------------------------------------------------ meta */

static void store_gpu_paused(void); /* below, with the other GPU tables */

static void write_meta_progress(void)
{
	int rank = atomic_load(&ss_process.rank);
	int world = atomic_load(&ss_process.world_size);
	int local_rank = atomic_load(&ss_process.local_rank);
	int source = atomic_load(&ss_process.rank_source);
	if (rank >= 0) {
		meta_int("rank", rank);
		meta_text("rank_source", source == 2 ? "nccl" : "env");
	}
	if (world > 0)
		meta_int("world_size", world);
	if (local_rank >= 0)
		meta_int("local_rank", local_rank);
	if (atomic_load(&ss_process.cudart_version))
		meta_int("cudart_version", ss_process.cudart_version);
	if (ss_process.cudart_path[0])
		meta_text("cudart_path", ss_process.cudart_path);
	if (atomic_load(&ss_process.driver_version))
		meta_int("driver_version", ss_process.driver_version);
	if (atomic_load(&ss_process.nccl_version))
		meta_int("nccl_version", ss_process.nccl_version);
	if (ss_process.nccl_path[0])
		meta_text("nccl_path", ss_process.nccl_path);
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
	meta_text("hooks_fired", layers);
	meta_text("native_stacks", ss_native_stacks_status);
	meta_int("native_stacks_libgcc_sites", (int64_t)atomic_load(&ss_native_libgcc_sites));
	meta_text("cupti", ss_cupti_status); /* built without CUPTI: cupti/stub.c's reason */
	uint64_t paused_ns, traced_ns;
	unsigned pauses, windows;
	ss_cupti_pauses(&paused_ns, &pauses, &windows, &traced_ns);
	int cupti_on = strncmp(ss_cupti_status, "on", 2) == 0;
	if (pauses && cupti_on) { /* syncspy_gpu_trace, the sampler (CUPTI-3, CUPTI-4) */
		meta_int("cupti_pauses", pauses);
		meta_int("cupti_paused_ns", (int64_t)paused_ns);
		meta_int("cupti_traced_ns", (int64_t)traced_ns);
		store_gpu_paused();
	}
	if (windows && cupti_on) { /* CUPTI-4 */
		meta_text("cupti_sample", ss_config.SYNCSPY_CUPTI_SAMPLE);
		meta_int("cupti_windows", windows);
	}
	char clients[1024];
	if (ss_driver_clients(clients, sizeof(clients)) > 0) {
		meta_text("driver_clients", clients);
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
		meta_text("static_cudart", *static_cudart ? static_cudart : NULL);
	}
	uint64_t stack_ns[3], stacks_taken, stacks_repeated;
	stack_cost_ns(stack_ns, &stacks_taken, &stacks_repeated);
	meta_int("stacks_taken", (int64_t)stacks_taken);
	meta_int("stack_cost_native_ns", (int64_t)stack_ns[0]);
	meta_int("stack_cost_python_ns", (int64_t)stack_ns[1]);
	meta_int("stacks_repeated", (int64_t)stacks_repeated);
	meta_int("stack_cost_repeated_ns", (int64_t)stack_ns[2]);
	uint64_t in_rings = dropped_in_rings();
	uint64_t no_buffer = atomic_load(&ss_dropped_no_buffer);
	meta_int("dropped_full_buffer", (int64_t)in_rings);
	meta_int("dropped_no_buffer", (int64_t)no_buffer);
	meta_int("dropped_write_error", (int64_t)dropped_write);
	meta_int("dropped_events", (int64_t)(in_rings + no_buffer + dropped_write));
	int threads = 0;
	for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next)
		threads++;
	meta_int("threads", threads);
}

static void write_meta_start(void)
{
	char host[256] = "?", text[64];
	gethostname(host, sizeof(host) - 1);
	meta_int("schema_version", SS_SCHEMA_VERSION); /* SCHEMA-1: same transaction as tables */
	meta_text("syncspy_version", PACKAGE_VERSION);
	meta_text("host", host);
	meta_int("pid", getpid());
	meta_int("ppid", getppid());
	meta_int("start_mono_ns", (int64_t)ss_process.start_mono_ns);
	meta_int("start_realtime_ns", (int64_t)ss_process.start_realtime_ns);
	meta_text("clock", ss_clock_name());
	meta_text("sqlite_version", sq.sqlite3_libversion());
	snprintf(text, sizeof(text), "%ld", ss_config.SYNCSPY_BUFFER_MB);
	meta_text("buffer_mb", text);
	/* the command line, NUL-separated in /proc: joined with spaces */
	char cmdline[4096];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, cmdline, sizeof(cmdline) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		for (ssize_t i = 0; i < n - 1; i++)
			if (cmdline[i] == 0)
				cmdline[i] = ' ';
		cmdline[n] = 0;
		meta_text("cmdline", cmdline);
	}
}

static void fill_lookup_tables(void)
{
	char sql[512];
#define SS_CLASS_ROW(c, sync, desc)                                                                \
	sq.sqlite3_snprintf(sizeof(sql), sql, "INSERT INTO classes VALUES(%Q, %d, %Q)", #c, sync,  \
			    desc);                                                                 \
	exec_sql(sql);
	SS_CLASSES(SS_CLASS_ROW)
#undef SS_CLASS_ROW
#define SS_LOOKUP_ROW(table, id, s)                                                                \
	if (s) {                                                                                   \
		sq.sqlite3_snprintf(sizeof(sql), sql, "INSERT INTO %s VALUES(%d, %Q)", table, id,  \
				    s);                                                            \
		exec_sql(sql);                                                                     \
	}
#define SS_MEMKIND_ROW(id, n, s) SS_LOOKUP_ROW("memkinds", id, s)
#define SS_DIR_ROW(id, n, s)	 SS_LOOKUP_ROW("dirs", id, s)
	SS_MEMKINDS(SS_MEMKIND_ROW)
	SS_DIRS(SS_DIR_ROW)
#undef SS_MEMKIND_ROW
#undef SS_DIR_ROW
#undef SS_LOOKUP_ROW
	static const char *const layer_names[SS_LAYER_COUNT] = {
#define SS_LAYER_NAME(n, s) [SS_LAYER_##n] = s,
	    SS_LAYERS(SS_LAYER_NAME)
#undef SS_LAYER_NAME
	};
	for (int api = 0; api < SS_API_COUNT; api++) {
		sq.sqlite3_snprintf(sizeof(sql), sql, "INSERT INTO apis VALUES(%d, %Q, %Q, %Q)",
				    api, ss_apis[api].name, layer_names[ss_apis[api].layer],
				    class_names[ss_apis[api].cls]);
		exec_sql(sql);
	}
}

/* ------------------------------------------------------------------ files */

static int make_dirs(const char *path)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0777) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

static void host_name(char *out, size_t len)
{
	if (gethostname(out, len) != 0)
		snprintf(out, len, "host");
	out[len - 1] = 0;
	for (char *p = out; *p; p++)
		if (*p == '/' || *p == ' ')
			*p = '_';
}

/* Creates the .partial file exclusively: a pid can own several (an exec'd image keeps it). */
static int create_partial(char *err, size_t errlen)
{
	const char *dir = ss_config.SYNCSPY_OUTPUT;
	char host[128];
	host_name(host, sizeof(host));
	if (make_dirs(dir) != 0) {
		snprintf(err, errlen, "cannot create SYNCSPY_OUTPUT=%s: %s", dir, strerror(errno));
		return -1;
	}
	for (int n = 0; n < 1000; n++) {
		if (n == 0)
			snprintf(partial_path, sizeof(partial_path),
				 "%s/syncspy-%s-%d.sqlite.partial", dir, host, (int)getpid());
		else
			snprintf(partial_path, sizeof(partial_path),
				 "%s/syncspy-%s-%d-x%d.sqlite.partial", dir, host, (int)getpid(),
				 n);
		int fd = open(partial_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (errno != EEXIST) {
			snprintf(err, errlen, "cannot write to SYNCSPY_OUTPUT=%s: %s", dir,
				 strerror(errno));
			return -1;
		}
	}
	snprintf(err, errlen, "too many databases for pid %d in %s", (int)getpid(), dir);
	return -1;
}

static int rename_noreplace(const char *from, const char *to)
{
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	if (link(from, to) != 0) /* file systems without RENAME_NOREPLACE */
		return -1;
	unlink(from);
	return 0;
}

/* syncspy-<host>-<pid>[-x<N>][-r<rank>].sqlite (docs/recording.md) */
static void rename_final(void)
{
	size_t stem_len = strlen(partial_path) - strlen(".sqlite.partial");
	char stem[PATH_MAX], rank_part[16] = "";
	snprintf(stem, sizeof(stem), "%.*s", (int)stem_len, partial_path);
	int rank = atomic_load(&ss_process.rank);
	if (rank >= 0)
		snprintf(rank_part, sizeof(rank_part), "-r%d", rank);
	for (int n = 0; n < 1000; n++) {
		if (n == 0)
			snprintf(final_path, sizeof(final_path), "%s%s.sqlite", stem, rank_part);
		else
			snprintf(final_path, sizeof(final_path), "%s-x%d%s.sqlite", stem, n,
				 rank_part);
		if (rename_noreplace(partial_path, final_path) == 0)
			return;
		if (errno != EEXIST)
			break;
	}
	fprintf(stderr, "syncspy: cannot rename %s: %s (the data is complete in it)\n",
		partial_path, strerror(errno));
	snprintf(final_path, sizeof(final_path), "%s", partial_path);
}

/* ------------------------------------------------------------------ open, commit, close */

static int open_database(char *err, size_t errlen)
{
	if (ss_sqlite_load(&sq, err, errlen) != 0)
		return -1;
	if (create_partial(err, errlen) != 0)
		return -1;
	if (sq.sqlite3_open_v2(partial_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
			       NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot open %s: %s", partial_path,
			 db ? sq.sqlite3_errmsg(db) : "out of memory");
		sq.sqlite3_close(db);
		db = NULL;
		unlink(partial_path);
		return -1;
	}
	sq.sqlite3_busy_timeout(db, 5000);
	exec_sql("PRAGMA journal_mode=WAL");
	exec_sql("PRAGMA synchronous=NORMAL");
	if (exec_sql("BEGIN") != SQLITE_OK || exec_sql(SS_SCHEMA_SQL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot create the schema in %s", partial_path);
		return -1;
	}
	for (int i = 0; i < ST_COUNT; i++)
		if (sq.sqlite3_prepare_v2(db, statement_sql[i], -1, &statements[i], NULL) !=
		    SQLITE_OK) {
			snprintf(err, errlen, "cannot prepare statement: %s",
				 sq.sqlite3_errmsg(db));
			return -1;
		}
	classify_apis();
	fill_lookup_tables();
	write_meta_start();
	write_meta_progress();
	if (exec_sql("COMMIT") != SQLITE_OK) {
		snprintf(err, errlen, "cannot write %s", partial_path);
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
	write_meta_progress();
	if (in_transaction)
		exec_sql("COMMIT");
	in_transaction = 0;
	last_commit_ns = ss_mono_ns();
}

/* GPU activity (cupti/): extension tables (SS_GPU_TABLES_SQL), created when the first record
 * arrives, so that a recording without CUPTI keeps exactly SS_SCHEMA_SQL (docs/cupti.md). */
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
	if (n && exec_sql(SS_GPU_PAUSED_SQL) == SQLITE_OK && exec_sql(drop_open) == SQLITE_OK &&
	    sq.sqlite3_prepare_v2(db, "INSERT INTO gpu_paused VALUES(?,?)", -1, &insert, NULL) ==
		SQLITE_OK) {
		stored_off_intervals += n - (size_t)open;
		for (size_t i = 0; i < n; i++) {
			sq.sqlite3_bind_int64(insert, 1, (sqlite3_int64)intervals[i][0]);
			sq.sqlite3_bind_int64(insert, 2, (sqlite3_int64)intervals[i][1]);
			sq.sqlite3_step(insert);
			sq.sqlite3_reset(insert);
		}
	}
	sq.sqlite3_finalize(insert);
	free(intervals);
}

static void store_gpu_activity(void)
{
	struct ss_gpu_rec *records;
	size_t n = ss_cupti_take(&records);
	if (n == 0)
		return;
	if (!gpu_activity_insert &&
	    (exec_sql(SS_GPU_TABLES_SQL) != SQLITE_OK ||
	     sq.sqlite3_prepare_v2(
		 db,
		 "INSERT INTO gpu_activity(kind, start_ns, end_ns, device,"
		 " stream_id, correlation_id, bytes, copy_kind, src_kind, dst_kind,"
		 " detail, name, grid, block, symbol) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
		 -1, &gpu_activity_insert, NULL) != SQLITE_OK ||
	     sq.sqlite3_prepare_v2(db, "INSERT INTO gpu_api VALUES(?,?,?,?,?,?,?,?)", -1,
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
				sq.sqlite3_bind_int64(st, 1, g->correlation);
				sq.sqlite3_bind_text(
				    st, 2, g->kind == SS_GPU_RUNTIME_API ? "runtime" : "driver", -1,
				    SQLITE_STATIC);
				sq.sqlite3_bind_int64(st, 3, g->detail);
				pid_t tid = tid_of_cupti_thread(g->thread);
				bind_u64_or_null(st, 4, tid != 0, (uint64_t)tid);
				sq.sqlite3_bind_int64(st, 8, g->thread);
				sq.sqlite3_bind_int64(st, 5, (sqlite3_int64)g->start_ns);
				sq.sqlite3_bind_int64(st, 6, (sqlite3_int64)g->end_ns);
				if (g->api_name)
					sq.sqlite3_bind_text(st, 7, g->api_name, -1, SQLITE_STATIC);
				else
					sq.sqlite3_bind_null(st, 7);
				step_reset(st);
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
			sq.sqlite3_bind_text(st, 1, kinds[g->kind], -1, SQLITE_STATIC);
			bind_u64_or_null(st, 2, timed, g->start_ns);
			bind_u64_or_null(st, 3, timed, g->end_ns);
			sq.sqlite3_bind_int64(st, 4, g->device);
			sq.sqlite3_bind_int64(st, 5, g->stream);
			sq.sqlite3_bind_int64(st, 6, g->correlation);
			bind_u64_or_null(
			    st, 7, !kernel && g->kind != SS_GPU_SYNC && g->kind != SS_GPU_EVENT,
			    g->bytes);
			bind_u64_or_null(st, 8, copy, g->copy_kind);
			if (copy) {
				sq.sqlite3_bind_text(st, 9, gpu_memory_kind(g->src_kind), -1,
						     SQLITE_STATIC);
				sq.sqlite3_bind_text(st, 10, gpu_memory_kind(g->dst_kind), -1,
						     SQLITE_STATIC);
			} else {
				sq.sqlite3_bind_null(st, 9);
				sq.sqlite3_bind_null(st, 10);
			}
			bind_u64_or_null(st, 11, !kernel && !copy, g->detail);
			/* kernels: name demangled (what people read), symbol as compiled */
			char *readable = g->name ? demangle(g->name) : NULL;
			if (g->name)
				sq.sqlite3_bind_text(st, 12, readable ? readable : g->name, -1,
						     SQLITE_TRANSIENT);
			else
				sq.sqlite3_bind_null(st, 12);
			if (g->name)
				sq.sqlite3_bind_text(st, 15, g->name, -1, SQLITE_TRANSIENT);
			else
				sq.sqlite3_bind_null(st, 15);
			free(readable);
			if (kernel) {
				sq.sqlite3_bind_text(st, 13, grid, -1, SQLITE_TRANSIENT);
				sq.sqlite3_bind_text(st, 14, block, -1, SQLITE_TRANSIENT);
			} else {
				sq.sqlite3_bind_null(st, 13);
				sq.sqlite3_bind_null(st, 14);
			}
			step_reset(st);
		}
		free(g->name);
	}
	free(records);
}

static void drain_all(void)
{
	ss_clock_calibrate();
	if (!in_transaction) {
		exec_sql("BEGIN");
		in_transaction = 1;
	}
	for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next)
		drain_ring(ring);
	store_gpu_activity();
}

static void print_summary(void)
{
	if (ss_config.SYNCSPY_QUIET)
		return;
	uint64_t sync_points = 0, enqueues = 0;
#define SS_SUM(c, sync, desc) sync_points += sync ? rows_per_class[SS_##c] : 0;
	SS_CLASSES(SS_SUM)
#undef SS_SUM
	enqueues = rows_per_class[SS_E1] + rows_per_class[SS_E2] + rows_per_class[SS_E3] +
		   rows_per_class[SS_N2];
	char rank[16] = "-";
	if (atomic_load(&ss_process.rank) >= 0)
		snprintf(rank, sizeof(rank), "%d", ss_process.rank);
	fprintf(stderr, "syncspy: rank %s: %llu sync points, %llu enqueues -> %s\n", rank,
		(unsigned long long)sync_points, (unsigned long long)enqueues, final_path);
}

static void close_database(const char *reason)
{
	atomic_store(&ss_hot.state, SS_STATE_CLOSED);
	drain_all();
	close_open_ranges();
	meta_int("end_mono_ns", (int64_t)ss_mono_ns());
	meta_text("exit_reason", reason);
	meta_int("file_final", 1);
	commit();
	for (int i = 0; i < ST_COUNT; i++) {
		sq.sqlite3_finalize(statements[i]);
		statements[i] = NULL;
	}
	sq.sqlite3_finalize(module_insert);
	module_insert = NULL;
	sq.sqlite3_finalize(gpu_activity_insert); /* NULL (a no-op) when none came */
	sq.sqlite3_finalize(gpu_api_insert);
	gpu_activity_insert = gpu_api_insert = NULL;
	/* A self-contained file: no -wal beside it, readable from a read-only place. */
	exec_sql("PRAGMA wal_checkpoint(TRUNCATE)");
	exec_sql("PRAGMA journal_mode=DELETE");
	sq.sqlite3_close(db);
	db = NULL;
	rename_final();
	print_summary();
	/* Per-database writer state goes; the rings stay (a failed exec records on). */
	for (struct ss_ring *ring = ss_ring_list(); ring; ring = ring->next) {
		struct ring_state *rs = ring->writer_state;
		if (rs)
			free(rs->waiting); /* pushes were freed by close_open_ranges */
		free(rs);
		ring->writer_state = NULL;
	}
	id_map_free(&sites);
	id_map_free(&text_sites);
	id_map_free(&stacks);
	id_map_free(&native_stacks);
	id_map_free(&native_stack_sites);
	id_map_free(&python_stack_sites);
	id_map_free(&modules_noted);
	memset(rows_per_class, 0, sizeof(rows_per_class));
	layers_seen = 0;
	dropped_write = 0;
}

/* ------------------------------------------------------------------ the thread */

static void *writer_main(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* SHIM-4 */

	char err[PATH_MAX + 128];
	pthread_mutex_lock(&ss_writer_lock);
	int opened = open_database(err, sizeof(err)) == 0;
	pthread_mutex_unlock(&ss_writer_lock);
	if (!opened) {
		fprintf(stderr, "syncspy: %s; recording disabled (the program runs on)\n", err);
		if (db) {
			sq.sqlite3_close(db);
			db = NULL;
		}
		atomic_store(&ss_hot.state, SS_STATE_CLOSED);
	}

	for (;;) {
		struct pollfd pfd = {.fd = request_pipe[0], .events = POLLIN};
		int timeout = (int)ss_config.SYNCSPY_DRAIN_MS;
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
	db = NULL;
	for (int i = 0; i < ST_COUNT; i++)
		statements[i] = NULL;
	id_map_free(&sites);
	id_map_free(&text_sites);
	id_map_free(&stacks);
	id_map_free(&native_stacks);
	id_map_free(&native_stack_sites);
	id_map_free(&python_stack_sites);
	id_map_free(&modules_noted);
	for (size_t i = 0; i < nstarted; i++) /* the parent's open NVTX ranges are not ours */
		free(started[i].name);
	free(started);
	started = NULL;
	nstarted = started_capacity = 0;
	module_insert = NULL; /* statements of the parent's connection */
	stored_off_intervals = 0;
	gpu_activity_insert = gpu_api_insert = NULL;
	memset(rows_per_class, 0, sizeof(rows_per_class));
	layers_seen = 0;
	dropped_write = 0;
	in_transaction = 0;
}
