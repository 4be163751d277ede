/*
 * interpose/python.h: a sync point's Python frames (python.c).
 */
#ifndef SYNCSPY_PYTHON_H
#define SYNCSPY_PYTHON_H

#include <stddef.h>

#include "shim.h"

/* The Python frames of the calling thread, if it holds the GIL (or, on the main thread, as
 * soon as it has it back). */
void ss_python_attach(struct ss_tls *tls);
void ss_python_fork_child(void);
/* The calling thread's user frame (the innermost outside the frameworks), for the guard
 * (guard.c): 1 with its file, line and function, 0 when there is none to read. */
int ss_python_user_frame(char *file, size_t file_len, int *line, char *function,
			 size_t function_len);

/* Schedules the Python exception class EXCEPTION on the calling thread, taking the GIL (the
 * guard's at-first raise: syncspy_python_raise). */
int ss_python_raise_async(void *exception);

#endif
