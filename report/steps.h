/*
 * report/steps.h: the program's repeating step, and the phase of every call (docs/rules.md,
 * "Steady state"). Rules judge the steady state: what a program does in every step costs it
 * every step, what it does once (setup, the first step's warm-up, the final read) does not.
 *
 * Steps come, in this order of preference, from
 *   1. the program's marks: `syncspy_step` (ranges of kind `step`), else NVTX ranges whose name
 *      says "step" (torch's `ProfilerStep#N`, `Optimizer.step#...`, a user's "train_step"),
 *      numbered names counted as one ("ProfilerStep#3" is "ProfilerStep"), 3 instances or more
 *      on one thread;
 *   2. the recording itself: the period of the main thread's repeating calls (ss_steps_detect);
 *   3. none: then the calls between the rank's first and last GPU work (STEPS-3) are steady
 *      and a site is repeating when it made SS_FALLBACK_MIN_CALLS calls or more there, judged
 *      against the wall time; the report says so.
 *
 * Invariants (cited in code as STEPS-n):
 *   STEPS-1  the phase of a call depends on its start time only (one time axis per rank, the
 *            recording's CLOCK_MONOTONIC), so calls of every thread are classified alike. A GPU
 *            record takes the phase of the host call that issued it (its CUPTI API record's
 *            start), not of its own time: the host runs ahead, and a step's kernels and
 *            copies may run after the host has left the step.
 *   STEPS-2  step k is [start[k], start[k+1]); the steps are contiguous: a call between two
 *            marks belongs to the earlier step. Before start[0]: setup; from start[nsteps]:
 *            teardown; steps before first_steady: warm-up, counted as setup.
 *   STEPS-3  without steps, the calls before the rank's first GPU work (a kernel, an async copy
 *            or memset, a blocking copy, a collective: ss_steps.work_first_ns) are setup and
 *            those after its last (work_last_ns) teardown: a loop over buffers that allocates
 *            them all before anything runs, or frees them all after, is not the program's loop.
 *   STEPS-4  a detected loop accounts for at least 1 / SS_STEPS_MIN_SHARE of the main thread's
 *            calls: a burst at setup (a model's parameters uploaded one by one, each copy and
 *            its sync) repeats exactly, but is not the loop of a program whose own steps are
 *            too irregular to detect (nested loops: an RL rollout, then updates, a few times).
 *   STEPS-5  without steps, a site repeats when its steady calls recur through the work:
 *            SS_FALLBACK_MIN_CALLS of them at least, in SS_FALLBACK_MIN_SLICES of the
 *            SS_FALLBACK_SLICES slices of [work_first_ns, work_last_ns] that hold an equal
 *            share of the GPU work calls each (not of its time: a program that spends most
 *            of its run on the host before its loop, loading or compiling, would leave the
 *            loop a few slices at the end: t167 of examples/corpus; of its time where the
 *            work calls are fewer than SS_FALLBACK_MIN_WORK), from the first of them to the
 *            last half the slices at least (ss_steps_fallback_recurs): what the
 *            first iterations only do (lazy loading, the allocator's growth), a setup burst
 *            after the first GPU work, or a read once per iteration of a program that iterates
 *            three times is not a loop's repeated work. (Not the first and last quarters: one
 *            slow call near the end moves the last slices of a loop's calls.) The site rules
 *            on the aggregate only (analysis.c); rules with tallies of their own count calls
 *            (ss_steps_recurring).
 *   STEPS-6  a detected loop may have a second after it (training, then a sampling or
 *            evaluation loop: t143 of examples/corpus), found the same way among the calls
 *            after the first, STEPS-4 against all the thread's calls, lasting a tenth of the
 *            first at least and giving the GPU work (STEPS-3's kinds) once a step at least:
 *            a teardown's burst of frees or stream destroys repeats exactly but is no loop.
 *            Its steps follow the first's (the first's last step runs to the second's first,
 *            STEPS-2; `second` is its first step), and a site recurs when it came in
 *            SS_RECURRING_PERCENT of the shorter loop's steady steps: either loop's calls.
 *   STEPS-7  where no symbol repeats regularly (STEPS-4's loops included), a loop whose steps
 *            vary in length (a solver's inner loop that stops when it converges: t151 of
 *            examples/corpus; a decoder's variable number of tokens) is found from the calls it
 *            makes once a step: SS_STEPS_MIN_GROUP symbols at least of one count, each coming
 *            once between every two occurrences of the first of them (after the last too),
 *            which starts the steps; of several such groups, the one with the most symbols
 *            (ties: the fewer, longer steps). STEPS-4 holds for it; the last step holds the
 *            median step's calls. A second loop (STEPS-6) may be of that kind too (a decoder's
 *            requests of varying tokens after training).
 *   STEPS-8  the loop is detected on the thread that made the most calls; where that is not the
 *            process's main thread (tid = pid), a loop of the main thread that gives the GPU
 *            work every step, runs through half of the busiest thread's loop at least and has
 *            as many steps at least is the program's instead (report/load.c find_steps): the
 *            main thread drives, a helper that makes more calls (torch's autograd thread,
 *            several backward passes a step: t156 of examples/corpus) works inside its steps,
 *            and a coarser main loop (epochs around irregular batches: t134) is no step. Its
 *            warm-up lasts until the helper's steady state begins, its last step no longer
 *            than its longest steady one (ss_steps_adopt): the main thread goes quiet after its
 *            loop while the helper finishes.
 *   STEPS-9  a sync site that comes in fewer steps than SS_RECURRING_PERCENT but in bursts of
 *            SS_BURST_MIN_CALLS calls a step, in 2 steady steps or more spanning a third of
 *            the steady state, is a periodic phase's loop (an evaluation every N steps that
 *            reads each sample's result: t164 of examples/corpus) and recurs; its cost is
 *            spread over the steady steps (ss_steps_bursts, host-sync only).
 */
#ifndef SYNCSPY_REPORT_STEPS_H
#define SYNCSPY_REPORT_STEPS_H

#include <stddef.h>

/* Steps from marks need at least this many instances; detected ones SS_STEPS_MIN_DETECTED (a
 * pattern seen 3 times may be a setup loop over three buffers). */
#define SS_STEPS_MIN	      3
#define SS_STEPS_MIN_DETECTED 5
/* The first step is warm-up (lazy loading, cuBLAS handles, the caching allocator's first
 * blocks) when the loop has at least this many steps. */
#define SS_WARMUP_MIN_STEPS 4
/* A site is in the steady state when its calls came in at least this share of the steady
 * steps (and in 2 of them at least): a sync every step, or every other, is; one that happened
 * in the first iterations only (allocator growth) or once at the end is not. */
#define SS_RECURRING_PERCENT 20
/* A site whose calls keep coming all through the steady state, in fewer steps than
 * SS_RECURRING_PERCENT (a cache or a buffer grown a little every few steps: the caching
 * allocator asks the driver again whenever the size outgrows what it holds), recurs too, for the
 * rules that opt in (ss_rule.spread_recurs: alloc-in-loop): at least SS_SPREAD_MIN_STEPS steps,
 * the first in the first quarter of the steady steps and the last in the last quarter. Growth in
 * the first iterations only ends early and stays `info`. */
#define SS_SPREAD_MIN_STEPS 4
/* A site whose calls come in bursts of this many a step at least (a loop inside the step), in 2
 * steady steps or more that span a third of the steady state, recurs too, for the rules that
 * opt in (ss_rule.burst_recurs: host-sync): an evaluation every N steps that reads a result
 * per sample (STEPS-9). A logging read every N steps is one call a burst; a checkpoint's
 * copies are not syncs. */
#define SS_BURST_MIN_CALLS 32
/* Without steps: a site is repeating from this many calls (a final read is one call, a setup
 * pair of pinned buffers two), spread over the work's slices (STEPS-5). */
#define SS_FALLBACK_MIN_CALLS  3
#define SS_FALLBACK_SLICES     16
#define SS_FALLBACK_MIN_SLICES 4
/* ... slices of equal shares of the work calls where there are this many at least (8 a slice),
 * else of equal time */
#define SS_FALLBACK_MIN_WORK 128
/* A loop whose steps vary in length is found from this many symbols at least that come once a
 * step, in the same order (STEPS-7) */
#define SS_STEPS_MIN_GROUP 3
/* A detected loop holds this share of the main thread's calls at least (STEPS-4): 1/10 */
#define SS_STEPS_MIN_SHARE 10

enum ss_steps_source { SS_STEPS_NONE, SS_STEPS_MARKED, SS_STEPS_DETECTED };
/* Their names (ss_rank.steps_source), indexed by enum ss_steps_source. */
#define SS_STEPS_SOURCES 3
extern const char *const ss_steps_source_names[SS_STEPS_SOURCES];
enum ss_phase { SS_PHASE_SETUP, SS_PHASE_STEADY, SS_PHASE_TEARDOWN };

struct ss_steps {
	enum ss_steps_source source;
	char *name;	     /* marked: the range name; detected: what the anchor is */
	long long *start;    /* nsteps + 1 boundaries (STEPS-2); NULL without steps */
	size_t nsteps;	     /* 0 without steps */
	size_t first_steady; /* the steps before it are warm-up */
	long long step_ns;   /* median duration of the steady steps; -1 without steps */
	unsigned anchor;     /* detected: the symbol whose occurrences start the steps */
	size_t second;	     /* detected: the first step of a second loop after it (STEPS-6) */
	size_t period;	     /* detected: calls of the main thread per step (varies: the median) */
	int varies;	     /* detected: steps of varying length (STEPS-7) */
	/* without steps (STEPS-3): the start of the rank's first and last GPU work; has_work 0
	 * when the recording has none (then every call is steady) */
	int has_work;
	long long work_first_ns, work_last_ns;
	/* the slices of the work (STEPS-5): slice k starts at work_slice_ns[k], each holding an
	 * equal share of the rank's GPU work calls (of the time, with few of them) */
	long long work_slice_ns[SS_FALLBACK_SLICES];
};

/* A call of the main thread as detection sees it: its symbol (what repeats: the api and site of
 * the call, as an index) and its start and end. In call order. */
struct ss_step_call {
	unsigned symbol;
	long long start_ns, end_ns;
	int work; /* it gives the GPU work (STEPS-3's kinds: a second loop needs some, STEPS-6) */
};

/* A range instance, for marks: (tid, normalized name) pairs are compared by the caller. */
struct ss_step_mark {
	long long tid;
	const char *name;	    /* NULL for unnamed steps */
	int is_step;		    /* kind 'step' (syncspy_step) */
	long long start_ns, end_ns; /* end_ns -1: left open */
};

/* Number of steady steps (0 without steps). */
size_t ss_steps_steady(const struct ss_steps *s);

/* The phase of a call that started at t (STEPS-1); *step is its step index for steady calls,
 * (size_t)-1 otherwise. Without steps a call is steady between the first and last GPU work
 * (STEPS-3), with no step index. */
enum ss_phase ss_steps_phase(const struct ss_steps *s, long long t, size_t *step);

/* Whether calls seen in `steps` distinct steady steps (without steps: `calls` calls) are in the
 * steady state (SS_RECURRING_PERCENT, SS_FALLBACK_MIN_CALLS). */
int ss_steps_recurring(const struct ss_steps *s, long long steps, long long calls);

/* Whether calls seen in `steps` distinct steady steps, the first and last of them step indexes
 * first and last, keep coming all through the steady state (SS_SPREAD_MIN_STEPS). */
int ss_steps_spread(const struct ss_steps *s, long long steps, long long first, long long last);

/* Whether `calls` steady calls seen in `steps` distinct steady steps, the first and last of
 * them step indexes first and last, are a periodic phase's bursts (STEPS-9,
 * SS_BURST_MIN_CALLS). */
int ss_steps_bursts(const struct ss_steps *s, long long steps, long long calls, long long first,
		    long long last);

/* Without steps (STEPS-5): the slice of the work a steady call that started at t falls in,
 * 0 to SS_FALLBACK_SLICES - 1; (size_t)-1 with steps or outside the work. */
size_t ss_steps_slice(const struct ss_steps *s, long long t);
/* Without steps (STEPS-5): whether `calls` steady calls of a site seen in `slices` distinct
 * slices, the first and last of them first and last, repeat all through the work; with steps,
 * 1 (ss_steps_recurring judges). */
int ss_steps_fallback_recurs(const struct ss_steps *s, long long calls, long long slices,
			     long long first, long long last);

/* Steps from marks (sorted by start). Returns 1 and fills *s when a usable step name was found,
 * 0 when not, -1 when out of memory. */
int ss_steps_from_marks(struct ss_steps *s, const struct ss_step_mark *marks, size_t n);

/* STEPS-8: the main thread's loop OWN taken for the busiest thread's OTHER: its warm-up lasts
 * until OTHER's steady state begins, its last step no longer than its longest steady one.
 * -1 when out of memory. */
int ss_steps_adopt(struct ss_steps *own, const struct ss_steps *other);

/* Steps detected from the main thread's calls (nsymbols: symbols are below it). Returns 1 when
 * a repeating step was found, 0 when not, -1 when out of memory. */
int ss_steps_detect(struct ss_steps *s, const struct ss_step_call *calls, size_t n,
		    unsigned nsymbols);

void ss_steps_free(struct ss_steps *s);

/*
 * Per finding: how often and how much in the steady state, and in all. A rule feeds it the
 * calls (or GPU records) it flags, in time order per site where it can (distinct steps are
 * counted by change of step index).
 */
struct ss_tally {
	long long n, ns, worst;		    /* steady */
	long long steps;		    /* distinct steady steps seen */
	size_t last_step;		    /* (size_t)-1: none yet */
	long long all_n, all_ns, all_worst; /* every phase */
};

void ss_tally_init(struct ss_tally *t);
void ss_tally_add(struct ss_tally *t, const struct ss_steps *s, long long start_ns, long long ns,
		  long long count);

#endif
