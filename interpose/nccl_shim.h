/*
 * interpose/nccl_shim.h: what the NCCL module (nccl.c) offers the life cycle.
 */
#ifndef SYNCSPY_NCCL_SHIM_H
#define SYNCSPY_NCCL_SHIM_H

void ss_nccl_fork_child(void); /* the parent's communicators are not the child's */

#endif
