/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/next_preload.c: a second preload library, loaded after libsyncspy.so, that wraps
 * getpid() the way interposers do, through dlsym(RTLD_NEXT). The shim interposes dlsym: if it
 * forwarded RTLD_NEXT as its own call, glibc would search after the shim and hand this library
 * its own getpid, which would then call itself forever (DRIVER-1).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <unistd.h>

static _Atomic int calls; /* any thread calls getpid() */

pid_t getpid(void)
{
	pid_t (*next)(void) = (pid_t(*)(void))dlsym(RTLD_NEXT, "getpid");
	calls++;
	return next ? next() : -1;
}

int next_preload_calls(void)
{
	return calls;
}
