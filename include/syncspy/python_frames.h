/*
 * syncspy/python_frames.h: which Python frames are the frameworks', shared by the shim (the
 * writer picks a stack's site by it, interpose/sites.c; python.c's guard finds the user's frame)
 * and the command (report/rules/host_sync.c walks a recorded stack to the line that calls a
 * model), so that both draw the line between user code and the frameworks at the same place
 * (docs/attribution.md, "The user call site").
 *
 * Inline and libc-only, as sample.h: the two halves share no library, and the shim calls it on
 * its writer thread without allocating.
 */
#ifndef SYNCSPY_PYTHON_FRAMES_H
#define SYNCSPY_PYTHON_FRAMES_H

#include <string.h>

/* A Python file of the frameworks, the libraries or the interpreter: site-packages,
 * dist-packages, the standard library, or a frozen module ("<frozen ...>"). FILE is a frame's
 * file, or a frame line "file:line in function" (which starts with it), ended by its NUL. */
static inline int ss_framework_python_file(const char *file)
{
	return file[0] == '<' || strstr(file, "/site-packages/") != NULL ||
	       strstr(file, "/dist-packages/") != NULL || strstr(file, "/lib/python3.") != NULL ||
	       strstr(file, "/lib64/python3.") != NULL;
}

#endif
