/*
 * report/collectives.c: the NCCL collectives of a database, for the clock alignment (ranks.c,
 * export_chrome.c) and nccl-straggler: the N2 calls on a communicator with an id_hash (joined
 * to comms by handle and lifetime), send, recv and group brackets left out, one time-ordered
 * series per (id_hash, API), in wall-clock ns (SCHEMA-3). The report groups the N2 calls its
 * pass over calls kept (load_arrivals); `syncspy export` reads them with one query
 * (ss_collectives_load) and groups them the same way.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "analysis_int.h"
#include "commands.h"
#include "db.h"

/* The recording's wall clock at its monotonic start (SCHEMA-3), as load_meta reads it. */
#define OFFSET_SQL                                                                                 \
	"SELECT max(CASE key WHEN 'start_realtime_ns' THEN value END),"                            \
	" max(CASE key WHEN 'start_mono_ns' THEN value END) FROM meta"
/* The N2 calls on a communicator, in id order: what the pass keeps (load.c, scan_rows). */
#define N2_SQL                                                                                     \
	"SELECT api_id, comm, start_ns, end_ns FROM calls WHERE class = 'N2' AND comm IS NOT NULL" \
	" ORDER BY id"

const char *ss_collectives_string(struct ss_collectives *set, const char *text)
{
	char **grown;

	if (!text)
		text = "";
	for (size_t i = 0; i < set->nstrings; i++)
		if (strcmp(set->strings[i], text) == 0)
			return set->strings[i];
	grown = realloc(set->strings, (set->nstrings + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	set->strings = grown;
	set->strings[set->nstrings] = strdup(text);
	return set->strings[set->nstrings] ? set->strings[set->nstrings++] : NULL;
}

/* A communicator as the straggler rule joins it (comms rows with an id_hash). */
struct comm_row {
	long long comm, created_ns, destroyed_ns;
	int destroyed;
	const char *hash;
};

/* An N2 API that is a collective (not send/recv, not a group bracket), by id. */
struct collective_api {
	long long id;
	const char *op;
};

static int compare_calls(const void *a, const void *b)
{
	const struct ss_collective_call *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
}

/*
 * This rank's collectives, in wall-clock ns: what the SQL of the first version selected
 * (the N2 calls joined to apis and to comms by handle and lifetime, id_hash not NULL, send,
 * recv and group brackets left out, numbered per (id_hash, API) by start time), from the
 * pass's N2 calls, grouped into one series per (id_hash, API).
 */
int load_arrivals(struct loader *ld, struct db_state *st, struct ss_collectives *set)
{
	long long offset = st->rank->start_realtime_ns - st->rank->start_mono_ns;
	struct comm_row *comms = NULL;
	struct collective_api *apis = NULL;
	size_t ncomms = 0, comms_capacity = 0, napis = 0, apis_capacity = 0, last = 0;
	sqlite3_stmt *stmt;
	int rc, code;

	if (!st->nn2)
		return SS_EXIT_OK;
	code = prepare(ld, st,
		       "SELECT comm, id_hash, created_ns, destroyed_ns FROM comms"
		       " WHERE id_hash IS NOT NULL",
		       &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *hash =
		    ss_collectives_string(set, (const char *)sqlite3_column_text(stmt, 1));

		if (!hash || !reserve(&comms, &comms_capacity, ncomms, sizeof(*comms))) {
			code = out_of_memory(ld);
			break;
		}
		comms[ncomms++] = (struct comm_row){
		    .comm = sqlite3_column_int64(stmt, 0),
		    .created_ns = column_or(stmt, 2, 0),
		    .destroyed = sqlite3_column_type(stmt, 3) != SQLITE_NULL,
		    .destroyed_ns = sqlite3_column_int64(stmt, 3),
		    .hash = hash,
		};
	}
	code = end_rows(ld, st, stmt, rc, code);
	if (code == SS_EXIT_OK)
		code = prepare(ld, st,
			       "SELECT id, name FROM apis WHERE name NOT IN ('ncclSend', 'ncclRecv',"
			       " 'ncclGroupStart', 'ncclGroupEnd') ORDER BY id",
			       &stmt);
	if (code != SS_EXIT_OK)
		goto out;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *op =
		    ss_collectives_string(set, (const char *)sqlite3_column_text(stmt, 1));

		if (!op || !reserve(&apis, &apis_capacity, napis, sizeof(*apis))) {
			code = out_of_memory(ld);
			break;
		}
		apis[napis++] = (struct collective_api){sqlite3_column_int64(stmt, 0), op};
	}
	code = end_rows(ld, st, stmt, rc, code);
	for (size_t i = 0; code == SS_EXIT_OK && i < st->nn2; i++) {
		const struct n2_call *c = &st->n2[i];
		size_t lo = 0, hi = napis;

		while (lo < hi) { /* the API, by id */
			size_t mid = lo + (hi - lo) / 2;

			if (apis[mid].id < c->api_id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == napis || apis[lo].id != c->api_id)
			continue;
		for (size_t m = 0; code == SS_EXIT_OK && m < ncomms; m++) {
			const struct comm_row *cm = &comms[m];
			struct ss_series *se;

			if (cm->comm != c->comm || c->start_ns < cm->created_ns ||
			    (cm->destroyed && c->start_ns > cm->destroyed_ns))
				continue;
			if (last >= set->nseries || set->series[last].hash != cm->hash ||
			    set->series[last].op != apis[lo].op) {
				for (last = 0; last < set->nseries; last++)
					if (set->series[last].hash == cm->hash &&
					    set->series[last].op == apis[lo].op)
						break;
				if (last == set->nseries) {
					se = realloc(set->series, (set->nseries + 1) * sizeof(*se));
					if (!se) {
						code = out_of_memory(ld);
						break;
					}
					set->series = se;
					set->series[set->nseries++] =
					    (struct ss_series){.hash = cm->hash, .op = apis[lo].op};
				}
			}
			se = &set->series[last];
			if (!reserve(&se->c, &se->capacity, se->n, sizeof(*se->c))) {
				code = out_of_memory(ld);
				break;
			}
			se->c[se->n++] =
			    (struct ss_collective_call){c->start_ns + offset, c->end_ns + offset};
		}
	}
	/* row_number() by start time: equal times are the same arrival, whichever comes first */
	for (size_t i = 0; code == SS_EXIT_OK && i < set->nseries; i++) {
		struct ss_series *se = &set->series[i];
		int sorted = 1;

		for (size_t k = 1; k < se->n && sorted; k++)
			sorted = se->c[k - 1].start_ns <= se->c[k].start_ns;
		if (!sorted)
			qsort(se->c, se->n, sizeof(*se->c), compare_calls);
	}
out:
	free(comms);
	free(apis);
	return code;
}

int ss_collectives_load(struct sqlite3 *db, const char *path, struct ss_collectives *set, char *err,
			size_t errlen)
{
	struct loader ld = {.err = err, .errlen = errlen};
	struct ss_rank rank = {0};
	struct db_state st = {.db = db, .path = path, .rank = &rank};
	size_t capacity = 0;
	sqlite3_stmt *stmt;
	int rc, code;

	memset(set, 0, sizeof(*set));
	code = query_row(&ld, &st, OFFSET_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	rank.start_realtime_ns = column_or(stmt, 0, 0);
	rank.start_mono_ns = column_or(stmt, 1, 0);
	sqlite3_finalize(stmt);
	code = prepare(&ld, &st, N2_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct n2_call c = {sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1),
				    sqlite3_column_int64(stmt, 2), sqlite3_column_int64(stmt, 3)};

		if (!PUSH(st.n2, st.nn2, capacity, c)) {
			code = out_of_memory(&ld);
			break;
		}
	}
	code = end_rows(&ld, &st, stmt, rc, code);
	if (code == SS_EXIT_OK)
		code = load_arrivals(&ld, &st, set);
	free(st.n2);
	return code;
}

void ss_collectives_free(struct ss_collectives *set)
{
	for (size_t i = 0; i < set->nstrings; i++)
		free(set->strings[i]);
	free(set->strings);
	for (size_t i = 0; i < set->nseries; i++)
		free(set->series[i].c);
	free(set->series);
	memset(set, 0, sizeof(*set));
}
