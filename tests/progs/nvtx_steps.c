/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/nvtx_steps.c: NVTX ranges and syncspy_step around sync points, for the NVTX
 * injection (interpose/nvtx.c). NVTX is header-only: it finds the injection library through
 * NVTX_INJECTION64_PATH. Three "step" push/pop ranges of two syncs each, nested in an "epoch"
 * start/end range; then two syncspy_step steps of one sync each.
 *
 * `nvtx_steps fork`: a push range and a start/end range open in the parent when it forks; the
 * child syncs inside a range of its own, then closes the parent's two as the program's code
 * would; the parent closes them too. Each database must hold only its own process's ranges.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

static int fork_inside_ranges(void)
{
	nvtxRangeId_t outer = nvtxRangeStartA("parent-startend");
	nvtxRangePushA("parent-push");
	cudaDeviceSynchronize();
	pid_t pid = fork();
	if (pid == 0) {
		cudaDeviceSynchronize();
		nvtxRangePushA("child-push");
		cudaDeviceSynchronize();
		nvtxRangePop();
		nvtxRangePop();	     /* the parent's push */
		nvtxRangeEnd(outer); /* the parent's range */
		exit(0);
	}
	int status = 1;
	waitpid(pid, &status, 0);
	nvtxRangePop();
	nvtxRangeEnd(outer);
	printf("nvtx_steps fork: child %s\n",
	       WIFEXITED(status) && !WEXITSTATUS(status) ? "ok" : "failed");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "fork") == 0)
		return fork_inside_ranges();
	nvtxRangeId_t epoch = nvtxRangeStartA("epoch");
	for (int step = 0; step < 3; step++) {
		nvtxRangePushA("step");
		cudaDeviceSynchronize();
		cudaDeviceSynchronize();
		nvtxRangePop();
	}
	nvtxRangeEnd(epoch);
	void (*mark_step)(const char *) =
	    (void (*)(const char *))dlsym(RTLD_DEFAULT, "syncspy_step");
	for (int step = 0; step < 2; step++) {
		if (mark_step)
			mark_step("train");
		cudaDeviceSynchronize();
	}
	printf("nvtx_steps done (syncspy_step %s)\n", mark_step ? "found" : "absent");
	return 0;
}
