/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/autograd_engine.c: a stand-in for PyTorch's autograd engine, as far as the shim
 * sees it (t042): engine_run(NAME, N, STATE) makes N cudaDeviceSynchronize calls on a thread
 * of its own named NAME, as the engine runs a CUDA backward on its "pt_autograd_<device>"
 * thread, and waits for it, the calling thread blocked meanwhile (ctypes releases the GIL
 * around the call, as torch's run_backward does). With STATE the thread makes itself a Python
 * thread state first and lets the GIL go again, as torch's PythonEngine::thread_init does (so
 * that hooks written in Python can run there): a state with no frame. Either way its syncs are
 * named by the frames of the thread waiting in torch's _engine_run_backward
 * (interpose/python.c, PYTHON-1).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>

#include <cuda_runtime_api.h>

struct job {
	const char *name;
	int syncs, state, failed;
};

static void *device_thread(void *arg)
{
	struct job *job = arg;
	/* the interpreter's, found in the process that loaded this library (ctypes) */
	int (*gil_ensure)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
	void (*gil_release)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
	void *(*save_thread)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyEval_SaveThread");
	void (*restore_thread)(void *) =
	    (void (*)(void *))dlsym(RTLD_DEFAULT, "PyEval_RestoreThread");
	int gil = 0;
	void *saved = NULL;
	pthread_setname_np(pthread_self(), job->name);
	if (job->state) {
		if (!gil_ensure || !gil_release || !save_thread || !restore_thread) {
			job->failed = 1;
			return NULL;
		}
		gil = gil_ensure();
		saved = save_thread();
	}
	for (int i = 0; i < job->syncs; i++)
		if (cudaDeviceSynchronize() != cudaSuccess)
			job->failed = 1;
	if (job->state) {
		restore_thread(saved);
		gil_release(gil);
	}
	return NULL;
}

int engine_run(const char *name, int syncs, int state)
{
	struct job job = {name, syncs, state, 0};
	pthread_t thread;
	if (pthread_create(&thread, NULL, device_thread, &job) != 0)
		return -1;
	pthread_join(thread, NULL);
	return job.failed ? -1 : 0;
}
