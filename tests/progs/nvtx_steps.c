/*
 * tests/progs/nvtx_steps.c: NVTX ranges and syncspy_step around sync points, for the NVTX
 * injection (interpose/nvtx.c). NVTX is header-only: it finds the injection library through
 * NVTX_INJECTION64_PATH. Three "step" push/pop ranges of two syncs each, nested in an "epoch"
 * start/end range; then two syncspy_step steps of one sync each.
 */
#include <dlfcn.h>
#include <stdio.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

int main(void)
{
	nvtxRangeId_t epoch = nvtxRangeStartA("epoch");
	for (int step = 0; step < 3; step++) {
		nvtxRangePushA("step");
		cudaDeviceSynchronize();
		cudaDeviceSynchronize();
		nvtxRangePop();
	}
	nvtxRangeEnd(epoch);
	void (*mark_step)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "syncspy_step");
	for (int step = 0; step < 2; step++) {
		if (mark_step)
			mark_step("train");
		cudaDeviceSynchronize();
	}
	printf("nvtx_steps done (syncspy_step %s)\n", mark_step ? "found" : "absent");
	return 0;
}
