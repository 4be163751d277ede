/*
 * report/rules/alloc_in_loop.c: the alloc-in-loop rule (docs/rules.md), a site rule on the
 * aggregate (SS_RULE_SITE): allocations and frees that synchronize the device (class S6 without
 * a direction: cuMemUnmap and cuMemSetAccess among them), and the driver's physical allocations
 * of virtual memory management (cuMemCreate, cuMemMap, cuMemRelease: X1, host time only), per
 * call site, once the site recurs in the steady state (steps.h). Then
 * ss_alloc_regrowth: a caching allocator's allocations that only replace what a steady free of
 * the same allocator released are that free's consequence (docs/rules.md); and
 * ss_vmm_mappings: mapping a chunk cuMemCreate made, and giving it access, are part of that
 * allocation (docs/rules.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis_int.h"
#include "../commands.h"
#include "../db.h"

/* alloc-in-loop: a site with fewer calls is not reported even as `info` (one cudaMalloc per
 * buffer at setup is how programs start). Whether it costs per step is steps.h's question. */
#define SS_LOOP_MIN_CALLS 2

/* S6 calls that are not allocations: a stack size set (rules/stack_limit_in_loop.c) */
#define STACK_LIMIT_APIS "('cudaDeviceSetLimit', 'cuCtxSetLimit')"

/* The virtual memory management calls that do not synchronize (X1): they cost host time. */
#define VMM_PHYSICAL_APIS "'cuMemCreate', 'cuMemMap', 'cuMemRelease'"

static int names_vmm(const char *apis)
{
	return strstr(apis, "cuMemCreate") || strstr(apis, "cuMemMap ") ||
	       strstr(apis, "cuMemRelease") || strstr(apis, "cuMemUnmap") ||
	       strstr(apis, "cuMemSetAccess");
}

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	if (strstr(apis, "cuMemCreate") || strstr(apis, "cuMemMap ") ||
	    strstr(apis, "cuMemRelease"))
		return format("%s (physical memory created, mapped or released by the driver each "
			      "time)",
			      apis);
	return format("%s (each one synchronizes the device)", apis);
}

/* The opening of the detail of a finding that makes a library object every step
 * (ss_library_object_setup): a summary finds its advice there (summary.c). */
#define LIBRARY_OBJECT_MARK "a library object made every step"
#define LIBRARY_OBJECT_ADVICE                                                                      \
	"Make the library's object (a cuRAND generator, a cuBLAS handle, a cuFFT plan) once "      \
	"before the loop and reuse it: making it and its first use allocate and synchronize the "  \
	"device every time."

static const char *advice_for(const char *apis)
{
	if (strstr(apis, LIBRARY_OBJECT_MARK))
		return LIBRARY_OBJECT_ADVICE;
	if (strstr(apis, SS_AUTOTUNE_MARK)) /* ss_autotune_model_call */
		return SS_AUTOTUNE_ADVICE;
	if (!names_vmm(apis))
		return NULL;
	return "Keep the physical memory mapped across steps: grow the reserved range when it must "
	       "grow, and unmap and release chunks at teardown (or when memory runs short), not "
	       "every step: cuMemUnmap synchronizes the device, and cuMemCreate and cuMemMap ask "
	       "the driver for memory again.";
}

const struct ss_rule ss_rule_alloc_in_loop = {
    .id = "alloc-in-loop",
    .advice = "Allocate once before the loop and reuse the buffer, or use a caching allocator or "
	      "cudaMallocAsync/cudaFreeAsync, which do not synchronize the device.",
    .phase = SS_RULE_SITE,
    .sql = SITE_RULE_SQL("(g.class = 'S6' AND g.dir IS NULL AND a.name NOT IN " STACK_LIMIT_APIS
			 ") OR a.name IN (" VMM_PHYSICAL_APIS ")"),
    .min_count = SS_LOOP_MIN_CALLS,
    .spread_recurs = 1, /* a cache grown every few steps all through the loop (steps.h) */
    .detail = detail,
    .advice_for = advice_for,
};

/* Per site: whether its cudaMalloc and cudaFree calls came through torch's caching allocator
 * (a native frame in libc10_cuda: the sites of Python programs are the script's lines). */
/* torch's caching allocator serves blocks of up to 1 MiB from segments of 2 MiB (its small pool) */
#define SMALL_POOL_SEGMENT "2097152"
#define REGROWTH_SQL                                                                               \
	"SELECT coalesce(s.text, '" NO_SITE "'), max(a.name = 'cudaFree'),"                        \
	" max(a.name = 'cudaMalloc'), max(coalesce(k.frames LIKE '%libc10_cuda%', 0)),"            \
	" 4 * sum(a.name = 'cudaMalloc' AND c.bytes = " SMALL_POOL_SEGMENT ")"                     \
	"  >= 3 * sum(a.name = 'cudaMalloc')"                                                      \
	" FROM calls c JOIN apis a ON a.id = c.api_id LEFT JOIN sites s ON s.id = c.site_id"       \
	" LEFT JOIN stacks k ON k.id = c.native_stack_id"                                          \
	" WHERE a.name IN ('cudaMalloc', 'cudaFree') GROUP BY 1"

/* One row of a per-site query (REGROWTH_SQL, VMM_SITES_SQL): the site and its figures. */
struct site_figures {
	char *site;
	long long v[4];
};

static void site_figures_free(struct site_figures *sites, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(sites[i].site);
	free(sites);
}

/* Runs SQL, whose rows are a site and up to four figures, into *sites (none when alloc-in-loop
 * found nothing: nothing to fold). */
static int load_site_figures(struct loader *ld, struct db_state *st, const char *sql,
			     struct site_figures **sites, size_t *n)
{
	struct ss_report *r = ld->report;
	size_t cap = 0, any = 0;
	sqlite3_stmt *stmt;
	int rc, code;

	*sites = NULL;
	*n = 0;
	while (any < r->nfindings && r->findings[any].rule != ss_rule_alloc_in_loop.id)
		any++;
	if (any == r->nfindings)
		return SS_EXIT_OK;
	code = prepare(ld, st, sql, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct site_figures one = {xstrdup((const char *)sqlite3_column_text(stmt, 0)),
					   {0}};

		for (int c = 1; c < sqlite3_column_count(stmt) && c <= 4; c++)
			one.v[c - 1] = sqlite3_column_int64(stmt, c);
		if (!one.site || !reserve(sites, &cap, *n, sizeof(**sites))) {
			free(one.site);
			code = out_of_memory(ld);
			break;
		}
		(*sites)[(*n)++] = one;
	}
	return end_rows(ld, st, stmt, rc, code);
}

/* torch's caching allocator growing its small pool all through the loop, with no free behind it
 * (small tensors kept every step: a list of losses), asks the driver for a 2 MiB segment every
 * step or few; what that costs under 1% of the step is not worth a finding above `info` (a
 * segment a step beside a 49 ms step: t143 of examples/corpus; t135, t138). A cache grown by
 * larger blocks (a KV cache concatenated one token longer: t51) and a program's own cudaMalloc
 * per step keep no floor: planted ones cost 0.2-1% of long steps (c33, c113, d56). A site is
 * small-pool growth when three quarters of its cudaMalloc calls are small-pool segments: the
 * large pool's segments of the first steps, while the activations find their sizes, do not
 * make it a cache of larger blocks (t167: 69 segments after a few 20 MiB ones). */
#define ALLOCATOR_GROWTH_FLOOR_PERMILLE 10

/* A caching allocator (torch's) asks the driver for memory only while it grows; in the steady
 * state it grows again only after something released its cache: torch.cuda.empty_cache()
 * every step frees (cudaFree through the allocator) and the next forward pass allocates it
 * all again (cudaMalloc through the allocator, on the lines that happen to need memory first,
 * on any thread). Those allocations are the free's cost, not a line to fix: their finding is
 * `info`, naming the free's site, and their host time is added to the free's finding. */
int ss_alloc_regrowth(struct loader *ld, struct db_state *st)
{
	enum { FREES, MALLOCS, ALLOCATOR, SMALL_SEGMENTS }; /* REGROWTH_SQL's figures */
	struct ss_report *r = ld->report;
	struct site_figures *sites;
	size_t n;
	struct ss_finding *cause = NULL;
	int code = load_site_figures(ld, st, REGROWTH_SQL, &sites, &n);

	/* the cause: the costliest steady free through the allocator */
	for (size_t i = 0; code == SS_EXIT_OK && i < n; i++) {
		struct ss_finding *f;

		if (!sites[i].v[FREES] || !sites[i].v[ALLOCATOR])
			continue;
		f = ss_steady_finding(r, ss_rule_alloc_in_loop.id, sites[i].site);
		if (f && (!cause || f->blocked_ns > cause->blocked_ns))
			cause = f;
	}
	for (size_t i = 0; code == SS_EXIT_OK && i < n; i++) {
		struct ss_finding *f;

		if (sites[i].v[FREES] || !sites[i].v[MALLOCS] || !sites[i].v[ALLOCATOR])
			continue;
		f = ss_steady_finding(r, ss_rule_alloc_in_loop.id, sites[i].site);
		if (f && cause && f != cause)
			code = fold_finding(ld, cause, f, "allocations",
					    " the caching allocator made to grow back",
					    "the caching allocator allocating again what a free "
					    "released every step: the free's finding carries this cost");
		else if (f && !cause && sites[i].v[SMALL_SEGMENTS]) /* small blocks kept: 1% */
			f->floor_permille = ALLOCATOR_GROWTH_FLOOR_PERMILLE;
	}
	site_figures_free(sites, n);
	return code;
}

/* Per site: whether it creates physical chunks (cuMemCreate) and whether it maps them or gives
 * them access (cuMemMap, cuMemSetAccess), with its calls of each kind. */
#define VMM_SITES_SQL                                                                              \
	"SELECT coalesce(s.text, '" NO_SITE "'), sum(a.name = 'cuMemCreate'),"                     \
	" sum(a.name IN ('cuMemMap', 'cuMemSetAccess'))"                                           \
	" FROM calls c JOIN apis a ON a.id = c.api_id LEFT JOIN sites s ON s.id = c.site_id"       \
	" WHERE a.name IN ('cuMemCreate', 'cuMemMap', 'cuMemSetAccess') GROUP BY 1"

/* A chunk of virtual memory management is created (cuMemCreate), mapped (cuMemMap) and given
 * access (cuMemSetAccess) on three lines, and one fix (keep the chunks mapped) removes all
 * three: the steady findings at sites that only map or give access are folded into the steady
 * cuMemCreate finding whose call count is nearest theirs (each chunk is mapped and given access
 * once), which carries their cost and is ranked by it. */
int ss_vmm_mappings(struct loader *ld, struct db_state *st)
{
	enum { CREATES, MAPS }; /* VMM_SITES_SQL's figures */
	struct ss_report *r = ld->report;
	struct site_figures *sites;
	size_t n;
	int code = load_site_figures(ld, st, VMM_SITES_SQL, &sites, &n);

	for (size_t i = 0; code == SS_EXIT_OK && i < n; i++) {
		struct ss_finding *part, *owner = NULL;

		if (sites[i].v[CREATES] || !sites[i].v[MAPS])
			continue;
		part = ss_steady_finding(r, ss_rule_alloc_in_loop.id, sites[i].site);
		for (size_t k = 0; part && k < n; k++) {
			struct ss_finding *f;

			if (!sites[k].v[CREATES] ||
			    !(f = ss_steady_finding(r, ss_rule_alloc_in_loop.id, sites[k].site)))
				continue;
			if (!owner ||
			    llabs(f->count - part->count) < llabs(owner->count - part->count))
				owner = f;
		}
		if (owner)
			code =
			    fold_finding(ld, owner, part, "mappings", " of the chunks it created",
					 "mapping the chunks cuMemCreate made, or giving them "
					 "access: the creation's finding carries this cost");
	}
	site_figures_free(sites, n);
	return code;
}

/* The native stacks of the calls of class :class at the site :site. */
#define SITE_STACKS_SQL                                                                            \
	"SELECT DISTINCT k.frames FROM calls c JOIN sites s ON s.id = c.site_id"                   \
	" JOIN stacks k ON k.id = c.native_stack_id WHERE c.class = :class AND s.text = :site"

/* What a finding's calls (S1 for host-sync, S6 for alloc-in-loop) go through: the library of
 * every innermost frame (one library that is neither the runtime nor the driver), and whether
 * some pass through a function of it that makes an object. */
struct library_calls {
	char module[128]; /* "" when not one library */
	char maker[128];  /* a frame of the library named ...Create... or ...Plan...: its symbol,
			   * or "" */
};

/* The module of one frame line: "sym+0x10 (libcurand.so.10)" or "libcurand.so.10+0xaf3b3". */
static void frame_module(const char *frame, size_t len, char *out, size_t n)
{
	const char *open = memchr(frame, '(', len), *end;

	if (open) {
		end = memchr(open, ')', len - (size_t)(open - frame));
		frame = open + 1;
	} else {
		end = memchr(frame, '+', len);
	}
	len = end ? (size_t)(end - frame) : 0;
	if (len >= n)
		len = n - 1;
	memcpy(out, frame, len);
	out[len] = 0;
}

static int is_library(const char *module)
{
	return strncmp(module, "lib", 3) == 0 && strstr(module, ".so") &&
	       strncmp(module, "libcudart.so", 12) != 0 && strncmp(module, "libcuda.so", 10) != 0;
}

static int library_calls(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt,
			 const char *site, const char *cls, struct library_calls *lc)
{
	int rc, mixed = 0;

	memset(lc, 0, sizeof(*lc));
	sqlite3_reset(stmt);
	sqlite3_bind_text(stmt, sqlite3_bind_parameter_index(stmt, ":site"), site, -1,
			  SQLITE_TRANSIENT);
	sqlite3_bind_text(stmt, sqlite3_bind_parameter_index(stmt, ":class"), cls, -1,
			  SQLITE_STATIC);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *frames = (const char *)sqlite3_column_text(stmt, 0);
		char module[sizeof(lc->module)];

		if (!frames)
			continue;
		frame_module(frames, strcspn(frames, "\n"), module, sizeof(module));
		if (!is_library(module) || (lc->module[0] && strcmp(module, lc->module) != 0))
			mixed = 1;
		else
			snprintf(lc->module, sizeof(lc->module), "%s", module);
		/* a frame of the library whose symbol names a maker */
		for (const char *line = frames; *line;) {
			size_t len = strcspn(line, "\n");
			char in[sizeof(lc->module)];
			const char *plus = memchr(line, '+', len);

			frame_module(line, len, in, sizeof(in));
			if (plus && strcmp(in, module) == 0) {
				size_t sym = (size_t)(plus - line);
				for (size_t k = 0; k + 4 <= sym && !lc->maker[0]; k++)
					if (strncmp(line + k, "Create", 6) == 0 ||
					    strncmp(line + k, "Plan", 4) == 0)
						snprintf(lc->maker, sizeof(lc->maker), "%.*s",
							 (int)sym, line);
			}
			line += len + (line[len] == '\n');
		}
	}
	if (mixed)
		lc->module[0] = 0;
	sqlite3_reset(stmt);
	return rc == SQLITE_DONE ? SS_EXIT_OK
				 : ss_db_failure(st->db, rc, st->path, ld->err, ld->errlen);
}

/* Whether two sites ("FILE:LINE in FUNCTION") are lines of one function of one file. */
static int same_function(const char *a, const char *b)
{
	const char *in_a = strstr(a, " in "), *in_b = strstr(b, " in ");
	const char *colon_a = strrchr(a, ':'), *colon_b = strrchr(b, ':');

	if (!in_a || !in_b || !colon_a || !colon_b || colon_a > in_a || colon_b > in_b)
		return 0;
	return colon_a - a == colon_b - b && strncmp(a, b, (size_t)(colon_a - a)) == 0 &&
	       strcmp(in_a, in_b) == 0;
}

/* Whether an alloc-in-loop detail's APIs (its opening "API xN, ...") free or unregister. */
static int frees(const char *detail)
{
	size_t apis = strcspn(detail, "(;");

	for (size_t k = 0; k + 4 <= apis; k++)
		if (strncmp(detail + k, "Free", 4) == 0 || strncmp(detail + k, "Unreg", 5) == 0 ||
		    strncmp(detail + k, "Destroy", 7) == 0 ||
		    strncmp(detail + k, "Release", 7) == 0)
			return 1;
	return 0;
}

static int steady_user_line(const struct ss_finding *f)
{
	return !f->cleared && strcmp(f->phase, "steady") == 0 && strstr(f->site, " in ") != NULL;
}

/* A library object made every step (curandCreateGenerator, cublasCreate_v2, cufftPlan1d,
 * cudnnCreate: a function of a library whose name has "Create" or "Plan", through which a steady
 * alloc-in-loop finding's calls go) makes the library work again at the object's first use: a
 * fresh cuRAND generator allocates and seeds its state, and synchronizes the device, at its first
 * curandGenerate (examples/corpus c92). Making the object once removes all of it. A steady
 * finding of device syncs (host-sync: its S1 calls) or allocations (alloc-in-loop) on another line
 * of the same function, whose calls all go through the same library (their innermost frames)
 * and no maker of it (and, for allocations, no free: the object's end is its own line), with as
 * many calls as the making finding, or a whole multiple or part of them (several allocations
 * per object, or per use), is folded into that finding
 * (docs/rules.md, alloc-in-loop). Runs after the GPU timeline's figures are in. */
int ss_library_object_setup(struct loader *ld, struct db_state *st)
{
	struct ss_report *r = ld->report;
	sqlite3_stmt *stmt = NULL;
	struct library_calls *owners = NULL;
	size_t n = r->nfindings;
	int code = SS_EXIT_OK, any = 0;

	for (size_t i = 0; i < n && !any; i++)
		any = r->findings[i].rule == ss_rule_alloc_in_loop.id &&
		      steady_user_line(&r->findings[i]);
	if (!any)
		return SS_EXIT_OK;
	owners = calloc(n, sizeof(*owners));
	if (!owners)
		return out_of_memory(ld);
	code = prepare(ld, st, SITE_STACKS_SQL, &stmt);
	for (size_t i = 0; code == SS_EXIT_OK && i < n; i++) {
		const struct ss_finding *f = &r->findings[i];

		if ((f->rule == ss_rule_alloc_in_loop.id || f->rule == ss_rule_host_sync.id) &&
		    steady_user_line(f))
			code = library_calls(ld, st, stmt, f->site,
					     f->rule == ss_rule_host_sync.id ? "S1" : "S6",
					     &owners[i]);
	}
	for (size_t i = 0; code == SS_EXIT_OK && i < n; i++) {
		struct ss_finding *f = &r->findings[i], *owner = NULL;
		const struct library_calls *lf = &owners[i];
		int sync = f->rule == ss_rule_host_sync.id;

		if (!lf->module[0] || lf->maker[0] || !steady_user_line(f) ||
		    (!sync && (f->rule != ss_rule_alloc_in_loop.id || frees(f->detail))))
			continue; /* a first use allocates: frees are the object's end */
		for (size_t k = 0; k < n && !owner; k++) {
			struct ss_finding *o = &r->findings[k];

			if (k != i && o->rule == ss_rule_alloc_in_loop.id && steady_user_line(o) &&
			    owners[k].maker[0] && strcmp(owners[k].module, lf->module) == 0 &&
			    o->count > 0 && f->count > 0 &&
			    (f->count % o->count == 0 || o->count % f->count == 0) &&
			    same_function(o->site, f->site))
				owner = o;
		}
		if (!owner)
			continue;
		if (!strstr(owner->detail, LIBRARY_OBJECT_MARK)) { /* in the opening: summary.c */
			const struct library_calls *lo = &owners[owner - r->findings];
			size_t opening = strcspn(owner->detail, ";");
			char *detail =
			    format("%.*s, in %s (%s): " LIBRARY_OBJECT_MARK "%s", (int)opening,
				   owner->detail, lo->maker, lo->module, owner->detail + opening);

			if (!detail) {
				code = out_of_memory(ld);
				break;
			}
			free(owner->detail);
			owner->detail = detail;
			owner->advice = LIBRARY_OBJECT_ADVICE;
		}
		code =
		    fold_finding(ld, owner, f, sync ? "device syncs" : "allocations",
				 " by the library at the new object's first use",
				 "the first use of a library object made every step: the finding "
				 "where it is made carries this cost");
	}
	sqlite3_finalize(stmt);
	free(owners);
	return code;
}
