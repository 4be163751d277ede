/*
 * report/analysis.h: the analysis engine behind `syncspy report`. It loads rank databases
 * (opened and checked by db.c), summarizes each with SQL aggregates on its own connection, and
 * builds an in-memory model: one ss_rank per database and a list of findings, each the verdict of
 * one rule of docs/rules.md on one (rank, call site). The output backends (out_*.c) only print
 * this model.
 *
 * Invariants (cited in code as ANALYSIS-n):
 *   ANALYSIS-1  findings of the steady state come first, by their cost's share of the step time
 *               (share) descending; then the `info` ones (what happened once), by blocked_ns
 *               descending; ties by rule, rank, site: the order of the report is stable for a
 *               given set of databases.
 *   ANALYSIS-2  there is at most one finding per (rule, rank, site).
 *   ANALYSIS-5  with fold_ranks (`syncspy report`), the findings of one (rule, site) on several
 *               ranks of a job (meta.rank known) are one finding: the rank first in ANALYSIS-1
 *               order (the largest share: the worst) stands for it with its own figures, and
 *               the finding lists its ranks and the spread of their cost per step. Ranking
 *               (ANALYSIS-1) is then by the worst rank's share: in a synchronous job every rank
 *               waits for the slowest at the next collective. `check` and `diff` judge per rank.
 *   ANALYSIS-3  every number is measured on the host (CLOCK_MONOTONIC of the recording host),
 *               except estimate_ns, which is an estimate and says so, and the GPU numbers
 *               (gpu_idle_ns, comm_*, copy-without-overlap), which come from CUPTI's records in
 *               the extension tables gpu_activity/gpu_api (docs/cupti.md) on the same clock, and
 *               exist only for databases that have those tables (ss_rank.gpu).
 *   ANALYSIS-4  ranks share one time axis: the reference rank's (the first in rank order) wall
 *               clock. A rank's CLOCK_MONOTONIC time t is at t - start_mono_ns +
 *               start_realtime_ns - clock_offset_ns there. clock_offset_ns is 0 exactly on the
 *               reference's host; on another host it is estimated from the end times of
 *               blocking collectives (ss_clock_fit), else 0 (the wall clock alone).
 *   ANALYSIS-6  a rule that needs a row per enqueue (ss_rule.needs_enqueue_rows) does not run on
 *               a database recorded in aggregate mode (ss_rank.aggregate), whose enqueues are
 *               per-site aggregates; one note of the report names those rules, and the JSON
 *               lists them per such rank. Every other rule reads sync points, which keep their
 *               rows there, and per-site enqueue counts from the aggregates.
 */
#ifndef SYNCSPY_REPORT_ANALYSIS_H
#define SYNCSPY_REPORT_ANALYSIS_H

#include <stddef.h>

/* Bits of ss_rank.deviates: which per-rank totals differ from the median over ranks by more
 * than SS_IMBALANCE_PERCENT. */
enum ss_deviation {
	SS_DEV_SYNC_POINTS = 1 << 0,
	SS_DEV_BLOCKED = 1 << 1,
	SS_DEV_COPIES = 1 << 2,
	SS_DEV_NCCL_OPS = 1 << 3,
};

/* A per-rank total farther than this from the median of all ranks is highlighted. */
#define SS_IMBALANCE_PERCENT 20

/* One rank database: who recorded it and its totals. An unknown number is -1. */
struct ss_rank {
	char *path;
	long long rank;	      /* meta.rank, -1 when unknown */
	long long world_size; /* meta.world_size, -1 when unknown */
	char *host;
	long long pid;
	int finished;	       /* meta.exit_reason present */
	long long wall_ns;     /* recording time: end_mono_ns (or the last call's end) - start */
	char *calls_json;      /* JSON object: API name -> calls (S7: queries, SCHEMA-5) */
	long long sync_points; /* S1-S7 calls, S7 counted by queries */
	long long blocked_ns;  /* host time in S1-S7 calls */
	long long copies;      /* memcpy calls of every class (memsets not counted) */
	long long copy_bytes;
	long long nccl_ops;	 /* N2 calls on a communicator (collectives, send/recv) */
	long long nccl_ns;	 /* host time in all N2 calls, group start/end included */
	long long dropped;	 /* meta.dropped_events: non-zero makes the counts lower bounds */
	long long backwards;	 /* calls with end_ns < start_ns: counted as 0 ns (a note) */
	long long dropped_calls; /* meta.dropped_calls (calls, not records), -1 when absent */
	char *dropped_by_class;	 /* meta.dropped_calls_by_class ("E2:12,S2:3"), or NULL */
	unsigned deviates;	 /* enum ss_deviation bits */
	long long start_mono_ns; /* for aligning ranks' clocks (SCHEMA-3) */
	long long start_realtime_ns;
	/* Clock alignment (docs/rules.md, "Clock alignment"; ANALYSIS-4): this rank's times on the
	 * report's axis are t - start_mono_ns + start_realtime_ns - clock_offset_ns. */
	long long clock_offset_ns;
	const char *clock_offset_method;  /* "same-host", "collectives" or "wall-clock" */
	long long clock_offset_spread_ns; /* the estimate's uncertainty (MAD); -1 unknown */
	/* GPU timeline (docs/cupti.md), only when gpu is set; else -1 */
	int gpu;		   /* the database has the gpu_activity table */
	char *cupti;		   /* meta.cupti: why there is no or a partial timeline; NULL */
	long long cupti_pauses;	   /* meta.cupti_pauses: syncspy_gpu_trace(0) calls; 0 */
	long long cupti_paused_ns; /* meta.cupti_paused_ns: how long the timeline was paused */
	char *cupti_sample;	   /* meta.cupti_sample: SYNCSPY_CUPTI_SAMPLE (CUPTI-4); NULL */
	long long cupti_windows;   /* meta.cupti_windows: the windows it traced; 0 */
	long long cupti_auto_permille; /* meta.cupti_auto_permille (CUPTI-5): what tracing every
					* call would have cost, permille of the run; 0 */
	long long cupti_traced_ns; /* meta.cupti_traced_ns: how long the timeline was on; -1 */
	/* A capture range (docs/recording.md, "Capture ranges"): what was recorded of the run */
	char *capture_range;		/* meta.capture_range; NULL: the whole run was recorded */
	long long capture_ranges;	/* intervals in the capture table */
	long long captured_ns;		/* their total length (one left open ends with the run) */
	long long capture_skipped;	/* meta.capture_skipped_calls: calls outside them */
	char *capture_skipped_by_class; /* meta.capture_skipped_by_class ("E1:12,S2:3"); NULL */
	/* Aggregate mode (meta.mode, docs/recording.md "Aggregate mode"): the enqueues were
	 * counted per site (enqueue_aggregates), not recorded one row each */
	int aggregate;		       /* 1: recorded in aggregate mode */
	long long aggregated_enqueues; /* calls in its aggregates (the sum of their counts) */
	long long enqueue_aggregates;  /* its aggregates (rows) */
	long long step_enqueues;       /* median enqueues per steady syncspy_step step (its
					  step_figures); -1 unknown */
	long long comm_ns;	   /* union of the NCCL kernels' intervals */
	double comm_overlap;	   /* compute during communication / comm_ns, 0..1; -1 unknown */
	long long exposed_comm_ns; /* comm_ns not overlapped by non-NCCL kernels */
	/* The repeating step (report/steps.h, docs/rules.md "Steady state") */
	const char *steps_source;     /* "marked", "detected" or "none" */
	char *steps_name;	      /* marked: the range name; detected: the anchor; NULL */
	long long steps;	      /* steps found, warm-up included; 0 */
	long long steady_steps;	      /* steps judged (after the warm-up); 0 */
	long long step_ns;	      /* median steady step duration; -1 */
	long long steady_sync_points; /* S1-S7 (S7 by queries) in the steady steps */
	long long steady_blocked_ns;  /* host time in them */
	long long steady_gpu_idle_ns; /* GPU idle behind steady syncs (S1-S4); -1 not measured */
	long long steady_start_ns;    /* the steady steps' window [start, end), CLOCK_MONOTONIC; */
	long long steady_end_ns;      /* -1 without steps */
};

/* One rule's verdict on one (rank, site). -1 in an optional number means "not applicable". */
struct ss_finding {
	const char *rule;     /* stable id, docs/rules.md */
	const char *severity; /* "high", "medium", "low" from share; "info" when phase is "once" */
	const char *phase;    /* "steady": the calls recur in the steady state; "once": they do not
				 (setup, warm-up, teardown, or too rare): count, blocked_ns etc. are
				 then over the whole run, else over the steady state */
	long long steps;      /* steady steps the calls came in; -1 without steps */
	long long cost_ns;    /* what the finding costs in the steady state (docs/rules.md):
				 the GPU idle time where measured, else the rule's host time */
	long long cost_per_step_ns; /* cost_ns / the rank's steady steps; -1 without steps */
	double share;		    /* cost per step / step time (without steps: cost_ns / wall) */
	const char *cleared; /* why a steady finding costs nothing measured (the GPU timeline
				showed it): then it is `info` too; NULL */
	int floor_permille;  /* a floor of its own, as ss_rule.min_share_permille (0: the rule's):
				a caching allocator's growth (alloc_in_loop.c) */
	long long rank;	      /* the rank (meta.rank), -1 when unknown */
	long long count;      /* calls (S7: queries), or occurrences for cross-call rules */
	long long blocked_ns; /* host time the flagged calls took */
	long long worst_ns;   /* the longest single call, -1 when not applicable */
	long long bytes;      /* bytes copied or set, -1 when not applicable */
	long long estimate_ns; /* estimated time lost (ANALYSIS-3), -1 when not applicable */
	long long gpu_idle_ns; /* host-sync: GPU idle time after the syncs, -1 when not measured */
	char *site;	       /* sites.text, "(no call site)", or what the rule groups by */
	char *detail;	       /* one line: what was seen (APIs and counts, medians, ...) */
	const char *advice;    /* one or two sentences: the fix */
	const char *path;      /* the rank's database (owned by its ss_rank): which recording */
	/* ANALYSIS-5: a finding folded over several ranks lists them (ascending; nranks >= 2),
	 * else ranks is NULL and nranks 1; per_step_* is the spread of cost_per_step_ns over the
	 * folded ranks that have one (steady, not info), -1 when none has. rank, path and the
	 * figures above are the worst rank's. */
	long long *ranks;
	size_t nranks;
	long long per_step_min_ns, per_step_median_ns, per_step_max_ns;
	long long *per_step; /* while folding batch by batch (analysis.c): the ranks' values */
	size_t nper;
};

/* At most this many range names per rank are reported (those with the most sync points). */
#define SS_RANGE_NAMES_MAX 10

/*
 * One NVTX range name (or syncspy_step name) of one rank: its instances (`ranges` rows of that
 * name and kind) and the sync points of the range's thread inside each (docs/report-json.md).
 */
struct ss_range_stat {
	long long rank;	  /* the rank (meta.rank), -1 when unknown */
	const char *path; /* the rank's database (owned by its ss_rank): orders unknown ranks */
	char *name;
	char *kind; /* "push", "startend" or "step" */
	long long instances;
	long long sync_min, sync_median, sync_max; /* per instance; median: the lower middle */
	long long sync_total;			   /* over all instances: orders the names */
	long long blocked_median_ns, blocked_max_ns;
};

struct ss_report {
	struct ss_rank *ranks; /* sorted by rank (unknown last), then path */
	size_t nranks;
	struct ss_finding *findings; /* ANALYSIS-1 */
	size_t nfindings;
	struct ss_range_stat *ranges; /* in rank order, then most sync points first */
	size_t nranges;
	char **notes; /* what the report could not measure, and why */
	size_t nnotes;
	size_t gpu_ranks; /* ranks with a GPU timeline (ss_rank.gpu): the GPU fields are output */
};

struct ss_collectives; /* below */
struct sqlite3;

/* Loading options. */
struct ss_analysis_options {
	int progress;	/* 1: one line on stderr per database loaded */
	int fold_ranks; /* 1: one finding per (rule, site) across the ranks of a job (ANALYSIS-5) */
	int reopen;	/* 1: the caller has opened every path with ss_db_open already (READ-1) */
	/* `syncspy summarize`: each_database is called by the loading thread with a database's
	 * open connection once the analysis read it (the rank's steady window known); what it
	 * leaves in *extra reaches each_rank, called for each rank in path order once it is
	 * loaded, with its findings and range statistics (found) before they join the report
	 * and its collectives (extra is NULL for a rank of a summary); free_extra frees what
	 * each_rank did not get. A code other than SS_EXIT_OK stops the analysis with it. */
	int (*each_database)(void *arg, struct sqlite3 *db, const struct ss_rank *rank,
			     void **extra, char *err, size_t errlen);
	int (*each_rank)(void *arg, const struct ss_rank *rank, const struct ss_report *found,
			 const struct ss_collectives *collectives, void *extra, char *err,
			 size_t errlen);
	void (*free_extra)(void *extra);
	void *each_rank_arg;
};

/*
 * Loads every database of paths and analyzes them into *report. On failure returns an ss_exit
 * code with one message in err ("PATH: what is wrong"); a bad database stops the report (a
 * merge with a rank missing would mislead).
 */
int ss_analyze(char *const *paths, size_t npaths, const struct ss_analysis_options *options,
	       struct ss_report *report, char *err, size_t errlen);

void ss_report_free(struct ss_report *report);

/* ANALYSIS-6: the ids of the rules that need a row per enqueue and so do not run on a database
 * recorded in aggregate mode, comma-separated, in registry order. */
const char *ss_rules_needing_enqueue_rows(void);

/* The steady state of one database (docs/rules.md, "Steady state"), for `syncspy check`'s
 * steady warm-up: its window (-1, -1 without steps) and its steady steps (0 without). Returns
 * an ss_exit code with one message in err, as ss_analyze. The caller has opened path with
 * ss_db_open (its pages are not read whole again: ss_db_reopen). */
int ss_steady_window(const char *path, long long *start_ns, long long *end_ns, long long *steps,
		     char *err, size_t errlen);

/*
 * Clock alignment across hosts (docs/rules.md, "Clock alignment"), shared by the report and the
 * export. A collective call on a communicator is one element of a series: the calls of one API
 * on one communicator (comms.id_hash) of one rank, by start time, in wall-clock ns (SCHEMA-3);
 * the k-th call of every rank's series is the same collective.
 */
/* A collective is a clock sample when the host waited in it on at least one of the two ranks
 * (host duration at least this long): then every rank left it when the last rank arrived, at
 * about the same true time. Enqueue-only calls (NCCL's usual, a few us) say nothing. */
#define SS_CLOCK_WAIT_MIN_NS 100000LL
/* Fewer samples than this: no estimate (the wall clock alone). */
#define SS_CLOCK_MIN_SAMPLES 3

struct ss_collective_call {
	long long start_ns, end_ns; /* wall-clock ns: t - start_mono_ns + start_realtime_ns */
};

/* One collective (id_hash, API) of one database: its calls by start time (the k-th is the
 * collective's k-th instance). */
struct ss_series {
	const char *hash, *op; /* in ss_collectives.strings, one pointer per text */
	struct ss_collective_call *c;
	size_t n, capacity;
};

/* The collectives of one database (collectives.c): the N2 calls on a communicator with an
 * id_hash, send, recv and group brackets left out, one series per (id_hash, API). */
struct ss_collectives {
	struct ss_series *series;
	size_t nseries;
	char **strings;
	size_t nstrings;
};

/* Reads the collectives of an open database into *set (emptied first); ss_collectives_free
 * frees it either way. Returns SS_EXIT_OK or an exit code with the error in err. */
struct sqlite3;
int ss_collectives_load(struct sqlite3 *db, const char *path, struct ss_collectives *set, char *err,
			size_t errlen);
void ss_collectives_free(struct ss_collectives *set);

/* Appends to *samples the end_k(x) - end_k(ref) of the instances k both series have where either
 * call lasted at least SS_CLOCK_WAIT_MIN_NS. Returns 0, or -1 when out of memory. */
int ss_clock_samples(const struct ss_collective_call *x, size_t nx,
		     const struct ss_collective_call *ref, size_t nref, long long **samples,
		     size_t *nsamples, size_t *capacity);

/* With at least SS_CLOCK_MIN_SAMPLES samples (reordered): *offset_ns = their median (the lower
 * middle), *spread_ns = the median absolute deviation from it; returns 1. Else returns 0. */
int ss_clock_fit(long long *samples, size_t n, long long *offset_ns, long long *spread_ns);

/* The severity of a steady-state finding whose cost is this share of the step time (without
 * steps: of the wall time); thresholds in docs/rules.md. */
const char *ss_severity(double share);

#endif
