/*
 * report/cmd_schema.c: `syncspy schema`, the SQL schema this syncspy writes and reads.
 *
 * SS_SCHEMA_SQL as text, for users who want to know the tables before opening a recording and
 * for tests that build databases by hand (tests/fixtures/make-db.sh). --lookups adds the rows
 * the recording library puts in the lookup tables it fills from model.h (classes, memkinds,
 * dirs; the apis table comes from the shim's own tables and is not printed). --extensions adds
 * the tables a recording has only when it has their data (modules, the GPU timeline).
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>

#include <sqlite3.h>

#include "syncspy/model.h"
#include "syncspy/schema.h"
#include "commands.h"

/* %Q quotes a string for SQL (and writes NULL for a null pointer). */
static int print_sql(const char *fmt, ...)
{
	va_list ap;
	char *sql;

	va_start(ap, fmt);
	sql = sqlite3_vmprintf(fmt, ap);
	va_end(ap);
	if (!sql)
		return -1;
	fputs(sql, stdout);
	sqlite3_free(sql);
	return 0;
}

static int print_lookups(void)
{
	int failed = 0;

#define SS_CLASS_ROW(c, sync, desc)                                                                \
	failed |=                                                                                  \
	    print_sql("INSERT INTO classes(class, sync_point, description) VALUES(%Q, %d, %Q);\n", \
		      #c, sync, desc);
	SS_CLASSES(SS_CLASS_ROW)
#undef SS_CLASS_ROW
	/* Id 0 (none) has no name and no row: calls.host_mem and calls.dir are NULL or 0 there. */
#define SS_MEMKIND_ROW(id, n, text)                                                                \
	if (text)                                                                                  \
		failed |= print_sql("INSERT INTO memkinds(id, name) VALUES(%d, %Q);\n", id, text);
	SS_MEMKINDS(SS_MEMKIND_ROW)
#undef SS_MEMKIND_ROW
#define SS_DIR_ROW(id, n, text)                                                                    \
	if (text)                                                                                  \
		failed |= print_sql("INSERT INTO dirs(id, name) VALUES(%d, %Q);\n", id, text);
	SS_DIRS(SS_DIR_ROW)
#undef SS_DIR_ROW
	return failed ? ss_error(SS_EXIT_INTERNAL, "schema: out of memory") : SS_EXIT_OK;
}

int cmd_schema(int argc, char **argv)
{
	static const struct option options[] = {
	    {"lookups", no_argument, NULL, 'l'},
	    {"extensions", no_argument, NULL, 'e'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int lookups = 0, extensions = 0, ch;

	opterr = 0;
	optind = 0;
	while ((ch = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (ch) {
		case 'l':
			lookups = 1;
			break;
		case 'e':
			extensions = 1;
			break;
		case 'h':
			ss_command_usage(stdout, "schema");
			return SS_EXIT_OK;
		default:
			return ss_bad_option("schema", ch, argv);
		}
	}
	if (optind != argc)
		return ss_error(SS_EXIT_INPUT, "schema: takes no arguments ('%s')", argv[optind]);
	printf("-- syncspy database schema, version %d (include/syncspy/schema.h)\n",
	       SS_SCHEMA_VERSION);
	fputs(SS_SCHEMA_SQL, stdout);
	if (extensions) {
		puts("-- extension tables: present when the recording has their data");
		fputs(SS_MODULES_SQL, stdout);
		fputs(SS_GPU_TABLES_SQL, stdout);
		fputs(SS_AGGREGATE_SQL, stdout); /* aggregate mode's (SYNCSPY_MODE) */
	}
	return lookups ? print_lookups() : SS_EXIT_OK;
}
