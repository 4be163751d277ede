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

#endif
