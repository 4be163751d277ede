/*
 * interpose/store.c: loading SQLite privately (see store.h for why).
 */
#include <dlfcn.h>
#include <stdio.h>

#include "store.h"

int ss_sqlite_load(struct ss_sqlite *sq, char *err, size_t errlen)
{
	if (sq->library)
		return 0;
	void *library = dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL);
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
	sq->library = library;
	return 0;
}
