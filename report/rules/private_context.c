/*
 * report/rules/private_context.c: the private-context rule (docs/rules.md), a per-database rule
 * in C (SS_RULE_DATABASE): a context made with cuCtxCreate beside another context of the same
 * device, both given work all through the steady state; and a context made every step.
 *
 * "A kernel from one CUDA context cannot execute concurrently with a kernel from another CUDA
 * context" (CUDA C++ Programming Guide, "Concurrent Kernel Execution"): the GPU time-slices
 * between contexts, so an engine or plugin that makes a context of its own "for isolation"
 * serializes its kernels with the program's, and each switch between them costs the driver
 * work on the host. Retaining the device's primary context (cuDevicePrimaryCtxRetain), which
 * the runtime uses too, gives both one context (examples/corpus d49, fixed in d51). A context
 * created and destroyed every step pays its creation (tens of milliseconds on a GPU) and a
 * wait for its work at the destroy, every step.
 *
 * The calls do not say which context they went to: the rule replays each thread's current
 * context from the recorded context calls (interpose/wrapper.h CREATED_CONTEXT): cuCtxCreate*
 * pushes the context it made, cuCtxPushCurrent and cuCtxPopCurrent push and pop,
 * cuCtxSetCurrent replaces the top, cuCtxDestroy pops the context where it is current. A call
 * is its thread's current context's. A thread with none recorded has one all the same: made
 * current before the recording started (the first context calls of a program pass through
 * unrecorded: SHIM-9), or for a runtime call the device's primary one, which the runtime uses
 * where no context is current; the context calls a runtime makes inside a runtime call are not
 * recorded either (DRIVER-3). Those are one context for the rule ("earlier"), of no known
 * device: the same device as a created one unless the contexts of known devices are on
 * several (one context per GPU is how a multi-GPU driver program is written).
 *
 * Only databases with a successful cuCtxCreate* are read call by call; the rest cost one query.
 * In aggregate mode the enqueues have no rows (ANALYSIS-6): the work is the sync points, and the
 * rule runs on them.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "../analysis_int.h"
#include "../commands.h"

extern const struct ss_rule ss_rule_private_context; /* at the end: its findings name it */

/* A thread's context stack, as deep as the driver's own is useful (cuCtxPushCurrent). */
#define SS_CONTEXT_STACK 16

/* The context calls, by apis.name (LIKE: '_' matches any character, which these names cannot
 * confuse). */
#define CONTEXT_CALL_SQL                                                                           \
	"(a.name LIKE 'cuCtxCreate%' OR a.name IN ('cuCtxDestroy_v2', 'cuCtxPushCurrent_v2',"      \
	" 'cuCtxPopCurrent_v2', 'cuCtxSetCurrent', 'cuDevicePrimaryCtxRetain'))"

#define ANY_CREATED_SQL                                                                            \
	"SELECT count(*) FROM calls c JOIN apis a ON a.id = c.api_id"                              \
	" WHERE a.name LIKE 'cuCtxCreate%' AND c.ret = 0"

/* The context calls and the work (every class but X1 and NCCL's), in time order. */
#define CALLS_SQL                                                                                  \
	"SELECT c.tid, a.name, c.class, c.start_ns, c.end_ns, c.ret, c.aux, c.ptr,"                \
	" CASE WHEN " CONTEXT_CALL_SQL " THEN coalesce(s.text, '" NO_SITE "') END"                 \
	" FROM calls c JOIN apis a ON a.id = c.api_id LEFT JOIN sites s ON s.id = c.site_id"       \
	" WHERE " CONTEXT_CALL_SQL " OR (c.class NOT IN ('X1') AND c.class NOT LIKE 'N%')"         \
	" ORDER BY c.start_ns, c.id"

enum context_kind {
	CONTEXT_CREATED, /* made by cuCtxCreate* */
	CONTEXT_PRIMARY, /* retained by cuDevicePrimaryCtxRetain */
	CONTEXT_OTHER,	 /* made current without a recorded creation or retain */
	CONTEXT_EARLIER, /* a thread's with none recorded: one made current before the recording
			    started (SHIM-9), or for a runtime call the runtime's primary one */
};

struct context {
	long long handle, device; /* device -1: not known (the runtime's) */
	enum context_kind kind;
	int alive;
	char *create_site, *destroy_site;
	struct ss_tally work;	  /* the calls it was given (steps.h) */
	struct ss_tally switches; /* the calls that made it current or left it */
};

struct thread {
	long long tid;
	int depth;
	long long stack[SS_CONTEXT_STACK]; /* indexes of contexts below the current one */
	long long current;		   /* index of its current context, -1 for none */
};

/* Per site of cuCtxCreate*: the contexts it made, the host time of their steady destroys, and
 * where the first of them was destroyed. */
struct create_site {
	char *site, *destroy_site;
	struct ss_tally creates;
	long long destroy_ns;
};

struct replay {
	struct context *contexts;
	size_t ncontexts, cap_contexts;
	struct thread *threads;
	size_t nthreads, cap_threads;
	struct create_site *sites;
	size_t nsites, cap_sites;
};

static long long context_of(struct replay *r, long long handle, enum context_kind kind,
			    long long device)
{
	for (size_t i = r->ncontexts; i-- > 0;)
		if (r->contexts[i].alive && r->contexts[i].handle == handle &&
		    (kind == CONTEXT_EARLIER) == (r->contexts[i].kind == CONTEXT_EARLIER))
			return (long long)i;
	if (!reserve(&r->contexts, &r->cap_contexts, r->ncontexts, sizeof(*r->contexts)))
		return -2;
	struct context *x = &r->contexts[r->ncontexts];

	*x = (struct context){handle, device, kind, 1, NULL, NULL, {0}, {0}};
	ss_tally_init(&x->work);
	ss_tally_init(&x->switches);
	return (long long)r->ncontexts++;
}

static struct thread *thread_of(struct replay *r, long long tid)
{
	for (size_t i = 0; i < r->nthreads; i++)
		if (r->threads[i].tid == tid)
			return &r->threads[i];
	if (!reserve(&r->threads, &r->cap_threads, r->nthreads, sizeof(*r->threads)))
		return NULL;
	r->threads[r->nthreads] = (struct thread){tid, 0, {0}, -1};
	return &r->threads[r->nthreads++];
}

static struct create_site *create_site_of(struct replay *r, const char *site)
{
	for (size_t i = 0; i < r->nsites; i++)
		if (!strcmp(r->sites[i].site, site))
			return &r->sites[i];
	if (!reserve(&r->sites, &r->cap_sites, r->nsites, sizeof(*r->sites)))
		return NULL;
	char *copy = xstrdup(site);
	if (!copy)
		return NULL;
	r->sites[r->nsites] = (struct create_site){copy, NULL, {0}, 0};
	ss_tally_init(&r->sites[r->nsites].creates);
	return &r->sites[r->nsites++];
}

static void push(struct thread *t, long long context)
{
	if (t->depth < SS_CONTEXT_STACK)
		t->stack[t->depth++] = t->current;
	t->current = context;
}

static void pop(struct thread *t)
{
	t->current = t->depth > 0 ? t->stack[--t->depth] : -1;
}

/* One row: a context call changes its thread's state, work counts for its context. Returns 0
 * when out of memory. */
static int replay_row(struct replay *r, const struct db_state *st, sqlite3_stmt *stmt)
{
	long long tid = sqlite3_column_int64(stmt, 0);
	const char *api = (const char *)sqlite3_column_text(stmt, 1);
	long long start = sqlite3_column_int64(stmt, 3);
	long long ns = sqlite3_column_int64(stmt, 4) - start;
	size_t step;
	int ok = sqlite3_column_int64(stmt, 5) == 0;
	long long handle = column_or(stmt, 6, 0), device = column_or(stmt, 7, -1);
	const char *site = (const char *)sqlite3_column_text(stmt, 8);
	struct thread *t = thread_of(r, tid);
	int steady = ss_steps_phase(&st->steps, start, &step) == SS_PHASE_STEADY;
	long long c;

	if (ns < 0)
		ns = 0;

	if (!t || !api)
		return t != NULL;
	if (!site) { /* work */
		c = t->current;
		if (c < 0 && (c = context_of(r, 0, CONTEXT_EARLIER, -1)) == -2)
			return 0;
		if (c >= 0)
			ss_tally_add(&r->contexts[c].work, &st->steps, start, ns, 1);
		return 1;
	}
	if (!ok)
		return 1;
	if (!strncmp(api, "cuCtxCreate", 11)) {
		/* a new context, even where a destroyed one had its handle */
		for (size_t i = 0; i < r->ncontexts; i++)
			if (r->contexts[i].handle == handle)
				r->contexts[i].alive = 0;
		if ((c = context_of(r, handle, CONTEXT_CREATED, device)) == -2)
			return 0;
		if (!(r->contexts[c].create_site = xstrdup(site)))
			return 0;
		push(t, c);
		struct create_site *s = create_site_of(r, site);
		if (!s)
			return 0;
		ss_tally_add(&s->creates, &st->steps, start, ns, 1);
		return 1;
	}
	if (!strcmp(api, "cuDevicePrimaryCtxRetain"))
		return context_of(r, handle, CONTEXT_PRIMARY, device) != -2;
	if (!strcmp(api, "cuCtxPopCurrent_v2")) {
		if (t->current >= 0)
			ss_tally_add(&r->contexts[t->current].switches, &st->steps, start, ns, 1);
		pop(t);
		return 1;
	}
	if (!handle && !strcmp(api, "cuCtxSetCurrent")) {
		t->current = -1;
		return 1;
	}
	if ((c = context_of(r, handle, CONTEXT_OTHER, -1)) == -2)
		return 0;
	if (!strcmp(api, "cuCtxDestroy_v2")) {
		struct context *x = &r->contexts[c];
		free(x->destroy_site);
		if (!(x->destroy_site = xstrdup(site)))
			return 0;
		x->alive = 0;
		if (t->current == c)
			pop(t);
		if (steady && x->create_site) {
			struct create_site *s = create_site_of(r, x->create_site);
			if (!s)
				return 0;
			s->destroy_ns += ns;
			if (!s->destroy_site && !(s->destroy_site = xstrdup(site)))
				return 0;
		}
		return 1;
	}
	ss_tally_add(&r->contexts[c].switches, &st->steps, start, ns, 1);
	if (!strcmp(api, "cuCtxPushCurrent_v2"))
		push(t, c);
	else /* cuCtxSetCurrent */
		t->current = c;
	return 1;
}

static const char *kind_name(enum context_kind kind)
{
	switch (kind) {
	case CONTEXT_PRIMARY:
		return "the device's primary context";
	case CONTEXT_EARLIER:
		return "another context (the device's primary one, or one made current before the "
		       "recording started)";
	case CONTEXT_CREATED:
		return "a context made by cuCtxCreate";
	default:
		return "another context";
	}
}

static int add_context_finding(struct loader *ld, struct db_state *st, const char *site,
			       long long count, long long host_ns, long long steps, char *detail)
{
	if (ss_finding_at(ld->report, ss_rule_private_context.id, site)) {
		free(detail);
		return SS_EXIT_OK;
	}
	int code = add_finding(ld, &ss_rule_private_context, st->rank, count, host_ns, 0, 0, -1,
			       xstrdup(site), detail);
	if (code == SS_EXIT_OK)
		set_phase(&ld->report->findings[ld->report->nfindings - 1], &st->steps, 1, steps);
	return code;
}

/* The findings: per-step creations first (they carry a measured cost), then contexts working
 * beside another of their device. */
static int report_contexts(struct loader *ld, struct db_state *st, struct replay *r)
{
	int code = SS_EXIT_OK;

	for (size_t i = 0; code == SS_EXIT_OK && i < r->nsites; i++) {
		struct create_site *s = &r->sites[i];
		long long host_ns = s->creates.ns + s->destroy_ns;
		if (s->creates.n < 2 ||
		    !ss_steps_recurring(&st->steps, s->creates.steps, s->creates.n))
			continue;
		code = add_context_finding(
		    ld, st, s->site, s->creates.n, host_ns, s->creates.steps,
		    format("%lld contexts made in the steady state (cuCtxCreate), each destroyed "
			   "again: every step pays a context's creation and a wait for its work at "
			   "the destroy; %.3f ms of host time in both",
			   s->creates.n, ms(host_ns)));
		if (code == SS_EXIT_OK && s->destroy_site)
			code = add_context_finding(
			    ld, st, s->destroy_site, s->creates.n, 0, s->creates.steps,
			    format(
				"the destroy of the contexts made every step at %s, which carries "
				"the cost (the fix changes both lines)",
				s->site));
	}
	/* a context of no known device is another of the same device only where every context of
	 * a known device is on one device: one context per GPU, made by cuCtxCreate, is no finding
	 */
	long long one_device = -1;
	int several_devices = 0;
	for (size_t i = 0; i < r->ncontexts; i++) {
		long long device = r->contexts[i].device;
		if (device >= 0 && one_device >= 0 && device != one_device)
			several_devices = 1;
		if (device >= 0)
			one_device = device;
	}
	for (size_t i = 0; code == SS_EXIT_OK && i < r->ncontexts; i++) {
		struct context *p = &r->contexts[i], *other = NULL;
		if (p->kind != CONTEXT_CREATED || !p->create_site ||
		    !ss_steps_recurring(&st->steps, p->work.steps, p->work.n))
			continue;
		for (size_t j = 0; j < r->ncontexts && !other; j++) {
			struct context *q = &r->contexts[j];
			int same_device = q->device >= 0 && p->device >= 0 ? q->device == p->device
									   : !several_devices;
			if (j != i && same_device &&
			    ss_steps_recurring(&st->steps, q->work.steps, q->work.n))
				other = q;
		}
		if (!other)
			continue;
		const char *sites[2] = {p->create_site, p->destroy_site};
		for (int k = 0; k < 2 && code == SS_EXIT_OK; k++) {
			if (!sites[k])
				continue;
			code = add_context_finding(
			    ld, st, sites[k], 1, p->switches.ns, p->work.steps,
			    k == 0
				? format("a context of its own on device %lld (cuCtxCreate) beside "
					 "%s, both given work in the steady state (%lld and %lld "
					 "calls): kernels of different contexts never run at the "
					 "same time, the GPU switches between them (not measured "
					 "here); making it current and leaving it took %.3f ms of "
					 "host time",
					 p->device, kind_name(other->kind), p->work.n,
					 other->work.n, ms(p->switches.ns))
				: format(
				      "the destroy of the context made at %s, which worked beside "
				      "%s in the steady state: one context shared would do "
				      "(the fix changes both lines)",
				      p->create_site, kind_name(other->kind)));
		}
	}
	return code;
}

static int run_private_context(struct loader *ld, struct db_state *st)
{
	struct replay r = {0};
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, ANY_CREATED_SQL, &stmt);
	long long created = 0;

	if (code != SS_EXIT_OK)
		return code;
	if ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		created = sqlite3_column_int64(stmt, 0);
	code = end_rows(ld, st, stmt, rc == SQLITE_ROW ? SQLITE_DONE : rc, code);
	if (code != SS_EXIT_OK || created == 0)
		return code;
	code = prepare(ld, st, CALLS_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		if (!replay_row(&r, st, stmt)) {
			code = out_of_memory(ld);
			break;
		}
	code = end_rows(ld, st, stmt, rc, code);
	if (code == SS_EXIT_OK)
		code = report_contexts(ld, st, &r);
	for (size_t i = 0; i < r.ncontexts; i++) {
		free(r.contexts[i].create_site);
		free(r.contexts[i].destroy_site);
	}
	for (size_t i = 0; i < r.nsites; i++) {
		free(r.sites[i].site);
		free(r.sites[i].destroy_site);
	}
	free(r.contexts);
	free(r.threads);
	free(r.sites);
	return code;
}

const struct ss_rule ss_rule_private_context = {
    .id = "private-context",
    .advice = "Share one context per device: retain the device's primary context "
	      "(cuDevicePrimaryCtxRetain, released with cuDevicePrimaryCtxRelease), which the "
	      "runtime uses too, instead of making one with cuCtxCreate, and make it once, not "
	      "every step: kernels of different contexts never run at the same time.",
    .phase = SS_RULE_DATABASE,
    .run_database = run_private_context,
};
