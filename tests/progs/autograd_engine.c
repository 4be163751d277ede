/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/autograd_engine.c: a stand-in for PyTorch's autograd engine, as far as the shim
 * sees it (t042): engine_run(NAME, N) makes N cudaDeviceSynchronize calls on a thread of its
 * own named NAME, as the engine runs a CUDA backward on its "pt_autograd_<device>" thread, and
 * waits for it, the calling thread blocked meanwhile (ctypes releases the GIL around the call,
 * as torch's run_backward does). The thread has no Python state: its syncs are named by the
 * frames of the thread waiting in torch's _engine_run_backward (interpose/python.c, PYTHON-1).
 */
#define _GNU_SOURCE
#include <pthread.h>

#include <cuda_runtime_api.h>

struct job {
	const char *name;
	int syncs;
	int failed;
};

static void *device_thread(void *arg)
{
	struct job *job = arg;
	pthread_setname_np(pthread_self(), job->name);
	for (int i = 0; i < job->syncs; i++)
		if (cudaDeviceSynchronize() != cudaSuccess)
			job->failed = 1;
	return NULL;
}

int engine_run(const char *name, int syncs)
{
	struct job job = {name, syncs, 0};
	pthread_t thread;
	if (pthread_create(&thread, NULL, device_thread, &job) != 0)
		return -1;
	pthread_join(thread, NULL);
	return job.failed ? -1 : 0;
}
