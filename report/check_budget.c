/*
 * report/check_budget.c: reading and validating the budget file of `syncspy check`
 * (check_budget.h; docs/budget.md is the user's description of the format).
 *
 * The document is bound as text to SQLite's JSON functions and walked one object at a time:
 * json_type for the shape of a value, json_each for the members of an object or the elements of
 * an array. Each member's JSON path is carried along, so every message can point at the exact
 * value that is wrong. Each kind of object has a table of the keys it may hold and
 * the type of each; anything else is refused, so a typo never silently disables a limit.
 */
#include <errno.h>
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syncspy/model.h"
#include "check_budget.h"
#include "commands.h"

/* The JSON types a budget key can have; each comes with its own message. */
enum json_kind {
	KIND_COUNT,  /* a non-negative integer */
	KIND_NUMBER, /* a non-negative number (integer or real) */
	KIND_TEXT,   /* a non-empty string */
	KIND_BOOL,   /* true or false */
	KIND_OBJECT,
	KIND_ARRAY,
};

static const char *const kind_expected[] = {
    [KIND_COUNT] = "expected a non-negative integer",
    [KIND_NUMBER] = "expected a non-negative number",
    [KIND_TEXT] = "expected a non-empty string",
    [KIND_BOOL] = "expected true or false",
    [KIND_OBJECT] = "expected an object",
    [KIND_ARRAY] = "expected an array",
};

/* A key an object may hold. */
struct field {
	const char *key;
	enum json_kind kind;
};

/* The value found for one field of an object, with its JSON path. */
struct member {
	int present;
	long long count; /* KIND_COUNT, KIND_BOOL (0 or 1) */
	double number;	 /* KIND_NUMBER */
	char *text;	 /* KIND_TEXT */
	char *path;
};

/* Everything the walk needs: the connection, the document, where messages go. */
struct reader {
	sqlite3 *db;
	const char *file; /* the budget's path, at the start of every message */
	const char *json;
	char *err;
	size_t errlen;
};

/* The keys of each object of the format, in the order docs/budget.md lists them. */
enum { TOP_VERSION, TOP_WARMUP, TOP_ALLOW, TOP_LIMITS, TOP_COUNT };
static const struct field top_fields[TOP_COUNT] = {
    [TOP_VERSION] = {"version", KIND_COUNT},
    [TOP_WARMUP] = {"warmup", KIND_OBJECT},
    [TOP_ALLOW] = {"allow", KIND_ARRAY},
    [TOP_LIMITS] = {"limits", KIND_ARRAY},
};

enum { WARMUP_SECONDS, WARMUP_CALLS, WARMUP_STEADY, WARMUP_COUNT };
static const struct field warmup_fields[WARMUP_COUNT] = {
    [WARMUP_SECONDS] = {"seconds", KIND_NUMBER},
    [WARMUP_CALLS] = {"calls", KIND_COUNT},
    [WARMUP_STEADY] = {"steady", KIND_BOOL},
};

enum {
	LIMIT_NAME,
	LIMIT_CLASS,
	LIMIT_API,
	LIMIT_SITE,
	LIMIT_RANK,
	LIMIT_PER_RANK,
	LIMIT_RANGE,
	LIMIT_MAX_COUNT,
	LIMIT_MAX_BLOCKED_MS,
	LIMIT_MAX_COUNT_PER_RANGE,
	LIMIT_MAX_BLOCKED_MS_PER_RANGE,
	LIMIT_MAX_COUNT_PER_STEP,
	LIMIT_MAX_BLOCKED_MS_PER_STEP,
	LIMIT_COUNT
};
static const struct field limit_fields[LIMIT_COUNT] = {
    [LIMIT_NAME] = {"name", KIND_TEXT},
    [LIMIT_CLASS] = {"class", KIND_TEXT},
    [LIMIT_API] = {"api", KIND_TEXT},
    [LIMIT_SITE] = {"site", KIND_TEXT},
    [LIMIT_RANK] = {"rank", KIND_COUNT},
    [LIMIT_PER_RANK] = {"per_rank", KIND_BOOL},
    [LIMIT_RANGE] = {"range", KIND_TEXT},
    [LIMIT_MAX_COUNT] = {"max_count", KIND_COUNT},
    [LIMIT_MAX_BLOCKED_MS] = {"max_blocked_ms", KIND_NUMBER},
    [LIMIT_MAX_COUNT_PER_RANGE] = {"max_count_per_range", KIND_COUNT},
    [LIMIT_MAX_BLOCKED_MS_PER_RANGE] = {"max_blocked_ms_per_range", KIND_NUMBER},
    [LIMIT_MAX_COUNT_PER_STEP] = {"max_count_per_step", KIND_NUMBER},
    [LIMIT_MAX_BLOCKED_MS_PER_STEP] = {"max_blocked_ms_per_step", KIND_NUMBER},
};

/* The sync classes of model.h (S1-S7): the classes a limit may name besides "sync". */
static const char *const sync_classes[] = {
#define SYNC_CLASS_NAME(c, sync, desc) (sync) ? #c : NULL,
    SS_CLASSES(SYNC_CLASS_NAME)
#undef SYNC_CLASS_NAME
};
#define N_CLASSES (sizeof(sync_classes) / sizeof(sync_classes[0]))

static int bad(struct reader *r, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "FILE: PATH: message", an input error. */
static int bad(struct reader *r, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(r->err, r->errlen, "%s: %s: ", r->file, path);
	if (n >= 0 && (size_t)n < r->errlen) {
		va_start(ap, fmt);
		vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return SS_EXIT_INPUT;
}

static int no_memory(struct reader *r)
{
	snprintf(r->err, r->errlen, "%s: out of memory", r->file);
	return SS_EXIT_INTERNAL;
}

/* An SQLite failure on the in-memory connection: never the user's fault. */
static int sql_failure(struct reader *r)
{
	snprintf(r->err, r->errlen, "%s: reading the budget: SQLite: %s", r->file,
		 sqlite3_errmsg(r->db));
	return SS_EXIT_INTERNAL;
}

static char *dup_column(sqlite3_stmt *stmt, int col)
{
	const char *text = (const char *)sqlite3_column_text(stmt, col);

	return strdup(text ? text : "");
}

/*
 * The JSON path of a member: PARENT.key, or PARENT."key" when the key is not a plain name, or
 * PARENT[N] for an array element. Built here rather than taken from json_each's fullkey,
 * whose quoting differs between SQLite versions.
 */
static char *child_path(const char *parent, sqlite3_stmt *row)
{
	const char *key = (const char *)sqlite3_column_text(row, 0);
	int plain = key && key[0] && strchr("0123456789", key[0]) == NULL;
	char *path;

	if (sqlite3_column_type(row, 0) == SQLITE_INTEGER) {
		if (asprintf(&path, "%s[%lld]", parent, sqlite3_column_int64(row, 0)) < 0)
			return NULL;
		return path;
	}
	for (const char *c = key; plain && *c; c++)
		plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			(*c >= '0' && *c <= '9') || *c == '_';
	if (asprintf(&path, plain ? "%s.%s" : "%s.\"%s\"", parent, key ? key : "") < 0)
		return NULL;
	return path;
}

static void free_members(struct member *members, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(members[i].text);
		free(members[i].path);
	}
	memset(members, 0, n * sizeof(*members));
}

/* Whether one json_each row (key, type, atom) holds a value of kind. */
static int has_kind(sqlite3_stmt *row, enum json_kind kind)
{
	const char *type = (const char *)sqlite3_column_text(row, 1);

	switch (kind) {
	case KIND_COUNT:
		return strcmp(type, "integer") == 0 && sqlite3_column_int64(row, 2) >= 0;
	case KIND_NUMBER:
		/* 1e400 reads as infinity: no limit at all, so refused like a negative one */
		return (strcmp(type, "integer") == 0 || strcmp(type, "real") == 0) &&
		       sqlite3_column_double(row, 2) >= 0.0 &&
		       sqlite3_column_double(row, 2) <= DBL_MAX;
	case KIND_TEXT:
		return strcmp(type, "text") == 0 && sqlite3_column_bytes(row, 2) > 0;
	case KIND_BOOL:
		return strcmp(type, "true") == 0 || strcmp(type, "false") == 0;
	case KIND_OBJECT:
		return strcmp(type, "object") == 0;
	case KIND_ARRAY:
		return strcmp(type, "array") == 0;
	}
	return 0;
}

/*
 * A string of the budget: no NUL ("x\u0000*" would be cut to "x" by every C string after it),
 * and a pattern (site, range, allow) no longer than SQLite's GLOB accepts, nor than
 * SS_BUDGET_PATTERN_MAX: a longer one is a bad budget, not "pattern too complex" at check time.
 */
static int check_text(struct reader *r, sqlite3_stmt *row, const char *path, const char *key)
{
	const char *text = (const char *)sqlite3_column_text(row, 2);
	int bytes = sqlite3_column_bytes(row, 2);
	int limit = sqlite3_limit(r->db, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, -1);
	int pattern = !key || strcmp(key, "site") == 0 || strcmp(key, "range") == 0;

	if (limit <= 0 || limit > SS_BUDGET_PATTERN_MAX)
		limit = SS_BUDGET_PATTERN_MAX;
	if (text && strlen(text) != (size_t)bytes)
		return bad(r, path, "contains a NUL character (\\u0000)");
	if (pattern && bytes > limit)
		return bad(r, path, "pattern of %d bytes (at most %d)", bytes, limit);
	return SS_EXIT_OK;
}

/* "version, warmup, allow, limits": for the message about an unknown key. */
static void key_list(char *buf, size_t len, const struct field *fields, size_t n)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++)
		used +=
		    (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", fields[i].key);
}

/*
 * Reads the object at path (already known to be an object) into members[], one per field:
 * unknown keys, repeated keys and values of the wrong type are errors.
 */
static int read_object(struct reader *r, const char *json, const char *path,
		       const struct field *fields, size_t n_fields, struct member *members)
{
	sqlite3_stmt *row;
	int rc, code = SS_EXIT_OK;

	memset(members, 0, n_fields * sizeof(*members));
	rc = sqlite3_prepare_v2(r->db, "SELECT key, type, atom FROM json_each(?1, ?2)", -1, &row,
				NULL);
	if (rc != SQLITE_OK)
		return sql_failure(r);
	/* json: the object's own text (a limit's, from json_each's value column), so that each
	 * limit parses its few bytes, not the whole document again: linear in the limits */
	sqlite3_bind_text(row, 1, json ? json : r->json, -1, SQLITE_STATIC);
	sqlite3_bind_text(row, 2, json ? "$" : path, -1, SQLITE_STATIC);
	while (code == SS_EXIT_OK && (rc = sqlite3_step(row)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(row, 0);
		char *member_path = child_path(path, row);
		struct member *m;
		size_t f;

		if (!member_path) {
			code = no_memory(r);
			break;
		}
		for (f = 0; f < n_fields; f++)
			if (strcmp(fields[f].key, key) == 0)
				break;
		if (f == n_fields) {
			char keys[256];

			key_list(keys, sizeof(keys), fields, n_fields);
			code = bad(r, member_path, "unknown key (expected one of: %s)", keys);
		} else if (members[f].present) {
			code = bad(r, member_path, "duplicate key");
		} else if (!has_kind(row, fields[f].kind)) {
			code = bad(r, member_path, "%s", kind_expected[fields[f].kind]);
		} else if (fields[f].kind == KIND_TEXT) {
			code = check_text(r, row, member_path, fields[f].key);
		}
		if (code != SS_EXIT_OK) {
			free(member_path);
			break;
		}
		m = &members[f];
		m->present = 1;
		m->path = member_path;
		switch (fields[f].kind) {
		case KIND_COUNT:
			m->count = sqlite3_column_int64(row, 2);
			break;
		case KIND_NUMBER:
			m->number = sqlite3_column_double(row, 2);
			break;
		case KIND_BOOL:
			m->count = strcmp((const char *)sqlite3_column_text(row, 1), "true") == 0;
			break;
		case KIND_TEXT:
			m->text = dup_column(row, 2);
			if (!m->text)
				code = no_memory(r);
			break;
		case KIND_OBJECT:
		case KIND_ARRAY:
			break;
		}
	}
	if (code == SS_EXIT_OK && rc != SQLITE_DONE)
		code = sql_failure(r);
	sqlite3_finalize(row);
	if (code != SS_EXIT_OK)
		free_members(members, n_fields);
	return code;
}

/* The text of a member that read_object took; the member no longer owns it. */
static char *take_text(struct member *m)
{
	char *text = m->text;

	m->text = NULL;
	return text;
}

/* ------------------------------------------------------------------ the parts of a budget */

static int read_warmup(struct reader *r, const char *path, struct ss_budget *budget)
{
	struct member m[WARMUP_COUNT];
	int code;

	code = read_object(r, NULL, path, warmup_fields, WARMUP_COUNT, m);
	if (code != SS_EXIT_OK)
		return code;
	if (m[WARMUP_SECONDS].present + m[WARMUP_CALLS].present + m[WARMUP_STEADY].present != 1)
		code = bad(r, path, "expected exactly one of \"seconds\", \"calls\" or \"steady\"");
	else if (m[WARMUP_SECONDS].present)
		budget->warmup_seconds = m[WARMUP_SECONDS].number;
	else if (m[WARMUP_CALLS].present)
		budget->warmup_calls = m[WARMUP_CALLS].count;
	else if (!m[WARMUP_STEADY].count)
		code =
		    bad(r, m[WARMUP_STEADY].path, "expected true (leave \"warmup\" out for none)");
	else
		budget->warmup_steady = 1;
	free_members(m, WARMUP_COUNT);
	return code;
}

/*
 * Runs body once for each element of the array at path, with the element's json_each row and
 * its path. Returns the first failure of body or of SQLite.
 */
typedef int (*element_fn)(struct reader *r, sqlite3_stmt *row, const char *path,
			  struct ss_budget *budget);

static int each_element(struct reader *r, const char *path, element_fn body,
			struct ss_budget *budget, size_t *count)
{
	sqlite3_stmt *row;
	int rc, code = SS_EXIT_OK;

	*count = 0;
	rc = sqlite3_prepare_v2(r->db, "SELECT key, type, atom, value FROM json_each(?1, ?2)", -1,
				&row, NULL);
	if (rc != SQLITE_OK)
		return sql_failure(r);
	sqlite3_bind_text(row, 1, r->json, -1, SQLITE_STATIC);
	sqlite3_bind_text(row, 2, path, -1, SQLITE_STATIC);
	while (code == SS_EXIT_OK && (rc = sqlite3_step(row)) == SQLITE_ROW) {
		char *element_path = child_path(path, row);

		code = element_path ? body(r, row, element_path, budget) : no_memory(r);
		free(element_path);
		(*count)++;
	}
	if (code == SS_EXIT_OK && rc != SQLITE_DONE)
		code = sql_failure(r);
	sqlite3_finalize(row);
	return code;
}

static int read_allow_entry(struct reader *r, sqlite3_stmt *row, const char *path,
			    struct ss_budget *budget)
{
	char *glob;

	if (!has_kind(row, KIND_TEXT))
		return bad(r, path, "expected a non-empty string (a GLOB on call-site text)");
	if (check_text(r, row, path, NULL) != SS_EXIT_OK)
		return SS_EXIT_INPUT;
	glob = dup_column(row, 2);
	if (!glob)
		return no_memory(r);
	budget->allow[budget->allow_count++] = glob;
	return SS_EXIT_OK;
}

/* "expected \"sync\" or one of S1, ..., S7" for a class no limit can have. */
static int check_class(struct reader *r, const struct member *m)
{
	char names[128];
	size_t used = 0;

	if (strcmp(m->text, "sync") == 0)
		return SS_EXIT_OK;
	for (size_t i = 0; i < N_CLASSES; i++)
		if (sync_classes[i] && strcmp(sync_classes[i], m->text) == 0)
			return SS_EXIT_OK;
	names[0] = '\0';
	for (size_t i = 0; i < N_CLASSES; i++)
		if (sync_classes[i] && used < sizeof(names))
			used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
						 used ? ", " : "", sync_classes[i]);
	return bad(r, m->path, "expected \"sync\" or one of %s", names);
}

/* The rules that tie the keys of one limit together (docs/budget.md, "Limits"). */
static int check_limit(struct reader *r, const char *path, struct member *m)
{
	int per_step =
	    m[LIMIT_MAX_COUNT_PER_STEP].present || m[LIMIT_MAX_BLOCKED_MS_PER_STEP].present;
	int totals = m[LIMIT_MAX_COUNT].present || m[LIMIT_MAX_BLOCKED_MS].present || per_step;
	int per_range =
	    m[LIMIT_MAX_COUNT_PER_RANGE].present || m[LIMIT_MAX_BLOCKED_MS_PER_RANGE].present;

	if (m[LIMIT_CLASS].present && check_class(r, &m[LIMIT_CLASS]) != SS_EXIT_OK)
		return SS_EXIT_INPUT;
	if (m[LIMIT_RANK].present && m[LIMIT_PER_RANK].present && m[LIMIT_PER_RANK].count)
		return bad(r, m[LIMIT_PER_RANK].path, "cannot be combined with \"rank\"");
	if (m[LIMIT_RANGE].present) {
		if (totals)
			return bad(
			    r,
			    m[m[LIMIT_MAX_COUNT].present ? LIMIT_MAX_COUNT : LIMIT_MAX_BLOCKED_MS]
				.path,
			    "a limit with \"range\" takes max_count_per_range and "
			    "max_blocked_ms_per_range");
		if (!per_range)
			return bad(r, path,
				   "no maximum: a limit with \"range\" needs max_count_per_range "
				   "or max_blocked_ms_per_range");
	} else {
		if (per_range)
			return bad(
			    r,
			    m[m[LIMIT_MAX_COUNT_PER_RANGE].present ? LIMIT_MAX_COUNT_PER_RANGE
								   : LIMIT_MAX_BLOCKED_MS_PER_RANGE]
				.path,
			    "needs \"range\" (the NVTX range to count per)");
		if (!totals)
			return bad(
			    r, path,
			    "no maximum: give max_count, max_blocked_ms, max_count_per_step or "
			    "max_blocked_ms_per_step");
	}
	return SS_EXIT_OK;
}

static int read_limit(struct reader *r, sqlite3_stmt *row, const char *path,
		      struct ss_budget *budget)
{
	struct ss_budget_limit *limit = &budget->limits[budget->limit_count];
	struct member m[LIMIT_COUNT];
	int code;

	if (!has_kind(row, KIND_OBJECT))
		return bad(r, path, "expected an object (a limit)");
	code = read_object(r, (const char *)sqlite3_column_text(row, 3), path, limit_fields,
			   LIMIT_COUNT, m);
	if (code != SS_EXIT_OK)
		return code;
	code = check_limit(r, path, m);
	if (code == SS_EXIT_OK) {
		limit->path = strdup(path);
		limit->name = take_text(&m[LIMIT_NAME]);
		limit->cls = m[LIMIT_CLASS].present ? take_text(&m[LIMIT_CLASS]) : strdup("sync");
		limit->api = take_text(&m[LIMIT_API]);
		limit->site = take_text(&m[LIMIT_SITE]);
		limit->range = take_text(&m[LIMIT_RANGE]);
		limit->rank = m[LIMIT_RANK].present ? m[LIMIT_RANK].count : -1;
		limit->per_rank = m[LIMIT_PER_RANK].present && m[LIMIT_PER_RANK].count;
		limit->max_count = m[LIMIT_MAX_COUNT].present ? m[LIMIT_MAX_COUNT].count : -1;
		limit->max_blocked_ms =
		    m[LIMIT_MAX_BLOCKED_MS].present ? m[LIMIT_MAX_BLOCKED_MS].number : -1.0;
		limit->max_count_per_range =
		    m[LIMIT_MAX_COUNT_PER_RANGE].present ? m[LIMIT_MAX_COUNT_PER_RANGE].count : -1;
		limit->max_blocked_ms_per_range = m[LIMIT_MAX_BLOCKED_MS_PER_RANGE].present
						      ? m[LIMIT_MAX_BLOCKED_MS_PER_RANGE].number
						      : -1.0;
		limit->max_count_per_step =
		    m[LIMIT_MAX_COUNT_PER_STEP].present ? m[LIMIT_MAX_COUNT_PER_STEP].number : -1.0;
		limit->max_blocked_ms_per_step = m[LIMIT_MAX_BLOCKED_MS_PER_STEP].present
						     ? m[LIMIT_MAX_BLOCKED_MS_PER_STEP].number
						     : -1.0;
		budget->limit_count++;
		if (!limit->path || !limit->cls)
			code = no_memory(r);
	}
	free_members(m, LIMIT_COUNT);
	return code;
}

/* The number of elements of the array at path (json_array_length). */
static int array_length(struct reader *r, const char *path, size_t *length)
{
	sqlite3_stmt *stmt;
	int rc;

	rc = sqlite3_prepare_v2(r->db, "SELECT json_array_length(?1, ?2)", -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return sql_failure(r);
	sqlite3_bind_text(stmt, 1, r->json, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 2, path, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	*length = rc == SQLITE_ROW ? (size_t)sqlite3_column_int64(stmt, 0) : 0;
	sqlite3_finalize(stmt);
	return rc == SQLITE_ROW ? SS_EXIT_OK : sql_failure(r);
}

/* ------------------------------------------------------------------ the document */

/* The whole file as one NUL-terminated string, at most SS_BUDGET_MAX_BYTES (a budget named
 * /dev/zero, or a log file by mistake, is refused instead of read without end). */
static int read_file(struct reader *r, const char *path, char **text)
{
	FILE *f = fopen(path, "rb");
	size_t len = 0, capacity = 4096, got;
	char *buf;

	*text = NULL;
	if (!f) {
		snprintf(r->err, r->errlen, "%s: %s", path, strerror(errno));
		return SS_EXIT_INPUT;
	}
	buf = malloc(capacity);
	while (buf && (got = fread(buf + len, 1, capacity - len - 1, f)) > 0) {
		len += got;
		if (len > SS_BUDGET_MAX_BYTES) {
			fclose(f);
			free(buf);
			snprintf(r->err, r->errlen, "%s: larger than %d MiB: not a budget", path,
				 SS_BUDGET_MAX_BYTES >> 20);
			return SS_EXIT_INPUT;
		}
		if (capacity - len - 1 == 0) {
			char *bigger = realloc(buf, 2 * capacity);

			if (!bigger) {
				free(buf);
				buf = NULL;
			}
			buf = bigger;
			capacity *= 2;
		}
	}
	if (!buf) {
		fclose(f);
		return no_memory(r);
	}
	if (ferror(f)) {
		snprintf(r->err, r->errlen, "%s: %s", path, strerror(errno));
		fclose(f);
		free(buf);
		return SS_EXIT_INPUT;
	}
	fclose(f);
	buf[len] = '\0';
	/* A NUL inside would hide the rest of the file from SQLite: refuse it here. */
	if (strlen(buf) != len) {
		free(buf);
		snprintf(r->err, r->errlen, "%s: not valid JSON (it contains a NUL byte)", path);
		return SS_EXIT_INPUT;
	}
	/* The escape \u0000 in a string: SQLite's JSON functions end the string there ("x\u0000*"
	 * would read as "x"). Backslashes occur in strings only, in pairs or before an escape. */
	for (const char *c = buf; *c; c++) {
		if (*c != '\\')
			continue;
		if (c[1] == 'u' && strncmp(c + 2, "0000", 4) == 0) {
			free(buf);
			snprintf(r->err, r->errlen,
				 "%s: a string contains a NUL character (\\u0000): not allowed",
				 path);
			return SS_EXIT_INPUT;
		}
		if (c[1])
			c++; /* the escaped character, a backslash included */
	}
	*text = buf;
	return SS_EXIT_OK;
}

/* Runs a one-value query on the document; -1 when this SQLite lacks the function. */
static int json_int(struct reader *r, const char *sql, long long *value)
{
	sqlite3_stmt *stmt;
	int rc;

	if (sqlite3_prepare_v2(r->db, sql, -1, &stmt, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(stmt, 1, r->json, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	*value = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return rc == SQLITE_ROW ? 0 : -1;
}

/*
 * Strict JSON (RFC 8259) only, whatever SQLite accepts: from 3.42 json_valid(X) also takes
 * JSON5 (comments, trailing commas), which older SQLite and other tools refuse. json_valid(X, 1)
 * (3.45 and later) asks for RFC 8259; before 3.42 json_valid(X) is strict already.
 */
static int check_syntax(struct reader *r)
{
	long long valid, position;

	if (json_int(r, "SELECT json_valid(?1, 1)", &valid) != 0 &&
	    json_int(r, "SELECT json_valid(?1)", &valid) != 0) {
		snprintf(r->err, r->errlen, "%s: this SQLite (%s) lacks the JSON functions",
			 r->file, sqlite3_libversion());
		return SS_EXIT_INTERNAL;
	}
	if (valid)
		return SS_EXIT_OK;
	if (r->json[strspn(r->json, " \t\r\n")] == '\0') {
		snprintf(r->err, r->errlen, "%s: not valid JSON (the file is empty)", r->file);
		return SS_EXIT_INPUT;
	}
	/* json_error_position (3.42 and later): the character (not byte) where parsing failed. */
	if (json_int(r, "SELECT json_error_position(?1)", &position) == 0 && position > 0) {
		long long line = 1, column = 0, chars = 0;

		for (const char *c = r->json; *c && chars < position; c++) {
			if (((unsigned char)*c & 0xc0) == 0x80)
				continue;
			chars++;
			column++;
			if (*c == '\n' && chars < position) {
				line++;
				column = 0;
			}
		}
		snprintf(r->err, r->errlen, "%s: not valid JSON (line %lld, column %lld)", r->file,
			 line, column);
	} else if (json_int(r, "SELECT json_error_position(?1)", &position) == 0) {
		snprintf(r->err, r->errlen,
			 "%s: not valid JSON (JSON5 is not accepted: no comments, trailing commas "
			 "or unquoted keys)",
			 r->file);
	} else {
		snprintf(r->err, r->errlen, "%s: not valid JSON", r->file);
	}
	return SS_EXIT_INPUT;
}

static int read_budget(struct reader *r, struct ss_budget *budget)
{
	struct member top[TOP_COUNT];
	long long is_object = 0;
	size_t n = 0, seen;
	int code;

	code = check_syntax(r);
	if (code != SS_EXIT_OK)
		return code;
	if (json_int(r, "SELECT json_type(?1) = 'object'", &is_object) != 0)
		return sql_failure(r);
	if (!is_object)
		return bad(r, "$", "expected an object (see docs/budget.md)");
	code = read_object(r, NULL, "$", top_fields, TOP_COUNT, top);
	if (code != SS_EXIT_OK)
		return code;
	if (!top[TOP_VERSION].present)
		code = bad(r, "$.version", "missing (this syncspy reads budget version %d)",
			   SS_BUDGET_VERSION);
	else if (top[TOP_VERSION].count != SS_BUDGET_VERSION)
		code = bad(r, top[TOP_VERSION].path,
			   "unknown budget version %lld (this syncspy reads %d)",
			   top[TOP_VERSION].count, SS_BUDGET_VERSION);
	else if (!top[TOP_LIMITS].present)
		code = bad(r, "$.limits", "missing (a budget needs at least one limit)");
	if (code == SS_EXIT_OK && top[TOP_WARMUP].present)
		code = read_warmup(r, top[TOP_WARMUP].path, budget);
	if (code == SS_EXIT_OK && top[TOP_ALLOW].present) {
		code = array_length(r, top[TOP_ALLOW].path, &n);
		if (code == SS_EXIT_OK && n > 0) {
			budget->allow = calloc(n, sizeof(*budget->allow));
			code = budget->allow ? each_element(r, top[TOP_ALLOW].path,
							    read_allow_entry, budget, &seen)
					     : no_memory(r);
		}
	}
	if (code == SS_EXIT_OK)
		code = array_length(r, top[TOP_LIMITS].path, &n);
	if (code == SS_EXIT_OK && n == 0)
		code = bad(r, top[TOP_LIMITS].path, "empty (a budget needs at least one limit)");
	if (code == SS_EXIT_OK) {
		budget->limits = calloc(n, sizeof(*budget->limits));
		code = budget->limits
			   ? each_element(r, top[TOP_LIMITS].path, read_limit, budget, &seen)
			   : no_memory(r);
	}
	/* per-step maxima count the steady state's calls over its steps: they need it chosen */
	for (size_t i = 0; code == SS_EXIT_OK && i < budget->limit_count; i++) {
		const struct ss_budget_limit *l = &budget->limits[i];

		if ((l->max_count_per_step >= 0.0 || l->max_blocked_ms_per_step >= 0.0) &&
		    !budget->warmup_steady)
			code =
			    bad(r, l->path,
				"max_count_per_step and max_blocked_ms_per_step need \"warmup\": "
				"{\"steady\": true}");
	}
	free_members(top, TOP_COUNT);
	return code;
}

int ss_budget_load(sqlite3 *db, const char *path, struct ss_budget *budget, char *err,
		   size_t errlen)
{
	struct reader r = {db, path, NULL, err, errlen};
	char *json;
	int code;

	memset(budget, 0, sizeof(*budget));
	budget->warmup_seconds = -1.0;
	budget->warmup_calls = -1;
	code = read_file(&r, path, &json);
	if (code != SS_EXIT_OK)
		return code;
	r.json = json;
	code = read_budget(&r, budget);
	free(json);
	if (code != SS_EXIT_OK)
		ss_budget_free(budget);
	return code;
}

void ss_budget_free(struct ss_budget *budget)
{
	for (size_t i = 0; i < budget->allow_count; i++)
		free(budget->allow[i]);
	free(budget->allow);
	for (size_t i = 0; i < budget->limit_count; i++) {
		struct ss_budget_limit *limit = &budget->limits[i];

		free(limit->path);
		free(limit->name);
		free(limit->cls);
		free(limit->api);
		free(limit->site);
		free(limit->range);
	}
	free(budget->limits);
	memset(budget, 0, sizeof(*budget));
	budget->warmup_seconds = -1.0;
	budget->warmup_calls = -1;
}
