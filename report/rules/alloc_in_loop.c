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
#include <stdlib.h>
#include <string.h>

#include "../analysis_int.h"
#include "../commands.h"

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

static const char *advice_for(const char *apis)
{
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
#define REGROWTH_SQL                                                                               \
	"SELECT coalesce(s.text, '" NO_SITE "'), max(a.name = 'cudaFree'),"                        \
	" max(a.name = 'cudaMalloc'), max(coalesce(k.frames LIKE '%libc10_cuda%', 0))"             \
	" FROM calls c JOIN apis a ON a.id = c.api_id LEFT JOIN sites s ON s.id = c.site_id"       \
	" LEFT JOIN stacks k ON k.id = c.native_stack_id"                                          \
	" WHERE a.name IN ('cudaMalloc', 'cudaFree') GROUP BY 1"

/* One row of a per-site query (REGROWTH_SQL, VMM_SITES_SQL): the site and its figures. */
struct site_figures {
	char *site;
	long long v[3];
};

static void site_figures_free(struct site_figures *sites, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(sites[i].site);
	free(sites);
}

/* Runs SQL, whose rows are a site and up to three figures, into *sites (none when alloc-in-loop
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

		for (int c = 1; c < sqlite3_column_count(stmt) && c <= 3; c++)
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

static struct ss_finding *steady_alloc_finding(struct ss_report *r, const char *site)
{
	for (size_t i = 0; i < r->nfindings; i++) {
		struct ss_finding *f = &r->findings[i];

		if (f->rule == ss_rule_alloc_in_loop.id && !f->cleared &&
		    strcmp(f->phase, "steady") == 0 && strcmp(f->site, site) == 0)
			return f;
	}
	return NULL;
}

/* A caching allocator (torch's) asks the driver for memory only while it grows; in the steady
 * state it grows again only after something released its cache: torch.cuda.empty_cache()
 * every step frees (cudaFree through the allocator) and the next forward pass allocates it
 * all again (cudaMalloc through the allocator, on the lines that happen to need memory first,
 * on any thread). Those allocations are the free's cost, not a line to fix: their finding is
 * `info`, naming the free's site, and their host time is added to the free's finding. */
int ss_alloc_regrowth(struct loader *ld, struct db_state *st)
{
	enum { FREES, MALLOCS, ALLOCATOR }; /* REGROWTH_SQL's figures */
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
		f = steady_alloc_finding(r, sites[i].site);
		if (f && (!cause || f->blocked_ns > cause->blocked_ns))
			cause = f;
	}
	for (size_t i = 0; code == SS_EXIT_OK && cause && i < n; i++) {
		struct ss_finding *f;

		if (sites[i].v[FREES] || !sites[i].v[MALLOCS] || !sites[i].v[ALLOCATOR])
			continue;
		f = steady_alloc_finding(r, sites[i].site);
		if (f && f != cause)
			code = fold_finding(ld, cause, f, "allocations",
					    " the caching allocator made to grow back",
					    "the caching allocator allocating again what a free "
					    "released every step: the free's finding carries this cost");
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
		part = steady_alloc_finding(r, sites[i].site);
		for (size_t k = 0; part && k < n; k++) {
			struct ss_finding *f;

			if (!sites[k].v[CREATES] || !(f = steady_alloc_finding(r, sites[k].site)))
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
