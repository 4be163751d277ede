/*
 * interpose/sites.h: naming code addresses and frames (sites.c), for the writer thread, and
 * the frame test native.c shares with it (docs/attribution.md).
 */
#ifndef SYNCSPY_SITES_H
#define SYNCSPY_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "shim.h"
#include "syncspy/python_frames.h"

/* Writer thread, with a database open (dbfile.h): */
/* The sites row of a native return address (0: none, or not stored). */
int64_t ss_site_id(uint64_t address);
/* A stack record (SS_REC_PYSTACK, SS_REC_NATIVE_STACK) stored, and attached to the calls
 * rows it belongs to, its user frame becoming their site (SCHEMA-6); frees what it carries. */
void ss_store_python_stack(const struct ss_rec *r, const int64_t *calls, size_t ncalls);
void ss_store_native_stack(const struct ss_rec *r, int64_t call_rowid);
/* A C++ symbol's readable name (malloc'd), or NULL when it is none or there is no demangler. */
char *ss_demangle(const char *symbol);
void ss_sites_close(void);	/* before the connection closes: its statement, its maps */
void ss_sites_fork_child(void); /* the parent's maps and statement are not ours */

/* Any thread: a module of the shim, CUDA, NCCL, the frameworks or the interpreter (by path). */
int ss_framework_module(const char *path);
/* Any thread: a Python file of the frameworks, the libraries or the interpreter (python.c's user
 * frame for the guard, the writer's for a stack's site: SCHEMA-6), in syncspy/python_frames.h. */

#endif
