/*
 * interpose/python.h: a sync point's Python frames (python.c).
 */
#ifndef SYNCSPY_PYTHON_H
#define SYNCSPY_PYTHON_H

#include "shim.h"

/* The Python frames of the calling thread, if it holds the GIL (or, on the main thread, as
 * soon as it has it back). */
void ss_python_attach(struct ss_tls *tls);
void ss_python_fork_child(void);

#endif
