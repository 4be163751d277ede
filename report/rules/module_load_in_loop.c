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
 * load's (the pairing: report/paired_lines.c).
 */
#include "../analysis_int.h"
#include "../commands.h"

/* A module loaded once at setup is how modules are used: two or more loads at a site that recur
 * in the steady state (steps.h) are a load per step. The same holds for the lookups of their
 * functions. */
#define SS_MODULE_LOAD_MIN_CALLS 2

/* A load or lookup whose site is inside the CUDA runtime library itself was made by the runtime,
 * not the program: its lazy loading of the kernels a runtime call reached first (one image per
 * call, in the first iterations), which no line of the program can move out of the loop. A
 * program's own cudaLibraryLoadData is recorded as that call (DRIVER-3), at its line; a static
 * runtime's driver calls are sited at the program's line (interpose/native.c). */
#define NOT_BY_RUNTIME " AND coalesce(s.module, '') NOT LIKE '%libcudart.so%'"
/* The entry points, in SQL (a.name: apis.name). */
#define LOAD_APIS                                                                                  \
	"a.name IN ('cuModuleLoad', 'cuModuleLoadData', 'cuModuleLoadDataEx',"                     \
	" 'cuModuleLoadFatBinary', 'cuLibraryLoadData', 'cuLibraryLoadFromFile',"                  \
	" 'cudaLibraryLoadData', 'cudaLibraryLoadFromFile')"
#define LOOKUP_APIS                                                                                \
	"a.name IN ('cuModuleGetFunction', 'cuLibraryGetKernel', 'cudaLibraryGetKernel')"
#define UNLOAD_APIS "a.name IN ('cuModuleUnload', 'cuLibraryUnload', 'cudaLibraryUnload')"

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
    .sql = SITE_RULE_SQL("g.class = 'X1' AND " LOAD_APIS NOT_BY_RUNTIME),
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
#define LOOKUP_SITES_SQL SITE_RULE_SQL("g.class = 'X1' AND " LOOKUP_APIS NOT_BY_RUNTIME)

/* Every successful load and unload in time order, as MODULES_SQL, and the unload sites. */
#define UNLOADS_SQL                                                                                \
	"SELECT c.aux, " UNLOAD_APIS ", coalesce(s.text, '" NO_SITE "') FROM calls c"              \
	" JOIN apis a ON a.id = c.api_id LEFT JOIN sites s ON s.id = c.site_id"                    \
	" WHERE c.class = 'X1' AND c.ret = 0 AND c.aux IS NOT NULL"                                \
	" AND (" LOAD_APIS " OR " UNLOAD_APIS ") ORDER BY c.start_ns, c.id"
#define UNLOAD_SITES_SQL SITE_RULE_SQL("g.class = 'X1' AND " UNLOAD_APIS NOT_BY_RUNTIME)

/*
 * The module loaded every step is looked into every step too (load, get the function, launch
 * it): the lookup's line is part of the same reload, and with lazy loading it is where the
 * fresh module's function is loaded onto the device; it changes with the same fix. A lookup
 * site whose calls recur in the steady state and look into what a steady load finding's site
 * made (most of them, where several) gets a finding of its own. The pair is one cost, as
 * graph-instantiate-in-loop's instantiation and destroy are: the load's finding takes the
 * lookups' host time into its own (its detail names them), and the lookup's finding costs that
 * same total as its estimate, so both rank alike and the lookup's comes right after. A lookup
 * into a module loaded once at setup pairs with no steady load finding. Then the unloads, the
 * same way: a module loaded every step and unloaded every step (examples/corpus d64: a query's
 * JIT-compiled module, unloaded after its reply) is released at a line that changes with the
 * same fix, as graph-instantiate-in-loop flags the destroys of its executable graphs; an unload
 * after the loop (teardown) does not recur in the steady state and is never flagged.
 */
int ss_module_function_lookups(struct loader *ld, struct db_state *st)
{
	static const struct ss_line_pairing pairings[] = {
	    {
		.rule = &ss_rule_module_load_in_loop,
		.calls_sql = MODULES_SQL,
		.use_sites_sql = LOOKUP_SITES_SQL,
		.use_releases = 0, /* one module serves any number of lookups */
		.uses = "lookups",
		.of_what = "of the functions of the modules it loaded",
		.every_step = "gets every step a function of the module loaded at",
		.fix = "a fresh module's function is loaded onto the device at its first lookup or "
		       "launch: load the module once at setup and keep the function",
	    },
	    {
		.rule = &ss_rule_module_load_in_loop,
		.calls_sql = UNLOADS_SQL,
		.use_sites_sql = UNLOAD_SITES_SQL,
		.use_releases = 1, /* an unload ends its module */
		.uses = "unloads",
		.of_what = "of the modules it loaded",
		.every_step = "unloads every step the module loaded at",
		.fix = "load the module once at setup and unload it after the loop",
	    }};

	return ss_pair_lines(ld, st, pairings, sizeof(pairings) / sizeof(pairings[0]));
}
