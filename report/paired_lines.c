/*
 * report/paired_lines.c: the second line of a rebuild every step, for the site rules whose
 * steady finding is at a line that makes a handle every step (graph-instantiate-in-loop's
 * instantiation, module-load-in-loop's load) while another line uses or releases that handle
 * every step too (the executable graph's destroy, the module's function lookup). Both lines
 * change with the one fix, so they are one cost: the maker's finding takes the user line's host
 * time into its own (its detail names the line), and the user line gets a finding of its own
 * whose estimate is that same total, so both rank alike and the user line comes right after
 * (ANALYSIS-1 breaks the tie by blocked_ns). A user line after the loop (teardown) does not
 * recur in the steady state and is never flagged; a line that also makes keeps its one finding
 * (ANALYSIS-2). The handle joins the two: calls.aux of both rows (interpose/wrapper.h,
 * CREATED_GRAPH_EXEC, CREATED_MODULE), each use paired with the latest make of its handle (a
 * handle's address comes back for later objects).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_int.h"
#include "commands.h"

struct handle_call {
	long long handle;
	size_t order; /* in time */
	int use;
	char *site;
};

/* How often a user site used what a maker site made. */
struct line_pair {
	char *use_site, *make_site;
	long long n;
};

static int compare_handle_calls(const void *a, const void *b)
{
	const struct handle_call *x = a, *y = b;

	if (x->handle != y->handle)
		return x->handle < y->handle ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

/* The rule's finding at site (steady ones only when steady is set), or NULL. */
static struct ss_finding *finding_at(struct ss_report *r, const char *rule, const char *site,
				     int steady)
{
	return steady ? ss_steady_finding(r, rule, site) : ss_finding_at(r, rule, site);
}

/* Reads p->calls_sql and pairs each use with the latest make of the same handle before it. */
static int pair_uses(struct loader *ld, struct db_state *st, const struct ss_line_pairing *p,
		     struct line_pair **pairs, size_t *npairs)
{
	struct handle_call *calls = NULL;
	size_t n = 0, cap = 0, cap_pairs = 0;
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, p->calls_sql, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct handle_call one = {sqlite3_column_int64(stmt, 0), n,
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
		qsort(calls, n, sizeof(*calls), compare_handle_calls);
	/* per handle, in time order: a use pairs with the make last seen */
	for (size_t i = 0, made = SIZE_MAX; code == SS_EXIT_OK && i < n; i++) {
		if (i == 0 || calls[i].handle != calls[i - 1].handle)
			made = SIZE_MAX;
		if (!calls[i].use) {
			made = i;
			continue;
		}
		if (made == SIZE_MAX)
			continue; /* made before the recording, or by an entry point not recorded */
		size_t k = 0;
		while (k < *npairs && (strcmp((*pairs)[k].use_site, calls[i].site) != 0 ||
				       strcmp((*pairs)[k].make_site, calls[made].site) != 0))
			k++;
		if (k == *npairs) {
			struct line_pair pair = {xstrdup(calls[i].site), xstrdup(calls[made].site),
						 0};

			if (!pair.use_site || !pair.make_site ||
			    !PUSH(*pairs, *npairs, cap_pairs, pair)) {
				free(pair.use_site);
				free(pair.make_site);
				code = out_of_memory(ld);
				break;
			}
		}
		(*pairs)[k].n++;
		if (p->use_releases)
			made = SIZE_MAX; /* released: a second release pairs with nothing */
	}
	for (size_t i = 0; i < n; i++)
		free(calls[i].site);
	free(calls);
	return code;
}

/* One pairing: its user lines' findings, each maker site appended to OWNERS (in the order the
 * findings are added). */
static int pair_one(struct loader *ld, struct db_state *st, const struct ss_line_pairing *p,
		    char ***owners, size_t *nowners, size_t *cap_owners)
{
	struct ss_report *r = ld->report;
	const char *rule = p->rule->id;
	struct line_pair *pairs = NULL;
	size_t npairs = 0;
	sqlite3_stmt *stmt;
	int rc, code;

	code = pair_uses(ld, st, p, &pairs, &npairs);
	if (code == SS_EXIT_OK)
		code = prepare(ld, st, p->use_sites_sql, &stmt);
	if (code != SS_EXIT_OK)
		goto out;
	bind_named_int(stmt, ":min_count", p->rule->min_count);
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
			continue; /* setup or teardown */
		for (size_t k = 0; k < npairs; k++) {
			struct ss_finding *f;

			if (strcmp(pairs[k].use_site, site) != 0 || pairs[k].n <= paired ||
			    !(f = finding_at(r, rule, pairs[k].make_site, 1)))
				continue;
			owner = f;
			paired = pairs[k].n;
		}
		if (!owner || finding_at(r, rule, site, 0))
			continue; /* ANALYSIS-2: a line that also makes keeps its one finding */
		char *more = format("%s; and %lld %s (%.3f ms) %s, at %s", owner->detail, count,
				    p->uses, ms(blocked), p->of_what, site);
		char *owner_site = xstrdup(owner->site); /* owner moves when the findings grow */
		if (!more || !owner_site || !PUSH(*owners, *nowners, *cap_owners, owner_site)) {
			free(more);
			free(owner_site);
			code = out_of_memory(ld);
			break;
		}
		free(owner->detail);
		owner->detail = more;
		owner->blocked_ns += blocked;
		/* A release at a Python line is the garbage collector's, wherever the last reference
		 * went (torch.cuda.CUDAGraph's executable graph, destroyed when the request that made
		 * it returns: t90 of examples/corpus): no line to fix, only the maker's cost. */
		if (p->use_releases && strstr(site, ".py:")) {
			free((*owners)[--*nowners]);
			continue;
		}
		code = add_finding(ld, p->rule, st->rank, count, blocked, worst, -1, -1,
				   xstrdup(site),
				   format("%s: %s %s, whose finding carries these calls' host "
					  "time; %s",
					  apis ? apis : "", p->every_step, owner_site, p->fix));
		if (code != SS_EXIT_OK)
			break;
		set_phase(&r->findings[r->nfindings - 1], &st->steps, 1, steps);
	}
	code = end_rows(ld, st, stmt, rc, code);
out:
	for (size_t k = 0; k < npairs; k++) {
		free(pairs[k].use_site);
		free(pairs[k].make_site);
	}
	free(pairs);
	return code;
}

int ss_pair_lines(struct loader *ld, struct db_state *st, const struct ss_line_pairing *p, size_t n)
{
	struct ss_report *r = ld->report;
	const char *rule = p[0].rule->id;
	size_t any = 0, first = r->nfindings, nowners = 0, cap_owners = 0;
	char **owners = NULL; /* the maker site of each user finding added, in order */
	int code = SS_EXIT_OK;

	while (any < r->nfindings &&
	       !(r->findings[any].rule == rule && strcmp(r->findings[any].phase, "steady") == 0))
		any++;
	if (any == r->nfindings)
		return SS_EXIT_OK; /* nothing made every step: no use to pair */
	for (size_t i = 0; code == SS_EXIT_OK && i < n; i++)
		code = pair_one(ld, st, &p[i], &owners, &nowners, &cap_owners);
	/* each user line's cost: its maker's, every use of its handles by every pairing included */
	for (size_t i = 0; code == SS_EXIT_OK && i < nowners; i++)
		r->findings[first + i].estimate_ns = finding_at(r, rule, owners[i], 1)->blocked_ns;
	for (size_t i = 0; i < nowners; i++)
		free(owners[i]);
	free(owners);
	return code;
}
