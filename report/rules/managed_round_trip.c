/*
 * report/rules/managed_round_trip.c: the managed-round-trip rule (docs/rules.md), a per-database
 * rule in C (SS_RULE_DATABASE): managed memory prefetched to the host and back to a GPU every
 * step (cudaMemPrefetchAsync, cuMemPrefetchAsync: E1, the range in calls.ptr, the location in
 * calls.aux: interpose/wrapper.h PREFETCH). Each move migrates the range's pages over the bus;
 * moving a whole range to the host for the host to read a little of it, and back for the next
 * step's kernels, costs two migrations per step where reading the result on the GPU (a small
 * reduction copied back) costs one small copy. Both lines get a finding: the move to the host
 * and the move back are one round trip with one fix, as alloc-in-loop flags an allocation and
 * its free; each costs the round trip's estimated migration time (the range's bytes at the
 * rank's pinned bandwidth each way), so they rank together.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "../analysis_int.h"
#include "../commands.h"

extern const struct ss_rule ss_rule_managed_round_trip; /* at the end: its findings name it */

/* A round trip repeated this often (and recurring in the steady state, steps.h) is the loop's:
 * a range moved to the host once to be read at the end is how prefetching is used. */
#define SS_ROUND_TRIP_MIN 2

/* calls.aux of a prefetch: the location's type in the high 32 bits (cudaMemLocationType:
 * 1 device; 2 host, 3 host NUMA node, 4 the calling thread's NUMA node) */
#define LOCATION_DEVICE 1

/* Every successful prefetch with its range, location, bytes, time and site, in time order. */
#define PREFETCHES_SQL                                                                             \
	"SELECT c.ptr, c.aux >> 32, coalesce(c.bytes, 0), c.start_ns, c.end_ns,"                   \
	" coalesce(s.text, '" NO_SITE "') FROM calls c JOIN apis a ON a.id = c.api_id"            \
	" LEFT JOIN sites s ON s.id = c.site_id"                                                   \
	" WHERE (a.name LIKE 'cudaMemPrefetchAsync%' OR a.name LIKE 'cuMemPrefetchAsync%')"        \
	" AND c.ret = 0 AND c.ptr IS NOT NULL AND c.aux IS NOT NULL ORDER BY c.start_ns, c.id"

/* A range's last move to the host, waiting for its move back. */
struct pending {
	long long ptr, bytes, host_ns;
	int steady;  /* the move to the host was in the steady state (STEPS-1) */
	size_t step; /* its step, when steady */
	char *site;  /* NULL once the trip is complete */
};

/* The round trips between one line that moves to the host and one that moves back. */
struct trip {
	char *host_site, *device_site;
	long long count, bytes, host_ns; /* steady round trips, their bytes and prefetch host time */
	long long steps;		 /* distinct steady steps (of the move to the host) */
	size_t last_step;
};

static struct trip *trip_of(struct trip **trips, size_t *n, size_t *cap, const char *host_site,
			    const char *device_site)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*trips)[i].host_site, host_site) &&
		    !strcmp((*trips)[i].device_site, device_site))
			return &(*trips)[i];
	if (!reserve(trips, cap, *n, sizeof(**trips)))
		return NULL;
	struct trip t = {xstrdup(host_site), xstrdup(device_site), 0, 0, 0, 0, (size_t)-1};
	if (!t.host_site || !t.device_site) {
		free(t.host_site);
		free(t.device_site);
		return NULL;
	}
	(*trips)[*n] = t;
	return &(*trips)[(*n)++];
}

static int run_round_trips(struct loader *ld, struct db_state *st)
{
	struct pending *pending = NULL;
	struct trip *trips = NULL;
	size_t npending = 0, cap_pending = 0, ntrips = 0, cap_trips = 0;
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, PREFETCHES_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long ptr = sqlite3_column_int64(stmt, 0);
		long long type = sqlite3_column_int64(stmt, 1);
		long long bytes = sqlite3_column_int64(stmt, 2);
		long long start = sqlite3_column_int64(stmt, 3);
		long long ns = sqlite3_column_int64(stmt, 4) - start;
		const char *site = (const char *)sqlite3_column_text(stmt, 5);
		size_t p = 0;

		while (p < npending && pending[p].ptr != ptr)
			p++;
		if (type != LOCATION_DEVICE) { /* to the host: the trip's first half */
			if (p == npending) {
				if (!reserve(&pending, &cap_pending, npending, sizeof(*pending))) {
					code = out_of_memory(ld);
					break;
				}
				pending[npending++] = (struct pending){ptr, 0, 0, 0, 0, NULL};
			}
			free(pending[p].site);
			pending[p] = (struct pending){ptr, bytes, ns > 0 ? ns : 0, 0, 0, xstrdup(site)};
			if (!pending[p].site) {
				code = out_of_memory(ld);
				break;
			}
			pending[p].steady = ss_steps_phase(&st->steps, start, &pending[p].step) ==
					    SS_PHASE_STEADY;
			continue;
		}
		if (p == npending || !pending[p].site)
			continue; /* a move to the GPU with no move to the host before it */
		if (pending[p].steady) {
			struct trip *t = trip_of(&trips, &ntrips, &cap_trips, pending[p].site, site);

			if (!t) {
				code = out_of_memory(ld);
				break;
			}
			t->count++;
			t->bytes += pending[p].bytes < bytes ? pending[p].bytes : bytes;
			t->host_ns += pending[p].host_ns + (ns > 0 ? ns : 0);
			if (pending[p].step != t->last_step) {
				t->steps++;
				t->last_step = pending[p].step;
			}
		}
		free(pending[p].site);
		pending[p].site = NULL; /* the trip is complete */
	}
	code = end_rows(ld, st, stmt, rc, code);
	for (size_t i = 0; code == SS_EXIT_OK && i < ntrips; i++) {
		struct trip *t = &trips[i];
		/* the migration time each way at the rank's pinned bandwidth (load.c) */
		long long estimate = (long long)((double)t->bytes * 1e9 / st->bw[2] +
						 (double)t->bytes * 1e9 / st->bw[1]);
		const char *sites[2] = {t->host_site, t->device_site};

		if (t->count < SS_ROUND_TRIP_MIN || !ss_steps_recurring(&st->steps, t->steps, t->count))
			continue;
		for (int k = 0; k < 2 && code == SS_EXIT_OK; k++) {
			if (ss_finding_at(ld->report, ss_rule_managed_round_trip.id, sites[k]))
				continue; /* ANALYSIS-2 */
			code = add_finding(
			    ld, &ss_rule_managed_round_trip, st->rank, t->count, t->host_ns, 0,
			    t->bytes, estimate, xstrdup(sites[k]),
			    k == 0 ? format("%lld prefetches of managed memory to the host (%lld "
					    "bytes in all), each range moved back to the GPU at %s; "
					    "estimate: %.3f ms of migration both ways at %.1f GB/s",
					    t->count, t->bytes, t->device_site, ms(estimate),
					    st->bw[2] / 1e9)
				   : format("%lld prefetches of managed memory back to the GPU (%lld "
					    "bytes in all), each range moved to the host at %s "
					    "before; the round trip's estimate: %.3f ms",
					    t->count, t->bytes, t->host_site, ms(estimate)));
			if (code == SS_EXIT_OK)
				set_phase(&ld->report->findings[ld->report->nfindings - 1], &st->steps,
					  1, t->steps);
		}
	}
	for (size_t i = 0; i < npending; i++)
		free(pending[i].site);
	free(pending);
	for (size_t i = 0; i < ntrips; i++) {
		free(trips[i].host_site);
		free(trips[i].device_site);
	}
	free(trips);
	return code;
}

const struct ss_rule ss_rule_managed_round_trip = {
    .id = "managed-round-trip",
    .advice = "Keep the managed range on the GPU: compute what the host needs there (a reduction "
	      "into a small buffer read back with one copy) instead of prefetching the whole range "
	      "to the host and back every step, or prefetch only the part the host reads.",
    .phase = SS_RULE_DATABASE,
    .cost = SS_COST_ESTIMATE,
    .needs_enqueue_rows = 1, /* each prefetch's range and location */
    .run_database = run_round_trips,
};
