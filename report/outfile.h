/*
 * report/outfile.h: the one way every command writes a file it is told to write (report -o,
 * export -o, check --junit), docs/cli.md "Output files".
 *
 * A regular file, or a path that does not exist, is written to a temporary file in the same
 * directory and renamed over it once complete (atomic: readers see the old file or the new
 * one, never half; a failed command leaves the old one). A symlink to a regular file replaces
 * its target the same way (the link stays). A character device or a FIFO (/dev/null,
 * /dev/stdout, a pipe) is written through, as it stands. Anything else (a directory, a block
 * device, a socket, a symlink to nothing) is refused: bad input. "-" is standard output.
 */
#ifndef SYNCSPY_REPORT_OUTFILE_H
#define SYNCSPY_REPORT_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

struct ss_outfile {
	FILE *file;	  /* write here */
	const char *path; /* as given, for messages */
	char *target;	  /* the file the rename replaces (a symlink's target), or NULL */
	char *tmp;	  /* the temporary file beside it, or NULL when written through */
};

/* Opens path for writing as described above. Returns an ss_exit code; on failure err says
 * "PATH: what is wrong" and there is nothing to close. */
int ss_outfile_open(const char *path, struct ss_outfile *out, char *err, size_t errlen);

/*
 * Finishes the file: ok (the command succeeded) flushes it and renames the temporary file into
 * place; !ok removes the temporary file (the old file stays). Returns SS_EXIT_OK, or
 * SS_EXIT_INTERNAL with err set when writing or renaming failed (the old file stays then too).
 */
int ss_outfile_close(struct ss_outfile *out, int ok, char *err, size_t errlen);

#endif
