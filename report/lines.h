/*
 * report/lines.h: file:line for native call sites, after the run (report/lines.c).
 */
#ifndef SYNCSPY_REPORT_LINES_H
#define SYNCSPY_REPORT_LINES_H

#include <sqlite3.h>

/* Gives this read-only connection a TEMP `sites` table in which each native site found in the
 * debug information of the unchanged module has the text "FILE:LINE in FUNCTION"; the other
 * sites, and connections where nothing is found, keep the recorded text. Returns how many sites
 * got a line. Never fails the caller: without libdw.so.1 or a `modules` table it does nothing. */
int ss_lines_attach(sqlite3 *db);

/* The TEMP shadow of `sites` (the database's rows, for this connection's changes), which
 * ss_lines_attach makes at its first line and hook_sites.c (SITE-1) where none exists yet. */
#define SS_LINES_SHADOW_SQL                                                                        \
	"CREATE TEMP TABLE sites(id INTEGER PRIMARY KEY, address INTEGER NOT NULL, module TEXT,"   \
	" module_offset INTEGER, symbol TEXT, text TEXT);"                                         \
	"INSERT INTO temp.sites SELECT id, address, module, module_offset, symbol, text"           \
	" FROM main.sites;"

/* Whether libdw.so.1 was found, so that lines can be read at all. */
int ss_lines_usable(void);

/* The same texts, for whoever keeps them (`syncspy symbolize` writes them into the database):
 * found(context, sites.id, text) for each native site that has a line, text malloc()ed and
 * owned by found from then on; it returns what to add to the count, or -1 to stop. Returns
 * the count. */
int ss_lines_each(sqlite3 *db, int (*found)(void *context, long long site_id, char *text),
		  void *context);

/* The demangled name of a C++ symbol (`_Z...`) by libstdc++'s __cxa_demangle, malloc()ed; NULL
 * when it is not one, cannot be demangled, or libstdc++ is not there. */
char *ss_demangle(const char *symbol);
/* Gives the connection the SQL function ss_demangle(x): ss_demangle's name, else x unchanged.
 * Returns an SQLite result code. */
int ss_demangle_attach(sqlite3 *db);
#endif
