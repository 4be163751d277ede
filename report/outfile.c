/*
 * report/outfile.c: writing an output file safely (outfile.h): atomically over a regular file,
 * through to a character device or FIFO, never over anything else.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "outfile.h"

static int refuse(char *err, size_t errlen, const char *path, const char *why)
{
	snprintf(err, errlen, "%s: %s: not written", path, why);
	return SS_EXIT_INPUT;
}

int ss_outfile_open(const char *path, struct ss_outfile *out, char *err, size_t errlen)
{
	struct stat lst, st;
	mode_t mode, mask;
	int fd;

	memset(out, 0, sizeof(*out));
	out->path = path;
	if (strcmp(path, "-") == 0) {
		out->file = stdout;
		return SS_EXIT_OK;
	}
	mask = umask(0);
	umask(mask);
	mode = 0666 & ~mask;
	if (lstat(path, &lst) != 0) {
		if (errno != ENOENT) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return SS_EXIT_INPUT;
		}
		out->target = strdup(path); /* a new file */
	} else {
		if (stat(path, &st) != 0) /* a symlink to nothing */
			return refuse(err, errlen, path, "a symbolic link to nothing");
		if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
			out->file = fopen(path, "w"); /* a device or a pipe: written through */
			if (!out->file) {
				snprintf(err, errlen, "%s: %s", path, strerror(errno));
				return SS_EXIT_INPUT;
			}
			return SS_EXIT_OK;
		}
		if (S_ISDIR(st.st_mode))
			return refuse(err, errlen, path, "a directory");
		if (!S_ISREG(st.st_mode))
			return refuse(err, errlen, path,
				      "neither a regular file nor a character "
				      "device or FIFO");
		mode = st.st_mode & 07777; /* the replaced file keeps its permissions */
		out->target = S_ISLNK(lst.st_mode) ? realpath(path, NULL) : strdup(path);
	}
	if (!out->target || asprintf(&out->tmp, "%s.tmp.XXXXXX", out->target) < 0) {
		free(out->target);
		out->target = NULL;
		snprintf(err, errlen, "out of memory");
		return SS_EXIT_INTERNAL;
	}
	fd = mkstemp(out->tmp);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto failed;
	}
	fchmod(fd, mode); /* mkstemp makes it 0600 */
	out->file = fdopen(fd, "w");
	if (!out->file) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		unlink(out->tmp);
		goto failed;
	}
	return SS_EXIT_OK;
failed:
	free(out->tmp);
	free(out->target);
	out->tmp = out->target = NULL;
	return SS_EXIT_INPUT;
}

int ss_outfile_close(struct ss_outfile *out, int ok, char *err, size_t errlen)
{
	int code = SS_EXIT_OK;

	if (!out->file)
		return SS_EXIT_OK;
	if (fflush(out->file) != 0 || ferror(out->file)) {
		if (ok)
			snprintf(err, errlen, "%s: write error: %s", out->path, strerror(errno));
		code = ok ? SS_EXIT_INTERNAL : SS_EXIT_OK;
		ok = 0;
	}
	if (out->file != stdout && fclose(out->file) != 0 && ok) {
		snprintf(err, errlen, "%s: write error: %s", out->path, strerror(errno));
		code = SS_EXIT_INTERNAL;
		ok = 0;
	}
	if (out->tmp) {
		if (ok && rename(out->tmp, out->target) != 0) {
			snprintf(err, errlen, "%s: cannot rename %s into place: %s", out->path,
				 out->tmp, strerror(errno));
			code = SS_EXIT_INTERNAL;
			ok = 0;
		}
		if (!ok)
			unlink(out->tmp);
	}
	free(out->tmp);
	free(out->target);
	memset(out, 0, sizeof(*out));
	return code;
}
