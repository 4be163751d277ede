/*
 * interpose/store.c: loading SQLite privately (see store.h for why). The private copy is
 * configured for the one thread that uses it (the writer, SHIM-1): no mutexes, no memory
 * statistics (global locks taken on every allocation of a shared copy).
 */
#include <dlfcn.h>
#include <stdio.h>

#include "store.h"

int ss_sqlite_load(struct ss_sqlite *sq, char *err, size_t errlen)
{
	if (sq->library)
		return 0;
	int private_copy = 1;
	void *library = dlmopen(LM_ID_NEWLM, "libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL);
	if (library == NULL) {
		private_copy = 0;
		library = dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL);
	}
	if (library == NULL) {
		snprintf(err, errlen, "cannot load libsqlite3.so.0: %s", dlerror());
		return -1;
	}
#define SS_SQLITE_LOAD(f)                                                                          \
	sq->f = (__typeof__(f) *)dlsym(library, #f);                                               \
	if (sq->f == NULL) {                                                                       \
		snprintf(err, errlen, "libsqlite3.so.0 has no %s", #f);                            \
		return -1;                                                                         \
	}
	SS_SQLITE_FUNCS(SS_SQLITE_LOAD)
#undef SS_SQLITE_LOAD
	if (private_copy) {
		/* Before the copy's first use (sqlite3_initialize): one thread, no statistics. Only
		 * the writer thread calls it, and never across fork (writer.c holds its lock). */
		sq->sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
		sq->sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	}
	sq->private_copy = private_copy;
	sq->library = library;
	return 0;
}
