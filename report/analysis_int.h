/*
 * report/analysis_int.h: what the pieces of the analysis engine share, and nothing outside them
 * includes (the model for the rest of the command is analysis.h). The engine is split along its
 * steps (docs/architecture.md, "Data flow", 6):
 *   analysis.c       helpers, loading the databases in parallel, merging, order and notes, the
 *                    entry points; it runs the rules of rules/registry.c by phase;
 *   load.c           one database: meta, the pass over calls, the aggregate (ss_agg) and the
 *                    NVTX range statistics;
 *   collectives.c    its NCCL collectives (also for export_chrome.c's clock alignment);
 *   steps.c          the steady state (steps.h);
 *   gpu.c            the GPU timeline (CUPTI's tables): overlap, GPU idle time behind syncs;
 *   ranks.c          across ranks: clock alignment (ANALYSIS-4);
 *   rules/<id>.c     one rule each (its id, advice, phase and code), listed in rules/registry.c.
 */
#ifndef SYNCSPY_REPORT_ANALYSIS_INT_H
#define SYNCSPY_REPORT_ANALYSIS_INT_H

#include <stddef.h>

#include <sqlite3.h>

#include "analysis.h"
#include "steps.h"

/* A finding of calls that have no site. */
#define NO_SITE "(no call site)"
/* Graph instantiations, every cudaGraphInstantiate* and cuGraphInstantiate* entry point: a LIKE
 * pattern on apis.name (LIKE is case-blind and '_' matches any character, which these names
 * cannot confuse; graph-instantiate-in-loop, host-func-blocks-stream). */
#define SS_INSTANTIATE_LIKE "'cu%GraphInstantiate%'"
/* Graph launches, every cudaGraphLaunch* and cuGraphLaunch* entry point, the same way
 * (host-func-blocks-stream, graph-exec-shared). */
#define SS_GRAPH_LAUNCH_LIKE "'cu%GraphLaunch%'"

/* SCHEMA-4: stream 2 is the calling thread's per-thread default stream, one per thread: two
 * calls on it went to one stream when one thread made them. */
#define SS_PER_THREAD_STREAM 2
static inline int ss_same_stream(long long stream_a, long long tid_a, long long stream_b,
				 long long tid_b)
{
	return stream_a == stream_b && (stream_a != SS_PER_THREAD_STREAM || tid_a == tid_b);
}

/*
 * Per-site rules on ss_agg: one row per site (ANALYSIS-2) with, over the whole run, count (S7:
 * queries), blocked, worst, bytes, estimate, rows (S7: loops) and the APIs seen there, most
 * calls first; then the same over the steady state (ss_agg.steady = SS_PHASE_STEADY) and the
 * most distinct steady steps one of the site's groups came in (a lower bound for the site); then
 * the first and the last steady step of its calls (NULL without steps: ss_steps_spread).
 */
#define STEADY(x) "CASE WHEN g.steady = 1 THEN " x " END"
#define SITE_RULE_SQL(where)                                                                       \
	"SELECT site, sum(n), sum(t), max(w), sum(b), sum(est), sum(rows),"                        \
	" group_concat(api || ' x' || n, ', '), coalesce(sum(sn), 0), coalesce(sum(st), 0),"       \
	" coalesce(max(sw), 0), sum(sb), sum(sest), coalesce(sum(srows), 0),"                     \
	" coalesce(max(ssteps), 0), group_concat(CASE WHEN sn > 0 THEN api || ' x' || sn END,"     \
	" ', '), min(sfirst), max(slast)"                                                          \
	" FROM (SELECT coalesce(s.text, '" NO_SITE "') AS site, a.name AS api,"                    \
	" sum(CASE WHEN g.class = 'S7' THEN g.queries ELSE g.n END) AS n,"                         \
	" sum(g.n) AS rows, sum(g.t) AS t, max(g.w) AS w, sum(g.b) AS b, sum(g.est) AS est,"       \
	" sum(" STEADY("CASE WHEN g.class = 'S7' THEN g.queries ELSE g.n END") ") AS sn,"         \
	" sum(" STEADY("g.n") ") AS srows, sum(" STEADY("g.t") ") AS st,"                         \
	" max(" STEADY("g.w") ") AS sw, sum(" STEADY("g.b") ") AS sb,"                            \
	" sum(" STEADY("g.est") ") AS sest, max(" STEADY("g.steps") ") AS ssteps,"                \
	" min(" STEADY("g.first_step") ") AS sfirst, max(" STEADY("g.last_step") ") AS slast"     \
	" FROM temp.ss_agg g JOIN apis a ON a.id = g.api_id LEFT JOIN sites s ON s.id = g.site_id" \
	" WHERE " where " GROUP BY site, api ORDER BY site, n DESC, api)"                           \
	" GROUP BY site HAVING sum(n) >= :min_count"

/* ------------------------------------------------------------------ loading */

/* The report being built and where an error goes (one per thread while loading). */
struct loader {
	struct ss_report *report;
	size_t findings_capacity;
	size_t ranks_capacity;
	size_t ranges_capacity;
	char *err;
	size_t errlen;
};

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
	int legacy_threads; /* in the steady state, a thread enqueued work on the legacy stream
			       while another waited on it (phase_groups, shared_legacy) */
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

/* One database as loaded by a worker thread: its own error text and findings. */
struct job {
	const char *path;
	int reopen; /* ss_analysis_options.reopen: ss_db_reopen, not ss_db_open (READ-1) */
	int code;
	int meta_loaded; /* the duplicate-rank check can run */
	char err[1024];
	struct ss_report found; /* findings and range statistics only */
	/* load_arrivals: for the clock alignment, then nccl-straggler; one of ss_analyze's
	 * array, which outlives the job (a job lives for its batch only: SS_LOAD_BATCH) */
	struct ss_collectives *collectives;
	size_t ranges_capacity;
	/* a rank of a summary (summary.h): the summary's path and the rank's idx there; NULL
	 * for a database (path) */
	const char *summary;
	long long summary_index;
	const struct ss_analysis_options *options; /* each_database's, or NULL */
	void *extra;				   /* what each_database left */
};

/* ------------------------------------------------------------------ GPU timeline (gpu.c) */

struct interval {
	long long device, s, e;
};


/* A GPU row to tie to its host call (a copy, or a sync record), and what the join found. */
struct gpu_target {
	long long correlation;
	long long tid, api_ns;	     /* from gpu_api: tid -1 when no record */
	long long api_end;	     /* the API record's end, -1 unknown */
	long long call_id, site_id;  /* the host call: call_id -1 when none */
	long long call_start;
	int has_site;
	int enclosed; /* the call started inside the API record (a static runtime's driver call) */
	long long device; /* sync records: the device */
	size_t index;	  /* copies: the index in gpu_rows.copies */
};

/* The join window (gpu.c, rules/host_func_blocks_stream.c): a gpu_api record belongs to the
 * last call of its thread that started at most this long before it (the wrapper's start
 * precedes the runtime's own). */
#define GPU_JOIN_NS 1000000LL

/* The earliest API record of a correlation id (GPU_API_SQL), read once per database for both
 * the syncs' and the kernels' joins. */
struct api_first {
	long long correlation, tid, start_ns, end_ns; /* end_ns: -1 unknown */
};

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
	/* every kernel, copy and memset (what busy is the union of), with its correlation id:
	 * the GPU idle time behind a sync needs to know which work the sync itself issued */
	struct work_row {
		long long device, s, e, correlation, stream;
	} * work;
	size_t nwork, cap_work;
};

/* Per-site sums (host-sync and sync-copy idle time, copy-without-overlap copies); a few dozen
 * sites. kind tells apart sites of different rules with one text. */
struct gpu_site {
	char *site;
	int kind;
	long long n, ns, worst, bytes, h2d, d2h;
	struct ss_tally tally;	   /* steady and whole-run (steps.h) */
	struct ss_tally off_tally; /* the syncs the GPU timeline missed (GPU-IDLE-4) */
	/* GPU-IDLE-7: a site several threads sync at, its syncs the timeline saw and those that
	 * had another thread's work beside them */
	long long lane_seen, lane_beside;
};

/* ------------------------------------------------------------------ rules */

/* When a rule runs (rules/registry.c lists them; the engine runs each phase in table order). */
enum ss_rule_phase {
	/* per database, on the aggregate: one query on ss_agg yields one row per site (the
	 * engine's run_site_rules judges steady or once and adds the findings) */
	SS_RULE_SITE,
	/* per database, C over what the pass over calls kept (after the site rules) */
	SS_RULE_DATABASE,
	/* per database with a GPU timeline (CUPTI's tables), after the timeline is read */
	SS_RULE_GPU,
	/* across ranks, once every database is loaded and the clocks are aligned */
	SS_RULE_RANKS,
};

/* What a finding of a rule costs the program (analysis.c, judge_finding; docs/rules.md, "Cost
 * and severity"). */
enum ss_rule_cost {
	SS_COST_HOST,	  /* the host time of the flagged calls (blocked_ns) */
	SS_COST_GPU_IDLE, /* syncs: the GPU idle time behind them where the GPU timeline measured
			     it (gpu_idle_ns; none measured: `info`), else the host time */
	SS_COST_ESTIMATE, /* the rule's estimate of the time lost where it has one (estimate_ns) */
};

/* A rule: one file under rules/, one line in rules/registry.c. */
struct ss_rule {
	const char *id;	    /* stable: JSON consumers and `syncspy check` budgets name it */
	const char *advice; /* the fix, printed with every finding */
	enum ss_rule_phase phase;
	enum ss_rule_cost cost;
	/* 1: the rule reads enqueues one row each (their order, times or GPU joins): it does not
	 * run on a database recorded in aggregate mode, and the report's note names it
	 * (ANALYSIS-6) */
	int needs_enqueue_rows;
	/* > 0: the rule's cost is an upper bound of what its fix wins back; a steady finding whose
	 * cost per step is under this share of the step (permille) is `info`: the fix (a second
	 * stream, events) is not worth making for it (analysis.c, judge_finding) */
	int min_share_permille;
	/* SS_RULE_SITE: SITE_RULE_SQL(its WHERE) and the fewest calls a site needs; the figures
	 * it keeps (bytes, estimate: else -1); keep(), when set, may drop a site's row; detail()
	 * the finding's detail from the APIs seen, worst ns, bytes, estimate and rows */
	const char *sql;
	long long min_count;
	int keeps_bytes, keeps_estimate;
	/* 1: a site whose calls keep coming all through the steady state recurs even in fewer
	 * steps than SS_RECURRING_PERCENT (steps.h, ss_steps_spread) */
	int spread_recurs;
	/* 1: a site whose calls come in bursts in a few steps spread through the steady state (a
	 * periodic evaluation's per-sample reads) recurs too (steps.h STEPS-9, ss_steps_bursts) */
	int burst_recurs;
	int (*keep)(long long count, long long rows);
	/* > 0: a site whose calls took less host time than this on average is dropped (a slow
	 * case of a call that is otherwise cheap: async-alloc-slow) */
	long long min_mean_ns;
	char *(*detail)(const struct db_state *st, const char *apis, long long worst,
			long long bytes, long long estimate, long long rows);
	/* when set: the site's own advice from the APIs seen ("cudaMemcpyAsync x48"), or NULL
	 * for the rule's (a case of the rule with another fix: sync-copy's host-to-host copies);
	 * a summary keeps no advice: summary.c asks again with the detail's opening APIs */
	const char *(*advice_for)(const char *apis);
	/* SS_RULE_DATABASE; confirm(), when set, runs with a GPU timeline after the GPU rules,
	 * over the database's findings (rk: its rank's steps): a host-side guess the timeline did
	 * not confirm is cleared (ss_finding.cleared) */
	int (*run_database)(struct loader *ld, struct db_state *st);
	void (*confirm)(struct ss_report *found, const struct ss_rank *rk);
	/* SS_RULE_GPU */
	int (*run_gpu)(struct loader *ld, struct db_state *st, const struct gpu_rows *g);
	/* SS_RULE_RANKS: the collectives of every loaded database, in path order (as ranks[]
	 * until the report is sorted) */
	int (*run_ranks)(struct loader *ld, const struct ss_collectives *sets, size_t nsets);
};

/* rules/registry.c: every rule, in the order the engine runs them within a phase. */
extern const struct ss_rule *const ss_rules[];
extern const size_t ss_nrules;

/* The rules other code names (it compares or amends their findings). */
extern const struct ss_rule ss_rule_host_sync, ss_rule_sync_copy, ss_rule_copy_without_overlap,
    ss_rule_alloc_in_loop, ss_rule_async_alloc_slow, ss_rule_pool_trim_in_loop,
    ss_rule_pageable_async_copy;
/* rules/alloc_in_loop.c: after the site rules, a caching allocator's steady allocations that
 * only replace what its steady frees released are folded into the free's finding. */
/* analysis.c: the finding of rule (its id) at site, any phase, if any (ANALYSIS-2: one per rule
 * and site); and the steady, uncleared one, the owner a post-pass folds another finding into. */
struct ss_finding *ss_finding_at(struct ss_report *r, const char *rule, const char *site);
struct ss_finding *ss_steady_finding(struct ss_report *r, const char *rule, const char *site);
int fold_finding(struct loader *ld, struct ss_finding *owner, struct ss_finding *part,
		 const char *noun, const char *what, const char *cleared);
int ss_alloc_regrowth(struct loader *ld, struct db_state *st);
/* rules/alloc_in_loop.c: a VMM chunk's mapping and access folded into its creation. */
int ss_vmm_mappings(struct loader *ld, struct db_state *st);
/* rules/alloc_in_loop.c: after the GPU figures, the device syncs and allocations a library
 * object made every step costs at its first use folded into the finding where it is made. */
int ss_library_object_setup(struct loader *ld, struct db_state *st);
/* rules/pool_trim_in_loop.c: after the site rules, the slow stream-ordered allocations after a
 * pool trimmed every step are folded into the trim's finding. */
int ss_pool_trim_regrowth(struct loader *ld, struct db_state *st);
/* rules/graph_instantiate_in_loop.c: after the site rules, the destroys every step of the
 * executable graphs a steady instantiation finding's site made get a finding of their own. */
int ss_graph_exec_destroys(struct loader *ld, struct db_state *st);
/* paired_lines.c: the line that uses or releases every step a handle a rule's steady
 * finding makes every step (a graph's destroy, a module's lookup), flagged with it as one cost */
struct ss_line_pairing {
	const struct ss_rule *rule; /* its steady findings are at the lines that make */
	const char *calls_sql;	    /* handle, is a use, site: every make and use, in time order */
	const char *use_sites_sql;  /* SITE_RULE_SQL of the uses */
	int use_releases;	    /* 1: a use ends its handle (a destroy); 0: uses repeat */
	/* the maker's detail: "; and N USES (X ms) OF_WHAT, at SITE" */
	const char *uses, *of_what;
	const char *every_step, *fix; /* the use's: "APIS: EVERY_STEP MAKER_SITE, whose ...; FIX" */
};
/* The pairings P[0..N-1], of one rule: every user line's estimate is set once all are done, its
 * maker's cost then holding every use of its handles. */
int ss_pair_lines(struct loader *ld, struct db_state *st, const struct ss_line_pairing *p,
		  size_t n);
/* rules/module_load_in_loop.c: after the site rules, the lookups every step of the functions of
 * the modules a steady load finding's site loaded get a finding of their own. */
int ss_module_function_lookups(struct loader *ld, struct db_state *st);
/* rules/host_sync.c: after the GPU figures, a steady sync without a user line that is the same
 * operation (the same instruction in its native stack) as one with a user line is folded in. */
int ss_sync_same_operation(struct loader *ld, struct db_state *st);
/* rules/host_sync.c: after the GPU figures, the syncs and allocations of cuDNN's autotuning (a
 * new input shape every step) named by the line that calls the model. The mark in such a
 * finding's detail opening, and its advice (advice_for of host-sync and alloc-in-loop): */
#define SS_AUTOTUNE_MARK "autotuning (torch.backends.cudnn.benchmark) for a new input shape"
#define SS_AUTOTUNE_ADVICE                                                                         \
	"torch.backends.cudnn.benchmark = True autotunes every convolution again for each new "    \
	"input shape, synchronizing the device and allocating trial workspaces each time: pad or " \
	"bucket the inputs to a few fixed shapes, or turn benchmark off where the shapes change "  \
	"every step."
int ss_autotune_model_call(struct loader *ld, struct db_state *st);
/* host_sync.c: a steady sync followed at once, on its thread, by a synchronous free of
 * stream-ordered memory (cudaMallocAsync's, freed with cudaFree) waits only so that the free is
 * safe: the free's line gets a finding of its own, the sync's cost (one fix for both: free
 * with cudaFreeAsync on the stream). Runs after the GPU timeline's figures are in. */
int ss_sync_then_free(struct loader *ld, struct db_state *st);

/* ------------------------------------------------------------------ analysis.c */

/* Whether a steady finding's cost per steady step is under its rule's floor
 * (min_share_permille): judge_finding clears it as not worth the fix. */
int ss_finding_under_floor(const struct ss_finding *f, const struct ss_rank *rk);

/* SYNCSPY_REPORT_TIMING=1: lap prints the seconds since *since for a step, on stderr. */
double now_s(void);
void lap(double *since, const char *what, const char *step);
int fail(struct loader *ld, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int out_of_memory(struct loader *ld);
char *xstrdup(const char *s);
char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double ms(long long ns);
long long column_or(sqlite3_stmt *stmt, int col, long long fallback);
void bind_named_int(sqlite3_stmt *stmt, const char *name, long long value);
int add_finding(struct loader *ld, const struct ss_rule *rule, const struct ss_rank *rank,
		long long count, long long blocked_ns, long long worst_ns, long long bytes,
		long long estimate_ns, char *site, char *detail);
void set_phase(struct ss_finding *f, const struct ss_steps *steps, int steady, long long nsteps);
int compare_ll(const void *a, const void *b);
int compare_ranks(const void *a, const void *b);
int prepare(struct loader *ld, struct db_state *st, const char *sql, sqlite3_stmt **stmt);
int step_failed(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt, int rc);
int query_row(struct loader *ld, struct db_state *st, const char *sql, sqlite3_stmt **stmt);
int end_rows(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt, int rc, int code);

/* ------------------------------------------------------------------ load.c */

int reserve(void *array, size_t *capacity, size_t used, size_t size);
/* Appends value to arr (n elements of capacity cap); 0 when out of memory. */
#define PUSH(arr, n, cap, value)                                                                   \
	(reserve(&(arr), &(cap), (n), sizeof(*(arr))) ? ((arr)[(n)++] = (value), 1) : 0)
int exec_temp(struct loader *ld, struct db_state *st, const char *sql);
int insert_row(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt);
int load_meta(struct loader *ld, struct db_state *st);
int build_aggregate(struct loader *ld, struct db_state *st);
int load_ranges(struct loader *ld, struct db_state *st, struct job *job);
void job_free(struct job *job);

/* ------------------------------------------------------------------ collectives.c */

int load_arrivals(struct loader *ld, struct db_state *st, struct ss_collectives *set);
/* text as a string of set->strings, one pointer per text; NULL when out of memory. */
const char *ss_collectives_string(struct ss_collectives *set, const char *text);

/* ------------------------------------------------------------------ summary.c */

/* Loads rank job->summary_index of summary job->summary into *rk (initialized by load_one),
 * job->found and job->collectives, as load_one would have from its database (SUMMARY-2); sets
 * job->meta_loaded once the rank's row is read. */
int summary_load_rank(struct loader *ld, struct job *job, struct ss_rank *rk);

/* ------------------------------------------------------------------ gpu.c */

int check_gpu_tables(struct loader *ld, struct db_state *st);
int run_gpu(struct loader *ld, struct db_state *st);
size_t first_ending_after(const struct interval *u, size_t n, long long d, long long t);
long long union_length(const struct interval *v, size_t n);
int load_api_first(struct loader *ld, struct db_state *st);
const struct api_first *api_first_of(const struct db_state *st, long long correlation);
int join_targets(struct loader *ld, struct db_state *st, struct gpu_target *tg, size_t n);
struct gpu_site *gpu_site(struct gpu_site **sites, size_t *n, size_t *cap, const char *text,
			  int kind);
void gpu_sites_free(struct gpu_site *sites, size_t n);
int compare_gpu_sites(const void *a, const void *b);
long long compute_stream_of(const struct gpu_rows *g, long long device);
/* Whether the GPU timeline was off at some time in (from, to] (gpu_paused: CUPTI-3..5). */
int timeline_off_between(const struct gpu_rows *g, long long from, long long to);
/* GPU-IDLE-4: VALUE measured over N items, scaled to TOTAL items. */
long long scale_to(long long value, long long n, long long total);
/* GPU-IDLE-4: the steady steps the timeline saw whole (all of them without pauses), and
 * which (traced[i] for steady step i from first_steady; malloc'd, NULL without pauses);
 * SIZE_MAX when out of memory. */
size_t traced_steps(const struct db_state *st, const struct gpu_rows *g, unsigned char **traced);
const struct kernel_row *next_kernel_on_stream(const struct gpu_rows *g, long long device,
					       long long stream, long long t);
/* g's copies sorted by correlation id (pointers into g->copies, g->ncopies of them), for
 * copy_of_correlation; malloc'd, NULL when out of memory. */
const struct copy_row **copies_by_correlation(const struct gpu_rows *g);
/* Whether a kernel of DEVICE ran in part between FROM and TO (ended after FROM, started before
 * TO). */
int kernel_between(const struct gpu_rows *g, long long device, long long from, long long to);
/* The copy of CORRELATION in INDEX (N of them), or NULL (the first, for a copy in pieces). */
const struct copy_row *copy_of_correlation(const struct copy_row **index, size_t n,
					   long long correlation);
/* The GPU rows of one correlation id (a call's kernels, copies and memsets: a graph launch's
 * every node): on which device, from the first start to the last end. */
struct correlated {
	long long correlation, device, s, e;
};
/* How soon after what it waited for (a kernel's end, another copy's) a copy that waited for it
 * starts: an event's latency on a GPU is microseconds (c99 on the H100: 2.5-10 us), so
 * COPY_START_SLACK_MIN_NS, or a quarter of the copy R when that is more. */
#define COPY_START_SLACK_MIN_NS 50000LL
long long copy_start_slack(const struct correlated *r);
/* g's work merged per correlation id, sorted by it (*n of them); NULL when out of memory. */
struct correlated *correlate_work(const struct gpu_rows *g, size_t *n);
/* st's API records (load_api_first) sorted by thread and start, for work_of_call; malloc'd,
 * NULL when out of memory. */
struct api_first *api_by_thread(const struct db_state *st);
/* The GPU rows (correlate_work's ROWS) of the call thread TID made at START, tied to its API
 * record as gpu.c ties GPU rows to calls; NULL when it has none (the timeline was off, or work
 * that leaves no row). */
const struct correlated *work_of_call(const struct api_first *by_thread, size_t napi,
				      const struct correlated *rows, size_t nrows, long long tid,
				      long long start);

/* What a GPU rule needs to tie the host's calls to their GPU rows (host-func-blocks-stream,
 * graph-exec-shared): the API records by thread, the GPU rows by correlation id, and the steady
 * steps the timeline saw whole (traced_steps). */
struct call_rows {
	struct api_first *by_thread; /* NULL: nothing to tie (no API records, no steady step,
				      * or no steady step seen whole) */
	struct correlated *rows;
	size_t nrows;
	unsigned char *traced;
	size_t seen;
};
int call_rows_open(struct loader *ld, struct db_state *st, const struct gpu_rows *g,
		   struct call_rows *j);
void call_rows_close(struct call_rows *j);
/* The GPU rows of the call thread TID made at START (work_of_call), or NULL. */
const struct correlated *call_rows_of(const struct db_state *st, const struct call_rows *j,
				      long long tid, long long start);
/* Whether time T lies in a steady step the timeline saw whole. */
int call_rows_steady_seen(const struct db_state *st, const struct call_rows *j, long long t);

/* An enqueue the host recorded (E1, S4, S5) on a stream handle, by a thread. */
struct enqueue {
	long long stream, start, tid;
};
/* The rows of SQL (stream, start_ns, tid, sorted by stream and start) into *work. */
int load_enqueues(struct loader *ld, struct db_state *st, const char *sql, struct enqueue **work,
		  size_t *n);
/* The first enqueue of STREAM at or after T in WORK (sorted by stream, start). */
size_t first_enqueue(const struct enqueue *work, size_t n, long long stream, long long t);

/* One site's holds (a stream or a launch held back, each a time): their count, GPU idle time,
 * the time held, the worst, each hold (for the median), the steps they came in. */
struct held_site {
	char *site;
	int graph; /* host-func-blocks-stream: host nodes of a graph */
	long long n, idle, held, worst;
	long long bytes; /* copy rules: what the held copies moved */
	long long *holds;
	size_t nholds, cap_holds;
	struct ss_tally tally;
};
struct held_site *held_site(struct held_site **sites, size_t *n, size_t *cap, const char *text);
void held_sites_free(struct held_site *sites, size_t n);
/* Adds one hold at START; 0 when out of memory. */
int held_site_add(struct held_site *s, const struct ss_steps *steps, long long start,
		  long long held, long long idle);
/* The median hold; the figures scaled to all steady steps when the timeline saw SEEN of
 * STEADY (GPU-IDLE-4). */
long long held_site_finish(struct held_site *s, size_t seen, size_t steady);
/* " (scaled from the N of M steady steps ...)" when SEEN < STEADY, else "". */
void held_scaled_note(char *buf, size_t size, size_t seen, size_t steady);
/* Adds held site S's finding for RULE (its count, time held and worst; BYTES, COST and DETAIL
 * as add_finding takes them), its phase set by the steps its holds came in: the finding, or
 * NULL with *CODE set. Call after held_site_finish, whose scaled figures it takes. */
struct ss_finding *add_held_finding(struct loader *ld, struct db_state *st,
				    const struct ss_rule *rule, const struct held_site *s,
				    long long bytes, long long cost, char *detail, int *code);

/* ------------------------------------------------------------------ ranks.c */

int estimate_clocks(struct loader *ld, const struct ss_collectives *sets, size_t nsets);

#endif
