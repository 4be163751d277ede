/*
 * interpose/writer.h: the writer thread (writer.c), as the life cycle drives it: start, the
 * final drain at exit or exec, a signal handler's commit, and fork.
 */
#ifndef SYNCSPY_WRITER_H
#define SYNCSPY_WRITER_H

int ss_writer_start(void);		     /* 0, or -1 with the reason printed */
void ss_writer_finalize(const char *reason); /* app thread: final drain, close, rename, join */
void ss_writer_signal_flush(int finalize);   /* async-signal-safe: commit (or finalize), wait */
void ss_writer_fork_prepare(void);
void ss_writer_fork_parent(void);
void ss_writer_fork_child(void);

#endif
