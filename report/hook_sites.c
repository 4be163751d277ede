/*
 * report/hook_sites.c: the site of a sync made inside a framework's hook is the line that ran
 * the model, not the layer whose op fired the hook (SITE-1, docs/attribution.md).
 *
 * The shim names a sync by the first Python frame outside the frameworks (interpose/python.c):
 * `loss.item()` in train.py, an op in a model's forward. Some syncs come from code the user did
 * not write at that line: a framework's hook that runs for every saved tensor or every module
 * call, which the program switched on elsewhere. torch.autograd.graph.save_on_cpu packs each
 * tensor autograd saves with a blocking copy (its pack hook, torch/autograd/graph.py); eager
 * quantization-aware training's observers (a forward hook of each prepared module,
 * torch/ao/quantization) read statistics back. Their syncs land on every layer line of the
 * forward (t124, t125 of examples/corpus: five and four findings naming lines with nothing to
 * fix), while what to change is around the call of the model.
 *
 * So, for each Python stack whose frames inside the first user frame hold such a hook
 * (ss_python_hook_stack, syncspy/python_frames.h), the site becomes the first user frame outside
 * the outermost nn.Module call (ss_python_model_call_line, as cuDNN's autotuning is named by
 * rules/host_sync.c): `pred = self.model(x)`. A hook the user wrote is a user frame and keeps
 * its own line; a stack with no module call outside it keeps its site.
 *
 * ss_finding_sites gives a connection the site texts of the findings: lines.c's file:line of
 * native sites, then these. The new sites live in this read-only connection's TEMP tables: `sites`
 * (the shadow lines.c makes, made here if lines.c made none), `hook_sites` (stack id -> site id)
 * and a TEMP view `calls` over main.calls with those calls' site_id replaced (SQLite resolves
 * unqualified names in temp first, as for lines.c's shadow). Nothing is made where no stack
 * matches, which is almost every recording.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "commands.h"
#include "db.h"
#include "lines.h"
#include "syncspy/python_frames.h"

/* The site's id for TEXT ("FILE:LINE in FUNCTION"): FIND's (an existing site of that text),
 * else a new row of temp.sites by ADD. Returns 0 on an SQLite error. */
static long long site_for(sqlite3 *db, sqlite3_stmt *find, sqlite3_stmt *add, const char *text)
{
	const char *in = strstr(text, " in "), *colon = NULL;
	long long id = 0;

	for (const char *p = text; in && p < in; p++)
		if (*p == ':')
			colon = p;
	sqlite3_bind_text(find, 1, text, -1, SQLITE_STATIC);
	if (sqlite3_step(find) == SQLITE_ROW) {
		id = sqlite3_column_int64(find, 0);
	} else { /* a Python site's columns (docs/schema.md): address 0, module the file,
		  * module_offset the line, symbol the function */
		sqlite3_bind_text(add, 1, text, colon ? (int)(colon - text) : -1, SQLITE_STATIC);
		if (colon)
			sqlite3_bind_int64(add, 2, atoll(colon + 1));
		if (in)
			sqlite3_bind_text(add, 3, in + 4, -1, SQLITE_STATIC);
		sqlite3_bind_text(add, 4, text, -1, SQLITE_STATIC);
		if (sqlite3_step(add) == SQLITE_DONE)
			id = sqlite3_last_insert_rowid(db);
	}
	sqlite3_reset(find);
	sqlite3_reset(add);
	sqlite3_clear_bindings(add);
	return id;
}

/* The TEMP view `calls`: main.calls with the hooks' sites, every column in its own order (the
 * schema's versions differ in columns). */
static int make_view(sqlite3 *db)
{
	sqlite3_stmt *cols = NULL;
	char *sql = sqlite3_mprintf("CREATE TEMP VIEW calls AS SELECT");
	int first = 1, rc;
	if ((rc = sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info('calls', 'main')", -1,
				     &cols, NULL)) != SQLITE_OK) {
		sqlite3_free(sql);
		return rc;
	}
	while (sql && sqlite3_step(cols) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(cols, 0);
		if (strcmp(name, "site_id") == 0)
			sql = sqlite3_mprintf("%z%s coalesce(h.site_id, c.site_id) AS site_id", sql,
					      first ? "" : ",");
		else
			sql = sqlite3_mprintf("%z%s c.\"%w\"", sql, first ? "" : ",", name);
		first = 0;
	}
	sqlite3_finalize(cols);
	if (!sql)
		return SQLITE_NOMEM;
	sql = sqlite3_mprintf("%z FROM main.calls c LEFT JOIN temp.hook_sites h"
			      " ON h.stack_id = c.py_stack_id",
			      sql);
	if (!sql)
		return SQLITE_NOMEM;
	rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_free(sql);
	return rc;
}

static int hook_sites(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	sqlite3_stmt *stacks = NULL, *map = NULL, *find = NULL, *add = NULL;
	int rc = SQLITE_OK, made = 0;

	if (!ss_db_has_table(db, "main", "stacks") || !ss_db_has_table(db, "main", "sites") ||
	    ss_db_has_table(db, "temp", "hook_sites"))
		return SS_EXIT_OK;
	rc = sqlite3_prepare_v2(db, "SELECT id, frames FROM main.stacks WHERE kind = 'python'", -1,
				&stacks, NULL);
	while (rc == SQLITE_OK && sqlite3_step(stacks) == SQLITE_ROW) {
		const char *frames = (const char *)sqlite3_column_text(stacks, 1);
		char line[1024];

		if (!frames || !ss_python_hook_stack(frames) ||
		    !ss_python_model_call_line(frames, line, sizeof(line)))
			continue;
		if (!made) { /* the first match: the TEMP tables (lines.c may have made sites) */
			if (!ss_db_has_table(db, "temp", "sites"))
				rc = sqlite3_exec(db, SS_LINES_SHADOW_SQL, NULL, NULL, NULL);
			if (rc == SQLITE_OK)
				rc = sqlite3_exec(db,
						  "CREATE TEMP TABLE hook_sites(stack_id INTEGER"
						  " PRIMARY KEY, site_id INTEGER NOT NULL)",
						  NULL, NULL, NULL);
			if (rc == SQLITE_OK)
				rc = sqlite3_prepare_v2(db,
							"INSERT INTO temp.hook_sites VALUES (?1, ?2)",
							-1, &map, NULL);
			if (rc == SQLITE_OK)
				rc = sqlite3_prepare_v2(db,
							"SELECT id FROM temp.sites WHERE text = ?1"
							" LIMIT 1",
							-1, &find, NULL);
			if (rc == SQLITE_OK)
				rc = sqlite3_prepare_v2(
				    db,
				    "INSERT INTO temp.sites(id, address, module, module_offset,"
				    " symbol, text) SELECT coalesce(max(id), 0) + 1, 0, ?1, ?2, ?3,"
				    " ?4 FROM temp.sites",
				    -1, &add, NULL);
			if (rc != SQLITE_OK)
				break;
			made = 1;
		}
		long long site_id = site_for(db, find, add, line);
		if (!site_id) {
			rc = sqlite3_errcode(db);
			break;
		}
		sqlite3_bind_int64(map, 1, sqlite3_column_int64(stacks, 0));
		sqlite3_bind_int64(map, 2, site_id);
		rc = sqlite3_step(map) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
		sqlite3_reset(map);
	}
	sqlite3_finalize(stacks);
	sqlite3_finalize(map);
	sqlite3_finalize(find);
	sqlite3_finalize(add);
	if (rc == SQLITE_OK && made)
		rc = make_view(db);
	if (rc != SQLITE_OK)
		return ss_db_failure(db, rc, path, err, errlen);
	return SS_EXIT_OK;
}

int ss_finding_sites(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	ss_lines_attach(db); /* file:line of native sites where debug info has it */
	return hook_sites(db, path, err, errlen);
}
