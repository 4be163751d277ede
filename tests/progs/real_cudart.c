/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/real_cudart.c: linked against the toolkit's real libcudart.so.13 on a machine
 * without GPU or driver, where every call fails fast. Under the shim each call must return the
 * same error code as without it, and be recorded once with that code.
 * Prints one line per call: name and return code.
 */
#include <stdio.h>

#include <cuda_runtime_api.h>

#define CALL(expr) printf("%s %d\n", #expr, (int)(expr))

int main(void)
{
	void *p = NULL;
	char host[64];
	cudaStream_t s = NULL;
	cudaEvent_t e = NULL;
	CALL(cudaMalloc(&p, 64));
	CALL(cudaMallocHost(&p, 64));
	CALL(cudaHostAlloc(&p, 64, 0));
	CALL(cudaStreamCreate(&s));
	CALL(cudaEventCreate(&e));
	CALL(cudaDeviceSynchronize());
	CALL(cudaStreamSynchronize(0));
	CALL(cudaStreamQuery(0));
	CALL(cudaMemcpy(host, host + 32, 16, cudaMemcpyHostToHost));
	CALL(cudaMemcpyAsync(host, host + 32, 16, cudaMemcpyDefault, 0));
	CALL(cudaMemset(host, 0, 16));
	CALL(cudaFree(NULL));
	printf("cudaGetLastError %d\n", (int)cudaGetLastError());
	return 0;
}
