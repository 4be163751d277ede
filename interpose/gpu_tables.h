/*
 * interpose/gpu_tables.h: the GPU timeline's tables (gpu_tables.c), for the writer thread.
 */
#ifndef SYNCSPY_GPU_TABLES_H
#define SYNCSPY_GPU_TABLES_H

void ss_gpu_tables_store(void);	     /* at each drain: what cupti/ queued since, as rows */
void ss_gpu_tables_meta(void);	     /* at each commit: meta.cupti*, and gpu_paused */
void ss_gpu_tables_close(void);	     /* before the connection closes: its statements */
void ss_gpu_tables_fork_child(void); /* the parent's statements and intervals are not ours */

#endif
