/*
 * report/rules/module_load_in_loop.c: the module-load-in-loop rule (docs/rules.md), a site rule
 * on the aggregate (SS_RULE_SITE): modules and libraries loaded again and again in the steady
 * state (cuModuleLoad, cuModuleLoadData, cuModuleLoadDataEx, cuModuleLoadFatBinary,
 * cuLibraryLoadData, cuLibraryLoadFromFile, cudaLibraryLoadData, cudaLibraryLoadFromFile: class
 * X1), per call site. A load reads and parses the image and creates a module in the context,
 * and with lazy loading (the default since CUDA 12.2) each of its functions is loaded onto the
 * device at its first lookup or launch, so a module loaded every step pays all of that every
 * step; the cost is the loads' host time. Then ss_module_function_lookups: where the functions
 * of the modules loaded every step are also looked up every step (cuModuleGetFunction,
 * cuLibraryGetKernel, cudaLibraryGetKernel), the lookup's line is flagged too, right after the
 * load's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis_int.h"
#include "../commands.h"

/* A module loaded once at setup is how modules are used: two or more loads at a site that recur
 * in the steady state (steps.h) are a load per step. The same holds for the lookups of their
 * functions. */
#define SS_MODULE_LOAD_MIN_CALLS 2

/* The entry points, in SQL (a.name: apis.name). */
#define LOAD_APIS                                                                                  \
	"a.name IN ('cuModuleLoad', 'cuModuleLoadData', 'cuModuleLoadDataEx',"                     \
	" 'cuModuleLoadFatBinary', 'cuLibraryLoadData', 'cuLibraryLoadFromFile',"                  \
	" 'cudaLibraryLoadData', 'cudaLibraryLoadFromFile')"
#define LOOKUP_APIS                                                                                \
	"a.name IN ('cuModuleGetFunction', 'cuLibraryGetKernel', 'cudaLibraryGetKernel')"

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	return format("%s (each one reads and parses the image into a new module, whose functions "
		      "are loaded onto the device again); worst %.3f ms",
		      apis, ms(worst));
}

/* cost SS_COST_ESTIMATE: a load's finding has no estimate and costs its host time; a lookup's
 * finding costs what the one fix of both lines saves (ss_module_function_lookups). */
const struct ss_rule ss_rule_module_load_in_loop = {
    .id = "module-load-in-loop",
    .advice = "Load the module or library once at setup (cuModuleLoad, cuLibraryLoadData, "
	      "cudaLibraryLoadData) and keep the functions it holds (cuModuleGetFunction, "
	      "cuLibraryGetKernel) for every step instead of loading it again and looking them "
	      "up in the loop.",
    .phase = SS_RULE_SITE,
    .cost = SS_COST_ESTIMATE,
    .sql = SITE_RULE_SQL("g.class = 'X1' AND " LOAD_APIS),
    .min_count = SS_MODULE_LOAD_MIN_CALLS,
    .detail = detail,
};

/* ------------------------------------------------------------------ looked up every step */

/* Every successful load and lookup in time order, with the module or library it made or looked
 * into (calls.aux: CREATED_MODULE in interpose/wrapper.h, AUX of the lookup) and its site. */
#define MODULES_SQL                                                                                \
	"SELECT c.aux, " LOOKUP_APIS ", coalesce(s.text, '" NO_SITE "') FROM calls c"              \
	" JOIN apis a ON a.id = c.api_id LEFT JOIN sites s ON s.id = c.site_id"                    \
	" WHERE c.class = 'X1' AND c.ret = 0 AND c.aux IS NOT NULL"                                \
	" AND (" LOAD_APIS " OR " LOOKUP_APIS ") ORDER BY c.start_ns, c.id"

/* The lookup sites with enough calls, with the run's and the steady state's figures
 * (SITE_RULE_SQL's columns). */
#define LOOKUP_SITES_SQL SITE_RULE_SQL("g.class = 'X1' AND " LOOKUP_APIS)

struct module_call {
	long long module;
	size_t order; /* in time */
	int lookup;
	char *site;
};

/* How often a lookup site looked into what a load site made. */
struct module_pair {
	char *lookup_site, *load_site;
	long long n;
};

static int compare_module_calls(const void *a, const void *b)
{
	const struct module_call *x = a, *y = b;

	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

/* This rule's finding at site (steady ones only when steady is set), or NULL. */
static struct ss_finding *finding_at(struct ss_report *r, const char *site, int steady)
{
	for (size_t i = 0; i < r->nfindings; i++) {
		struct ss_finding *f = &r->findings[i];

		if (f->rule == ss_rule_module_load_in_loop.id && strcmp(f->site, site) == 0 &&
		    (!steady || (!f->cleared && strcmp(f->phase, "steady") == 0)))
			return f;
	}
	return NULL;
}

/* Reads MODULES_SQL and pairs each lookup with the latest load of the same module before it (a
 * handle's address comes back for later modules; one module serves any number of lookups). */
static int pair_lookups(struct loader *ld, struct db_state *st, struct module_pair **pairs,
			size_t *npairs)
{
	struct module_call *calls = NULL;
	size_t n = 0, cap = 0, cap_pairs = 0;
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, MODULES_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct module_call one = {sqlite3_column_int64(stmt, 0), n,
					  sqlite3_column_int(stmt, 1),
					  xstrdup((const char *)sqlite3_column_text(stmt, 2))};

		if (!one.site || !PUSH(calls, n, cap, one)) {
			free(one.site);
			code = out_of_memory(ld);
			break;
		}
	}
	code = end_rows(ld, st, stmt, rc, code);
	if (code == SS_EXIT_OK && n > 1)
		qsort(calls, n, sizeof(*calls), compare_module_calls);
	/* per module, in time order: a lookup pairs with the load last seen */
	for (size_t i = 0, made = SIZE_MAX; code == SS_EXIT_OK && i < n; i++) {
		if (i == 0 || calls[i].module != calls[i - 1].module)
			made = SIZE_MAX;
		if (!calls[i].lookup) {
			made = i;
			continue;
		}
		if (made == SIZE_MAX)
			continue; /* loaded before the recording, or by one not recorded */
		size_t p = 0;
		while (p < *npairs && (strcmp((*pairs)[p].lookup_site, calls[i].site) != 0 ||
				       strcmp((*pairs)[p].load_site, calls[made].site) != 0))
			p++;
		if (p == *npairs) {
			struct module_pair pair = {xstrdup(calls[i].site),
						   xstrdup(calls[made].site), 0};

			if (!pair.lookup_site || !pair.load_site ||
			    !PUSH(*pairs, *npairs, cap_pairs, pair)) {
				free(pair.lookup_site);
				free(pair.load_site);
				code = out_of_memory(ld);
				break;
			}
		}
		(*pairs)[p].n++;
	}
	for (size_t i = 0; i < n; i++)
		free(calls[i].site);
	free(calls);
	return code;
}

/*
 * The module loaded every step is looked into every step too (load, get the function, launch
 * it): the lookup's line is part of the same reload, and with lazy loading it is where the
 * fresh module's function is loaded onto the device; it changes with the same fix. A lookup
 * site whose calls recur in the steady state and look into what a steady load finding's site
 * made (most of them, where several) gets a finding of its own. The pair is one cost, as
 * graph-instantiate-in-loop's instantiation and destroy are: the load's finding takes the
 * lookups' host time into its own (its detail names them), and the lookup's finding costs that
 * same total as its estimate, so both rank alike and the lookup's comes right after. A lookup
 * into a module loaded once at setup pairs with no steady load finding, and an unload after
 * the loop (teardown) is never flagged.
 */
int ss_module_function_lookups(struct loader *ld, struct db_state *st)
{
	struct ss_report *r = ld->report;
	struct module_pair *pairs = NULL;
	size_t npairs = 0, any = 0, first = r->nfindings, nowners = 0, cap_owners = 0;
	char **owners = NULL; /* the load site of each lookup finding added */
	sqlite3_stmt *stmt;
	int rc, code;

	while (any < r->nfindings && !(r->findings[any].rule == ss_rule_module_load_in_loop.id &&
				       strcmp(r->findings[any].phase, "steady") == 0))
		any++;
	if (any == r->nfindings)
		return SS_EXIT_OK; /* no module loaded every step: no lookup to pair */
	code = pair_lookups(ld, st, &pairs, &npairs);
	if (code == SS_EXIT_OK)
		code = prepare(ld, st, LOOKUP_SITES_SQL, &stmt);
	if (code != SS_EXIT_OK)
		goto out;
	bind_named_int(stmt, ":min_count", SS_MODULE_LOAD_MIN_CALLS);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *site = (const char *)sqlite3_column_text(stmt, 0);
		long long count = sqlite3_column_int64(stmt, 8);
		long long blocked = sqlite3_column_int64(stmt, 9);
		long long worst = sqlite3_column_int64(stmt, 10);
		long long steady_rows = sqlite3_column_int64(stmt, 13);
		long long steps = sqlite3_column_int64(stmt, 14);
		const char *apis = (const char *)sqlite3_column_text(stmt, 15);
		struct ss_finding *owner = NULL;
		long long paired = 0;

		if (!site || !ss_steps_recurring(&st->steps, steps, steady_rows))
			continue; /* setup or teardown: how functions are looked up */
		for (size_t p = 0; p < npairs; p++) {
			struct ss_finding *f;

			if (strcmp(pairs[p].lookup_site, site) != 0 || pairs[p].n <= paired ||
			    !(f = finding_at(r, pairs[p].load_site, 1)))
				continue;
			owner = f;
			paired = pairs[p].n;
		}
		if (!owner || finding_at(r, site, 0))
			continue; /* ANALYSIS-2: a line that also loads keeps its one finding */
		char *more =
		    format("%s; and %lld lookups (%.3f ms) of the functions of the modules "
			   "it loaded, at %s",
			   owner->detail, count, ms(blocked), site);
		char *owner_site = xstrdup(owner->site); /* owner moves when the findings grow */
		if (!more || !owner_site || !PUSH(owners, nowners, cap_owners, owner_site)) {
			free(more);
			free(owner_site);
			code = out_of_memory(ld);
			break;
		}
		free(owner->detail);
		owner->detail = more;
		owner->blocked_ns += blocked;
		code =
		    add_finding(ld, &ss_rule_module_load_in_loop, st->rank, count, blocked, worst,
				-1, -1, xstrdup(site),
				format("%s: gets every step a function of the module loaded at %s, "
				       "whose finding carries these calls' host time; a fresh "
				       "module's function is loaded onto the device at its first "
				       "lookup or launch: load the module once at setup and keep "
				       "the function",
				       apis ? apis : "", owner_site));
		if (code != SS_EXIT_OK)
			break;
		set_phase(&r->findings[r->nfindings - 1], &st->steps, 1, steps);
	}
	code = end_rows(ld, st, stmt, rc, code);
	/* each lookup's cost: its load's, every lookup into its modules included */
	for (size_t i = 0; code == SS_EXIT_OK && i < nowners; i++)
		r->findings[first + i].estimate_ns = finding_at(r, owners[i], 1)->blocked_ns;
out:
	for (size_t p = 0; p < npairs; p++) {
		free(pairs[p].lookup_site);
		free(pairs[p].load_site);
	}
	free(pairs);
	for (size_t i = 0; i < nowners; i++)
		free(owners[i]);
	free(owners);
	return code;
}
