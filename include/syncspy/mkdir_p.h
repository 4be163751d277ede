/*
 * syncspy/mkdir_p.h: `mkdir -p`, the one way syncspy creates a directory, shared by the shim
 * (interpose/dbfile.c: SYNCSPY_OUTPUT, created at the first recorded call) and the command
 * (`syncspy run -o DIR`, created before the program starts), so that both accept and refuse
 * the same paths in the same way.
 *
 * Inline and libc-only, as sample.h: the two halves share no library. It allocates nothing
 * (a PATH_MAX buffer on the stack), so the shim may call it wherever it may call mkdir.
 */
#ifndef SYNCSPY_MKDIR_P_H
#define SYNCSPY_MKDIR_P_H

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

/* Creates path and each missing directory above it (mode 0777 less the umask); one that
 * exists already is fine (what exists is not checked further: the caller's next open or
 * access says what is wrong with it, as it would for a directory it did not create). Returns
 * 0, or -1 with mkdir's errno (ENOTDIR: a component is a file), ENAMETOOLONG for a path of
 * PATH_MAX bytes or more, ENOENT for "". */
static inline int ss_mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf)) {
		errno = len ? ENAMETOOLONG : ENOENT; /* "": what mkdir("") says */
		return -1;
	}
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0777) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

#endif
